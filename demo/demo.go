// Package demo is runnel's main job: it puts real flight records (3,000,000
// US flights of 2001) into a stream, feeds them through an event source
// mapping to a function that computes per-airport statistics, injects
// transient function failures and poison records, and then reconciles:
// every record put is either processed or in the on-failure destination,
// and the statistics equal an independent computation straight from the
// parquet file.
package demo

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/runnel-dev/runnel/internal/procstat"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// Config configures a demo run. The zero value runs on every record of
// data/flights-3m.parquet with the defaults below.
type Config struct {
	// DataPath is the parquet file. Default data/flights-3m.parquet.
	DataPath string
	// Records limits the run to the first N rows; 0 means all.
	Records int
	// DataDir is where the run's engine stores its data (a fresh
	// subdirectory is made and removed afterwards unless Keep).
	// Default ./runnel-data.
	DataDir string
	// NATSURL runs against an external JetStream instead of the embedded one.
	NATSURL string
	// Keep leaves the run's data directory in place.
	Keep bool
	// Shards of the flights stream. Default 4.
	Shards int
	// BatchSize of the mapping. Default 500.
	BatchSize int
	// ParallelizationFactor of the mapping. Default 1.
	ParallelizationFactor int
	// MaximumRetryAttempts of the mapping. Default 3.
	MaximumRetryAttempts int
	// FailureRate is the share of invocations that fail transiently
	// (before touching their records). Default 0.02; negative for none.
	FailureRate float64
	// PoisonRecords is how many records are marked poison: the function
	// always fails a batch holding one. Default 10; negative for none.
	PoisonRecords int
	// Producers is how many PutRecords calls run at once. Default 4.
	Producers int
	// Seed makes the injected failures and poison positions repeatable.
	Seed uint64
	// Progress, when set, receives a progress bar (a terminal) or progress
	// lines (anything else).
	Progress io.Writer
	// Logger for runnel's own logs. Default: warnings and errors to stderr.
	Logger *slog.Logger
}

func (c *Config) setDefaults() {
	if c.DataPath == "" {
		c.DataPath = filepath.Join("data", "flights-3m.parquet")
	}
	if c.DataDir == "" {
		c.DataDir = engine.DefaultDataDir
	}
	if c.Shards == 0 {
		c.Shards = 4
	}
	if c.BatchSize == 0 {
		c.BatchSize = 500
	}
	if c.ParallelizationFactor == 0 {
		c.ParallelizationFactor = 1
	}
	if c.MaximumRetryAttempts == 0 {
		c.MaximumRetryAttempts = 3
	}
	if c.FailureRate == 0 {
		c.FailureRate = 0.02
	}
	if c.PoisonRecords == 0 {
		c.PoisonRecords = 10
	}
	if c.Producers == 0 {
		c.Producers = 4
	}
	if c.Seed == 0 {
		c.Seed = 2001
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
}

// Latency holds end-to-end latency percentiles in milliseconds, from a
// record's arrival in the stream to the end of the invocation that
// processed it.
type Latency struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
}

// Result is the reconciliation of a run; its JSON is what --json writes.
type Result struct {
	RecordsIn            int64   `json:"records_in"`
	ProcessedUnique      int64   `json:"processed_unique"`
	Deliveries           int64   `json:"deliveries"`
	ToFailureDestination int64   `json:"to_failure_destination"`
	Lost                 int64   `json:"lost"`
	StatsMatch           bool    `json:"stats_match"`
	ElapsedS             float64 `json:"elapsed_s"`
	RecordsPerS          float64 `json:"records_per_s"`
	Latency              Latency `json:"latency_ms"`

	Redeliveries     int64                  `json:"redeliveries"`
	Invocations      int64                  `json:"invocations"`
	FailedInvokes    int64                  `json:"failed_invocations"`
	PoisonInjected   int                    `json:"poison_injected"`
	PoisonInFailDest int                    `json:"poison_in_failure_destination"`
	StatsDiff        string                 `json:"stats_diff,omitempty"`
	PeakRSSMiB       float64                `json:"peak_rss_mib"`
	Top              []flights.AirportStats `json:"top_airports"`
}

// the function's shared state
type pipeline struct {
	epoch    int64
	rate     float64
	rng      *rand.Rand
	rngMu    sync.Mutex
	start    time.Time
	mu       sync.Mutex
	stats    *flights.Stats
	done     []positions // per shard: processed
	latMs    []uint32
	unique   atomic.Int64
	delivers atomic.Int64
	invokes  atomic.Int64
	failed   atomic.Int64
}

var errTransient = errors.New("injected transient failure")

// errPoison is the error of a batch holding a poison record.
type errPoison struct{ seq string }

func (e *errPoison) Error() string { return "poison record " + e.seq }

// handle is the demo function: per-airport statistics over a batch,
// merged only if the whole batch succeeds, once per record (records are
// identified by shard and sequence number, so redeliveries are not counted
// twice: the whitepaper's sequence-number idempotency).
func (p *pipeline) handle(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	p.invokes.Add(1)
	p.delivers.Add(int64(len(ev.Records)))
	p.rngMu.Lock()
	fail := p.rng.Float64() < p.rate
	p.rngMu.Unlock()
	if fail {
		p.failed.Add(1)
		return events.KinesisEventResponse{}, errTransient
	}
	parsed := make([]flights.Flight, len(ev.Records))
	for i := range ev.Records {
		f, poison, err := flights.ParseJSON(ev.Records[i].Kinesis.Data)
		if err != nil {
			p.failed.Add(1)
			return events.KinesisEventResponse{}, err
		}
		if poison {
			p.failed.Add(1)
			return events.KinesisEventResponse{}, &errPoison{ev.Records[i].Kinesis.SequenceNumber}
		}
		parsed[i] = f
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range ev.Records {
		r := &ev.Records[i]
		sh, pos, err := stream.DecodeSequenceNumber(p.epoch, r.Kinesis.SequenceNumber)
		if err != nil {
			return events.KinesisEventResponse{}, err
		}
		if !p.done[sh].set(pos) {
			continue // a redelivery: already counted
		}
		p.stats.Add(parsed[i])
		p.unique.Add(1)
		p.latMs = append(p.latMs, uint32(max(0, now.Sub(r.Kinesis.ApproximateArrivalTimestamp.Time).Milliseconds())))
	}
	return events.KinesisEventResponse{}, nil
}

// Run runs the demo and returns its reconciliation.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	total, err := flights.Count(cfg.DataPath)
	if err != nil {
		return nil, fmt.Errorf("demo: %w (run from the repository root, or pass --data)", err)
	}
	if cfg.Records > 0 && int64(cfg.Records) < total {
		total = int64(cfg.Records)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.DataDir, "demo-")
	if err != nil {
		return nil, err
	}
	if !cfg.Keep {
		defer os.RemoveAll(dir)
	}
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: dir, NATSURL: cfg.NATSURL, Logger: cfg.Logger}})
	if err != nil {
		return nil, err
	}
	defer rn.Close()

	suffix := filepath.Base(dir)
	src, failed := "flights-"+suffix, "flights-failed-"+suffix
	sd, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: src, ShardCount: cfg.Shards})
	if err != nil {
		return nil, err
	}
	fd, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: failed, ShardCount: 1})
	if err != nil {
		return nil, err
	}
	if cfg.NATSURL != "" {
		defer rn.Streams.DeleteStream(context.Background(), src)
		defer rn.Streams.DeleteStream(context.Background(), failed)
	}
	p := &pipeline{epoch: sd.Epoch, rate: max(cfg.FailureRate, 0), rng: rand.New(rand.NewPCG(cfg.Seed, 1)),
		stats: flights.NewStats(), done: make([]positions, cfg.Shards), latMs: make([]uint32, 0, total)}
	handlerName := "flight-stats-" + suffix
	function.Register(handlerName, function.KinesisHandler(p.handle))
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "flight-stats", Handler: handlerName, Timeout: 60}, true); err != nil {
		return nil, err
	}

	// poison rows, spread at random over the run
	poison := map[int64]bool{}
	prng := rand.New(rand.NewPCG(cfg.Seed, 2))
	for cfg.PoisonRecords > 0 && len(poison) < min(cfg.PoisonRecords, int(total)) {
		poison[prng.Int64N(total)] = true
	}

	start := time.Now()
	p.start = start
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{
		EventSourceArn:             sd.StreamARN,
		FunctionName:               "flight-stats",
		BatchSize:                  cfg.BatchSize,
		ParallelizationFactor:      cfg.ParallelizationFactor,
		StartingPosition:           mapping.TrimHorizon,
		MaximumRetryAttempts:       &cfg.MaximumRetryAttempts,
		BisectBatchOnFunctionError: true,
		DestinationConfig:          &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: fd.StreamARN}},
	})
	if err != nil {
		return nil, err
	}

	prog := newProgress(cfg.Progress, total)
	// rows[shard][pos-1] = parquet row index, to map records back to rows.
	rows := make([][]int32, cfg.Shards)
	var rowsMu sync.Mutex
	var put atomic.Int64
	putErr := make(chan error, 1)
	go func() { putErr <- produce(ctx, rn, src, cfg, total, poison, rows, &rowsMu, &put) }()

	// Wait until every record put is resolved: processed, or in the
	// failure destination.
	var discarded int64
	lastChange, lastSeen := time.Now(), int64(-1)
	producing := true
	for {
		if producing {
			select {
			case err := <-putErr:
				if err != nil {
					return nil, err
				}
				producing = false
			default:
			}
		}
		st, err := rn.Mappings.Status(m.UUID)
		if err != nil {
			return nil, err
		}
		discarded = 0
		for _, sh := range st.Shards {
			discarded += sh.DiscardedRecords
		}
		resolved := p.unique.Load() + discarded
		prog.update(put.Load(), resolved)
		if !producing && resolved >= put.Load() {
			break
		}
		if resolved != lastSeen {
			lastSeen, lastChange = resolved, time.Now()
		} else if time.Since(lastChange) > 2*time.Minute {
			return nil, fmt.Errorf("demo: no progress for 2 minutes (%d of %d resolved)", resolved, put.Load())
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	elapsed := time.Since(start)
	prog.finish()

	res := &Result{RecordsIn: put.Load(), ElapsedS: elapsed.Seconds(), PoisonInjected: len(poison)}
	res.RecordsPerS = float64(res.RecordsIn) / res.ElapsedS
	res.Deliveries, res.Invocations, res.FailedInvokes = p.delivers.Load(), p.invokes.Load(), p.failed.Load()

	// Resolve the failure destination's pointers back to rows.
	failedRows := map[int64]bool{}
	dropped := make([]positions, cfg.Shards)
	recs, err := readStream(ctx, rn, failed)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		var f mapping.OnFailureRecord
		if err := json.Unmarshal(r.Data, &f); err != nil || f.KinesisBatchInfo == nil {
			return nil, fmt.Errorf("demo: failure destination holds a record that is not an on-failure record: %s", r.Data)
		}
		bi := f.KinesisBatchInfo
		sh, err0 := stream.ShardIndex(bi.ShardID)
		from, err1 := stream.ParseSequenceNumber("startSequenceNumber", p.epoch, sh, bi.StartSequenceNumber)
		to, err2 := stream.ParseSequenceNumber("endSequenceNumber", p.epoch, sh, bi.EndSequenceNumber)
		if err := errors.Join(err0, err1, err2); err != nil {
			return nil, err
		}
		if int(to-from+1) != bi.BatchSize {
			return nil, fmt.Errorf("demo: on-failure record range %d..%d does not hold its batchSize %d", from, to, bi.BatchSize)
		}
		for pos := from; pos <= to; pos++ {
			if dropped[sh].set(pos) {
				res.ToFailureDestination++
				row := int64(rows[sh][pos-1])
				failedRows[row] = true
				if poison[row] {
					res.PoisonInFailDest++
				}
			}
		}
	}
	// Lost: records put that are neither processed nor in the destination.
	p.mu.Lock()
	for sh := range rows {
		for i := range rows[sh] {
			pos := uint64(i + 1)
			if p.done[sh].has(pos) {
				res.ProcessedUnique++
			} else if !dropped[sh].has(pos) {
				res.Lost++
			}
		}
	}
	res.Redeliveries = res.Deliveries - res.ProcessedUnique
	lat := p.latMs
	pipelineStats := p.stats
	p.mu.Unlock()
	res.Latency = percentiles(lat)

	// The independent computation: straight from the parquet file, leaving
	// out the rows that went to the failure destination.
	want, _, err := flights.ComputeStats(cfg.DataPath, int(total), func(i int64) bool { return failedRows[i] })
	if err != nil {
		return nil, err
	}
	res.StatsMatch, res.StatsDiff = pipelineStats.Equal(want)
	res.Top = pipelineStats.Top(10)
	res.PeakRSSMiB = procstat.PeakRSSMiB()
	return res, nil
}

// produce reads the parquet file and puts every row, poison rows marked,
// with the origin airport as partition key, Producers PutRecords calls at a
// time. It records which row each (shard, position) holds.
func produce(ctx context.Context, rn *runnel.Runnel, streamName string, cfg Config, total int64, poison map[int64]bool, rows [][]int32, rowsMu *sync.Mutex, put *atomic.Int64) error {
	type chunk struct {
		rows    []int64 // parquet row of each entry
		entries []stream.PutRecordsRequestEntry
	}
	work := make(chan chunk, cfg.Producers*2)
	errs := make(chan error, cfg.Producers)
	var wg sync.WaitGroup
	for i := 0; i < cfg.Producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range work {
				for attempt := 0; ; attempt++ {
					out, err := rn.Streams.PutRecords(ctx, streamName, c.entries)
					if err != nil {
						errs <- err
						return
					}
					rowsMu.Lock()
					var retry []stream.PutRecordsRequestEntry
					var retryRows []int64
					for j, r := range out.Records {
						row := c.rows[j]
						if r.ErrorCode != "" {
							retry = append(retry, c.entries[j])
							retryRows = append(retryRows, row)
							continue
						}
						sh, _ := stream.ShardIndex(r.ShardId)
						q := seqPosition(r.SequenceNumber)
						for uint64(len(rows[sh])) < q {
							rows[sh] = append(rows[sh], -1)
						}
						rows[sh][q-1] = int32(row)
					}
					rowsMu.Unlock()
					put.Add(int64(len(c.entries) - len(retry)))
					if len(retry) == 0 {
						break
					}
					// PutRecords' per-record failures: put those again.
					if attempt > 10 {
						errs <- fmt.Errorf("demo: %d records failed 10 times", len(retry))
						return
					}
					c.entries, c.rows = retry, retryRows
				}
			}
		}()
	}
	var row int64
	err := flights.Read(cfg.DataPath, int(total), func(batch []flights.Flight) error {
		for i := 0; i < len(batch); i += stream.MaxPutRecords {
			end := min(i+stream.MaxPutRecords, len(batch))
			var c chunk
			for j := i; j < end; j++ {
				c.rows = append(c.rows, row)
				var data []byte
				if poison[row] {
					data = batch[j].AppendJSONPoison(nil)
				} else {
					data = batch[j].AppendJSON(nil)
				}
				c.entries = append(c.entries, stream.PutRecordsRequestEntry{Data: data, PartitionKey: batch[j].Origin})
				row++
			}
			select {
			case work <- c:
			case err := <-errs:
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	})
	close(work)
	wg.Wait()
	if err != nil {
		return err
	}
	select {
	case err := <-errs:
		return err
	default:
	}
	return nil
}

// seqPosition is the log position at the end of a sequence number.
func seqPosition(seq string) uint64 {
	v, _ := strconv.ParseUint(seq[len(seq)-20:], 10, 64)
	return v
}

func readStream(ctx context.Context, rn *runnel.Runnel, name string) ([]stream.Record, error) {
	shards, err := rn.Streams.ListShards(ctx, name)
	if err != nil {
		return nil, err
	}
	var out []stream.Record
	for _, sh := range shards {
		first, last, err := rn.Streams.ShardBounds(ctx, name, sh.ShardID)
		if err != nil {
			return nil, err
		}
		recs, _, err := rn.Streams.ReadRange(ctx, name, sh.ShardID, first, last)
		if err != nil {
			return nil, err
		}
		out = append(out, recs...)
	}
	return out, nil
}

func percentiles(ms []uint32) Latency {
	if len(ms) == 0 {
		return Latency{}
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	at := func(q float64) float64 { return float64(s[min(len(s)-1, int(q*float64(len(s))))]) }
	return Latency{P50: at(0.50), P99: at(0.99)}
}

// progress shows the run: a bar on a terminal, a line every 5 s otherwise.
type progress struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	total int64
	last  time.Time
}

func newProgress(w io.Writer, total int64) *progress {
	p := &progress{w: w, total: total}
	if w == nil {
		return p
	}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("records resolved"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("rec"),
			progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionSetWidth(30))
	}
	return p
}

func (p *progress) update(put, resolved int64) {
	if p.w == nil {
		return
	}
	if p.bar != nil {
		p.bar.Describe(fmt.Sprintf("put %d, resolved", put))
		p.bar.Set64(resolved)
		return
	}
	if time.Since(p.last) >= 5*time.Second {
		p.last = time.Now()
		fmt.Fprintf(p.w, "demo: put %d/%d, resolved %d\n", put, p.total, resolved)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
