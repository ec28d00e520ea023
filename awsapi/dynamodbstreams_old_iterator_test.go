package awsapi_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	stypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestAnIteratorOfAnEarlierRunnelEndsADisabledStreamsShard: a shard
// iterator a client holds across an upgrade still works (API_streams_
// GetRecords: a closed shard's last call answers no NextShardIterator).
// Iterators of the earlier runnel carry no shard index and no trim
// horizon; a disabled stream's shard closes only past the stream's last
// change in it, which needs the shard, so such an iterator's shard never
// closed: the reader polled the turned-off stream for its 24 hours. Now
// the shard is taken from the log's iterator inside it.
func TestAnIteratorOfAnEarlierRunnelEndsADisabledStreamsShard(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clock})
	ctx := context.Background()
	c, sc := e.ddb(), e.ddbStreams()
	createOrders(t, c, "orders")
	arn := must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})).Table.LatestStreamArn
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("orders"), Item: map[string]types.AttributeValue{"pk": ddbS("p"), "sk": ddbN(1)}}))
	clock.Advance(time.Millisecond)
	setStream(t, c, "orders", false, "")
	d := must(sc.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: arn})).StreamDescription
	read := 0
	for _, sh := range d.Shards {
		it := must(sc.GetShardIterator(ctx, &dynamodbstreams.GetShardIteratorInput{StreamArn: arn, ShardId: sh.ShardId, ShardIteratorType: stypes.ShardIteratorTypeTrimHorizon})).ShardIterator
		// As the earlier runnel wrote it: the ARN and the log's iterator only.
		raw, err := base64.RawURLEncoding.DecodeString(*it)
		if err != nil {
			t.Fatal(err)
		}
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			t.Fatal(err)
		}
		old, _ := json.Marshal(map[string]any{"a": fields["a"], "i": fields["i"]})
		it = aws.String(base64.RawURLEncoding.EncodeToString(old))
		calls := 0
		for ; it != nil && calls < 20; calls++ {
			out := must(sc.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: it}))
			read += len(out.Records)
			it = out.NextShardIterator
		}
		if it != nil {
			t.Fatalf("shard %s: an iterator of an earlier runnel never ended the disabled stream's shard (%d calls)", aws.ToString(sh.ShardId), calls)
		}
	}
	if read != 1 {
		t.Errorf("read %d records, want 1", read)
	}
}
