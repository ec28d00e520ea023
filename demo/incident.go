package demo

// The incident story (issue 4's "done when"): a run with an induced
// downstream outage lands records in the dead-letter queues, the alarms
// show it as `runnel status` would, and after the fix the operator's
// redrive brings every record through exactly once.
//
//  1. Outage. Rows At..At+Records-1 of the parquet file arrive while the
//     function's downstream is down: the function fails every one of them,
//     on the stream and on the Retry-DLQ, until the fix. Bisect isolates
//     them, so each goes stream -> Retry-DLQ -> (after the RetryPolicy's
//     attempts, 2 by default in this mode) -> Unrecoverable-DLQ, while the
//     rest of the run goes on.
//  2. Detection. Once the run has settled, the alarm rules (package
//     observe, seed 004's table) are evaluated once: dlq-depth on the
//     Unrecoverable-DLQ is in ALARM with its depth.
//  3. Fix and recovery. The outage ends, and recovery.Redrive (`runnel
//     dlq redrive`) moves the Unrecoverable-DLQ's messages back to their
//     source, the Retry-DLQ, which the same function consumes. A message
//     that fails again there (the injected transient failures go on) comes
//     back to the Unrecoverable-DLQ and is redriven in the next round, as
//     an operator would.
//  4. Reconciliation. Every record is processed exactly once (the
//     function dedupes by shard and sequence number), lost 0, and the
//     statistics equal the parquet computation over every row.
//
// The outage mode runs without poison records, so that its ending is
// clean: processed = records in. (Poison records would, by design, go
// back to the Unrecoverable-DLQ at every redrive.)
//
// Why redrive rather than replay: the Unrecoverable-DLQ holds exactly the
// failed records (KinesisBatchInfo pointers into the stream), and the
// redriven messages go through the Retry-DLQ with its RetryPolicy, so a
// failure during recovery is retried, not lost. recovery.Replay of the
// affected sequence ranges would also work, but the outage records are
// interleaved with records that did succeed (the partition key spreads
// them over the shards), so a replay re-sends those too (the dedupe skips
// them), and it invokes the function directly, without the Retry-DLQ's
// retries. The report gives the equivalent replay commands and how many
// already-processed records each would re-send.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// Outage configures the induced downstream outage of the incident story.
type Outage struct {
	// At is the first row of the outage window; 0 means a third of the
	// way through the run.
	At int64
	// Records is the width of the window; 0 means min(2000, a tenth of
	// the run).
	Records int64
	// MaxRedriveRounds bounds the redrives after the fix. Default 5.
	MaxRedriveRounds int

	from, to int64 // the window in rows, [from, to), once the run's size is known
}

// Incident is the incident story's report; its JSON is Result.incident.
type Incident struct {
	Stream        string `json:"stream"`
	RetryDLQ      string `json:"retry_dlq"`
	Unrecoverable string `json:"unrecoverable_dlq"`
	// OutageAt and OutageRecords: the window of rows the function failed
	// until the fix.
	OutageAt      int64 `json:"outage_at"`
	OutageRecords int64 `json:"outage_records"`
	// RetryAttempts is the Retry-DLQ's RetryPolicy.MaxAttempts in the run.
	RetryAttempts int `json:"retry_attempts"`

	// Detection: the alarms evaluated once after the run settled.
	AlarmFired bool `json:"alarm_fired"`
	// Alarm is the Unrecoverable-DLQ's dlq-depth alarm at detection.
	Alarm observe.Alarm `json:"alarm"`
	// InAlarm are every alarm in ALARM at detection.
	InAlarm []observe.Alarm `json:"in_alarm"`
	// UnrecoverableBeforeFix is how many records were in the
	// Unrecoverable-DLQ at detection (outage records, and any other record
	// that failed all its attempts).
	UnrecoverableBeforeFix int64 `json:"unrecoverable_before_fix"`
	// OutageProcessedBeforeFix must be 0: the outage failed them all.
	OutageProcessedBeforeFix int64 `json:"outage_processed_before_fix"`

	// Recovery.
	Recovery      string  `json:"recovery"`
	Redriven      int64   `json:"redriven"` // messages moved back, all rounds
	RedriveRounds int     `json:"redrive_rounds"`
	RecoveryS     float64 `json:"recovery_s"` // from the fix to empty DLQs
	// RecoveredAfterFix is how many records were first processed after
	// the fix; OutageRecovered how many of them are outage records.
	RecoveredAfterFix int64 `json:"recovered_after_fix"`
	OutageRecovered   int64 `json:"outage_recovered"`
	// DuplicatesPrevented counts records of successful invocations that
	// were already counted (the shard+sequence dedupe), over the run.
	DuplicatesPrevented int64 `json:"duplicates_prevented"`
	// AlarmCleared: the dlq-depth alarm is OK at the evaluation after the
	// recovery.
	AlarmCleared bool          `json:"alarm_cleared"`
	AlarmAfter   observe.Alarm `json:"alarm_after"`

	// ReplayAlternative is the same recovery by `runnel replay`, one
	// sequence range per shard.
	ReplayAlternative []ReplayRange `json:"replay_alternative"`

	doneBeforeFix []positions
}

// ReplayRange is one shard's range of the outage records, for `runnel
// replay`.
type ReplayRange struct {
	Shard   string `json:"shard"`
	FromSeq string `json:"from_seq"`
	ToSeq   string `json:"to_seq"`
	// Records in the range, and of them already processed before the fix
	// (a replay re-sends them; the dedupe skips them).
	Records          int64 `json:"records"`
	AlreadyProcessed int64 `json:"already_processed"`
}

// outageState is the function's side of the outage.
type outageState struct{ on atomic.Bool }

var (
	errOutage  = errors.New("downstream unavailable (induced outage)")
	outageMark = []byte(`"outage":true`)
)

// fails says whether a record fails because of the outage: it arrived in
// the outage window and the outage is not fixed yet.
func (o *outageState) fails(data []byte) bool {
	return o.on.Load() && bytes.Contains(data, outageMark)
}

// outageDefaults applies the outage mode's defaults before setDefaults: a
// copy of the Outage, no poison records, a short RetryPolicy.
func (c *Config) outageDefaults() {
	if c.Outage == nil {
		return
	}
	o := *c.Outage
	c.Outage = &o
	c.PoisonRecords = -1
	if c.RetryAttempts == 0 {
		c.RetryAttempts = 2
	}
	if o.MaxRedriveRounds == 0 {
		o.MaxRedriveRounds = 5
	}
}

// setWindow fixes the outage window for a run of total rows.
func (o *Outage) setWindow(total int64) {
	if o == nil {
		return
	}
	from, n := o.At, o.Records
	if from <= 0 {
		from = total / 3
	}
	if n <= 0 {
		n = min(2000, max(1, total/10))
	}
	o.from = min(from, total)
	o.to = min(o.from+n, total)
}

func (o *Outage) in(row int64) bool {
	return o != nil && row >= o.from && row < o.to
}

// exclude is taken plus the outage rows (flaky records are chosen
// elsewhere); taken itself without an outage.
func (o *Outage) exclude(taken map[int64]bool) map[int64]bool {
	if o == nil {
		return taken
	}
	out := map[int64]bool{}
	for r := range taken {
		out[r] = true
	}
	for r := o.from; r < o.to; r++ {
		out[r] = true
	}
	return out
}

// mark marks a record of the outage window.
func (o *Outage) mark(row int64, data []byte) []byte {
	if !o.in(row) {
		return data
	}
	return append(data[:len(data)-1], `,"outage":true}`...)
}

type incidentNames struct{ stream, retry, unrecoverable string }

// runIncident runs steps 2 and 3 once the run has settled (the stream
// mapping caught up, the Retry-DLQ empty): detection, fix, redrive, and
// the wait for both dead-letter queues to be empty.
func runIncident(ctx context.Context, rn *runnel.Runnel, p *pipeline, cfg Config, n incidentNames, put int64) (*Incident, error) {
	say := func(format string, args ...any) {
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "demo: "+format+"\n", args...)
		}
	}
	inc := &Incident{Stream: n.stream, RetryDLQ: queueNameOf(n.retry), Unrecoverable: queueNameOf(n.unrecoverable),
		OutageAt: cfg.Outage.from, RetryAttempts: cfg.RetryAttempts, Recovery: "redrive"}

	// Detection: the alarms as `runnel status` evaluates them.
	alarms, err := observe.NewAlarms(rn, observe.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return nil, err
	}
	alarms.Evaluate(ctx)
	for _, a := range alarms.Alarms() {
		if a.State == observe.StateAlarm {
			inc.InAlarm = append(inc.InAlarm, a)
		}
		if a.Rule == observe.RuleDLQDepth && a.Resource == inc.Unrecoverable {
			inc.Alarm = a
			inc.AlarmFired = a.State == observe.StateAlarm
		}
	}
	say("incident: %s is %s (%g messages)", inc.Alarm.Name, inc.Alarm.State, inc.Alarm.Value)

	// The fix: the outage ends. What the function has processed so far is
	// kept to tell the records recovered after the fix.
	p.mu.Lock()
	p.outage.on.Store(false)
	inc.doneBeforeFix = make([]positions, len(p.done))
	for i := range p.done {
		inc.doneBeforeFix[i].words = slices.Clone(p.done[i].words)
	}
	p.mu.Unlock()
	fixed := time.Now()
	say("fixing the outage; redriving the Unrecoverable-DLQ %s to the Retry-DLQ %s", inc.Unrecoverable, inc.RetryDLQ)

	lastChange, lastSeen := time.Now(), int64(-1)
	for {
		if queueDepth(ctx, rn, n.unrecoverable) > 0 {
			if inc.RedriveRounds == cfg.Outage.MaxRedriveRounds {
				break // left for the reconciliation to report
			}
			r, err := recovery.Redrive(ctx, rn.Queues, inc.Unrecoverable, recovery.RedriveOptions{Poll: 20 * time.Millisecond})
			if err != nil {
				return nil, err
			}
			inc.RedriveRounds++
			inc.Redriven += r.ApproximateNumberOfMessagesMoved
			say("redrive round %d: %d messages moved back to %s", inc.RedriveRounds, r.ApproximateNumberOfMessagesMoved, inc.RetryDLQ)
		}
		rd, ud := queueDepth(ctx, rn, n.retry), queueDepth(ctx, rn, n.unrecoverable)
		if rd == 0 && ud == 0 {
			break
		}
		if rd < 0 || ud < 0 {
			return nil, fmt.Errorf("demo: cannot read the dead-letter queues' depth")
		}
		if u := p.unique.Load(); u != lastSeen {
			lastSeen, lastChange = u, time.Now()
		} else if time.Since(lastChange) > 2*time.Minute {
			return nil, fmt.Errorf("demo: recovery made no progress for 2 minutes (%d of %d processed)", u, put)
		}
		if rd == 0 {
			continue // everything went back to the Unrecoverable-DLQ: redrive again
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	inc.RecoveryS = time.Since(fixed).Seconds()

	alarms.Evaluate(ctx)
	for _, a := range alarms.Alarms() {
		if a.Rule == observe.RuleDLQDepth && a.Resource == inc.Unrecoverable {
			inc.AlarmAfter = a
			inc.AlarmCleared = a.State == observe.StateOK
		}
	}
	say("recovered in %.1f s; %s is %s", inc.RecoveryS, inc.AlarmAfter.Name, inc.AlarmAfter.State)
	return inc, nil
}

// finish counts, once the run is reconciled, what the fix recovered, and
// works out the replay alternative.
func (inc *Incident) finish(ctx context.Context, rn *runnel.Runnel, p *pipeline, cfg Config, streamName string, rows [][]int32) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	inc.DuplicatesPrevented = p.dupes.Load()
	for sh := range rows {
		var lo, hi uint64
		var inRange int64
		for i, row := range rows[sh] {
			if row < 0 { // a position that holds no record (positions are not dense)
				continue
			}
			pos := uint64(i + 1)
			before, now := inc.doneBeforeFix[sh].has(pos), p.done[sh].has(pos)
			if !before {
				inc.UnrecoverableBeforeFix++
				if now {
					inc.RecoveredAfterFix++
				}
			}
			if !cfg.Outage.in(int64(row)) {
				continue
			}
			inc.OutageRecords++
			switch {
			case before:
				inc.OutageProcessedBeforeFix++
			case now:
				inc.OutageRecovered++
			}
			if lo == 0 {
				lo = pos
			}
			hi = pos
			inRange++
		}
		if lo == 0 {
			continue
		}
		id := stream.ShardID(sh)
		fromSeq, err := rn.Streams.SequenceNumber(ctx, streamName, id, lo)
		if err != nil {
			return err
		}
		toSeq, err := rn.Streams.SequenceNumber(ctx, streamName, id, hi)
		if err != nil {
			return err
		}
		span := int64(hi - lo + 1)
		inc.ReplayAlternative = append(inc.ReplayAlternative, ReplayRange{Shard: id, FromSeq: fromSeq, ToSeq: toSeq,
			Records: span, AlreadyProcessed: span - inRange})
	}
	inc.doneBeforeFix = nil
	return nil
}

func queueNameOf(url string) string {
	for i := len(url) - 1; i >= 0; i-- {
		if url[i] == '/' {
			return url[i+1:]
		}
	}
	return url
}
