package mapping_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// recorder is a function that records every invocation (the data of each
// record, as strings) and answers with behave.
type recorder struct {
	mu      sync.Mutex
	calls   [][]string
	events  []events.KinesisEvent
	ok      map[string]int // data -> times processed successfully
	behave  func(ev events.KinesisEvent) (events.KinesisEventResponse, error)
	name    string
	handler string
}

var handlerSeq struct {
	sync.Mutex
	n int
}

// newRecorder registers a fresh handler and creates a function using it.
func newRecorder(t *testing.T, rn *runnel.Runnel, cfg function.Config, behave func(ev events.KinesisEvent) (events.KinesisEventResponse, error)) *recorder {
	t.Helper()
	handlerSeq.Lock()
	handlerSeq.n++
	name := fmt.Sprintf("rec-%d", handlerSeq.n)
	handlerSeq.Unlock()
	r := &recorder{behave: behave, ok: map[string]int{}, handler: name}
	function.Register(name, function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		var ids []string
		for _, rec := range ev.Records {
			ids = append(ids, string(rec.Kinesis.Data))
		}
		r.mu.Lock()
		r.calls = append(r.calls, ids)
		r.events = append(r.events, ev)
		r.mu.Unlock()
		var resp events.KinesisEventResponse
		var err error
		if r.behave != nil {
			resp, err = r.behave(ev)
		}
		if err == nil {
			failed := map[string]bool{}
			for _, f := range resp.BatchItemFailures {
				failed[f.ItemIdentifier] = true
			}
			r.mu.Lock()
			low := ""
			for _, rec := range ev.Records {
				if failed[rec.Kinesis.SequenceNumber] {
					low = rec.Kinesis.SequenceNumber
					break
				}
			}
			for _, rec := range ev.Records {
				if low != "" && rec.Kinesis.SequenceNumber == low {
					break
				}
				r.ok[string(rec.Kinesis.Data)]++
			}
			r.mu.Unlock()
		}
		return resp, err
	}))
	if cfg.FunctionName == "" {
		cfg.FunctionName = name
	}
	cfg.Handler = name
	if _, err := rn.Functions.CreateFunction(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	r.name = cfg.FunctionName
	return r
}

func (r *recorder) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.calls))
	for i, c := range r.calls {
		out[i] = strings.Join(c, "")
	}
	return out
}

func (r *recorder) processed() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ok)
}

func (r *recorder) processedCount(data string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ok[data]
}

// createStream makes a stream with n shards.
func createStream(t *testing.T, rn *runnel.Runnel, name string, shards int) string {
	t.Helper()
	d, err := rn.Streams.CreateStream(context.Background(), stream.CreateStreamInput{StreamName: name, ShardCount: shards})
	if err != nil {
		t.Fatal(err)
	}
	return d.StreamARN
}

// put puts records with the given data, all with partition key pk, in one
// PutRecords call, and returns their sequence numbers.
func put(t *testing.T, rn *runnel.Runnel, streamName, pk string, data ...string) []string {
	t.Helper()
	var entries []stream.PutRecordsRequestEntry
	for _, d := range data {
		entries = append(entries, stream.PutRecordsRequestEntry{Data: []byte(d), PartitionKey: pk})
	}
	out, err := rn.Streams.PutRecords(context.Background(), streamName, entries)
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedRecordCount != 0 {
		t.Fatalf("put: %d failed: %+v", out.FailedRecordCount, out.Records)
	}
	var seqs []string
	for _, r := range out.Records {
		seqs = append(seqs, r.SequenceNumber)
	}
	return seqs
}

func ptr[T any](v T) *T { return &v }

func createMapping(t *testing.T, rn *runnel.Runnel, cfg mapping.Config) *mapping.Config {
	t.Helper()
	if cfg.StartingPosition == "" {
		cfg.StartingPosition = mapping.TrimHorizon
	}
	if cfg.MaximumBatchingWindowInSeconds == 0 {
		// Tests put their records before the mapping starts; a window that
		// closes when BatchSize records are there makes batches exact.
		cfg.MaximumBatchingWindowInSeconds = 1
	}
	m, err := rn.Mappings.CreateEventSourceMapping(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// readAll reads every record of a stream's shards from TRIM_HORIZON.
func readAll(t *testing.T, rn *runnel.Runnel, streamName string) []stream.Record {
	t.Helper()
	ctx := context.Background()
	shards, err := rn.Streams.ListShards(ctx, streamName)
	if err != nil {
		t.Fatal(err)
	}
	var out []stream.Record
	for _, sh := range shards {
		it, err := rn.Streams.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: streamName, ShardID: sh.ShardID, ShardIteratorType: stream.TrimHorizon})
		if err != nil {
			t.Fatal(err)
		}
		res, err := rn.Streams.GetRecords(ctx, it, 0)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, res.Records...)
	}
	return out
}

const wait = 20 * time.Second

var _ = testenv.Start
