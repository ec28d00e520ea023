package mapping_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/table"
)

// gates blocks the invocations of the records whose data (or table key)
// is held until it is released.
type gates struct {
	mu   sync.Mutex
	held map[string]chan struct{}
	in   chan string // the data of each blocked record, as it blocks
}

func newGates(t *testing.T, keys ...string) *gates {
	g := &gates{held: map[string]chan struct{}{}, in: make(chan string, 16)}
	for _, k := range keys {
		g.held[k] = make(chan struct{})
	}
	t.Cleanup(func() { // before the engine closes: no invocation stays blocked
		for _, k := range keys {
			g.release(k)
		}
	})
	return g
}

func (g *gates) wait(ctx context.Context, key string) {
	g.mu.Lock()
	ch := g.held[key]
	g.mu.Unlock()
	if ch == nil {
		return
	}
	select {
	case g.in <- key:
	default:
	}
	select {
	case <-ch:
	case <-ctx.Done():
	}
}

func (g *gates) release(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if ch := g.held[key]; ch != nil {
		close(ch)
		delete(g.held, key)
	}
}

// caughtUpIn asserts CaughtUp's answer for mapping id in every process.
func caughtUpIn(t *testing.T, id string, want bool, rns ...*runnel.Runnel) {
	t.Helper()
	for i, rn := range rns {
		got, err := rn.Mappings.CaughtUp(context.Background(), id)
		if err != nil || got != want {
			t.Fatalf("process %d: CaughtUp = %v, %v; want %v", i, got, err, want)
		}
	}
}

// TestCaughtUpFollowsTheStoredCheckpoints: a stream mapping has caught up
// only once its stored checkpoint is past the last record of every shard
// that has records (an empty shard does not hold it back), in the process
// running it and in a passive process sharing its JetStream alike; a
// record put later makes it not caught up until that record is resolved.
// A queue source and an unknown mapping are errors.
func TestCaughtUpFollowsTheStoredCheckpoints(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	ctx := context.Background()
	arn := createStream(t, rn, "src", 2) // one partition key: one shard stays empty
	g := newGates(t, "a2", "b1")
	function.Register("caughtup-gated", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		for _, r := range ev.Records {
			g.wait(ctx, string(r.Kinesis.Data))
		}
		return events.KinesisEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "gated", Handler: "caughtup-gated"}); err != nil {
		t.Fatal(err)
	}
	put(t, rn, "src", "k", "a1", "a2", "a3")
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: "gated", BatchSize: 1})
	// A passive process (it runs no mapping) opened now knows the mapping.
	cli := testenv.Start(t, testenv.Options{NATSURL: rn.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	// While a record is blocked in its invocation the mapping has not
	// caught up (a1, before a2, may be resolved and checkpointed; a2 and
	// a3 are not); once it is released, it catches up.
	blockedThenCaughtUp := func(key string) {
		t.Helper()
		if got := <-g.in; got != key {
			t.Fatalf("blocked on %q, want %q", got, key)
		}
		caughtUpIn(t, m.UUID, false, rn, cli)
		g.release(key)
		testenv.Eventually(t, wait, "caught up after "+key, func() bool {
			ok, err := rn.Mappings.CaughtUp(ctx, m.UUID)
			return err == nil && ok
		})
		caughtUpIn(t, m.UUID, true, cli)
	}
	blockedThenCaughtUp("a2")
	put(t, rn, "src", "k", "b1") // a record put later
	blockedThenCaughtUp("b1")

	if _, err := rn.Mappings.CaughtUp(ctx, "no-such-mapping"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("unknown mapping: %v", err)
	}
	if _, err := rn.Queues.CreateQueue(ctx, "jobs", nil); err != nil {
		t.Fatal(err)
	}
	function.Register("caughtup-sqs", function.SQSHandler(func(context.Context, events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "sqs", Handler: "caughtup-sqs"}); err != nil {
		t.Fatal(err)
	}
	q, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: rn.Queues.ARN("jobs"), FunctionName: "sqs"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Mappings.CaughtUp(ctx, q.UUID); !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Fatalf("queue source: %v", err)
	}
}

// TestCaughtUpOnATableStream: the same for a DynamoDB stream source (the
// table's change log), asked in a passive process: not caught up while
// the change of an item is being processed, caught up once it is.
func TestCaughtUpOnATableStream(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	ctx := context.Background()
	desc := createStreamTable(t, rn, "state", table.ViewNewImage, 2)
	g := newGates(t, "x")
	function.Register("caughtup-ddb-gated", function.DynamoDBHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		for _, r := range ev.Records {
			g.wait(ctx, r.Change.Keys["id"].String())
		}
		return events.DynamoDBEventResponse{}, nil
	}))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "ddb-gated", Handler: "caughtup-ddb-gated"}); err != nil {
		t.Fatal(err)
	}
	m := createMapping(t, rn, mapping.Config{EventSourceArn: desc.LatestStreamArn, FunctionName: "ddb-gated"})
	// A passive process (it runs no mapping) opened now knows the mapping.
	cli := testenv.Start(t, testenv.Options{NATSURL: rn.Engine.ClientURL(), Mappings: mapping.Options{Passive: true}})
	caughtUpIn(t, m.UUID, true, rn, cli) // no change yet
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "state", Item: table.Item{"id": S("x")}}); err != nil {
		t.Fatal(err)
	}
	<-g.in
	caughtUpIn(t, m.UUID, false, rn, cli)
	g.release("x")
	testenv.Eventually(t, wait, "caught up", func() bool {
		ok, err := cli.Mappings.CaughtUp(ctx, m.UUID)
		return err == nil && ok
	})
}
