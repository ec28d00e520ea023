package recovery_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/table"
)

// TestADynamoDBStreamFailureRecordResolvesFromItsTable: the on-failure
// record of a DynamoDB stream mapping (DDBStreamBatchInfo, SPEC §1,
// wire/onfailure.go) is classified with its shard and range, resolved
// from the table's change log into the DynamoDB records that failed, and
// archived resolved. Before, Resolve answered ErrUnknownFormat, Classify
// "unknown", and Archive wrote the pointer as if it were the event.
func TestADynamoDBStreamFailureRecordResolvesFromItsTable(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	d, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: "orders",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "id", AttributeType: "S"}},
		StreamSpecification:  &table.StreamSpecification{StreamEnabled: true, StreamViewType: "NEW_IMAGE"}})
	if err != nil {
		t.Fatal(err)
	}
	url, err := rn.Queues.CreateQueue(ctx, "ddb-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	function.Register("ddb-resolve-fails", function.DynamoDBHandler(func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return events.DynamoDBEventResponse{}, errors.New("boom")
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "f", Handler: "ddb-resolve-fails"}); err != nil {
		t.Fatal(err)
	}
	zero := 0
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: d.LatestStreamArn, FunctionName: "f",
		StartingPosition: mapping.TrimHorizon, MaximumRetryAttempts: &zero,
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("ddb-dlq")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "orders", Item: table.Item{"id": events.NewStringAttribute("x")}}); err != nil {
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
	if v := recovery.Classify(msg); v.Kind != recovery.KindDDBStreamBatch || v.ShardID == "" || v.StartSequenceNumber == "" {
		t.Fatalf("Classify: kind %s, shard %q, start %q", v.Kind, v.ShardID, v.StartSequenceNumber)
	}
	res, err := recovery.ResolveFrom(ctx, recovery.Sources{Streams: rn.Streams, Tables: rn.Tables}, []byte(msg.Body))
	if err != nil || res.Kind != recovery.KindDDBStreamBatch || len(res.DynamoDB) != 1 ||
		res.DynamoDB[0].EventName != "INSERT" || res.DynamoDB[0].Change.Keys["id"].String() != "x" {
		t.Fatalf("ResolveFrom: %+v, %v; want the INSERT of x", res, err)
	}
	if _, err := recovery.Resolve(ctx, rn.Streams, []byte(msg.Body)); !errors.Is(err, recovery.ErrNoSource) {
		t.Fatalf("Resolve without the tables service: %v, want ErrNoSource", err)
	}
	out := filepath.Join(t.TempDir(), "a.jsonl")
	if _, err := recovery.Archive(ctx, rn.Queues, rn.Streams, "ddb-dlq", recovery.ArchiveOptions{Out: out, Tables: rn.Tables}); err != nil {
		t.Fatal(err)
	}
	lines, err := recovery.ReadArchive(out)
	if err != nil || len(lines) != 1 || lines[0].Kind != recovery.KindDDBStreamBatch || lines[0].Resolved == nil || len(lines[0].Resolved.DynamoDB) != 1 {
		t.Fatalf("archive: %+v, %v", lines, err)
	}
}
