package observe_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

const wait = 20 * time.Second

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func start(t *testing.T) (*runnel.Runnel, *clockwork.FakeClock) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	return testenv.Start(t, testenv.Options{Clock: clock}), clock
}

var seq atomic.Int64

// kinesisFunction registers a fresh Kinesis handler and creates a function
// using it.
func kinesisFunction(t *testing.T, rn *runnel.Runnel, cfg function.Config, h func(context.Context, events.KinesisEvent) error) string {
	t.Helper()
	name := fmt.Sprintf("observe-k%d", seq.Add(1))
	function.Register(name, h)
	if cfg.FunctionName == "" {
		cfg.FunctionName = name
	}
	cfg.Handler = name
	if _, err := rn.Functions.CreateFunction(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.FunctionName
}

// rawFunction creates a function whose handler takes {"fail": bool}.
func rawFunction(t *testing.T, rn *runnel.Runnel, cfg function.Config) string {
	t.Helper()
	name := fmt.Sprintf("observe-r%d", seq.Add(1))
	function.Register(name, func(ctx context.Context, in struct{ Fail bool }) (string, error) {
		if in.Fail {
			return "", fmt.Errorf("told to fail")
		}
		return "ok", nil
	})
	if cfg.FunctionName == "" {
		cfg.FunctionName = name
	}
	cfg.Handler = name
	if _, err := rn.Functions.CreateFunction(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return cfg.FunctionName
}

func invoke(t *testing.T, rn *runnel.Runnel, name string, fail bool) {
	t.Helper()
	f, err := rn.Functions.GetFunction(name)
	if err != nil {
		t.Fatal(err)
	}
	f.Invoke(context.Background(), map[string]bool{"Fail": fail}) // a throttle is an error here, and counted
}

func createStream(t *testing.T, rn *runnel.Runnel, name string) string {
	t.Helper()
	d, err := rn.Streams.CreateStream(context.Background(), stream.CreateStreamInput{StreamName: name, ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	return d.StreamARN
}

func put(t *testing.T, rn *runnel.Runnel, streamName string, data ...string) {
	t.Helper()
	var entries []stream.PutRecordsRequestEntry
	for _, d := range data {
		entries = append(entries, stream.PutRecordsRequestEntry{Data: []byte(d), PartitionKey: "k"})
	}
	out, err := rn.Streams.PutRecords(context.Background(), streamName, entries)
	if err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("put: %v %+v", err, out)
	}
}

func createMapping(t *testing.T, rn *runnel.Runnel, cfg mapping.Config) string {
	t.Helper()
	cfg.StartingPosition = mapping.TrimHorizon
	m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m.UUID
}

func createQueue(t *testing.T, rn *runnel.Runnel, name string, attrs map[string]string) string {
	t.Helper()
	u, err := rn.Queues.CreateQueue(context.Background(), name, attrs)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func send(t *testing.T, rn *runnel.Runnel, url string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := rn.Queues.SendMessage(context.Background(), url, queue.SendMessageInput{MessageBody: fmt.Sprintf("m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
}

// drain receives and deletes every visible message of a queue.
func drain(t *testing.T, rn *runnel.Runnel, url string) {
	t.Helper()
	ctx := context.Background()
	for {
		msgs, err := rn.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 0 {
			return
		}
		for _, m := range msgs {
			if err := rn.Queues.DeleteMessage(ctx, url, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// gate is a handler switch: closed lets invocations through.
type gate struct {
	mu sync.Mutex
	ch chan struct{}
}

func newGate() *gate { return &gate{ch: make(chan struct{})} }

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-g.ch:
	default:
		close(g.ch)
	}
}

func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.ch
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ptr[T any](v T) *T { return &v }
