// Package trades reproduces the exactly-once trade-risk aggregation
// pipeline of seed 002 ("Build a fault-tolerant, serverless data
// aggregation pipeline with exactly-once processing", AWS Database Blog)
// on one runnel process:
//
//	producer -> Kinesis stream "trades"
//	  -> state function (conditional UpdateItem: new trade or higher Version)
//	  -> state table, change stream NEW_AND_OLD_IMAGES
//	  -> map function (value deltas per hierarchy level, conditional put keyed by the batch's SHA-256)
//	  -> reduce table, change stream NEW_IMAGE
//	  -> reduce function (reserved concurrency 1; one TransactWriteItems of ADDs, ClientRequestToken = MD5 of the batch)
//	  -> aggregate table
//
// with the sample's failure injection (state 1 %, map 2 %, reduce 2 % of
// invocations), in-batch duplicates, 1 % modifications with a higher
// Version each followed by an out-of-order older Version, and an optional
// crash of the whole engine mid-run. A verifier compares every aggregate
// with the producer's exact expected totals and counts duplicates and
// losses per stage.
package trades

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/nats-io/nuid"
	"github.com/schollz/progressbar/v3"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/procstat"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// Config configures a run. The zero value is the published experiment:
// 10,000,000 messages at 50,000 per second with every failure injection.
type Config struct {
	// Messages to put into the stream (duplicates, modifications and
	// out-of-order messages included). Default 10,000,000.
	Messages int64
	// Rate is the producer's target in messages per second. Default
	// 50,000; negative means as fast as the pipeline accepts them.
	Rate int
	// Shards of the trades stream. Default 8. StateShards of the state
	// table's change log. Default 1: the map function's mapping reads one
	// shard, so its batches hold every change that arrived while the
	// previous batch ran (about 60 changes at 50,000 messages/s) instead
	// of an eighth of them; with 8 shards the per-invocation work (the
	// map's conditional put, the reduce table's change, a reduce
	// transaction) was paid 4 times as often and the pipeline topped out
	// near 26,000 messages/s on 2 cores (docs/benchmarks/trades.md, "Session 4").
	Shards, StateShards int
	// MemoryLimitMiB is the Go heap's soft limit during the run
	// (debug.SetMemoryLimit), in MiB. Default with the index store
	// (TableIndex disk, the default): 2,560, at most five eighths of the
	// machine's memory: the 10M run then peaks under 3 GiB of RSS (the
	// index store's cache and the file store's buffers come on top of
	// the heap). Default with the heap's index: five eighths of the
	// machine's memory, at most 12,288 (the heap's index holds every
	// trade). With a low limit the collector runs often near it and takes
	// CPU from the pipeline. Trap: the limit is soft.
	MemoryLimitMiB int
	// TableIndex is where the tables keep their item indexes
	// (table.Options.Index): table.IndexDisk (the default here: the
	// index store, memory bounded whatever the item count) or
	// table.IndexMemory (the heap: 10 million trades need about 12 GiB;
	// the default with NATSURL, whose engine has no data directory of
	// this process).
	// Figures: docs/benchmarks/tables-store.md, "Session 15".
	TableIndex string
	// StateFailure, MapFailure, ReduceFailure are the share of
	// invocations that fail (0..1). Defaults 0.01, 0.02, 0.02; negative
	// disables.
	StateFailure, MapFailure, ReduceFailure float64
	// Modifications and Duplicates: share of steps that modify an earlier
	// trade (plus one out-of-order message each), and of messages sent
	// twice in one batch. Defaults 0.01 and 0.01.
	Modifications, Duplicates float64
	// CrashAt, in (0,1), crashes the engine (no final checkpoints, as a
	// killed process) when that share of the messages has been put, and
	// opens it again on the same data; 0 means no crash.
	CrashAt float64
	// DataDir, NATSURL, Keep as in the flights demo.
	DataDir string
	NATSURL string
	Keep    bool
	// Seed of the producer. Default 1.
	Seed uint64
	// Progress, if set, receives a progress bar. Logger receives logs.
	Progress io.Writer
	Logger   *slog.Logger
	// DrainTimeout ends the run, after the last message, when the
	// pipeline has not caught up (caughtUp) and its aggregates have not
	// changed for that long (Result.Drained false; the verifier then
	// judges what is there). Default 2 minutes.
	DrainTimeout time.Duration
}

func (c *Config) setDefaults() {
	if c.Messages == 0 {
		c.Messages = 10_000_000
	}
	if c.Rate == 0 {
		c.Rate = 50_000
	} else if c.Rate < 0 {
		c.Rate = 0
	}
	if c.Shards == 0 {
		c.Shards = 8
	}
	if c.StateShards == 0 {
		c.StateShards = 1
	}
	if c.TableIndex == "" {
		c.TableIndex = table.IndexDisk
		if c.NATSURL != "" {
			c.TableIndex = table.IndexMemory
		}
	}
	if c.MemoryLimitMiB == 0 {
		c.MemoryLimitMiB = defaultMemoryLimitMiB(procstat.MemTotalMiB(), c.TableIndex)
	}
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		} else if *v < 0 {
			*v = 0
		}
	}
	def(&c.StateFailure, 0.01)
	def(&c.MapFailure, 0.02)
	def(&c.ReduceFailure, 0.02)
	def(&c.Modifications, 0.01)
	def(&c.Duplicates, 0.01)
	if c.DataDir == "" {
		c.DataDir = engine.DefaultDataDir
	}
	if c.Seed == 0 {
		c.Seed = 1
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.DrainTimeout == 0 {
		c.DrainTimeout = 2 * time.Minute
	}
}

// StageReport is one function's figures.
type StageReport struct {
	Invocations      int64 `json:"invocations"`
	FailuresInjected int64 `json:"failures_injected"`
	Retries          int64 `json:"retries"`
	Duplicates       int64 `json:"duplicates"`
	Losses           int64 `json:"losses"`
}

// Result is the run's report.
type Result struct {
	Messages      int64   `json:"messages"`
	Trades        int64   `json:"trades"`
	Modifications int64   `json:"modifications"`
	OutOfOrder    int64   `json:"out_of_order"`
	Duplicates    int64   `json:"duplicates"`
	Crashed       bool    `json:"crashed"`
	Seconds       float64 `json:"seconds"`
	Throughput    float64 `json:"messages_per_second"`
	ProduceRate   float64 `json:"produce_messages_per_second"`
	Latency       Latency `json:"latency_ms"`
	// LatencyMeasured is false when Latency is not measured (zero): on
	// nodes, where the committing node changes mid-run and a replayed
	// transaction would count twice.
	LatencyMeasured bool                    `json:"latency_measured"`
	PerSecond       []int64                 `json:"state_changes_aggregated_per_second"`
	Stages          map[string]*StageReport `json:"stages"`
	Aggregates      []AggregateCheck        `json:"aggregates"`
	Exact           bool                    `json:"exact"`
	// Drained is true when the run ended because the pipeline caught up
	// (caughtUp: every message put is resolved by every stage), false
	// when it ended because nothing moved for Config.DrainTimeout.
	Drained bool `json:"drained"`
	// Nodes is the number of node processes (RunNodes; 0: one process)
	// and NodeKills how many were killed with SIGKILL and restarted.
	Nodes      int     `json:"nodes"`
	NodeKills  int     `json:"node_kills"`
	PeakRSSMiB float64 `json:"peak_rss_mib"`
}

// AggregateCheck compares one aggregate with its expected value.
type AggregateCheck struct {
	Key      string `json:"key"`
	Expected string `json:"expected"`
	Got      string `json:"got"`
	OK       bool   `json:"ok"`
}

const (
	stateTable  = "trades-state"
	reduceTable = "trades-reduce"
	aggTable    = "trades-aggregate"
	tradeStream = "trades"
)

// defaultMemoryLimitMiB is Config.MemoryLimitMiB's default for a machine
// with totalMiB of memory (0: unknown) and the tables' index: five eighths
// of it (the run's peak RSS is about the limit; the rest is for the file
// store's buffers, the page cache and the system), at most 2,560 MiB with
// the index store (the 3 GiB the 10M run must fit in) and 12 GiB with the
// heap's index.
func defaultMemoryLimitMiB(totalMiB int, index string) int {
	most := 12 << 10
	if index != table.IndexMemory {
		most = 2560
	}
	if totalMiB <= 0 {
		return most
	}
	return min(most, totalMiB*5/8)
}

// Run runs the experiment and verifies it.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	if err := nodeset.RefuseShared(ctx, cfg.NATSURL, "demo trades", cfg.Logger); err != nil {
		return nil, err
	}
	// The run allocates fast and, with 10 million trades, keeps a large
	// index: collect less often (GOGC 400) but cap the heap at
	// MemoryLimitMiB, where the collector works harder instead of growing
	// further.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(int64(cfg.MemoryLimitMiB) << 20))
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	dir := filepath.Join(cfg.DataDir, "trades-"+nuid.Next())
	if !cfg.Keep && cfg.NATSURL == "" {
		defer os.RemoveAll(dir)
	}
	open := func() (*runnel.Runnel, error) {
		return runnel.Open(ctx, runnel.Config{
			Engine:   engine.Config{DataDir: dir, NATSURL: cfg.NATSURL, Logger: cfg.Logger},
			Mappings: mapping.Options{RetryBaseDelay: 20 * time.Millisecond, RetryMaxDelay: time.Second},
			Tables:   table.Options{Index: cfg.TableIndex},
		})
	}
	rn, err := open()
	if err != nil {
		return nil, err
	}
	defer func() { rn.Close() }()
	if cfg.NATSURL != "" {
		// Against an external JetStream the run's resources outlive it:
		// delete them (before Close, on the engine in use then), so that
		// the next run can create them again.
		defer func() { teardown(rn) }()
	}

	fns := &functions{stateTable: stateTable, reduceTable: reduceTable, agg: aggTable,
		stateFail: cfg.StateFailure, mapFail: cfg.MapFailure, redFail: cfg.ReduceFailure, concurrency: stateWriters,
		rng: rand.New(rand.NewPCG(cfg.Seed, 7)), applied: map[string]bool{}, lat: &histogram{}, series: &series{}}
	fns.tables.Store(rn.Tables)
	prefix := "trades-" + nuid.Next()
	function.Register(prefix+"-state", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		return fns.State(ctx, ev)
	}))
	function.Register(prefix+"-map", function.DynamoDBHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return fns.Map(ctx, ev)
	}))
	function.Register(prefix+"-reduce", function.DynamoDBHandler(func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		return fns.Reduce(ctx, ev)
	}))
	if err := setup(ctx, rn, cfg, [3]string{prefix + "-state", prefix + "-map", prefix + "-reduce"}, nil); err != nil {
		return nil, err
	}

	p := newProducer(cfg.Seed, cfg.Modifications, cfg.Duplicates)
	res := &Result{Stages: map[string]*StageReport{}}
	var rnMu sync.RWMutex // held for writing while the engine restarts
	current := func() *runnel.Runnel { rnMu.RLock(); defer rnMu.RUnlock(); return rn }
	putBatch := func(ctx context.Context, entries []stream.PutRecordsRequestEntry) bool {
		out, err := current().Streams.PutRecords(ctx, tradeStream, entries)
		return err == nil && out.FailedRecordCount == 0
	}
	crashAt := int64(cfg.CrashAt * float64(cfg.Messages))
	crashed := false
	start := time.Now()
	put, err := produce(ctx, cfg, p, start, putBatch, func(put int64) error {
		if crashAt == 0 || crashed || put < crashAt {
			return nil
		}
		crashed = true
		cfg.Logger.Warn("crashing the engine mid-run", "put", put)
		rnMu.Lock()
		defer rnMu.Unlock()
		rn.Crash()
		var err error
		if rn, err = open(); err != nil {
			return err
		}
		fns.tables.Store(rn.Tables)
		return nil
	})
	if err != nil && ctx.Err() != nil {
		var agg int64
		if rn != nil { // nil when the restart after a crash failed
			agg = aggInt(context.Background(), rn, KeyTrades)
		}
		return nil, fmt.Errorf("interrupted: %d of %d messages put, %d trades aggregated so far; not verified: %w", put, cfg.Messages, agg, err)
	}
	if err != nil {
		return nil, err
	}
	produceSecs := time.Since(start).Seconds()

	// Drain: wait until every trade and change is aggregated, or nothing
	// moves for DrainTimeout.
	want := p.expected[KeyTrades]
	res.Drained = drain(ctx, cfg, func() (int64, bool) {
		got := aggInt(ctx, rn, KeyTrades)
		return got, got >= want && caughtUp(ctx, rn)
	})
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted: %d of %d messages put, %d of %d trades aggregated so far; not verified: %w", put, cfg.Messages, aggInt(context.Background(), rn, KeyTrades), want, ctx.Err())
	}
	elapsed := fns.series.last().Sub(start).Seconds()
	if elapsed <= 0 {
		elapsed = time.Since(start).Seconds()
	}
	res.Crashed = crashed
	res.Latency = fns.lat.summary()
	res.LatencyMeasured = true
	res.PerSecond = fns.series.perSecond(start)
	res.report(p, put, elapsed, produceSecs)
	if hp := os.Getenv("RUNNEL_HEAPPROFILE"); hp != "" {
		if f, err := os.Create(hp); err == nil {
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	counts := map[string][2]int64{}
	for name, st := range map[string]*stage{"state": &fns.state, "map": &fns.mapper, "reduce": &fns.reducer} {
		counts[name] = [2]int64{st.invocations.Load(), st.injected.Load()}
	}
	if err := verify(ctx, engineSource{rn}, p, counts, res); err != nil {
		return nil, err
	}
	res.PeakRSSMiB = procstat.PeakRSSMiB()
	return res, nil
}

// report fills the run's counts and rates: put messages in elapsed
// seconds end to end, produced in produceSecs.
func (res *Result) report(p *producer, put int64, elapsed, produceSecs float64) {
	res.Messages, res.Trades, res.Modifications, res.OutOfOrder, res.Duplicates = put, p.news, p.mods, p.outOfOrder, p.dups
	res.Seconds = elapsed
	res.Throughput = float64(res.Messages) / elapsed
	res.ProduceRate = float64(res.Messages) / produceSecs
}

// produce puts cfg.Messages messages of p in batches of up to 500, in
// order, four in flight, at cfg.Rate messages/s from start (0: as fast as
// accepted). putBatch reports whether the whole batch was stored; a batch
// that was not is put again whole, 50 ms later (its stored entries
// again: duplicates the pipeline absorbs). after runs after each batch is
// handed over, with the messages put so far; its error ends the
// production. It returns the messages put.
func produce(ctx context.Context, cfg Config, p *producer, start time.Time,
	putBatch func(context.Context, []stream.PutRecordsRequestEntry) bool, after func(put int64) error) (int64, error) {
	var bar *progressbar.ProgressBar
	if cfg.Progress != nil {
		bar = progressbar.NewOptions64(cfg.Messages, progressbar.OptionSetWriter(cfg.Progress), progressbar.OptionSetDescription("trades"),
			progressbar.OptionShowCount(), progressbar.OptionThrottle(200*time.Millisecond), progressbar.OptionSetItsString("msg"), progressbar.OptionShowIts())
	}
	var put atomic.Int64
	batches := make(chan []stream.PutRecordsRequestEntry, 8)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for b := range batches {
				for !putBatch(ctx, b) {
					if ctx.Err() != nil {
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
				n := put.Add(int64(len(b)))
				if bar != nil {
					bar.Set64(min(n, cfg.Messages))
				}
			}
		})
	}
	var err error
	var produced int64
	for produced < cfg.Messages && ctx.Err() == nil && err == nil {
		entries := make([]stream.PutRecordsRequestEntry, 0, stream.MaxPutRecords)
		now := float64(time.Now().UnixMilli()) / 1000
		for len(entries) < stream.MaxPutRecords-3 && produced+int64(len(entries)) < cfg.Messages {
			for _, m := range p.next(now) {
				data, pk := encode(&m)
				entries = append(entries, stream.PutRecordsRequestEntry{Data: data, PartitionKey: pk})
			}
		}
		produced += int64(len(entries))
		batches <- entries
		if cfg.Rate > 0 {
			if ahead := time.Duration(float64(produced)/float64(cfg.Rate)*float64(time.Second)) - time.Since(start); ahead > 0 {
				time.Sleep(ahead)
			}
		}
		err = after(put.Load())
	}
	close(batches)
	wg.Wait()
	if bar != nil {
		if ctx.Err() != nil {
			bar.Exit() // interrupted: the bar stays where it was, not at 100%
		} else {
			bar.Finish()
		}
		fmt.Fprintln(cfg.Progress)
	}
	if err == nil {
		err = ctx.Err()
	}
	return put.Load(), err
}

// drain polls every 50 ms until poll reports done (it returns true), or
// its progress value has not changed for cfg.DrainTimeout, or ctx ends
// (false).
func drain(ctx context.Context, cfg Config, poll func() (progress int64, done bool)) bool {
	lastChange, lastVal := time.Now(), int64(-1)
	for ctx.Err() == nil {
		got, done := poll()
		if done {
			return true
		}
		if got != lastVal {
			lastVal, lastChange = got, time.Now()
		}
		if time.Since(lastChange) > cfg.DrainTimeout {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// setup creates the stream, the tables, the functions (running handlers:
// state, map, reduce, with the environment variables env) and the
// mappings through rn.
func setup(ctx context.Context, rn *runnel.Runnel, cfg Config, handlers [3]string, env map[string]string) error {
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: tradeStream, ShardCount: cfg.Shards}); err != nil {
		return err
	}
	mk := func(name, key, view string, shards int) (string, error) {
		d, err := rn.Tables.CreateTable(ctx, table.CreateTableInput{TableName: name,
			KeySchema:            []table.KeySchemaElement{{AttributeName: key, KeyType: table.KeyTypeHash}},
			AttributeDefinitions: []table.AttributeDefinition{{AttributeName: key, AttributeType: table.TypeS}},
			StreamSpecification:  &table.StreamSpecification{StreamEnabled: view != "", StreamViewType: view},
			RunnelShards:         shards})
		if err != nil {
			return "", err
		}
		return d.LatestStreamArn, nil
	}
	stateARN, err := mk(stateTable, "TradeID", table.ViewNewAndOldImages, cfg.StateShards)
	if err != nil {
		return err
	}
	reduceARN, err := mk(reduceTable, "MessageHash", table.ViewNewImage, 1)
	if err != nil {
		return err
	}
	if _, err := mk(aggTable, "Key", "", 1); err != nil {
		return err
	}
	one := 1
	for _, f := range []function.Config{
		{FunctionName: "state", Handler: handlers[0], Timeout: 60, Environment: env},
		{FunctionName: "map", Handler: handlers[1], Timeout: 60, Environment: env},
		{FunctionName: "reduce", Handler: handlers[2], Timeout: 60, ReservedConcurrentExecutions: &one, Environment: env},
	} {
		if _, err := rn.Functions.CreateFunction(ctx, f); err != nil {
			return err
		}
	}
	// The map mapping waits up to a second to fill its batch
	// (MaximumBatchingWindowInSeconds 1, counted from the end of the
	// previous batch): the map exists to pre-aggregate, and each of its
	// invocations costs a conditional put to the reduce table, a reduce
	// invocation and a 15-item reduce transaction. Without the window the
	// map kept pace with the state changes in batches of about 60 (156,000
	// invocations in a 10M run) and the pipeline spent 40 µs of CPU a
	// message; with it the batches fill to 2,000 in 40 ms at 50,000/s
	// (5,000 invocations) and it spends 33 (docs/benchmarks/trades-cpu.md,
	// "Session 17"). The cost: the last changes of a run wait up to a
	// second more.
	for _, m := range []mapping.Config{
		{EventSourceArn: rn.Streams.ARN(tradeStream), FunctionName: "state", StartingPosition: "TRIM_HORIZON", BatchSize: 500},
		{EventSourceArn: stateARN, FunctionName: "map", StartingPosition: "TRIM_HORIZON", BatchSize: 2000, MaximumBatchingWindowInSeconds: 1},
		{EventSourceArn: reduceARN, FunctionName: "reduce", StartingPosition: "TRIM_HORIZON", BatchSize: 1000},
	} {
		if _, err := rn.Mappings.CreateEventSourceMapping(ctx, m); err != nil {
			return err
		}
	}
	return nil
}

// teardown deletes what setup created: the mappings first (so that
// nothing polls a deleted source), the functions, the tables and the
// stream. Errors are ignored: it is the end of the run.
func teardown(rn *runnel.Runnel) {
	ctx := context.Background()
	for _, m := range rn.Mappings.ListEventSourceMappings() {
		if fn := m.FunctionName[strings.LastIndex(m.FunctionName, ":")+1:]; fn == "state" || fn == "map" || fn == "reduce" {
			rn.Mappings.DeleteEventSourceMapping(ctx, m.UUID)
		}
	}
	for _, f := range []string{"state", "map", "reduce"} {
		rn.Functions.DeleteFunction(ctx, f)
	}
	for _, t := range []string{stateTable, reduceTable, aggTable} {
		rn.Tables.DeleteTable(ctx, t)
	}
	rn.Streams.DeleteStream(ctx, tradeStream)
}

// caughtUp reports whether the pipeline has resolved every message put
// before the call: the state, map and reduce mappings have each caught up
// with their source (mapping.Service.CaughtUp, which reads the stored
// checkpoints: the same answer in any process of the cluster), asked in
// that order. Each stage's input is complete once the stage before it
// has caught up, so when the reduce mapping has caught up after the map
// mapping, which caught up after the state mapping, every state change
// the messages caused is in the aggregates. It does not count changes:
// how many a message causes depends on the order its trade's messages
// arrive in across shards (a modification read before its trade's first
// version inserts it, and the first version then fails its condition),
// which the producer does not know.
func caughtUp(ctx context.Context, rn *runnel.Runnel) bool {
	uuid := map[string]string{}
	for _, m := range rn.Mappings.ListEventSourceMappings() {
		uuid[m.FunctionName] = m.UUID
	}
	for _, fn := range []string{"state", "map", "reduce"} {
		ok, err := rn.Mappings.CaughtUp(ctx, uuid[fn])
		if err != nil || !ok {
			return false
		}
	}
	return true
}

// stateChanges counts the change records of the state table (INSERT and
// MODIFY: the state table has no deletes).
func stateChanges(ctx context.Context, rn *runnel.Runnel) (int64, error) {
	t, err := rn.Tables.Table(stateTable)
	if err != nil {
		return 0, err
	}
	return t.ChangeRecords(), nil
}

func aggInt(ctx context.Context, rn *runnel.Runnel, key string) int64 {
	out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: aggTable, Key: table.Item{"Key": events.NewStringAttribute(key)}})
	if err != nil || out.Item == nil {
		return 0
	}
	v, _ := out.Item["Value"].Int64()
	return v
}

// Latency summarises end-to-end latency in milliseconds: from the
// message's Timestamp (the producer) to the commit of the aggregate
// transaction that includes it.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  int64   `json:"p50"`
	P99  int64   `json:"p99"`
	Max  int64   `json:"max"`
	N    int64   `json:"n"`
}

// histogram counts latencies per millisecond.
type histogram struct {
	mu     sync.Mutex
	counts map[int64]int64
}

func (h *histogram) add(ms, n int64) {
	h.mu.Lock()
	if h.counts == nil {
		h.counts = map[int64]int64{}
	}
	h.counts[max(ms, 0)] += n
	h.mu.Unlock()
}

func (h *histogram) summary() Latency {
	h.mu.Lock()
	defer h.mu.Unlock()
	keys := make([]int64, 0, len(h.counts))
	var l Latency
	var sum float64
	for k, n := range h.counts {
		keys = append(keys, k)
		l.N += n
		sum += float64(k) * float64(n)
	}
	if l.N == 0 {
		return l
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	l.Mean = sum / float64(l.N)
	l.Max = keys[len(keys)-1]
	var acc int64
	for _, k := range keys {
		acc += h.counts[k]
		if l.P50 == 0 && acc*2 >= l.N {
			l.P50 = k
		}
		if acc*100 >= l.N*99 {
			l.P99 = k
			break
		}
	}
	return l
}

// series counts state changes aggregated per second.
type series struct {
	mu    sync.Mutex
	at    []time.Time
	n     []int64
	final time.Time
}

func (s *series) add(t time.Time, n int64) {
	s.mu.Lock()
	s.at, s.n, s.final = append(s.at, t), append(s.n, n), t
	s.mu.Unlock()
}

func (s *series) last() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.final
}

func (s *series) perSecond(start time.Time) []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for i, t := range s.at {
		sec := int(t.Sub(start).Seconds())
		for len(out) <= sec {
			out = append(out, 0)
		}
		out[sec] += s.n[i]
	}
	return out
}

var errNotExact = errors.New("trades: the aggregates are not exact")
