package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// BenchmarkDynamoDBEndpoint: the table operations of issue 12's endpoint
// target through the endpoint with aws-sdk-go-v2 and 8 concurrent
// callers, DescribeTable (the client's and HTTP's own ceiling) beside
// them. One op is one call; for BatchWriteItem one item (25 a call).
func BenchmarkDynamoDBEndpoint(b *testing.B) {
	e := startEnv(b, awsapi.Options{}, testenv.Options{})
	c := e.ddb()
	ctx := context.Background()
	if _, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("bench"),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	}); err != nil {
		b.Fatal(err)
	}
	item := func(i int64) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": ddbS(fmt.Sprint("item-", i)), "v": ddbN(int(i)), "data": ddbS("0123456789abcdef0123456789abcdef")}
	}
	var next atomic.Int64
	ops := []struct {
		name string
		call func(i int64) error
	}{
		{"DescribeTable", func(int64) error {
			_, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("bench")})
			return err
		}},
		{"PutItem", func(i int64) error {
			_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("bench"), Item: item(i)})
			return err
		}},
		{"GetItem", func(i int64) error {
			_, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("bench"), Key: map[string]types.AttributeValue{"pk": ddbS(fmt.Sprint("item-", i%1000))}})
			return err
		}},
		{"UpdateItemConditional", func(i int64) error {
			_, err := c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String("bench"), Key: map[string]types.AttributeValue{"pk": ddbS(fmt.Sprint("item-", i%1000))},
				UpdateExpression: aws.String("SET #v = :v"), ConditionExpression: aws.String("attribute_not_exists(pk) OR #v < :v"),
				ExpressionAttributeNames: map[string]string{"#v": "v"}, ExpressionAttributeValues: map[string]types.AttributeValue{":v": ddbN(int(i))}})
			var ccf *types.ConditionalCheckFailedException
			if errors.As(err, &ccf) {
				return nil // a caller with a higher number wrote the item first
			}
			return err
		}},
		{"BatchWriteItem", func(i int64) error {
			if i%25 != 0 {
				return nil
			}
			reqs := make([]types.WriteRequest, 25)
			for k := range reqs {
				reqs[k] = types.WriteRequest{PutRequest: &types.PutRequest{Item: item(1_000_000 + i + int64(k))}}
			}
			out, err := c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"bench": reqs}})
			if err == nil && len(out.UnprocessedItems) > 0 {
				err = fmt.Errorf("%d unprocessed", len(out.UnprocessedItems["bench"]))
			}
			return err
		}},
	}
	for _, op := range ops {
		b.Run(op.name, func(b *testing.B) {
			b.SetParallelism((8 + 1) / max(1, runtime.GOMAXPROCS(0)))
			b.ResetTimer()
			defer testenv.ReportCPU(b, testenv.CPUTime())
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := op.call(next.Add(1)); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDynamoDBStreamsGetRecords: a table's stream read through the
// endpoint with aws-sdk-go-v2, 1,000 records a GetRecords call (the
// limit), each with both images of an item of four attributes (100 bytes
// of data); one op is one record. The records are written once, with
// BatchWriteItem, and read from TRIM_HORIZON again for each round.
func BenchmarkDynamoDBStreamsGetRecords(b *testing.B) {
	e := startEnv(b, awsapi.Options{}, testenv.Options{})
	c, sc := e.ddb(), e.ddbStreams()
	ctx := context.Background()
	td := must(c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String("bench"),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}},
		BillingMode:          types.BillingModePayPerRequest,
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})).TableDescription
	const n = 5000
	for round := range 2 { // inserts, then modifications: both images
		for i := 0; i < n; i += 25 {
			reqs := make([]types.WriteRequest, 25)
			for k := range reqs {
				reqs[k] = types.WriteRequest{PutRequest: &types.PutRequest{Item: map[string]types.AttributeValue{"pk": ddbS(fmt.Sprint("item-", i+k)),
					"v": ddbN(round), "n": ddbN(i + k), "data": ddbS(fmt.Sprintf("%-100d", i+k))}}}
			}
			must(c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{"bench": reqs}}))
		}
	}
	shards := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: td.LatestStreamArn})).StreamDescription.Shards
	b.ResetTimer()
	defer testenv.ReportCPU(b, testenv.CPUTime())
	read := 0
	for read < b.N {
		for _, sh := range shards {
			it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: td.LatestStreamArn, ShardId: sh.ShardId,
				ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
			for it != nil && read < b.N {
				out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it, Limit: aws.Int32(1000)}))
				if len(out.Records) == 0 {
					break
				}
				read += len(out.Records)
				it = out.NextShardIterator
			}
		}
	}
}
