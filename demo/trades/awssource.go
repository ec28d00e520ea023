package trades

// Reading the pipeline's results through the nodes' AWS endpoints, for
// the verifier of RunNodes.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/runnel-dev/runnel/demo/nodeset"
)

// awsSource reads the results through the nodes' AWS endpoints (the
// passive client's own table calls would serve the tables when no node
// does, as during the failover).
type awsSource struct{ set *nodeset.Set }

func (a *awsSource) aggregate(ctx context.Context, key string) (string, error) {
	out, err := nodeset.OnAny(ctx, a.set.AWS, func(i int) (*dynamodb.GetItemOutput, error) {
		return a.set.AWS.DynamoDB[i].GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(aggTable), ConsistentRead: aws.Bool(true),
			Key: map[string]dtypes.AttributeValue{"Key": &dtypes.AttributeValueMemberS{Value: key}}})
	})
	if err != nil {
		return "0", fmt.Errorf("GetItem %s: %w", key, err)
	}
	if v, ok := out.Item["Value"].(*dtypes.AttributeValueMemberN); ok {
		return v.Value, nil
	}
	return "0", nil
}

func (a *awsSource) aggregateInt(ctx context.Context, key string) (int64, error) {
	v, err := a.aggregate(ctx, key)
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(v, 10, 64)
}

func (a *awsSource) describeState(ctx context.Context) (*dtypes.TableDescription, error) {
	d, err := nodeset.OnAny(ctx, a.set.AWS, func(i int) (*dynamodb.DescribeTableOutput, error) {
		return a.set.AWS.DynamoDB[i].DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(stateTable)})
	})
	if err != nil {
		return nil, fmt.Errorf("DescribeTable %s: %w", stateTable, err)
	}
	return d.Table, nil
}

func (a *awsSource) stateItems(ctx context.Context) (int64, error) {
	d, err := a.describeState(ctx)
	if err != nil {
		return 0, err
	}
	return aws.ToInt64(d.ItemCount), nil
}

// stateChanges reads the state table's whole stream (DynamoDB Streams)
// and counts its INSERT and MODIFY records: every shard from
// TRIM_HORIZON to its first empty page.
func (a *awsSource) stateChanges(ctx context.Context) (int64, error) {
	d, err := a.describeState(ctx)
	if err != nil {
		return 0, err
	}
	arn := d.LatestStreamArn
	ds, err := nodeset.OnAny(ctx, a.set.AWS, func(i int) (*dynamodbstreams.DescribeStreamOutput, error) {
		return a.set.AWS.Streams[i].DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})
	})
	if err != nil {
		return 0, fmt.Errorf("DescribeStream: %w", err)
	}
	var n int64
	for _, sh := range ds.StreamDescription.Shards {
		it, err := nodeset.OnAny(ctx, a.set.AWS, func(i int) (*dynamodbstreams.GetShardIteratorOutput, error) {
			return a.set.AWS.Streams[i].GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId,
				ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})
		})
		if err != nil {
			return 0, fmt.Errorf("GetShardIterator: %w", err)
		}
		for iter := it.ShardIterator; iter != nil; {
			out, err := nodeset.OnAny(ctx, a.set.AWS, func(i int) (*dynamodbstreams.GetRecordsOutput, error) {
				return a.set.AWS.Streams[i].GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(1000)})
			})
			if err != nil {
				return 0, fmt.Errorf("GetRecords: %w", err)
			}
			for _, r := range out.Records {
				if r.EventName == stypes.OperationTypeInsert || r.EventName == stypes.OperationTypeModify {
					n++
				}
			}
			if len(out.Records) == 0 {
				break
			}
			iter = out.NextShardIterator
		}
	}
	return n, nil
}

func (a *awsSource) reduceMessages(ctx context.Context, fn func(string) error) error {
	var start map[string]dtypes.AttributeValue
	for {
		out, err := nodeset.OnAny(ctx, a.set.AWS, func(i int) (*dynamodb.ScanOutput, error) {
			return a.set.AWS.DynamoDB[i].Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(reduceTable), ExclusiveStartKey: start, ConsistentRead: aws.Bool(true)})
		})
		if err != nil {
			return fmt.Errorf("Scan %s: %w", reduceTable, err)
		}
		for _, it := range out.Items {
			m, _ := it["Message"].(*dtypes.AttributeValueMemberS)
			if m == nil {
				return fmt.Errorf("a %s item without a Message", reduceTable)
			}
			if err := fn(m.Value); err != nil {
				return err
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}

func (a *awsSource) retries(ctx context.Context) map[string]int64 { return mappingRetries(a.set.RN) }
