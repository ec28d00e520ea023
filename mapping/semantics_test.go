package mapping_test

// The Lambda-semantics suite: one test per rule of
// https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html and
// services-kinesis-batchfailurereporting.html, run against the real engine
// (embedded JetStream). Names read as the AWS rule they check.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

var errBoom = errors.New("boom")

// failOn fails any batch holding one of the given data values.
func failOn(data ...string) func(events.KinesisEvent) (events.KinesisEventResponse, error) {
	return func(ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		for _, r := range ev.Records {
			for _, d := range data {
				if string(r.Kinesis.Data) == d {
					return events.KinesisEventResponse{}, errBoom
				}
			}
		}
		return events.KinesisEventResponse{}, nil
	}
}

func failures(t *testing.T, rn *runnel.Runnel, streamName string) []wire.OnFailureRecord {
	t.Helper()
	var out []wire.OnFailureRecord
	for _, r := range readAll(t, rn, streamName) {
		var f wire.OnFailureRecord
		if err := json.Unmarshal(r.Data, &f); err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

func withDestination(arn string) *mapping.DestinationConfig {
	return &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: arn}}
}

// settle waits until the mapping has resolved everything it read: every
// shard's checkpoint has reached the end of the shard.
func settle(t *testing.T, rn *runnel.Runnel, uuid, streamName string) {
	t.Helper()
	testenv.Eventually(t, wait, "mapping caught up", func() bool { return caughtUp(t, rn, uuid, streamName) })
}

// caughtUp reports whether every shard's checkpoint is at its end.
func caughtUp(t *testing.T, rn *runnel.Runnel, uuid, streamName string) bool {
	ctx := context.Background()
	st, err := rn.Mappings.Status(uuid)
	if err != nil {
		t.Fatal(err)
	}
	for _, sh := range st.Shards {
		_, last, _ := rn.Streams.ShardBounds(ctx, streamName, sh.ShardID)
		if want, _ := rn.Streams.SequenceNumber(ctx, streamName, sh.ShardID, last+1); sh.Checkpoint != want {
			return false
		}
	}
	return len(st.Shards) > 0
}

func TestBisectBatchOnFunctionError(t *testing.T) {
	cases := []struct {
		name        string
		failing     []string
		retries     int
		wantCalls   []string
		wantFailed  []string // data of records sent to the destination, one per on-failure record
		wantInvokes []int    // approximateInvokeCount of each on-failure record
	}{
		{
			name:        "the whitepaper's example: every record failing with MaximumRetryAttempts 0 invokes 12345, 123, 45, 12, 3, 1, 2, 4, 5",
			failing:     []string{"1", "2", "3", "4", "5"},
			retries:     0,
			wantCalls:   []string{"12345", "123", "45", "12", "3", "1", "2", "4", "5"},
			wantFailed:  []string{"1", "2", "3", "4", "5"},
			wantInvokes: []int{4, 4, 3, 3, 3},
		},
		{
			name:        "splitting does not consume the retry quota: a poison record alone is retried MaximumRetryAttempts times",
			failing:     []string{"3"},
			retries:     2,
			wantCalls:   []string{"12345", "123", "45", "12", "3", "3", "3"},
			wantFailed:  []string{"3"},
			wantInvokes: []int{5},
		},
		{
			name:      "a batch whose halves both succeed loses nothing",
			failing:   nil,
			retries:   0,
			wantCalls: []string{"12345"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rn := testenv.Start(t, testenv.Options{})
			arn := createStream(t, rn, "src", 1)
			dest := createStream(t, rn, "failed", 1)
			put(t, rn, "src", "k", "1", "2", "3", "4", "5")
			r := newRecorder(t, rn, function.Config{}, failOn(tc.failing...))
			m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 5,
				MaximumRetryAttempts: ptr(tc.retries), BisectBatchOnFunctionError: true, DestinationConfig: withDestination(dest)})
			settle(t, rn, m.UUID, "src")
			if got := r.Calls(); !reflect.DeepEqual(got, tc.wantCalls) {
				t.Fatalf("invocations = %v, want %v", got, tc.wantCalls)
			}
			fs := failures(t, rn, "failed")
			var gotFailed []string
			var gotInvokes []int
			recs := readAll(t, rn, "src")
			for _, f := range fs {
				if f.KinesisBatchInfo.BatchSize != 1 || f.KinesisBatchInfo.StartSequenceNumber != f.KinesisBatchInfo.EndSequenceNumber {
					t.Fatalf("on-failure record %+v does not point at one record", f.KinesisBatchInfo)
				}
				for _, rec := range recs {
					if rec.SequenceNumber == f.KinesisBatchInfo.StartSequenceNumber {
						gotFailed = append(gotFailed, string(rec.Data))
					}
				}
				gotInvokes = append(gotInvokes, f.RequestContext.ApproximateInvokeCount)
				if f.RequestContext.Condition != mapping.ConditionRetryAttemptsExhausted {
					t.Fatalf("condition %q", f.RequestContext.Condition)
				}
			}
			if !reflect.DeepEqual(gotFailed, tc.wantFailed) || !reflect.DeepEqual(gotInvokes, tc.wantInvokes) {
				t.Fatalf("sent to destination %v (invoke counts %v), want %v (%v)", gotFailed, gotInvokes, tc.wantFailed, tc.wantInvokes)
			}
			for _, d := range []string{"1", "2", "3", "4", "5"} {
				want := 1
				if contains(tc.wantFailed, d) {
					want = 0
				}
				if got := r.processedCount(d); got != want {
					t.Fatalf("record %s processed %d times, want %d", d, got, want)
				}
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestRetryAttempts(t *testing.T) {
	t.Run("without bisect a failing batch is retried MaximumRetryAttempts times then discarded whole", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{})
		arn := createStream(t, rn, "src", 1)
		dest := createStream(t, rn, "failed", 1)
		seqs := put(t, rn, "src", "k", "1", "2", "3")
		put(t, rn, "src", "k", "4")
		r := newRecorder(t, rn, function.Config{}, failOn("2"))
		m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 3,
			MaximumRetryAttempts: ptr(2), DestinationConfig: withDestination(dest)})
		settle(t, rn, m.UUID, "src")
		if got, want := r.Calls(), []string{"123", "123", "123", "4"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("invocations = %v, want %v", got, want)
		}
		fs := failures(t, rn, "failed")
		if len(fs) != 1 {
			t.Fatalf("%d on-failure records, want 1", len(fs))
		}
		bi := fs[0].KinesisBatchInfo
		if bi.BatchSize != 3 || bi.StartSequenceNumber != seqs[0] || bi.EndSequenceNumber != seqs[2] || bi.ShardID != "shardId-000000000000" || bi.StreamArn != arn {
			t.Fatalf("KinesisBatchInfo = %+v", bi)
		}
		if fs[0].RequestContext.ApproximateInvokeCount != 3 || fs[0].ResponseContext.FunctionError != "Unhandled" || fs[0].RequestContext.Condition != "RetryAttemptsExhausted" {
			t.Fatalf("context = %+v %+v", fs[0].RequestContext, fs[0].ResponseContext)
		}
	})
	t.Run("a transient error is retried and each record is processed once", func(t *testing.T) {
		rn := testenv.Start(t, testenv.Options{})
		arn := createStream(t, rn, "src", 1)
		var n atomic.Int32
		r := newRecorder(t, rn, function.Config{}, func(events.KinesisEvent) (events.KinesisEventResponse, error) {
			if n.Add(1) <= 2 {
				return events.KinesisEventResponse{}, errBoom
			}
			return events.KinesisEventResponse{}, nil
		})
		put(t, rn, "src", "k", "a", "b")
		m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 2})
		settle(t, rn, m.UUID, "src")
		if got, want := r.Calls(), []string{"ab", "ab", "ab"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("invocations = %v, want %v", got, want)
		}
		if r.processedCount("a") != 1 || r.processedCount("b") != 1 {
			t.Fatal("records not processed exactly once")
		}
	})
}

func TestReportBatchItemFailures(t *testing.T) {
	// reply answers the first invocation with resp (by data, mapped to
	// sequence numbers) and every later one with success.
	type step struct {
		failData []string // itemIdentifiers to report, by record data; "" = empty id, "?" = unknown id
	}
	cases := []struct {
		name      string
		rbif      bool
		bisect    bool
		first     step
		wantCalls []string
	}{
		{"the checkpoint is the lowest failed sequence number: later good records are delivered again", true, false, step{[]string{"3"}}, []string{"12345", "345"}},
		{"with several failures the lowest sequence number wins", true, false, step{[]string{"4", "2"}}, []string{"12345", "2345"}},
		{"an empty batchItemFailures list means success", true, false, step{[]string{}}, []string{"12345"}},
		{"an empty itemIdentifier fails the whole batch", true, false, step{[]string{""}}, []string{"12345", "12345"}},
		{"an unknown itemIdentifier fails the whole batch", true, false, step{[]string{"?"}}, []string{"12345", "12345"}},
		{"batchItemFailures are ignored without FunctionResponseTypes", false, false, step{[]string{"3"}}, []string{"12345"}},
		{"with bisect a partial failure splits the batch at the returned sequence number", true, true, step{[]string{"3"}}, []string{"12345", "345"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rn := testenv.Start(t, testenv.Options{})
			arn := createStream(t, rn, "src", 1)
			put(t, rn, "src", "k", "1", "2", "3", "4", "5")
			var calls atomic.Int32
			r := newRecorder(t, rn, function.Config{}, func(ev events.KinesisEvent) (events.KinesisEventResponse, error) {
				var resp events.KinesisEventResponse
				if calls.Add(1) > 1 {
					return resp, nil
				}
				resp.BatchItemFailures = []events.KinesisBatchItemFailure{}
				for _, d := range tc.first.failData {
					id := ""
					switch d {
					case "":
					case "?":
						id = "12345678901234567890123456789"
					default:
						for _, rec := range ev.Records {
							if string(rec.Kinesis.Data) == d {
								id = rec.Kinesis.SequenceNumber
							}
						}
					}
					resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: id})
				}
				return resp, nil
			})
			cfg := mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 5, BisectBatchOnFunctionError: tc.bisect}
			if tc.rbif {
				cfg.FunctionResponseTypes = []string{mapping.ReportBatchItemFailures}
			}
			m := createMapping(t, rn, cfg)
			settle(t, rn, m.UUID, "src")
			if got := r.Calls(); !reflect.DeepEqual(got, tc.wantCalls) {
				t.Fatalf("invocations = %v, want %v", got, tc.wantCalls)
			}
		})
	}
}

// rawFunction registers a raw (JSON) handler that returns payload on its
// first invocation and null afterwards.
func TestReportBatchItemFailuresRawResponses(t *testing.T) {
	cases := []struct {
		name      string
		payload   string
		wantCalls []string
	}{
		{"a null response means success", `null`, []string{"12"}},
		{"an empty object means success", `{}`, []string{"12"}},
		{"null batchItemFailures means success", `{"batchItemFailures":null}`, []string{"12"}},
		{"a bad key name fails the whole batch", `{"batchItemFailures":[{"itemId":"1"}]}`, []string{"12", "12"}},
		{"a null itemIdentifier fails the whole batch", `{"batchItemFailures":[{"itemIdentifier":null}]}`, []string{"12", "12"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rn := testenv.Start(t, testenv.Options{})
			arn := createStream(t, rn, "src", 1)
			put(t, rn, "src", "k", "1", "2")
			var mu sync.Mutex
			var calls []string
			name := fmt.Sprintf("raw-%d", i)
			function.Register(name, func(ctx context.Context, ev events.KinesisEvent) (json.RawMessage, error) {
				mu.Lock()
				defer mu.Unlock()
				s := ""
				for _, r := range ev.Records {
					s += string(r.Kinesis.Data)
				}
				calls = append(calls, s)
				if len(calls) == 1 {
					return json.RawMessage(tc.payload), nil
				}
				return json.RawMessage(`null`), nil
			})
			if _, err := rn.Functions.CreateFunction(context.Background(), function.Config{FunctionName: name, Handler: name}); err != nil {
				t.Fatal(err)
			}
			m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: name, BatchSize: 2, FunctionResponseTypes: []string{"ReportBatchItemFailures"}})
			settle(t, rn, m.UUID, "src")
			mu.Lock()
			defer mu.Unlock()
			if !reflect.DeepEqual(calls, tc.wantCalls) {
				t.Fatalf("invocations = %v, want %v", calls, tc.wantCalls)
			}
		})
	}
}

func TestMaximumRecordAge(t *testing.T) {
	t.Run("records older than MaximumRecordAgeInSeconds are discarded with condition RecordAgeExceeded", func(t *testing.T) {
		clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		arn := createStream(t, rn, "src", 1)
		dest := createStream(t, rn, "failed", 1)
		old := put(t, rn, "src", "k", "o1", "o2", "o3")
		clock.Advance(120 * time.Second)
		put(t, rn, "src", "k", "n1", "n2")
		r := newRecorder(t, rn, function.Config{}, nil)
		m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 5,
			MaximumRecordAgeInSeconds: ptr(60), DestinationConfig: withDestination(dest)})
		settle(t, rn, m.UUID, "src")
		if got, want := r.Calls(), []string{"n1n2"}; !reflect.DeepEqual(got, want) {
			t.Fatalf("invocations = %v, want %v", got, want)
		}
		fs := failures(t, rn, "failed")
		if len(fs) != 1 {
			t.Fatalf("%d on-failure records, want 1", len(fs))
		}
		f := fs[0]
		if f.RequestContext.Condition != mapping.ConditionRecordAgeExceeded || f.RequestContext.ApproximateInvokeCount != 0 ||
			f.KinesisBatchInfo.BatchSize != 3 || f.KinesisBatchInfo.StartSequenceNumber != old[0] || f.KinesisBatchInfo.EndSequenceNumber != old[2] {
			t.Fatalf("on-failure record = %+v %+v", f.RequestContext, f.KinesisBatchInfo)
		}
		if f.KinesisBatchInfo.ApproximateArrivalOfFirstRecord != "2026-01-01T00:00:00.000Z" {
			t.Fatalf("arrival of first = %s", f.KinesisBatchInfo.ApproximateArrivalOfFirstRecord)
		}
	})
	t.Run("record age is checked again before each retry", func(t *testing.T) {
		clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		arn := createStream(t, rn, "src", 1)
		dest := createStream(t, rn, "failed", 1)
		put(t, rn, "src", "k", "a", "b")
		r := newRecorder(t, rn, function.Config{}, func(events.KinesisEvent) (events.KinesisEventResponse, error) {
			clock.Advance(61 * time.Second) // the invocation takes longer than the record may age
			return events.KinesisEventResponse{}, errBoom
		})
		m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 2,
			MaximumRecordAgeInSeconds: ptr(60), DestinationConfig: withDestination(dest)})
		settle(t, rn, m.UUID, "src")
		if got := r.Calls(); !reflect.DeepEqual(got, []string{"ab"}) {
			t.Fatalf("invocations = %v, want [ab]", got)
		}
		fs := failures(t, rn, "failed")
		if len(fs) != 1 || fs[0].RequestContext.Condition != mapping.ConditionRecordAgeExceeded || fs[0].RequestContext.ApproximateInvokeCount != 1 || fs[0].ResponseContext.FunctionError != "Unhandled" {
			t.Fatalf("on-failure records = %+v", fs)
		}
	})
}

// TestAnOnFailureRecordNamesTheVersionThatRan: a mapping on a published
// version writes on-failure records whose executedVersion is that
// version. (Every record said $LATEST.)
func TestAnOnFailureRecordNamesTheVersionThatRan(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 1)
	dest := createStream(t, rn, "failed", 1)
	put(t, rn, "src", "k", "x")
	r := newRecorder(t, rn, function.Config{}, failOn("x"))
	if _, err := rn.Functions.PublishVersion(context.Background(), r.name, nil); err != nil {
		t.Fatal(err)
	}
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name + ":1", BatchSize: 1, MaximumRetryAttempts: ptr(0), DestinationConfig: withDestination(dest)})
	settle(t, rn, m.UUID, "src")
	fs := failures(t, rn, "failed")
	if len(fs) != 1 || fs[0].ResponseContext.ExecutedVersion != "1" {
		t.Fatalf("on-failure records %+v, want one with executedVersion 1", fs)
	}
}

// TestARecordThatAlwaysFailsIsDiscardedWhenItLeavesTheStream: with the
// defaults (MaximumRetryAttempts and MaximumRecordAgeInSeconds -1) Lambda
// retries a failing record until it expires from the stream, then the
// shard moves on. The batch keeps its records in memory, so a record
// retried from there past the stream's 24 h retention must be discarded
// then (RecordAgeExceeded, to the destination), and the record behind it
// processed: it used to be retried for ever, and its shard never moved.
func TestARecordThatAlwaysFailsIsDiscardedWhenItLeavesTheStream(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock, Mappings: mapping.Options{RetryBaseDelay: -1}})
	arn := createStream(t, rn, "src", 1)
	dest := createStream(t, rn, "failed", 1)
	poison := put(t, rn, "src", "k", "poison")
	var calls atomic.Int32
	r := newRecorder(t, rn, function.Config{}, func(ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		if string(ev.Records[0].Kinesis.Data) != "poison" {
			return events.KinesisEventResponse{}, nil
		}
		if calls.Add(1) > 5 {
			return events.KinesisEventResponse{}, errBoom // retried past its expiry: the rule is broken
		}
		clock.Advance(13 * time.Hour) // each attempt takes 13 h of the record's 24
		if calls.Load() == 1 {
			put(t, rn, "src", "k", "good")
		}
		return events.KinesisEventResponse{}, errBoom
	})
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1, DestinationConfig: withDestination(dest)})
	settle(t, rn, m.UUID, "src")
	if got, want := r.Calls(), []string{"poison", "poison", "good"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("invocations = %v, want %v", got, want)
	}
	fs := failures(t, rn, "failed")
	if len(fs) != 1 || fs[0].RequestContext.Condition != mapping.ConditionRecordAgeExceeded || fs[0].RequestContext.ApproximateInvokeCount != 2 ||
		fs[0].KinesisBatchInfo.StartSequenceNumber != poison[0] {
		t.Fatalf("on-failure records = %+v, want one RecordAgeExceeded for the poison record after 2 invocations", fs)
	}
}

// putToShard puts records with an explicit hash key so they land on the
// first (lo=true) or last shard.
func putToShard(t *testing.T, rn *runnel.Runnel, streamName string, first bool, data ...string) {
	t.Helper()
	ehk := "0"
	if !first {
		ehk = "340282366920938463463374607431768211455"
	}
	var entries []stream.PutRecordsRequestEntry
	for _, d := range data {
		entries = append(entries, stream.PutRecordsRequestEntry{Data: []byte(d), PartitionKey: "k-" + d, ExplicitHashKey: ehk})
	}
	if _, err := rn.Streams.PutRecords(context.Background(), streamName, entries); err != nil {
		t.Fatal(err)
	}
}

func TestPoisonRecordBlocksOnlyItsShard(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 2)
	putToShard(t, rn, "src", true, "a1", "poison", "a3")
	putToShard(t, rn, "src", false, "b1", "b2", "b3")
	r := newRecorder(t, rn, function.Config{}, failOn("poison"))
	// Default settings: MaximumRetryAttempts -1, no bisect, no destination.
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1})
	testenv.Eventually(t, wait, "other shard processed and poison retried", func() bool {
		return r.processedCount("b3") == 1 && len(r.Calls()) > 10
	})
	putToShard(t, rn, "src", false, "b4")
	testenv.Eventually(t, wait, "the other shard goes on", func() bool { return r.processedCount("b4") == 1 })
	if r.processedCount("a1") != 1 || r.processedCount("a3") != 0 {
		t.Fatalf("a1 processed %d (want 1), a3 processed %d (want 0: behind the poison record)", r.processedCount("a1"), r.processedCount("a3"))
	}
	st, _ := rn.Mappings.Status(m.UUID)
	blocked := st.Shards[0]
	if blocked.LastProcessingResult != "PROBLEM: Function call failed" || blocked.Retries < 5 || blocked.DiscardedRecords != 0 {
		t.Fatalf("blocked shard status = %+v", blocked)
	}
	if st.Shards[1].LastProcessingResult != "OK" {
		t.Fatalf("other shard status = %+v", st.Shards[1])
	}
}

func TestDiscardWithoutDestinationIsLoggedAndCounted(t *testing.T) {
	var logs testenv.LogBuffer
	rn, err := runnel.Open(context.Background(), runnel.Config{
		Engine:            engine.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewJSONHandler(&logs, nil))},
		Mappings:          mapping.Options{RetryBaseDelay: -1},
		RetentionInterval: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()
	arn := createStream(t, rn, "src", 1)
	seqs := put(t, rn, "src", "k", "x", "y")
	r := newRecorder(t, rn, function.Config{}, failOn("x"))
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 2, MaximumRetryAttempts: ptr(0), BisectBatchOnFunctionError: true})
	settle(t, rn, m.UUID, "src")
	st, _ := rn.Mappings.Status(m.UUID)
	if st.Shards[0].DiscardedRecords != 1 || rn.Mappings.DiscardedRecords() != 1 {
		t.Fatalf("discarded = %d / %d, want 1", st.Shards[0].DiscardedRecords, rn.Mappings.DiscardedRecords())
	}
	var found bool
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "no on-failure destination") {
			var e map[string]any
			json.Unmarshal([]byte(line), &e)
			if e["shard"] == "shardId-000000000000" && e["startSequenceNumber"] == seqs[0] && e["endSequenceNumber"] == seqs[0] && e["condition"] == "RetryAttemptsExhausted" {
				found = true
			}
		}
	}
	if !found {
		t.Fatalf("no log line naming shard and sequence number of the discarded record; logs:\n%s", logs.String())
	}
	if r.processedCount("y") != 1 {
		t.Fatal("the good record was not processed")
	}
}

func TestOnFailureRecordHasAWSShape(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 1)
	dest := createStream(t, rn, "failed", 1)
	put(t, rn, "src", "k", "x")
	r := newRecorder(t, rn, function.Config{}, failOn("x"))
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1, MaximumRetryAttempts: ptr(0), DestinationConfig: withDestination(dest)})
	settle(t, rn, m.UUID, "src")
	recs := readAll(t, rn, "failed")
	if len(recs) != 1 {
		t.Fatalf("%d records in destination", len(recs))
	}
	var got map[string]any
	if err := json.Unmarshal(recs[0].Data, &got); err != nil {
		t.Fatal(err)
	}
	// The shape of SPEC 1.5 / the AWS docs' example, key by key.
	want := map[string][]string{
		"":                 {"KinesisBatchInfo", "requestContext", "responseContext", "timestamp", "version"},
		"requestContext":   {"approximateInvokeCount", "condition", "functionArn", "requestId"},
		"responseContext":  {"executedVersion", "functionError", "statusCode"},
		"KinesisBatchInfo": {"approximateArrivalOfFirstRecord", "approximateArrivalOfLastRecord", "batchSize", "endSequenceNumber", "shardId", "startSequenceNumber", "streamArn"},
	}
	for k, keys := range want {
		obj := got
		if k != "" {
			obj = got[k].(map[string]any)
		}
		var have []string
		for kk := range obj {
			have = append(have, kk)
		}
		sort.Strings(have)
		if !reflect.DeepEqual(have, keys) {
			t.Fatalf("%q keys = %v, want %v", k, have, keys)
		}
	}
	rc := got["requestContext"].(map[string]any)
	if rc["functionArn"] != "arn:aws:lambda:us-east-1:000000000000:function:"+r.name || rc["approximateInvokeCount"] != 1.0 || rc["requestId"] == "" {
		t.Fatalf("requestContext = %v", rc)
	}
	resp := got["responseContext"].(map[string]any)
	if resp["statusCode"] != 200.0 || resp["executedVersion"] != "$LATEST" || resp["functionError"] != "Unhandled" {
		t.Fatalf("responseContext = %v", resp)
	}
	if got["version"] != "1.0" {
		t.Fatalf("version = %v", got["version"])
	}
	if _, err := time.Parse("2006-01-02T15:04:05.000Z", got["timestamp"].(string)); err != nil {
		t.Fatalf("timestamp %v: %v", got["timestamp"], err)
	}
}

func TestEventHasAWSShape(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "simple-stream", 1)
	seqs := put(t, rn, "simple-stream", "s1", "Hello World")
	r := newRecorder(t, rn, function.Config{}, nil)
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 1})
	settle(t, rn, m.UUID, "simple-stream")
	r.mu.Lock()
	got, _ := json.Marshal(r.events[0])
	r.mu.Unlock()
	sample, err := os.ReadFile("testdata/kinesis-event.json") // from aws-lambda-go events/testdata
	if err != nil {
		t.Fatal(err)
	}
	var g, w map[string]any
	json.Unmarshal(got, &g)
	json.Unmarshal(sample, &w)
	if !reflect.DeepEqual(keyShape(g), keyShape(w)) {
		t.Fatalf("event shape differs from aws-lambda-go's kinesis-event.json:\n got %v\nwant %v", keyShape(g), keyShape(w))
	}
	rec := g["Records"].([]any)[0].(map[string]any)
	k := rec["kinesis"].(map[string]any)
	if rec["eventID"] != "shardId-000000000000:"+seqs[0] || rec["eventSource"] != "aws:kinesis" || rec["eventName"] != "aws:kinesis:record" ||
		rec["eventSourceARN"] != arn || k["data"] != "SGVsbG8gV29ybGQ=" || k["partitionKey"] != "s1" || k["kinesisSchemaVersion"] != "1.0" {
		t.Fatalf("record = %v", rec)
	}
	if _, ok := k["approximateArrivalTimestamp"].(float64); !ok {
		t.Fatalf("approximateArrivalTimestamp is not a number: %v", k["approximateArrivalTimestamp"])
	}
}

// keyShape replaces leaves by their JSON kind, keeping the keys.
func keyShape(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, vv := range x {
			out[k] = keyShape(vv)
		}
		return out
	case []any:
		if len(x) == 0 {
			return []any{}
		}
		return []any{keyShape(x[0])}
	case string:
		return "string"
	case float64:
		return "number"
	default:
		return fmt.Sprintf("%T", v)
	}
}
