package mapping_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// Per-shard leases (issue 13): each shard of a stream mapping is its own
// lease, "esm.<uuid>.<shardId>", and the shards are balanced by count.

// twoNodesOnFourShards starts process A (its server listens) with a
// 4-shard stream "src" and a TRIM_HORIZON mapping of it, then process B,
// and waits until each holds two of the shards.
func twoNodesOnFourShards(t *testing.T) (a, b *runnel.Runnel, r *recorder, m *mapping.Config) {
	t.Helper()
	a = startNode(t, "")
	arn := createStream(t, a, "src", 4)
	r = newRecorder(t, a, function.Config{}, nil)
	m = createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	b = startNode(t, a.Engine.ClientURL())
	testenv.Eventually(t, 10*balanceWait, "two shards on each process", func() bool {
		h := unitHolders(t, a, m.UUID)
		return len(h[node(t, a)]) == 2 && len(h[node(t, b)]) == 2
	})
	return a, b, r, m
}

// stopB stops process b by stop (Close or Crash), requires b to hold
// still left of mapping m's shards right after (0 after a clean Close:
// released; its 2 after a crash: they live until their TTL), then waits
// up to within for a to run all four.
func stopB(t *testing.T, a, b *runnel.Runnel, m *mapping.Config, stop func(), left int, within time.Duration) {
	t.Helper()
	nb := node(t, b)
	stop()
	if h := unitHolders(t, a, m.UUID); len(h[nb]) != left {
		t.Fatalf("right after it stopped, the stopped process holds shards %v; want %d of them", h[nb], left)
	}
	testenv.Eventually(t, within, "the other process runs all four shards", func() bool {
		return len(unitHolders(t, a, m.UUID)[node(t, a)]) == 4
	})
}

// putKeys puts n records "<prefix><i>" under n partition keys, so that
// every shard gets some.
func putKeys(t *testing.T, rn *runnel.Runnel, prefix string, n int) {
	t.Helper()
	for i := range n {
		put(t, rn, "src", fmt.Sprintf("key-%d", i), fmt.Sprintf("%s%d", prefix, i))
	}
}

// processedOnce requires every record "<prefix><i>", i < n, of each
// prefix to have been processed by exactly one successful invocation.
func processedOnce(t *testing.T, r *recorder, n int, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		for i := range n {
			if c := r.processedCount(fmt.Sprintf("%s%d", p, i)); c != 1 {
				t.Errorf("record %s%d processed %d times, want once", p, i, c)
			}
		}
	}
}

// With two processes and a 4-shard stream mapping, each process runs two
// shards (shares balanced by count), and the status says which node runs
// which shard.
func TestAMappingsShardsAreSharedByCount(t *testing.T) {
	a, b, r, m := twoNodesOnFourShards(t)
	putKeys(t, b, "r", 200)
	testenv.Eventually(t, wait, "every record processed", func() bool { return r.processed() == 200 })
	processedOnce(t, r, 200, "r")
	na, nb := node(t, a), node(t, b)
	testenv.Eventually(t, wait, "the status names each shard's node", func() bool {
		st, err := a.Mappings.Status(m.UUID)
		if err != nil {
			return false
		}
		on := map[string]int{}
		for _, ss := range st.Shards {
			on[ss.Node]++
		}
		return len(st.Shards) == 4 && on[na] == 2 && on[nb] == 2
	})
	for _, rn := range []*runnel.Runnel{a, b} {
		st, err := rn.Mappings.Status(m.UUID)
		if err != nil {
			t.Fatal(err)
		}
		var processed int64
		for _, ss := range st.Shards {
			if ss.Node == node(t, rn) {
				processed += ss.ProcessedRecords
			}
		}
		if processed == 0 {
			t.Errorf("process %s processed no record of its own shards: %+v", node(t, rn), st.Shards)
		}
	}
}

// A process closed cleanly hands its shards over at once: its leases are
// released by the time Close returns (a crash leaves them to expire), the
// other process takes them, and no record is lost or processed twice.
func TestAClosedProcessHandsItsShardsOverAtOnce(t *testing.T) {
	a, b, r, m := twoNodesOnFourShards(t)
	putKeys(t, a, "x", 100)
	testenv.Eventually(t, wait, "first records processed", func() bool { return r.processed() == 100 })
	stopB(t, a, b, m, func() { b.Close() }, 0, 2*lease.DefaultTTL)
	putKeys(t, a, "y", 100)
	testenv.Eventually(t, wait, "records processed after the handover", func() bool { return r.processed() == 200 })
	processedOnce(t, r, 100, "x", "y")
}

// A process that crashes keeps its leases until they expire (lease TTL);
// then the other process takes its shards and every record is processed.
func TestACrashedProcessesShardsMoveAfterTheLeaseTTL(t *testing.T) {
	a, b, r, m := twoNodesOnFourShards(t)
	putKeys(t, a, "x", 100)
	stopB(t, a, b, m, b.Crash, 2, 3*lease.DefaultTTL)
	putKeys(t, a, "y", 100)
	testenv.Eventually(t, wait, "every record processed", func() bool { return r.processed() == 200 })
	for _, p := range []string{"x", "y"} {
		for i := range 100 {
			if c := r.processedCount(fmt.Sprintf("%s%d", p, i)); c < 1 {
				t.Errorf("record %s%d lost", p, i)
			}
		}
	}
}

// After a SplitShard, each child shard is a lease of its own, run by
// whichever process holds it, and only once its parent is processed to
// its end (wherever the parent ran): a partition key's records stay in
// order across the reshard.
func TestAChildShardRunsWhereItIsHeldOnlyAfterItsParent(t *testing.T) {
	a := startNode(t, "")
	ctx := t.Context()
	arn := createStream(t, a, "lineage", 2)
	var release atomic.Bool
	sink := newOrderedSink(t, a, "lineage-fn", 0)
	sink.block = func(ev events.KinesisEvent) error {
		for _, r := range ev.Records {
			if strings.HasSuffix(string(r.Kinesis.Data), "/1") && !release.Load() && strings.HasPrefix(r.EventID, stream.ShardID(0)) {
				return errors.New("not yet") // the parent's first records wait
			}
		}
		return nil
	}
	m := startMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: "lineage-fn", BatchSize: 10})
	b := startNode(t, a.Engine.ClientURL())
	keys := make([]string, 20)
	for i := range keys {
		keys[i] = fmt.Sprintf("k%d", i)
		put(t, a, "lineage", keys[i], keys[i]+"/1")
	}
	d, err := a.Streams.DescribeStream(ctx, "lineage")
	if err != nil {
		t.Fatal(err)
	}
	lo, _ := new(big.Int).SetString(d.Shards[0].HashKeyRange.StartingHashKey, 10)
	hi, _ := new(big.Int).SetString(d.Shards[0].HashKeyRange.EndingHashKey, 10)
	mid := new(big.Int).Add(lo, new(big.Int).Rsh(new(big.Int).Sub(hi, lo), 1))
	if _, err := a.Streams.SplitShard(ctx, "lineage", stream.ShardID(0), mid.String()); err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		put(t, b, "lineage", k, k+"/2")
	}
	// Four units (the unfinished parent, the other shard, two children):
	// two on each process, so the children run wherever they are held.
	children := []string{stream.ShardID(2), stream.ShardID(3)}
	testenv.Eventually(t, 10*balanceWait, "the four shards spread over both processes", func() bool {
		h := unitHolders(t, a, m.UUID)
		return len(h[node(t, a)]) == 2 && len(h[node(t, b)]) == 2
	})
	parentOn, elsewhere := "", 0
	for n, shards := range unitHolders(t, a, m.UUID) {
		for _, sh := range shards {
			if sh == stream.ShardID(0) {
				parentOn = n
			}
		}
	}
	for n, shards := range unitHolders(t, a, m.UUID) {
		for _, sh := range shards {
			if n != parentOn && (sh == children[0] || sh == children[1]) {
				elsewhere++
			}
		}
	}
	if parentOn == "" || elsewhere == 0 {
		t.Fatalf("the parent on %q, %d children on the other process; want the parent held and a child on the other process: %v", parentOn, elsewhere, unitHolders(t, a, m.UUID))
	}
	st, err := a.Mappings.Status(m.UUID)
	if err != nil {
		t.Fatal(err)
	}
	for _, ss := range st.Shards {
		for _, c := range children {
			if ss.ShardID == c && ss.ProcessedRecords > 0 {
				t.Fatalf("child %s processed %d records before its parent's end", c, ss.ProcessedRecords)
			}
		}
	}
	for _, k := range keys {
		if sink.times(k+"/2") != 0 && sink.times(k+"/1") == 0 {
			t.Fatalf("key %s: the child's record processed before the parent's", k)
		}
	}
	release.Store(true)
	testenv.Eventually(t, wait, "every record processed", func() bool { return sink.count() == 2*len(keys) })
	for _, k := range keys {
		for _, c := range []string{"/1", "/2"} {
			if n := sink.times(k + c); n != 1 {
				t.Errorf("%s%s processed %d times, want once", k, c, n)
			}
		}
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	for _, e := range sink.errs {
		t.Error(e)
	}
}

// A shard handed over to balance the cluster first finishes the batch it
// is invoking (Options.HandOverDrain): with a slow function busy on every
// shard when a second process joins and takes two of the four shards,
// no record is processed twice. Cancelling the batch in flight instead
// (the hand-over of a lost lease) has the next holder deliver it again.
func TestAShardHandedOverFinishesItsBatchInFlight(t *testing.T) {
	// The drain's bound is wall-clock time (5 s by default): on a loaded
	// machine (CI runs packages side by side) a batch of 100 ms can take
	// longer, and a drain cut short redelivers it, by design. The rule
	// under test is that a hand-over waits for the batch, not how fast.
	disturbed := newDisturbances(testenv.Logger(t).Handler())
	opts := testenv.Options{ListenAddr: "127.0.0.1:0", Mappings: mapping.Options{HandOverDrain: time.Minute}, Logger: slog.New(disturbed)}
	a := testenv.Start(t, opts)
	arn := createStream(t, a, "src", 4)
	r := newRecorder(t, a, function.Config{}, func(events.KinesisEvent) (events.KinesisEventResponse, error) {
		time.Sleep(100 * time.Millisecond) // every shard has a batch in flight, all the time
		return events.KinesisEventResponse{}, nil
	})
	const n = 2000 // 50 batches of 10 a shard: 5 s of work
	putKeys(t, a, "x", n)
	m := createMapping(t, a, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 10, StartingPosition: "TRIM_HORIZON"})
	testenv.Eventually(t, wait, "the first records processed", func() bool { return r.processed() > 0 })
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Mappings: opts.Mappings, Logger: opts.Logger})
	testenv.Eventually(t, 10*balanceWait, "two shards on each process", func() bool {
		h := unitHolders(t, a, m.UUID)
		return len(h[node(t, a)]) == 2 && len(h[node(t, b)]) == 2
	})
	if r.processed() == n {
		t.Fatalf("every record was processed before the hand-over; the test needs more work in flight")
	}
	testenv.Eventually(t, wait, "every record processed", func() bool { return r.processed() == n })
	if seen := disturbed.seen(); len(seen) > 0 {
		// A lease not renewed in time or a checkpoint write that failed
		// (the race detector on a loaded machine) hands a shard over
		// without its drain: its batch is delivered again, by design.
		t.Logf("the hand-over was disturbed, so a redelivery is allowed: %q", seen)
		processedAtLeastOnce(t, r, n, "x")
		return
	}
	processedOnce(t, r, n, "x")
}

// disturbances records the warnings of events that make a shard's next
// holder deliver a batch again (a lease lost, a drain cut short, a
// checkpoint write failed), and passes every record on to next.
type disturbances struct {
	log  *disturbanceLog // shared by the handlers WithAttrs and WithGroup make
	next slog.Handler
}

type disturbanceLog struct {
	mu   sync.Mutex
	msgs []string
}

func newDisturbances(next slog.Handler) *disturbances {
	return &disturbances{log: &disturbanceLog{}, next: next}
}

var disturbing = []string{"lease lost", "did not finish its batches in time", "checkpoint write failed",
	"moved this shard's checkpoint", "lease release failed", "lease renewal failed"}

func (d *disturbances) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || d.next.Enabled(ctx, l)
}

func (d *disturbances) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && slices.ContainsFunc(disturbing, func(m string) bool { return strings.Contains(r.Message, m) }) {
		d.log.mu.Lock()
		d.log.msgs = append(d.log.msgs, r.Message)
		d.log.mu.Unlock()
	}
	if !d.next.Enabled(ctx, r.Level) {
		return nil
	}
	return d.next.Handle(ctx, r)
}

func (d *disturbances) WithAttrs(as []slog.Attr) slog.Handler {
	return &disturbances{log: d.log, next: d.next.WithAttrs(as)}
}

func (d *disturbances) WithGroup(name string) slog.Handler {
	return &disturbances{log: d.log, next: d.next.WithGroup(name)}
}

func (d *disturbances) seen() []string {
	d.log.mu.Lock()
	defer d.log.mu.Unlock()
	return slices.Clone(d.log.msgs)
}

// processedAtLeastOnce fails for each record never processed.
func processedAtLeastOnce(t *testing.T, r *recorder, n int, prefixes ...string) {
	t.Helper()
	for _, p := range prefixes {
		for i := range n {
			if c := r.processedCount(fmt.Sprintf("%s%d", p, i)); c < 1 {
				t.Errorf("record %s%d never processed", p, i)
			}
		}
	}
}
