package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel/awsapi"
)

// wantDDBErr fails unless err is the API error code whose message
// contains msg.
func wantDDBErr(t *testing.T, err error, code, msg string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != code || !strings.Contains(ae.ErrorMessage(), msg) {
		t.Fatalf("got %v, want %s %q", err, code, msg)
	}
}

// ddbEndpoint starts an endpoint and returns its DynamoDB client.
func ddbEndpoint(t *testing.T) (*dynamodb.Client, context.Context) {
	return start(t, awsapi.Options{}).ddb(), context.Background()
}

func orderPut(pk string, sk int) types.WriteRequest {
	return types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": ddbS(pk), "sk": ddbN(sk), "v": ddbS(fmt.Sprint(pk, sk))}}}
}

func orderKey(pk string, sk int) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": ddbS(pk), "sk": ddbN(sk)}
}

func TestDynamoDBBatchWriteAndGet(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	td := createOrders(t, c, "orders")
	createOrders(t, c, "returns")

	var reqs []types.WriteRequest
	for i := range 20 {
		reqs = append(reqs, orderPut("p", i))
	}
	out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{
		RequestItems: map[string][]types.WriteRequest{
			aws.ToString(td.TableArn): reqs, // a table ARN is a table name too
			"returns":                 {orderPut("r", 1), orderPut("r", 2), {DeleteRequest: &types.DeleteRequest{Key: orderKey("r", 9)}}},
		},
		ReturnConsumedCapacity:      types.ReturnConsumedCapacityTotal,
		ReturnItemCollectionMetrics: types.ReturnItemCollectionMetricsSize,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.UnprocessedItems) != 0 || len(out.ConsumedCapacity) != 2 || aws.ToFloat64(out.ConsumedCapacity[0].CapacityUnits) != 20 {
		t.Fatalf("BatchWriteItem: %+v", out)
	}

	// 26 requests in one table: the model's limit, in AWS's words.
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"orders": append(reqs, reqs[:6]...)}})
	wantDDBErr(t, err, "ValidationException", "at 'requestItems.orders.member' failed to satisfy constraint: Member must have length less than or equal to 25")
	// 26 over two tables: DynamoDB's own check.
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"orders": reqs, "returns": reqs[:6]}})
	wantDDBErr(t, err, "ValidationException", "Too many items requested for the BatchWriteItem call")
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"orders": {orderPut("x", 1), {DeleteRequest: &types.DeleteRequest{Key: orderKey("x", 1)}}}}})
	wantDDBErr(t, err, "ValidationException", "Provided list of item keys contains duplicates")
	_, err = c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"missing": {orderPut("x", 1)}}})
	wantDDBErr(t, err, "ResourceNotFoundException", "Requested resource not found")

	keys := []map[string]types.AttributeValue{orderKey("p", 3), orderKey("p", 99), orderKey("p", 5)}
	got, err := c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{
		RequestItems: map[string]types.KeysAndAttributes{
			aws.ToString(td.TableArn): {Keys: keys, ProjectionExpression: aws.String("#v, sk"), ExpressionAttributeNames: map[string]string{"#v": "v"}},
			"returns":                 {Keys: []map[string]types.AttributeValue{orderKey("r", 2)}, ConsistentRead: aws.Bool(true), AttributesToGet: []string{"pk"}},
		},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal,
	})
	if err != nil {
		t.Fatal(err)
	}
	o := got.Responses["orders"]
	if len(o) != 2 || len(o[0]) != 2 || attrS(o[0], "v") != "p3" || attrS(o[1], "v") != "p5" || attrN(o[1], "sk") != "5" {
		t.Fatalf("orders %v", o)
	}
	if r := got.Responses["returns"]; len(r) != 1 || len(r[0]) != 1 || attrS(r[0], "pk") != "r" {
		t.Fatalf("returns (AttributesToGet) %v", r)
	}
	if len(got.UnprocessedKeys) != 0 || len(got.ConsumedCapacity) != 2 {
		t.Fatalf("unprocessed %v capacity %v", got.UnprocessedKeys, got.ConsumedCapacity)
	}
	var many []map[string]types.AttributeValue
	for i := range 101 {
		many = append(many, orderKey("m", i))
	}
	_, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"orders": {Keys: many}}})
	wantDDBErr(t, err, "ValidationException", "at 'requestItems.orders.member.keys' failed to satisfy constraint: Member must have length less than or equal to 100")
	_, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"orders": {Keys: many[:60]}, "returns": {Keys: many[60:]}}})
	wantDDBErr(t, err, "ValidationException", "Too many items requested for the BatchGetItem call")
	_, err = c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"orders": {Keys: []map[string]types.AttributeValue{orderKey("p", 1), orderKey("p", 1)}}}})
	wantDDBErr(t, err, "ValidationException", "Provided list of item keys contains duplicates")
}

func TestDynamoDBTransactGetItems(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	createOrders(t, c, "orders")
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{"pk": ddbS("p"), "sk": ddbN(1), "v": ddbS("one")}}))
	out, err := c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("orders"), Key: orderKey("p", 1), ProjectionExpression: aws.String("v")}},
		{Get: &types.Get{TableName: aws.String("orders"), Key: orderKey("p", 2)}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Responses) != 2 || len(out.Responses[0].Item) != 1 || attrS(out.Responses[0].Item, "v") != "one" || out.Responses[1].Item != nil {
		t.Fatalf("responses %+v", out.Responses)
	}
	_, err = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
		{Get: &types.Get{TableName: aws.String("orders"), Key: orderKey("p", 1)}},
		{Get: &types.Get{TableName: aws.String("orders"), Key: orderKey("p", 1)}},
	}})
	wantDDBErr(t, err, "ValidationException", "Transaction request cannot include multiple operations on one item")
	var many []types.TransactGetItem
	for i := range 101 {
		many = append(many, types.TransactGetItem{Get: &types.Get{TableName: aws.String("orders"), Key: orderKey("p", i)}})
	}
	_, err = c.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: many})
	wantDDBErr(t, err, "ValidationException", "at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100")
}

func TestDynamoDBTagsAndBackups(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	arn := createOrders(t, c, "orders").TableArn
	must(c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("a")}, {Key: aws.String("env"), Value: aws.String("dev")}}}))
	must(c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{{Key: aws.String("team"), Value: aws.String("b")}}}))
	tags := must(c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: arn})).Tags
	if len(tags) != 2 || aws.ToString(tags[0].Key) != "env" || aws.ToString(tags[1].Value) != "b" {
		t.Fatalf("tags %+v", tags)
	}
	must(c.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: arn, TagKeys: []string{"env", "absent"}}))
	if tags := must(c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: arn})).Tags; len(tags) != 1 || aws.ToString(tags[0].Key) != "team" {
		t.Fatalf("after untag %+v", tags)
	}
	var fifty []types.Tag
	for i := range 50 {
		fifty = append(fifty, types.Tag{Key: aws.String(fmt.Sprint("k", i)), Value: aws.String("v")})
	}
	_, err := c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: fifty})
	wantDDBErr(t, err, "LimitExceededException", "exceeds the limit of 50")
	_, err = c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{}})
	wantDDBErr(t, err, "ValidationException", "Atleast one Tag needs to be provided")
	_, err = c.TagResource(ctx, &dynamodb.TagResourceInput{ResourceArn: arn, Tags: []types.Tag{{Key: aws.String(strings.Repeat("k", 129)), Value: aws.String("v")}}})
	wantDDBErr(t, err, "ValidationException", "Member must have length less than or equal to 128")
	_, err = c.UntagResource(ctx, &dynamodb.UntagResourceInput{ResourceArn: arn, TagKeys: []string{}})
	wantDDBErr(t, err, "ValidationException", "Atleast one Tag Key needs to be provided")
	_, err = c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String("orders")})
	wantDDBErr(t, err, "ValidationException", "Invalid TableArn: Invalid ResourceArn provided as input orders")
	_, err = c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: aws.String(strings.Replace(aws.ToString(arn), "orders", "gone", 1))})
	wantDDBErr(t, err, "ResourceNotFoundException", "Requested resource not found: ResourcArn: arn:aws:dynamodb:us-east-1:000000000000:table/gone not found")

	// Tags given to CreateTable.
	tagged := must(c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("tagged"), BillingMode: types.BillingModePayPerRequest,
		KeySchema: []types.KeySchemaElement{keyElem("pk", types.KeyTypeHash)}, AttributeDefinitions: []types.AttributeDefinition{attrDef("pk", "S")},
		Tags: []types.Tag{{Key: aws.String("owner"), Value: aws.String("ops")}}})).TableDescription
	if tags := must(c.ListTagsOfResource(ctx, &dynamodb.ListTagsOfResourceInput{ResourceArn: tagged.TableArn})).Tags; len(tags) != 1 || aws.ToString(tags[0].Value) != "ops" {
		t.Fatalf("tags of a table created with tags: %+v", tags)
	}

	b := must(c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("orders")})).ContinuousBackupsDescription
	if b.ContinuousBackupsStatus != types.ContinuousBackupsStatusEnabled || b.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
		t.Fatalf("backups %+v", b)
	}
	_, err = c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("gone")})
	var tnf *types.TableNotFoundException
	if !errors.As(err, &tnf) {
		t.Fatalf("DescribeContinuousBackups of a missing table: %v", err)
	}
}

// TestDynamoDBParallelScan: TotalSegments segments together read every
// item once; Segment and TotalSegments go together and are checked.
func TestDynamoDBParallelScan(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	createOrders(t, c, "orders")
	for i := range 100 {
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{"pk": ddbS(fmt.Sprint("p", i)), "sk": ddbN(i)}}))
	}
	seen := map[string]int{}
	for seg := range int32(4) {
		var start map[string]types.AttributeValue
		n := 0
		for {
			out := must(c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("orders"), Segment: aws.Int32(seg), TotalSegments: aws.Int32(4), Limit: aws.Int32(7), ExclusiveStartKey: start}))
			for _, it := range out.Items {
				seen[attrS(it, "pk")]++
				n++
			}
			if start = out.LastEvaluatedKey; start == nil {
				break
			}
		}
		if n == 0 || n == 100 {
			t.Fatalf("segment %d read %d items", seg, n)
		}
	}
	if len(seen) != 100 {
		t.Fatalf("segments read %d distinct items", len(seen))
	}
	for k, n := range seen {
		if n != 1 {
			t.Fatalf("%s read %d times", k, n)
		}
	}
	for _, c2 := range []struct {
		seg, total *int32
		msg        string
	}{
		{aws.Int32(0), nil, "The TotalSegments parameter is required but was not present in the request when Segment parameter is present"},
		{nil, aws.Int32(2), "The Segment parameter is required but was not present in the request when parameter TotalSegments is present"},
		{aws.Int32(2), aws.Int32(2), "The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: 2 is not less than TotalSegments: 2"},
		{aws.Int32(0), aws.Int32(1000001), "Value '1000001' at 'totalSegments' failed to satisfy constraint: Member must have value less than or equal to 1000000"},
		{aws.Int32(1000000), aws.Int32(1000000), "Value '1000000' at 'segment' failed to satisfy constraint: Member must have value less than or equal to 999999"},
		{aws.Int32(0), aws.Int32(0), "Value '0' at 'totalSegments' failed to satisfy constraint: Member must have value greater than or equal to 1"},
	} {
		_, err := c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("orders"), Segment: c2.seg, TotalSegments: c2.total})
		wantDDBErr(t, err, "ValidationException", c2.msg)
	}
	// The largest TotalSegments is accepted.
	must(c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("orders"), Segment: aws.Int32(999999), TotalSegments: aws.Int32(1000000)}))
}
