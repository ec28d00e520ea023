package demo

// What Run and RunExternal share: opening a run, the producer, the loop
// that waits for every record to be resolved, the row bookkeeping and the
// check against the parquet file.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/procstat"
	"github.com/runnel-dev/runnel/stream"
)

// putFunc puts one PutRecords call's entries and returns a result per
// entry, in order (a failed entry has an ErrorCode and is put again).
type putFunc func(ctx context.Context, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error)

// production is the producer of a run, working in the background: it
// reads the parquet file and puts every row, encoded by encode, with the
// origin airport as partition key, Producers PutRecords calls at a time.
type production struct {
	prog *progress
	errc chan error
	// rows[shard][pos-1] = parquet row index, to map records back to rows
	// (-1: a position that holds no record). Guarded by mu while producing.
	rows      [][]int32
	mu        sync.Mutex
	put       atomic.Int64 // records stored
	producing bool
	warned    time.Time
	log       *slog.Logger
}

// startProduction starts producing the first total rows through put.
func startProduction(ctx context.Context, cfg Config, total int64, encode func(row int64, f *flights.Flight) []byte, put putFunc) *production {
	pr := &production{prog: newProgress(cfg.Progress, total), errc: make(chan error, 1), rows: make([][]int32, cfg.Shards), producing: true, log: cfg.Logger}
	if pr.log == nil {
		pr.log = slog.Default()
	}
	go func() { pr.errc <- produce(ctx, cfg, total, encode, put, pr.rows, &pr.mu, &pr.put) }()
	return pr
}

// settle waits until every record put is resolved: it calls step (told
// whether the producer still runs) every 50 ms, or at once while step
// reports busy, until step reports done, showing progress. It returns the
// producer's error or step's, and fails when the resolved count (step's
// first result) stays the same for 2 minutes, with stuck's words.
//
// When ctx ends (Ctrl-C) it returns an *Interrupted with the records put
// and resolved so far, and leaves the progress bar where it was.
func (pr *production) settle(ctx context.Context, step func(producing bool) (resolved int64, done, busy bool, err error), stuck func() string) (err error) {
	lastChange, lastSeen := time.Now(), int64(-1)
	defer func() {
		if err != nil && ctx.Err() != nil {
			pr.prog.stop()
			err = &Interrupted{Put: pr.put.Load(), Total: pr.prog.total, Resolved: max(lastSeen, 0), Err: err}
			return
		}
		pr.prog.finish()
	}()
	for {
		if pr.producing {
			select {
			case err := <-pr.errc:
				if err != nil {
					return err
				}
				pr.producing = false
			default:
			}
		}
		resolved, done, busy, err := step(pr.producing)
		if err != nil && ctx.Err() != nil {
			return ctx.Err() // interrupted: not a retryable error to wait through
		}
		if err != nil && !awserr.IsRetryable(err) {
			return err
		}
		if err != nil {
			// A NATS server died or a leader is being elected: wait, as an
			// AWS client retries a retryable error; the no-progress limit
			// below still bounds the wait.
			pr.warn("waiting through a retryable error", err)
			resolved, done, busy = lastSeen, false, false
		}
		pr.prog.update(pr.put.Load(), resolved)
		if done {
			return nil
		}
		if resolved != lastSeen {
			lastSeen, lastChange = resolved, time.Now()
		} else if time.Since(lastChange) > 2*time.Minute {
			return fmt.Errorf("demo: no progress for 2 minutes (%d of %d resolved%s)", resolved, pr.put.Load(), stuck())
		}
		if !busy {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// unresolved is settle's stuck words for a reader whose missing
// describes the records put but not resolved, per shard: it reads the
// producer's rows under its lock.
func (pr *production) unresolved(missing func(rows [][]int32) string) func() string {
	return func() string {
		pr.mu.Lock()
		defer pr.mu.Unlock()
		return "; unresolved by shard: " + missing(pr.rows)
	}
}

// warn logs err at most every 5 s.
func (pr *production) warn(msg string, err error) {
	if time.Since(pr.warned) > 5*time.Second {
		pr.warned = time.Now()
		pr.log.Warn(msg, "err", err)
	}
}

// Interrupted is the error of a run whose context ended (Ctrl-C,
// SIGTERM) before every record was resolved: what was done so far. It
// wraps the context's error.
type Interrupted struct {
	Put      int64 // records stored
	Total    int64 // records the run was to put
	Resolved int64 // records processed or in the on-failure destination
	Err      error
}

func (e *Interrupted) Error() string {
	return fmt.Sprintf("interrupted: %d of %d records put, %d of them resolved (processed or in a dead-letter queue) so far; not reconciled", e.Put, e.Total, e.Resolved)
}

func (e *Interrupted) Unwrap() error { return e.Err }

// putRiding is put, retried with backoff while it fails with a retryable
// error (awserr.IsRetryable: a JetStream leader election, a reconnect),
// for at most 2 minutes of consecutive failures: the ride-through an AWS
// SDK gives a producer. A retried call may store its records twice
// (at-least-once, as Kinesis): the reconciliation counts unique rows.
func putRiding(ctx context.Context, cfg Config, put putFunc, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		out, err := put(ctx, entries)
		if err == nil || !awserr.IsRetryable(err) || time.Since(start) > 2*time.Minute {
			return out, err
		}
		if ctx.Err() != nil {
			return nil, ctx.Err() // interrupted: not a retryable error
		}
		if cfg.Logger != nil && attempt%10 == 1 {
			cfg.Logger.Warn("PutRecords failed with a retryable error; retrying", "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Duration(min(attempt, 20)) * 100 * time.Millisecond):
		}
	}
}

// eachRow calls fn for every position of rows (see production.rows) that
// holds a record, with its shard index, log position and parquet row.
func eachRow(rows [][]int32, fn func(sh int, pos uint64, row int64)) {
	for sh := range rows {
		for i, row := range rows[sh] {
			if row >= 0 {
				fn(sh, uint64(i+1), int64(row))
			}
		}
	}
}

// run is what Run and RunExternal share: the rows to put, a fresh data
// directory (removed by close unless Config.Keep) and a runnel open on it.
type run struct {
	total int64
	dir   string
	rn    *runnel.Runnel
	close func()
}

// openRun counts the rows, makes a data directory named prefix* under
// Config.DataDir and opens runnel with its engine in sub of it.
func openRun(ctx context.Context, cfg Config, prefix, sub string) (*run, error) {
	total, dir, err := prepareRun(cfg, prefix)
	if err != nil {
		return nil, err
	}
	removeDir := func() {
		if !cfg.Keep {
			os.RemoveAll(dir)
		}
	}
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: filepath.Join(dir, sub), NATSURL: cfg.NATSURL, Logger: cfg.Logger}})
	if err != nil {
		removeDir()
		return nil, err
	}
	return &run{total: total, dir: dir, rn: rn, close: func() { rn.Close(); removeDir() }}, nil
}

// tally sorts every record the producer stored (rows) into processed
// (done), in the on-failure destination (failed, not processed) or lost,
// counting them in res; processed, when set, is called for each processed
// one. It returns the parquet rows of the failed records.
func (res *Result) tally(rows [][]int32, done, failed []positions, poison map[int64]bool, processed func(sh int, pos uint64)) map[int64]bool {
	failedRows := map[int64]bool{}
	eachRow(rows, func(sh int, pos uint64, row int64) {
		switch {
		case done[sh].has(pos):
			res.ProcessedUnique++
			if processed != nil {
				processed(sh, pos)
			}
		case failed[sh].has(pos):
			res.Unrecoverable++
			failedRows[row] = true
			if poison[row] {
				res.PoisonInFailDest++
			}
		default:
			res.Lost++
		}
	})
	res.Redeliveries = res.Deliveries - res.ProcessedUnique
	return failedRows
}

// prepareRun counts the rows of the run and makes its data directory,
// named prefix* under Config.DataDir.
func prepareRun(cfg Config, prefix string) (total int64, dir string, err error) {
	total, err = flights.Count(cfg.DataPath)
	if err != nil {
		return 0, "", fmt.Errorf("demo: %w (--data names the parquet file; without it the embedded one is read)", err)
	}
	if cfg.Records > 0 && int64(cfg.Records) < total {
		total = int64(cfg.Records)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return 0, "", err
	}
	dir, err = os.MkdirTemp(cfg.DataDir, prefix)
	return total, dir, err
}

// markRows picks n distinct rows of total (fewer when total runs out),
// none of them in taken, at random from (seed, stream): the poison and
// flaky rows, the same for a seed in Run and RunExternal.
func markRows(seed, stream uint64, n int, total int64, taken map[int64]bool) map[int64]bool {
	out := map[int64]bool{}
	r := rand.New(rand.NewPCG(seed, stream))
	for n > 0 && len(out) < min(n, int(total)-len(taken)) {
		if row := r.Int64N(total); !taken[row] {
			out[row] = true
		}
	}
	return out
}

// check compares the pipeline's statistics with the independent
// computation straight from the parquet file over the first total rows,
// leaving out failedRows, and fills StatsMatch, StatsDiff, Top and
// PeakRSSMiB.
func (res *Result) check(cfg Config, total int64, failedRows map[int64]bool, got *flights.Stats) error {
	want, _, err := flights.ComputeStats(cfg.DataPath, int(total), func(i int64) bool { return failedRows[i] })
	if err != nil {
		return err
	}
	res.StatsMatch, res.StatsDiff = got.Equal(want)
	res.Top = got.Top(10)
	res.PeakRSSMiB = procstat.PeakRSSMiB()
	return nil
}

// produce puts the rows (see production), recording which row each
// (shard, position) holds in rows and counting the records stored in
// stored.
func produce(ctx context.Context, cfg Config, total int64, encode func(row int64, f *flights.Flight) []byte, put putFunc, rows [][]int32, rowsMu *sync.Mutex, stored *atomic.Int64) error {
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
					out, err := putRiding(ctx, cfg, put, c.entries)
					if err != nil {
						errs <- err
						return
					}
					rowsMu.Lock()
					var retry []stream.PutRecordsRequestEntry
					var retryRows []int64
					for j, r := range out {
						if r.ErrorCode != "" {
							retry = append(retry, c.entries[j])
							retryRows = append(retryRows, c.rows[j])
							continue
						}
						sh, err := stream.ShardIndex(r.ShardId)
						if err != nil || sh >= len(rows) {
							rowsMu.Unlock()
							errs <- fmt.Errorf("demo: PutRecords answered an unexpected shard %q", r.ShardId)
							return
						}
						q := seqPosition(r.SequenceNumber)
						for uint64(len(rows[sh])) < q {
							rows[sh] = append(rows[sh], -1)
						}
						rows[sh][q-1] = int32(c.rows[j])
					}
					rowsMu.Unlock()
					stored.Add(int64(len(c.entries) - len(retry)))
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
				c.entries = append(c.entries, stream.PutRecordsRequestEntry{Data: encode(row, &batch[j]), PartitionKey: batch[j].Origin})
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

// stop ends the bar where it is (an interrupted run: not at 100%).
func (p *progress) stop() {
	if p.bar != nil {
		p.bar.Exit()
		fmt.Fprintln(p.w)
	}
}

func (p *progress) finish() {
	if p.bar != nil {
		p.bar.Finish()
		fmt.Fprintln(p.w)
	}
}
