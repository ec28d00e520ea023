package recovery_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/table"
)

// TestARecordTheMappingFilteredOutIsNotInAResolvedDynamoDBPointer: Lambda
// discards the DynamoDB stream records that match none of a mapping's
// FilterCriteria (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html),
// but the on-failure pointer (DDBStreamBatchInfo) names a sequence-number
// range that holds them too. Before, ResolveFrom returned every record of
// the range (x, FILTERED, z for a batchSize of 2). Now, with
// Sources.Mappings, it applies the mapping's FilterCriteria.
func TestARecordTheMappingFilteredOutIsNotInAResolvedDynamoDBPointer(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	d, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: "orders",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "id", KeyType: "RANGE"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "id", AttributeType: "S"}},
		StreamSpecification:  &table.StreamSpecification{StreamEnabled: true, StreamViewType: "NEW_IMAGE"}})
	if err != nil {
		t.Fatal(err)
	}
	url, err := rn.Queues.CreateQueue(ctx, "ddb-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	function.Register("ddb-filter-fails", function.DynamoDBHandler(func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, errors.New("boom")
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "f", Handler: "ddb-filter-fails"}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"x", "FILTERED", "z"} { // one partition key: one shard
		keep := "yes"
		if id == "FILTERED" {
			keep = "no"
		}
		if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "orders", Item: table.Item{"pk": events.NewStringAttribute("p"), "id": events.NewStringAttribute(id), "keep": events.NewStringAttribute(keep)}}); err != nil {
			t.Fatal(err)
		}
	}
	zero := 0
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: d.LatestStreamArn, FunctionName: "f",
		StartingPosition: mapping.TrimHorizon, MaximumRetryAttempts: &zero, BatchSize: 10, MaximumBatchingWindowInSeconds: 1,
		FilterCriteria:    &filter.Criteria{Filters: []filter.Pattern{{Pattern: `{"dynamodb":{"NewImage":{"keep":{"S":["yes"]}}}}`}}},
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("ddb-dlq")}}}); err != nil {
		t.Fatal(err)
	}
	var msg queue.Message
	testenv.Eventually(t, 20*time.Second, "the on-failure record", func() bool {
		vt, w := 0, 0
		ms, _ := rn.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 1, VisibilityTimeout: &vt, WaitTimeSeconds: &w})
		if len(ms) == 1 {
			msg = ms[0]
		}
		return msg.Body != ""
	})
	res, err := recovery.ResolveFrom(ctx, recovery.Sources{Tables: rn.Tables, Mappings: rn.Mappings}, []byte(msg.Body))
	if err != nil {
		t.Fatal(err)
	}
	if res.Info.BatchSize != 2 {
		t.Fatalf("the pointer's batch holds %d records; want x and z in one batch: %s", res.Info.BatchSize, msg.Body)
	}
	var ids []string
	for _, r := range res.DynamoDB {
		ids = append(ids, r.Change.Keys["id"].String())
	}
	if len(ids) != 2 || ids[0] != "x" || ids[1] != "z" || res.Filtered != 1 || res.Mapping == "" {
		t.Errorf("ResolveFrom = %v, filtered %d, mapping %q; want x z, 1 filtered", ids, res.Filtered, res.Mapping)
	}
}
