package mapping_test

// Create- and update-time rules of event source mappings:
// one mapping per (event source, function), a DynamoDB stream mapping
// needs the table's current stream, and the queue visibility rule is a
// create-time rule.

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
)

// wantErr fails unless err is sentinel with a message containing each of
// parts.
func wantErr(t *testing.T, what string, err error, sentinel *awserr.Error, parts ...string) {
	t.Helper()
	if !errors.Is(err, sentinel) {
		t.Fatalf("%s: got %v, want %s", what, err, sentinel.Code)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("%s: %q does not say %q", what, err, p)
		}
	}
}

func noDDB(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return events.DynamoDBEventResponse{}, nil
}

// TestASecondMappingOfTheSameSourceAndFunctionIsAConflict: Lambda keeps
// one event source mapping per (EventSourceArn, function): a second
// CreateEventSourceMapping answers 409 ResourceConflictException naming
// the existing mapping's UUID, "An event source mapping with SQS arn
// (\" <arn> \") and function (\" <fn> \") already exists. Please update
// or delete the existing mapping with UUID <uuid>" for a queue and "The
// event source arn (\" <arn> \") and function (\" <fn> \") provided
// mapping already exists. ..." for Kinesis and DynamoDB streams (quoted
// in DataBiosphere/azul#3399, aws/serverless-application-model#1320,
// hashicorp/terraform-provider-aws#33352; localstack#9996). Functions are
// compared by qualified ARN: fn, fn:1 and an alias of fn are three
// functions. Before, the second mapping was accepted: every stream record
// was processed twice, a queue got twice the pollers.
func TestASecondMappingOfTheSameSourceAndFunctionIsAConflict(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	arn := createStream(t, rn, "src", 1)
	r := newRecorder(t, rn, function.Config{}, nil)
	first := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})

	_, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: r.name, StartingPosition: mapping.Latest})
	wantErr(t, "the same stream and function again", err, awserr.ErrResourceConflict,
		`The event source arn (" `+arn+` ") and function (" `+r.name+` ") provided mapping already exists`, "UUID "+first.UUID)
	// The function by its ARN is the same function.
	_, err = rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: rn.Functions.ARN(r.name), StartingPosition: mapping.Latest})
	wantErr(t, "the same function by ARN", err, awserr.ErrResourceConflict, "UUID "+first.UUID)

	// A version and an alias are other functions.
	if _, err := rn.Functions.PublishVersion(ctx, r.name, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.CreateAlias(ctx, r.name, function.Alias{Name: "live", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	v1 := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name + ":1"})
	createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name + ":live"})
	_, err = rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: r.name + ":1", StartingPosition: mapping.Latest})
	wantErr(t, "version 1 again", err, awserr.ErrResourceConflict, "UUID "+v1.UUID)

	// An update may not move a mapping onto a pair another mapping has.
	_, err = rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: v1.UUID, FunctionName: r.name})
	wantErr(t, "update onto the first mapping's pair", err, awserr.ErrResourceConflict, "UUID "+first.UUID)

	// Deleting the first frees its pair; moving v1 off version 1 frees
	// that one.
	if err := rn.Mappings.DeleteEventSourceMapping(ctx, first.UUID); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: v1.UUID, FunctionName: r.name}); err != nil {
		t.Fatalf("update onto the freed pair: %v", err)
	}
	createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name + ":1"})

	// A queue: SQS's words.
	qarn := createQueue(t, rn, "q", map[string]string{"VisibilityTimeout": "30"})
	q := newSQSRecorder(t, rn, function.Config{Timeout: 3}, nil)
	qm := createQueueMapping(t, rn, mapping.Config{EventSourceArn: qarn, FunctionName: q.name})
	_, err = rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: qarn, FunctionName: q.name})
	wantErr(t, "the same queue and function again", err, awserr.ErrResourceConflict,
		`An event source mapping with SQS arn (" `+qarn+` ") and function (" `+q.name+` ") already exists. Please update or delete the existing mapping with UUID `+qm.UUID)

	// A DynamoDB stream: the streams' words.
	desc := createStreamTable(t, rn, "tbl", table.ViewNewImage, 1)
	function.Register("esm-rules-ddb", function.DynamoDBHandler(noDDB))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "dfn", Handler: "esm-rules-ddb"}); err != nil {
		t.Fatal(err)
	}
	dm := createMapping(t, rn, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "dfn"})
	_, err = rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "dfn", StartingPosition: mapping.Latest})
	wantErr(t, "the same table stream and function again", err, awserr.ErrResourceConflict, "provided mapping already exists", "UUID "+dm.UUID)
}

// TestTwoProcessesCreatingTheSameMappingAtOnceMakeOne: the rule of
// TestASecondMappingOfTheSameSourceAndFunctionIsAConflict holds across a
// cluster: two processes creating the same (source, function) mapping at
// the same moment, each past its check of the mappings it knows before
// either stored its own (a test hook holds them there), end with one
// mapping and one 409 (a create-only claim in "runnel_mapping_claims").
// A claim left by a create that never stored its mapping (a crash) is
// taken over once stale. Before, both mappings were stored.
func TestTwoProcessesCreatingTheSameMappingAtOnceMakeOne(t *testing.T) {
	a := startNode(t, "")
	ctx := context.Background()
	arn := createStream(t, a, "src", 1)
	r := newRecorder(t, a, function.Config{}, nil)
	b := startNode(t, a.Engine.ClientURL())
	testenv.Eventually(t, wait, "b knows the function", func() bool {
		_, err := b.Functions.GetFunction(r.name)
		return err == nil
	})
	for round := range 3 {
		// Both creates pass the check of what their process knows before
		// either claims: neither process knows the other's mapping yet.
		var checked sync.WaitGroup
		checked.Add(2)
		mapping.SetBeforeClaim(func() { checked.Done(); checked.Wait() })
		var wg sync.WaitGroup
		errs := make([]error, 2)
		ids := make([]string, 2)
		for i, rn := range []*runnel.Runnel{a, b} {
			wg.Go(func() {
				m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: r.name, StartingPosition: mapping.Latest})
				errs[i] = err
				if err == nil {
					ids[i] = m.UUID
				}
			})
		}
		wg.Wait()
		mapping.SetBeforeClaim(nil)
		ok := 0
		for i, err := range errs {
			if err == nil {
				ok++
			} else {
				wantErr(t, "the other create", err, awserr.ErrResourceConflict, "UUID "+ids[1-i])
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d of 2 creates succeeded (%v), want 1", round, ok, errs)
		}
		id := ids[0] + ids[1]
		if err := a.Mappings.DeleteEventSourceMapping(ctx, id); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, wait, "b sees the delete", func() bool {
			_, err := b.Mappings.GetEventSourceMapping(id)
			return err != nil
		})
	}

	// A create that claimed the pair and crashed before storing its
	// mapping: its claim answers 409 until it is stale.
	claims, err := a.Engine.Bucket(ctx, "runnel_mapping_claims")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := claims.Put(ctx, mapping.ClaimKey(arn, a.Functions.ARN(r.name)), []byte("crashed")); err != nil {
		t.Fatal(err)
	}
	_, err = a.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: r.name, StartingPosition: mapping.Latest})
	wantErr(t, "a fresh claim", err, awserr.ErrResourceConflict, "UUID crashed")
	defer mapping.SetClaimStaleAfter(mapping.SetClaimStaleAfter(0))
	if _, err := a.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: r.name, StartingPosition: mapping.Latest}); err != nil {
		t.Fatalf("a stale claim: %v", err)
	}
}

// TestADynamoDBStreamMappingNeedsTheTablesCurrentStream: Lambda refuses a
// mapping whose DynamoDB stream does not exist with
// InvalidParameterValueException "Stream not found: <arn>" (quoted in
// aws-amplify/amplify-cli#11626): a table without a stream, a stream
// turned off, or a label that is not the table's current stream. Before,
// the mapping was accepted and delivered nothing, forever.
func TestADynamoDBStreamMappingNeedsTheTablesCurrentStream(t *testing.T) {
	clock := clockwork.NewFakeClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	function.Register("esm-rules-ddb-stream", function.DynamoDBHandler(noDDB))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "dfn", Handler: "esm-rules-ddb-stream"}); err != nil {
		t.Fatal(err)
	}
	create := func(arn string) error {
		_, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: "dfn", StartingPosition: mapping.TrimHorizon})
		return err
	}

	plain, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: "plain",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "id", AttributeType: "S"}}})
	if err != nil {
		t.Fatal(err)
	}
	noStream := plain.TableArn + "/stream/" + clock.Now().UTC().Format("2006-01-02T15:04:05.000")
	wantErr(t, "a table without a stream", create(noStream), awserr.ErrInvalidParameterValue, "Stream not found: "+noStream)

	desc := createStreamTable(t, rn, "tbl", table.ViewNewImage, 1)
	old := desc.LatestStreamArn
	if _, err := rn.Tables.UpdateTable(ctx, "tbl", table.UpdateTableInput{StreamSpecification: &table.StreamSpecification{StreamEnabled: false}}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a stream turned off", create(old), awserr.ErrInvalidParameterValue, "Stream not found: "+old)
	clock.Advance(time.Second)
	now, err := rn.Tables.UpdateTable(ctx, "tbl", table.UpdateTableInput{StreamSpecification: &table.StreamSpecification{StreamEnabled: true, StreamViewType: table.ViewNewImage}})
	if err != nil {
		t.Fatal(err)
	}
	if now.LatestStreamArn == old {
		t.Fatalf("the new stream has the old ARN %s", old)
	}
	wantErr(t, "the table's previous stream", create(old), awserr.ErrInvalidParameterValue, "Stream not found: "+old)
	if err := create(now.LatestStreamArn); err != nil {
		t.Fatalf("the current stream: %v", err)
	}
}

// TestAQueueMappingStaysUpdatableAfterItsFunctionTimeoutRose: "queue
// VisibilityTimeout >= function Timeout" is a CreateEventSourceMapping
// rule (lambda/latest/dg/services-sqs-configure.html, "set the source
// queue's visibility timeout to at least six times the timeout you
// configure on your function"; API_CreateEventSourceMapping); runnel
// checks it at create and when an update moves the mapping to another
// function, never when an update leaves the function or disables the
// mapping. Before, every update re-ran it: once the function's timeout
// was raised past the queue's, even Enabled=false was refused.
func TestAQueueMappingStaysUpdatableAfterItsFunctionTimeoutRose(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	arn := createQueue(t, rn, "q", map[string]string{"VisibilityTimeout": "30"})
	r := newSQSRecorder(t, rn, function.Config{Timeout: 30}, nil)
	m := createQueueMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name})
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: r.name, Handler: r.handler, Timeout: 60}); err != nil {
		t.Fatal(err)
	}

	got, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, Enabled: new(false)})
	if err != nil {
		t.Fatalf("disable: %v", err)
	}
	if got.State != mapping.StateDisabled {
		t.Fatalf("State %s after disable", got.State)
	}
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, BatchSize: 5, Enabled: new(true)}); err != nil {
		t.Fatalf("re-enable with another BatchSize: %v", err)
	}

	// Create, and an update to another function, still check it.
	other := newSQSRecorder(t, rn, function.Config{Timeout: 45}, nil)
	_, err = rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: arn, FunctionName: other.name})
	wantErr(t, "create", err, awserr.ErrInvalidParameterValue, "Queue visibility timeout: 30 seconds is less than Function timeout: 45 seconds")
	_, err = rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, FunctionName: other.name})
	wantErr(t, "update to another function", err, awserr.ErrInvalidParameterValue, "Queue visibility timeout: 30 seconds is less than Function timeout: 45 seconds")
	// ...but never one that disables the mapping.
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, mapping.Config{UUID: m.UUID, FunctionName: other.name, Enabled: new(false)}); err != nil {
		t.Fatalf("disable while moving to another function: %v", err)
	}
}
