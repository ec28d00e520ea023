// Package bench measures runnel's throughput against raw JetStream on the
// same embedded server: publishing and consuming with nats.go directly (the
// baselines), then runnel's PutRecords and an event source mapping feeding
// a no-op function. `runnel bench` runs it and docs/benchmarks/streams.md records a
// run.
//
// Every scenario runs on a fresh engine in its own temporary directory, and
// only its measured phase is timed: records a consumer or mapping reads are
// written first, untimed, on that same engine.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// Config configures a benchmark run. The zero value runs the defaults.
type Config struct {
	// Records per scenario. Default 500_000.
	Records int
	// BatchSize of the mapping. Default 500.
	BatchSize int
	// NATSURL runs against an external JetStream server instead.
	NATSURL string
	// Only, when not empty, names the scenarios to run (in Run's order);
	// an unknown name is an error.
	Only []string
	Workload
}

// Workload is what both benchmarks (Run and RunEndpoint) share.
type Workload struct {
	// RecordSize is the bytes of data per record. Default 100 (RunEndpoint
	// needs at least 10: each record starts with its index, so that reading
	// back can check every one).
	RecordSize int
	// Shards of the stream (the same on both targets of RunEndpoint).
	// Default 4.
	Shards int
	// DataDir is the parent directory of the fresh temporary engines.
	// Default os.TempDir().
	DataDir string
	// Progress, when set, receives one line per scenario or phase as it
	// finishes.
	Progress io.Writer
}

func (w *Workload) setDefaults() {
	orDefault(&w.RecordSize, 100)
	orDefault(&w.Shards, 4)
	if w.DataDir == "" {
		w.DataDir = os.TempDir()
	}
}

func (c *Config) setDefaults() {
	orDefault(&c.Records, 500_000)
	orDefault(&c.BatchSize, 500)
	c.Workload.setDefaults()
}

// orDefault sets *v to def when it is zero or negative.
func orDefault(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

// Scenario is one measurement.
type Scenario struct {
	Name        string
	Records     int
	Seconds     float64
	RecordsPerS float64
	Note        string
}

// Report is the result of Run.
type Report struct {
	// Machine: GOOS/GOARCH, NumCPU, Go version and CPU model.
	Machine   string
	Scenarios []Scenario
	// Ratios: "mapping/consume-ack", "mapping/consume-noack", "put/publish",
	// "queue/workqueue", "sns-fanout/publish", "sns-fanout-raw/publish",
	// "putevents-sqs/publish" (of the scenarios run).
	Ratios     map[string]float64
	PeakRSSMiB float64
}

// Scenario names, in the order Run measures them.
const (
	JetStreamPublish      = "jetstream-publish"
	JetStreamConsumeAck   = "jetstream-consume-ack"
	JetStreamConsumeNoAck = "jetstream-consume-noack"
	RunnelPut             = "runnel-put"
	RunnelMapping         = "runnel-mapping"
	RunnelPutThroughMap   = "runnel-put-through-mapping"
)

// Tuning of the clients, the same in Run and in the Go benchmarks.
const (
	// publishWindow bounds the async publishes awaiting their ack
	// (nats.go's own default limit is 4000).
	publishWindow = 4000
	// pullBatch is what the no-ack baseline asks for per pull, the same
	// as runnel's shard reader (an ordered consumer too).
	pullBatch = 2048
	// The ack baseline runs with JetStream's defaults: nats.go pulls 500
	// messages at a time and the server allows 1000 unacknowledged.
	ackPullBatch     = 500
	ackMaxAckPending = 1000
	// putProducers is how many PutRecords calls run at once.
	putProducers = 4
	// pollEvery is how often completion is checked.
	pollEvery = 10 * time.Millisecond
	// maxAttempts is how often Run measures a scenario whose client
	// reported an error (errClientStalled).
	maxAttempts = 3
	// stallLimit fails a scenario that makes no progress for this long.
	stallLimit = 2 * time.Minute
)

// timer is the timed phase of a scenario: Run's stopwatch, or a
// testing.B's timer in the Go benchmarks.
type timer interface {
	Start()
	Stop()
}

type stopwatch struct {
	t0      time.Time
	elapsed time.Duration
}

func (s *stopwatch) Start() { s.t0 = time.Now() }
func (s *stopwatch) Stop()  { s.elapsed += time.Since(s.t0) }

// scenarioFunc sets up on env, times the measured phase of n records with
// t, and returns a note on how it was measured.
type scenarioFunc func(ctx context.Context, env *env, n int, t timer) (string, error)

// Run measures every scenario in turn, each on a fresh engine, and returns
// the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg.setDefaults()
	rep := &Report{Machine: Machine(), Ratios: map[string]float64{}}
	steps := []struct {
		name string
		fn   scenarioFunc
	}{
		{JetStreamPublish, runJetStreamPublish},
		{JetStreamConsumeAck, runJetStreamConsumeAck},
		{JetStreamConsumeNoAck, runJetStreamConsumeNoAck},
		{RunnelPut, runRunnelPut},
		{RunnelMapping, runRunnelMapping},
		{RunnelPutThroughMap, runRunnelPutThroughMapping},
		{JetStreamWorkQueue, runJetStreamWorkQueue},
		{RunnelQueue, runRunnelQueue},
		{RunnelSNSFanout, runRunnelSNSFanout},
		{RunnelSNSFanoutRaw, runRunnelSNSFanoutRaw},
		{RunnelEventsToSQS, runRunnelEventsToSQS},
	}
	if len(cfg.Only) > 0 {
		known := map[string]bool{}
		for _, st := range steps {
			known[st.name] = true
		}
		for _, name := range cfg.Only {
			if !known[name] {
				return nil, fmt.Errorf("bench: no scenario %q", name)
			}
		}
	}
	rates := map[string]float64{}
	for _, st := range steps {
		if len(cfg.Only) > 0 && !slices.Contains(cfg.Only, st.name) {
			continue
		}
		var sc Scenario
		var err error
		var retried []string
		for attempt := 1; ; attempt++ {
			sc, err = measure(ctx, cfg, st.name, st.fn)
			if err == nil || !errors.Is(err, errClientStalled) || attempt == maxAttempts {
				break
			}
			retried = append(retried, err.Error())
			if cfg.Progress != nil {
				fmt.Fprintf(cfg.Progress, "%-28s measured again: %v\n", st.name, err)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", st.name, err)
		}
		if len(retried) > 0 {
			sc.Note += fmt.Sprintf(" (measured again %d time(s): %s)", len(retried), strings.Join(retried, "; "))
		}
		rep.Scenarios = append(rep.Scenarios, sc)
		rates[sc.Name] = sc.RecordsPerS
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%-28s %9d records %8.2f s %11.0f records/s\n", sc.Name, sc.Records, sc.Seconds, sc.RecordsPerS)
		}
	}
	ratio := func(a, b string) float64 {
		if rates[b] == 0 {
			return 0
		}
		return rates[a] / rates[b]
	}
	rep.Ratios["mapping/consume-ack"] = ratio(RunnelMapping, JetStreamConsumeAck)
	rep.Ratios["mapping/consume-noack"] = ratio(RunnelMapping, JetStreamConsumeNoAck)
	rep.Ratios["put/publish"] = ratio(RunnelPut, JetStreamPublish)
	rep.Ratios["queue/workqueue"] = ratio(RunnelQueue, JetStreamWorkQueue)
	rep.Ratios["sns-fanout/publish"] = ratio(RunnelSNSFanout, JetStreamPublish)
	rep.Ratios["sns-fanout-raw/publish"] = ratio(RunnelSNSFanoutRaw, JetStreamPublish)
	rep.Ratios["putevents-sqs/publish"] = ratio(RunnelEventsToSQS, JetStreamPublish)
	for k, v := range rep.Ratios {
		if v == 0 {
			delete(rep.Ratios, k) // a scenario not run
		}
	}
	rep.PeakRSSMiB = PeakRSSMiB()
	return rep, nil
}

func measure(ctx context.Context, cfg Config, name string, fn scenarioFunc) (Scenario, error) {
	env, err := openEnv(ctx, cfg)
	if err != nil {
		return Scenario{}, err
	}
	defer env.close()
	// Start each scenario from a collected heap, so one scenario's garbage
	// is not another's GC work.
	runtime.GC()
	debug.FreeOSMemory()
	var sw stopwatch
	note, err := fn(ctx, env, cfg.Records, &sw)
	if err != nil {
		return Scenario{}, err
	}
	sec := sw.elapsed.Seconds()
	return Scenario{Name: name, Records: cfg.Records, Seconds: sec, RecordsPerS: float64(cfg.Records) / sec, Note: note}, nil
}

// env is one fresh engine with the run's settings.
type env struct {
	cfg     Config
	rn      *runnel.Runnel
	dir     string
	payload []byte
	keys    []string
	cleanup []func()
}

// openTemp opens a runnel instance on a new temporary directory under
// parent (which it creates), logging warnings to stderr. The caller
// closes it and removes dir.
func openTemp(ctx context.Context, parent, pattern, natsURL string, tables table.Options) (rn *runnel.Runnel, dir string, err error) {
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, "", err
	}
	if dir, err = os.MkdirTemp(parent, pattern); err != nil {
		return nil, "", err
	}
	rn, err = runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir, NATSURL: natsURL, Logger: warnLogger()}, Tables: tables})
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", err
	}
	return rn, dir, nil
}

func warnLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func openEnv(ctx context.Context, cfg Config) (*env, error) {
	cfg.setDefaults()
	rn, dir, err := openTemp(ctx, cfg.DataDir, "runnel-bench-", cfg.NATSURL, table.Options{})
	if err != nil {
		return nil, err
	}
	e := &env{cfg: cfg, rn: rn, dir: dir, payload: make([]byte, cfg.RecordSize)}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range e.payload {
		e.payload[i] = byte(' ' + rng.IntN(95))
	}
	e.keys = make([]string, 1024)
	for i := range e.keys {
		e.keys[i] = "pk-" + strconv.Itoa(i)
	}
	return e, nil
}

// onClose registers cleanup of resources an external server would keep.
func (e *env) onClose(f func()) { e.cleanup = append(e.cleanup, f) }

func (e *env) close() {
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
	e.rn.Close()
	os.RemoveAll(e.dir)
}

// --- raw JetStream baselines -------------------------------------------

// jsStream creates a one-stream, file-storage JetStream stream, like one
// runnel shard, on the engine's own server and connection.
func (e *env) jsStream(ctx context.Context) (jetstream.Stream, string, error) {
	id := nuid.Next()
	name, subj := "BENCH_"+id, "bench."+id
	s, err := e.rn.Engine.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: name, Subjects: []string{subj}, Storage: jetstream.FileStorage,
		Retention: jetstream.LimitsPolicy, Replicas: e.rn.Engine.Replicas(),
	})
	if err != nil {
		return nil, "", err
	}
	e.onClose(func() {
		if e.cfg.NATSURL != "" {
			_ = e.rn.Engine.JS.DeleteStream(context.Background(), name)
		}
	})
	return s, subj, nil
}

// publish sends n records of the payload to subj with PublishAsync, at most
// publishWindow awaiting their ack, and waits for every ack.
func (e *env) publish(ctx context.Context, subj string, n int) error {
	js := e.rn.Engine.JS
	window := make([]jetstream.PubAckFuture, publishWindow)
	wait := func(f jetstream.PubAckFuture) error {
		select {
		case <-f.Ok():
			return nil
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i := 0; i < n; i++ {
		slot := i % publishWindow
		if f := window[slot]; f != nil {
			if err := wait(f); err != nil {
				return err
			}
		}
		f, err := js.PublishAsync(subj, e.payload)
		if err != nil {
			return err
		}
		window[slot] = f
	}
	for _, f := range window {
		if f != nil {
			if err := wait(f); err != nil {
				return err
			}
		}
	}
	return nil
}

func runJetStreamPublish(ctx context.Context, e *env, n int, t timer) (string, error) {
	_, subj, err := e.jsStream(ctx)
	if err != nil {
		return "", err
	}
	t.Start()
	err = e.publish(ctx, subj, n)
	t.Stop()
	return fmt.Sprintf("nats.go PublishAsync, 1 file stream, window %d, wait for all acks", publishWindow), err
}

// errClientStalled marks a consume that the nats.go client reported trouble
// with (such as "no heartbeat received", after which it re-pulls): such a
// run is not a throughput measurement, and Run measures it again.
var errClientStalled = errors.New("the nats.go consumer reported an error")

// consume runs cons.Consume, pulling pull messages at a time, until n
// messages arrived (acking each when ack) and returns once done reports the
// work complete.
func consume(ctx context.Context, cons jetstream.Consumer, n, pull int, ack bool, done func() (bool, error)) error {
	var got atomic.Int64
	all := make(chan struct{})
	var ackErr, clientErr atomic.Value
	cc, err := cons.Consume(func(m jetstream.Msg) {
		if ack {
			if err := m.Ack(); err != nil {
				ackErr.CompareAndSwap(nil, err)
			}
		}
		if got.Add(1) == int64(n) {
			close(all)
		}
	}, jetstream.PullMaxMessages(pull), jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
		clientErr.CompareAndSwap(nil, fmt.Errorf("%w after %d of %d messages: %v", errClientStalled, got.Load(), n, err))
	}))
	if err != nil {
		return err
	}
	defer cc.Stop()
	if err := waitProgress(ctx, &got, n, all); err != nil {
		return err
	}
	if err, _ := ackErr.Load().(error); err != nil {
		return err
	}
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
	if err, _ := clientErr.Load().(error); err != nil {
		return err
	}
	return nil
}

// waitProgress waits for all to close, failing if got stops moving.
func waitProgress(ctx context.Context, got *atomic.Int64, n int, all chan struct{}) error {
	last, since := int64(-1), time.Now()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-all:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
			if g := got.Load(); g != last {
				last, since = g, time.Now()
			} else if time.Since(since) > stallLimit {
				return fmt.Errorf("no progress for %v (%d of %d)", stallLimit, g, n)
			}
		}
	}
}

// filledStream is a new stream holding n records, published before the
// clock starts.
func (e *env) filledStream(ctx context.Context, n int) (jetstream.Stream, error) {
	s, subj, err := e.jsStream(ctx)
	if err != nil {
		return nil, err
	}
	return s, e.publish(ctx, subj, n)
}

func runJetStreamConsumeAck(ctx context.Context, e *env, n int, t timer) (string, error) {
	s, err := e.filledStream(ctx, n)
	if err != nil {
		return "", err
	}
	cons, err := s.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable: "bench", AckPolicy: jetstream.AckExplicitPolicy, DeliverPolicy: jetstream.DeliverAllPolicy,
		MaxAckPending: ackMaxAckPending,
	})
	if err != nil {
		return "", err
	}
	t.Start()
	err = consume(ctx, cons, n, ackPullBatch, true, func() (bool, error) {
		// Done when the server has every ack.
		ci, err := cons.Info(ctx)
		if err != nil {
			return false, err
		}
		return ci.NumAckPending == 0 && ci.AckFloor.Stream >= uint64(n), nil
	})
	t.Stop()
	return fmt.Sprintf("durable pull consumer, AckExplicit, Ack() each message, pull %d, MaxAckPending %d (the defaults); until the server holds every ack", ackPullBatch, ackMaxAckPending), err
}

func runJetStreamConsumeNoAck(ctx context.Context, e *env, n int, t timer) (string, error) {
	s, err := e.filledStream(ctx, n)
	if err != nil {
		return "", err
	}
	cons, err := e.rn.Engine.JS.OrderedConsumer(ctx, s.CachedInfo().Config.Name, jetstream.OrderedConsumerConfig{
		DeliverPolicy: jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return "", err
	}
	t.Start()
	err = consume(ctx, cons, n, pullBatch, false, func() (bool, error) { return true, nil })
	t.Stop()
	return fmt.Sprintf("ordered consumer (AckNone), pull %d", pullBatch), err
}

// --- runnel --------------------------------------------------------------

// kinesisStream creates a runnel stream of cfg.Shards shards.
func (e *env) kinesisStream(ctx context.Context) (*stream.StreamDescription, error) {
	name := "bench-" + nuid.Next()
	d, err := e.rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: name, ShardCount: e.cfg.Shards})
	if err != nil {
		return nil, err
	}
	e.onClose(func() {
		if e.cfg.NATSURL != "" {
			_ = e.rn.Streams.DeleteStream(context.Background(), name)
		}
	})
	return d, nil
}

// put stores n records with PutRecords calls of stream.MaxPutRecords,
// putProducers at a time, partition keys spread over 1024 values. Entries
// that fail are put again (putBatches: at most 10 calls each).
func (e *env) put(ctx context.Context, streamName string, n int) error {
	// The entries are built up front, so the calls measure runnel, not
	// the generator.
	all := make([]stream.PutRecordsRequestEntry, n)
	for i := range all {
		all[i] = stream.PutRecordsRequestEntry{Data: e.payload, PartitionKey: e.keys[i%len(e.keys)]}
	}
	return putBatches(ctx, all, stream.MaxPutRecords, putProducers, func(ctx context.Context, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsRequestEntry, error) {
		out, err := e.rn.Streams.PutRecords(ctx, streamName, entries)
		if err != nil || out.FailedRecordCount == 0 {
			return nil, err
		}
		var retry []stream.PutRecordsRequestEntry
		for i, r := range out.Records {
			if r.ErrorCode != "" {
				retry = append(retry, entries[i])
			}
		}
		return retry, nil
	})
}

// putBatches puts all in calls of at most batch entries, producers calls
// at once. put makes one call and returns the entries that failed, which
// are put again, in at most 10 calls in all (then the whole put fails,
// "N records failed 10 times"). It returns the first error (the other
// calls are cancelled), or ctx's.
func putBatches[E any](ctx context.Context, all []E, batch, producers int, put func(ctx context.Context, entries []E) (failed []E, err error)) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	calls := make(chan []E)
	var wg sync.WaitGroup
	for range producers {
		wg.Go(func() {
			for entries := range calls {
				for attempt := 0; len(entries) > 0; attempt++ {
					if attempt == 10 {
						cancel(fmt.Errorf("%d records failed 10 times", len(entries)))
						return
					}
					var err error
					if entries, err = put(ctx, entries); err != nil {
						cancel(err)
						return
					}
				}
			}
		})
	}
send:
	for i := 0; i < len(all); i += batch {
		select {
		case calls <- all[i:min(i+batch, len(all))]:
		case <-ctx.Done():
			break send
		}
	}
	close(calls)
	wg.Wait()
	return context.Cause(ctx)
}

func runRunnelPut(ctx context.Context, e *env, n int, t timer) (string, error) {
	d, err := e.kinesisStream(ctx)
	if err != nil {
		return "", err
	}
	t.Start()
	err = e.put(ctx, d.StreamName, n)
	t.Stop()
	return fmt.Sprintf("PutRecords x%d records, %d producers, %d shards", stream.MaxPutRecords, putProducers, e.cfg.Shards), err
}

// noop is the benchmark's function: it takes the batch and succeeds.
func noop(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
	return events.KinesisEventResponse{}, nil
}

// startMapping creates a function with the no-op handler and a mapping
// from the stream to it (TRIM_HORIZON, cfg.BatchSize).
func (e *env) startMapping(ctx context.Context, d *stream.StreamDescription) (string, error) {
	handler := "bench-noop-" + nuid.Next()
	function.Register(handler, function.KinesisHandler(noop))
	fn := "bench-noop-" + strings.ToLower(nuid.Next())
	if _, err := e.rn.Functions.PutFunction(ctx, function.Config{FunctionName: fn, Handler: handler, Timeout: 60}); err != nil {
		return "", err
	}
	e.onClose(func() {
		if e.cfg.NATSURL != "" {
			_ = e.rn.Functions.DeleteFunction(context.Background(), fn)
		}
	})
	m, err := e.rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{
		EventSourceArn: d.StreamARN, FunctionName: fn, BatchSize: e.cfg.BatchSize,
		StartingPosition: mapping.TrimHorizon,
	})
	if err != nil {
		return "", err
	}
	e.onClose(func() { _ = e.rn.Mappings.DeleteEventSourceMapping(context.Background(), m.UUID) })
	return m.UUID, nil
}

// waitMapping polls the mapping every pollEvery until every shard's stored
// checkpoint is past its last record and the shards processed n records
// in all. putDone, if not nil, must be closed (and hold nil or an error)
// before the mapping can be done.
func (e *env) waitMapping(ctx context.Context, d *stream.StreamDescription, id string, n int, putDone <-chan error) error {
	producing := putDone != nil
	var ends map[string]string
	last, since := int64(-1), time.Now()
	for {
		if producing {
			select {
			case err := <-putDone:
				if err != nil {
					return err
				}
				producing = false
			default:
			}
		}
		if !producing && ends == nil {
			ends = map[string]string{}
			for _, sh := range d.Shards {
				_, lastPos, err := e.rn.Streams.ShardBounds(ctx, d.StreamName, sh.ShardID)
				if err != nil {
					return err
				}
				if ends[sh.ShardID], err = e.rn.Streams.SequenceNumber(ctx, d.StreamName, sh.ShardID, lastPos+1); err != nil {
					return err
				}
			}
		}
		st, err := e.rn.Mappings.Status(id)
		if err != nil {
			return err
		}
		var processed int64
		atEnd := ends != nil
		for _, sh := range st.Shards {
			processed += sh.ProcessedRecords
			if ends == nil || sh.Checkpoint != ends[sh.ShardID] {
				atEnd = false
			}
		}
		if atEnd && processed == int64(n) {
			return nil
		}
		if processed > int64(n) {
			return fmt.Errorf("mapping processed %d records, more than the %d put", processed, n)
		}
		if processed != last {
			last, since = processed, time.Now()
		} else if time.Since(since) > stallLimit {
			return fmt.Errorf("mapping made no progress for %v (%d of %d processed)", stallLimit, processed, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(pollEvery):
		}
	}
}

func runRunnelMapping(ctx context.Context, e *env, n int, t timer) (string, error) {
	d, err := e.kinesisStream(ctx)
	if err != nil {
		return "", err
	}
	if err := e.put(ctx, d.StreamName, n); err != nil {
		return "", err
	}
	// Timed from the mapping's creation (its checkpoints are resolved and
	// stored inside) to the last checkpoint.
	t.Start()
	id, err := e.startMapping(ctx, d)
	if err == nil {
		err = e.waitMapping(ctx, d, id, n, nil)
	}
	t.Stop()
	return fmt.Sprintf("no-op KinesisHandler, BatchSize %d, %d shards, TRIM_HORIZON over records already put; until every checkpoint is stored at the end", e.cfg.BatchSize, e.cfg.Shards), err
}

func runRunnelPutThroughMapping(ctx context.Context, e *env, n int, t timer) (string, error) {
	d, err := e.kinesisStream(ctx)
	if err != nil {
		return "", err
	}
	id, err := e.startMapping(ctx, d)
	if err != nil {
		return "", err
	}
	t.Start()
	putDone := make(chan error, 1)
	go func() { putDone <- e.put(ctx, d.StreamName, n) }()
	err = e.waitMapping(ctx, d, id, n, putDone)
	t.Stop()
	return fmt.Sprintf("PutRecords as in %s while the mapping (BatchSize %d) runs; until all processed and checkpointed", RunnelPut, e.cfg.BatchSize), err
}
