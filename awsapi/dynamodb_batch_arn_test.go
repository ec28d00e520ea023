package awsapi_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestABatchNamingATableByNameAndByARNLosesNothing: BatchWriteItem's and
// BatchGetItem's RequestItems is "a map of one or more table names or
// table ARNs" (API_BatchWriteItem, API_BatchGetItem); AWS does not say
// what one table named both ways does. runnel merges the two entries: all
// the requests are written, all the keys read, and the merged set counts
// as one table's toward the limits (25 requests, 100 keys) and the
// duplicate-key check. It used to keep one of the two entries (map
// order) and answer success: of 5 puts under the name and 5 under the
// ARN, 5 were stored and none was reported unprocessed. Two entries of a
// BatchGetItem that read differently cannot merge and are refused,
// ValidationException naming the table.
func TestABatchNamingATableByNameAndByARNLosesNothing(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	arn := aws.ToString(createOrders(t, c, "orders").TableArn)

	var byName, byARN []types.WriteRequest
	for i := range 5 {
		byName = append(byName, orderPut("n", i))
		byARN = append(byARN, orderPut("a", i))
	}
	w, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"orders": byName, arn: byARN}})
	if err != nil || len(w.UnprocessedItems) != 0 {
		t.Fatalf("BatchWriteItem by name and ARN: %v, unprocessed %v", err, w)
	}
	sc, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("orders")})
	if err != nil || sc.Count != 10 {
		t.Fatalf("after 5 puts by name and 5 by ARN the table holds %d items (%v), want 10", sc.Count, err)
	}

	var many []types.WriteRequest
	for i := range 13 {
		many = append(many, orderPut("m", i))
	}
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"orders": many, arn: many[:13]}})
	wantDDBErr(t, err, "ValidationException", "Too many items requested for the BatchWriteItem call")
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"orders": {orderPut("d", 1)}, arn: {orderPut("d", 1)}}})
	wantDDBErr(t, err, "ValidationException", "Provided list of item keys contains duplicates")

	g, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"orders": {Keys: []map[string]types.AttributeValue{orderKey("n", 1), orderKey("n", 2)}},
		arn:      {Keys: []map[string]types.AttributeValue{orderKey("a", 1), orderKey("a", 2)}},
	}})
	if err != nil || len(g.Responses) != 1 || len(g.Responses["orders"]) != 4 || len(g.UnprocessedKeys) != 0 {
		t.Fatalf("BatchGetItem of 2 keys by name and 2 by ARN: %v, %d tables answered, %d items under orders, unprocessed %v",
			err, len(g.Responses), len(g.Responses["orders"]), g.UnprocessedKeys)
	}

	var keys []map[string]types.AttributeValue
	for i := range 51 {
		keys = append(keys, orderKey("k", i))
	}
	_, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"orders": {Keys: keys}, arn: {Keys: keys[1:]}}})
	wantDDBErr(t, err, "ValidationException", "Too many items requested for the BatchGetItem call")
	_, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"orders": {Keys: keys[:1]}, arn: {Keys: keys[:1]}}})
	wantDDBErr(t, err, "ValidationException", "Provided list of item keys contains duplicates")
	_, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
		"orders": {Keys: keys[:1], ProjectionExpression: aws.String("v")}, arn: {Keys: keys[1:2]}}})
	wantDDBErr(t, err, "ValidationException", "RequestItems names table orders twice")
}
