// Package demo is runnel's main job: it puts real flight records (3,000,000
// US flights of 2001) into a stream, feeds them through an event source
// mapping to a function that computes per-airport statistics, injects
// transient function failures and poison records, and then reconciles:
// every record put is either processed or in the on-failure destination,
// and the statistics equal an independent computation straight from the
// parquet file.
package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

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
	ToFailureDestination int64   `json:"to_failure_destination"` // records the stream mapping sent to the Retry-DLQ
	Lost                 int64   `json:"lost"`
	StatsMatch           bool    `json:"stats_match"`
	ElapsedS             float64 `json:"elapsed_s"`
	RecordsPerS          float64 `json:"records_per_s"`
	Latency              Latency `json:"latency_ms"`

	Redeliveries     int64                  `json:"redeliveries"`
	Invocations      int64                  `json:"invocations"`
	FailedInvokes    int64                  `json:"failed_invocations"` // invocations that returned an error or reported failed Retry-DLQ messages (once each, whatever their failed messages)
	PoisonInjected   int                    `json:"poison_injected"`
	PoisonInFailDest int                    `json:"poison_unrecoverable"`
	FlakyInjected    int                    `json:"flaky_injected"`
	FlakyProcessed   int                    `json:"flaky_processed"` // flaky records processed (all of them, when it reconciles)
	RetriedMessages  int64                  `json:"retried"`
	Recovered        int64                  `json:"recovered"`
	Unrecoverable    int64                  `json:"unrecoverable"`
	StatsDiff        string                 `json:"stats_diff,omitempty"`
	PeakRSSMiB       float64                `json:"peak_rss_mib"`
	Top              []flights.AirportStats `json:"top_airports"`
	Incident         *Incident              `json:"incident,omitempty"`

	// Nodes is the number of runnel node processes (demo --nodes), and
	// NodeKills how many of them were killed with SIGKILL mid-run.
	Nodes     int `json:"nodes,omitempty"`
	NodeKills int `json:"node_kills,omitempty"`
	// FailoverS is the seconds from the kill until every lease of the
	// work the killed node held (its shards of the mapping) was held
	// again, by a survivor or the restarted node; AfterKillS, the seconds
	// from the kill until the last record was resolved (demo --nodes
	// with a kill).
	FailoverS  float64 `json:"failover_s,omitempty"`
	AfterKillS float64 `json:"after_kill_s,omitempty"`
	// RecordsByNode is, per node, the records it processed first (its
	// share of the work; demo --nodes), the records stored twice
	// (StoredTwice) included: they add up to ProcessedUnique +
	// StoredTwice.
	RecordsByNode map[string]int64 `json:"records_by_node,omitempty"`
	// StoredTwice is the records processed that the producer's
	// acknowledged puts do not hold: a PutRecords retried after its answer
	// was lost (a node killed mid-call) stored them a second time, at
	// another position (at-least-once, as Kinesis). Reconciled once, in
	// ProcessedUnique; counted again in RecordsByNode (demo --nodes).
	StoredTwice int64 `json:"stored_twice,omitempty"`
	// NodePeakRSSMiB is the peak resident set of the largest node process
	// (demo --nodes; their rusage once they exited, Linux); PeakRSSMiB is
	// then the driver's own.
	NodePeakRSSMiB float64 `json:"node_peak_rss_mib,omitempty"`
	// RecordsByShard is, per shard id, the records each node processed
	// first from it (demo --nodes): the shards' sizes (the partition keys
	// are airports, so they differ) and who ran each.
	RecordsByShard map[string]map[string]int64 `json:"records_by_shard,omitempty"`
}

// Check is the reconciliation's verdict: nil when nothing is lost, the
// statistics equal the parquet computation, the unrecoverable records are
// exactly the poison records injected, and every flaky record was
// processed.
func (r *Result) Check() error {
	var bad []string
	if r.Lost != 0 {
		bad = append(bad, fmt.Sprintf("lost=%d", r.Lost))
	}
	if !r.StatsMatch {
		bad = append(bad, "stats_match=false")
	}
	if r.PoisonInFailDest != r.PoisonInjected || r.Unrecoverable != int64(r.PoisonInjected) {
		bad = append(bad, fmt.Sprintf("unrecoverable=%d (poison among them %d), want exactly the %d poison records injected", r.Unrecoverable, r.PoisonInFailDest, r.PoisonInjected))
	}
	if r.FlakyProcessed != r.FlakyInjected {
		bad = append(bad, fmt.Sprintf("flaky_processed=%d of %d injected", r.FlakyProcessed, r.FlakyInjected))
	}
	if len(bad) > 0 {
		return fmt.Errorf("reconciliation failed: %s", strings.Join(bad, ", "))
	}
	return nil
}

// the function's shared state
type pipeline struct {
	numbering stream.Numbering
	rate      float64
	rng       *rand.Rand
	rngMu     sync.Mutex
	start     time.Time
	mu        sync.Mutex
	stats     *flights.Stats
	done      []positions // per shard: processed
	toRetry   []positions // per shard: records seen in Retry-DLQ messages
	latMs     []uint32
	unique    atomic.Int64
	delivers  atomic.Int64
	invokes   atomic.Int64
	failed    atomic.Int64 // invocations that returned an error or reported failed messages

	streams       *stream.Service
	retried       atomic.Int64 // Retry-DLQ messages handled
	recovered     atomic.Int64 // records processed from the Retry-DLQ
	flakyFailures int
	flakyMu       sync.Mutex
	flakyTries    map[string]int

	outage outageState  // the induced outage (incident.go)
	dupes  atomic.Int64 // records of successful batches already counted (skipped)
}

var errTransient = errors.New("injected transient failure")

// errPoison is the error of a batch holding a poison record.
type errPoison struct{ seq string }

func (e *errPoison) Error() string { return "poison record " + e.seq }

var flakyMark = []byte(`"flaky":true`)

// check parses a batch and applies the injected failures: a poison record
// always fails; a flaky record fails its first FlakyFailures attempts.
func (p *pipeline) check(recs []events.KinesisEventRecord) ([]flights.Flight, error) {
	parsed := make([]flights.Flight, len(recs))
	for i := range recs {
		f, poison, err := flights.ParseJSON(recs[i].Kinesis.Data)
		if err != nil {
			return nil, err
		}
		if poison {
			return nil, &errPoison{recs[i].Kinesis.SequenceNumber}
		}
		if p.outage.fails(recs[i].Kinesis.Data) {
			return nil, errOutage
		}
		if bytes.Contains(recs[i].Kinesis.Data, flakyMark) {
			p.flakyMu.Lock()
			p.flakyTries[recs[i].EventID]++
			n := p.flakyTries[recs[i].EventID]
			p.flakyMu.Unlock()
			if n <= p.flakyFailures {
				return nil, fmt.Errorf("flaky record %s: attempt %d fails", recs[i].EventID, n)
			}
		}
		parsed[i] = f
	}
	return parsed, nil
}

// merge adds a successful batch to the statistics, once per record
// (records are identified by shard and sequence number, so redeliveries
// are not counted twice: the whitepaper's sequence-number idempotency).
func (p *pipeline) merge(recs []events.KinesisEventRecord, parsed []flights.Flight, viaDLQ bool) error {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range recs {
		r := &recs[i]
		sh, pos, err := stream.DecodeSequenceNumber(p.numbering, r.Kinesis.SequenceNumber)
		if err != nil {
			return err
		}
		if !p.done[sh].set(pos) {
			p.dupes.Add(1)
			continue // a redelivery: already counted
		}
		p.stats.Add(parsed[i])
		p.unique.Add(1)
		if viaDLQ {
			p.recovered.Add(1)
		}
		p.latMs = append(p.latMs, uint32(max(0, now.Sub(r.Kinesis.ApproximateArrivalTimestamp.Time).Milliseconds())))
	}
	return nil
}

// sentToRetry notes the records of a Retry-DLQ message (each once,
// whatever the receives and redrives).
func (p *pipeline) sentToRetry(recs []events.KinesisEventRecord) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := range recs {
		if sh, pos, err := stream.DecodeSequenceNumber(p.numbering, recs[i].Kinesis.SequenceNumber); err == nil && sh < len(p.toRetry) {
			p.toRetry[sh].set(pos)
		}
	}
}

func (p *pipeline) transient() bool {
	p.rngMu.Lock()
	defer p.rngMu.Unlock()
	return p.rng.Float64() < p.rate
}

// HandleKinesis is the demo function on the stream: per-airport statistics
// over a batch, merged only if the whole batch succeeds.
func (p *pipeline) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	p.invokes.Add(1)
	p.delivers.Add(int64(len(ev.Records)))
	if p.transient() {
		p.failed.Add(1)
		return events.KinesisEventResponse{}, errTransient
	}
	parsed, err := p.check(ev.Records)
	if err != nil {
		p.failed.Add(1)
		return events.KinesisEventResponse{}, err
	}
	return events.KinesisEventResponse{}, p.merge(ev.Records, parsed, false)
}

// HandleSQS is the same function on the Retry-DLQ: each message is a
// pointer (KinesisBatchInfo) resolved back into its records; a message
// whose records fail is reported and stays for its next, backed-off try.
// An invocation reporting any failed message counts once as a failed
// invocation (p.failed counts invocations, not messages).
func (p *pipeline) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp, err := p.handleSQS(ctx, ev)
	if len(resp.BatchItemFailures) > 0 {
		p.failed.Add(1)
	}
	return resp, err
}

func (p *pipeline) handleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	p.invokes.Add(1)
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		p.retried.Add(1)
		res, err := recovery.Resolve(ctx, p.streams, []byte(m.Body))
		if err == nil {
			p.sentToRetry(res.Records)
		}
		// A transient failure only on a message's first receive: a good
		// record then always recovers within the RetryPolicy's attempts
		// (one transient failure plus the flaky ones), so what reaches the
		// Unrecoverable-DLQ is exactly the poison records.
		if err == nil && m.Attributes["ApproximateReceiveCount"] == "1" && p.transient() {
			err = errTransient
		}
		var parsed []flights.Flight
		if err == nil {
			p.delivers.Add(int64(len(res.Records)))
			parsed, err = p.check(res.Records)
		}
		if err == nil {
			err = p.merge(res.Records, parsed, true)
		}
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

// Run runs the demo and returns its reconciliation.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg.outageDefaults()
	cfg.setDefaults()
	if err := nodeset.RefuseShared(ctx, cfg.NATSURL, "demo", cfg.Logger); err != nil {
		return nil, err
	}
	run, err := openRun(ctx, cfg, "demo-", "")
	if err != nil {
		return nil, err
	}
	defer run.close()
	total, dir, rn := run.total, run.dir, run.rn

	suffix := filepath.Base(dir)
	src := "flights-" + suffix
	sd, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: src, ShardCount: cfg.Shards})
	if err != nil {
		return nil, err
	}
	// The two-tier dead-letter design: the stream's on-failure destination
	// is the Retry-DLQ, consumed by the same function with backoff; what
	// still fails moves on to the Unrecoverable-DLQ.
	unrecoverable, err := rn.Queues.CreateQueue(ctx, "flights-unrecoverable-"+suffix, nil)
	if err != nil {
		return nil, err
	}
	redrive := fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"10"}`, rn.Queues.ARN("flights-unrecoverable-"+suffix))
	retry, err := rn.Queues.CreateQueue(ctx, "flights-retry-"+suffix, map[string]string{"VisibilityTimeout": "60", "RedrivePolicy": redrive})
	if err != nil {
		return nil, err
	}
	// Against an external JetStream the run's resources outlive its data
	// directory: delete them at the end, the mappings first (so nothing
	// polls a deleted source), then the function, then the sources.
	var mappings []string
	if cfg.NATSURL != "" {
		defer func() {
			bg := context.Background()
			for _, id := range mappings {
				rn.Mappings.DeleteEventSourceMapping(bg, id)
			}
			rn.Functions.DeleteFunction(bg, "flight-stats")
			rn.Streams.DeleteStream(bg, src)
			rn.Queues.DeleteQueue(bg, retry)
			rn.Queues.DeleteQueue(bg, unrecoverable)
		}()
	}
	p := &pipeline{numbering: sd.Numbering(), rate: max(cfg.FailureRate, 0), rng: rand.New(rand.NewPCG(cfg.Seed, 1)),
		stats: flights.NewStats(), done: make([]positions, cfg.Shards), toRetry: make([]positions, cfg.Shards), latMs: make([]uint32, 0, total),
		streams: rn.Streams, flakyFailures: cfg.FlakyFailures, flakyTries: map[string]int{}}
	handlerName := "flight-stats-" + suffix
	if err := rn.Functions.Registry().Register(handlerName, p); err != nil {
		return nil, err
	}
	if _, err := rn.Functions.PutFunction(ctx, function.Config{FunctionName: "flight-stats", Handler: handlerName, Timeout: 60}); err != nil {
		return nil, err
	}

	// poison and flaky rows, spread at random over the run
	marked := func(n int, stream uint64, taken map[int64]bool) map[int64]bool {
		return markRows(cfg.Seed, stream, n, total, taken)
	}
	poison := marked(cfg.PoisonRecords, 2, nil)
	cfg.Outage.setWindow(total)
	flaky := marked(cfg.FlakyRecords, 3, cfg.Outage.exclude(poison))
	p.outage.on.Store(cfg.Outage != nil)

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
		DestinationConfig:          &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("flights-retry-" + suffix)}},
	})
	if err != nil {
		return nil, err
	}
	mappings = append(mappings, m.UUID)
	qm, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{
		EventSourceArn:        rn.Queues.ARN("flights-retry-" + suffix),
		FunctionName:          "flight-stats",
		BatchSize:             10,
		FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
		RetryPolicy:           &backoff.Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 2, MaxAttempts: cfg.RetryAttempts, MaximumAgeInSeconds: 3600},
	})
	if err != nil {
		return nil, err
	}
	mappings = append(mappings, qm.UUID)

	encode := func(row int64, f *flights.Flight) []byte {
		var data []byte
		switch {
		case poison[row]:
			data = f.AppendJSONPoison(nil)
		case flaky[row]:
			data = f.AppendJSON(nil)
			data = append(data[:len(data)-1], `,"flaky":true}`...)
		default:
			data = f.AppendJSON(nil)
		}
		return cfg.Outage.mark(row, data)
	}
	putRecords := func(ctx context.Context, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
		out, err := rn.Streams.PutRecords(ctx, src, entries)
		if err != nil {
			return nil, err
		}
		return out.Records, nil
	}
	prod := startProduction(ctx, cfg, total, encode, putRecords)

	// Wait until every record put is resolved: the stream mapping has
	// checkpointed every record, and the Retry-DLQ is empty (its messages
	// recovered, or moved on to the Unrecoverable-DLQ).
	var st *mapping.Status
	err = prod.settle(ctx, func(producing bool) (int64, bool, bool, error) {
		var err error
		if st, err = rn.Mappings.Status(m.UUID); err != nil {
			return 0, false, false, err
		}
		qst, err := rn.Mappings.Status(qm.UUID)
		if err != nil {
			return 0, false, false, err
		}
		caughtUp := !producing
		for _, sh := range st.Shards {
			_, last, err := rn.Streams.ShardBounds(ctx, src, sh.ShardID)
			if err != nil {
				return 0, false, false, err
			}
			if end, _ := rn.Streams.SequenceNumber(ctx, src, sh.ShardID, last+1); sh.Checkpoint != end {
				caughtUp = false
			}
		}
		// The queue mapping's status has no Queue part while it is not
		// running in this process (not started yet, or between leases).
		var moved int64
		if qst.Queue != nil {
			moved = qst.Queue.MovedToDeadLetter
		}
		resolved := p.unique.Load() + moved
		return resolved, caughtUp && queueDepth(ctx, rn, retry) == 0, false, nil
	}, func() string { return "" })
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)

	var inc *Incident
	if cfg.Outage != nil {
		if inc, err = runIncident(ctx, rn, p, cfg, incidentNames{stream: src, retry: retry, unrecoverable: unrecoverable}, prod.put.Load()); err != nil {
			return nil, err
		}
	}

	res := &Result{RecordsIn: prod.put.Load(), ElapsedS: elapsed.Seconds(), PoisonInjected: len(poison), FlakyInjected: len(flaky)}
	res.RecordsPerS = float64(res.RecordsIn) / res.ElapsedS
	res.Deliveries, res.Invocations, res.FailedInvokes = p.delivers.Load(), p.invokes.Load(), p.failed.Load()
	res.RetriedMessages, res.Recovered = p.retried.Load(), p.recovered.Load()
	// The records sent to the Retry-DLQ, as its messages tell them (every
	// one is received at least once before it is deleted or moved on),
	// not the discard counters of the shards this process ran.
	p.mu.Lock()
	for _, b := range p.toRetry {
		res.ToFailureDestination += int64(b.count())
	}
	p.mu.Unlock()

	// Resolve the Unrecoverable-DLQ's pointers back to rows.
	failedRows := map[int64]bool{}
	dropped := make([]positions, cfg.Shards)
	bodies, err := drainQueue(ctx, rn, unrecoverable)
	if err != nil {
		return nil, err
	}
	for _, body := range bodies {
		r, err := recovery.Resolve(ctx, rn.Streams, []byte(body))
		if err != nil || r.Info == nil {
			return nil, fmt.Errorf("demo: the Unrecoverable-DLQ holds a message that does not resolve to stream records (%v): %s", err, body)
		}
		for _, rec := range r.Records {
			sh, pos, err := stream.DecodeSequenceNumber(p.numbering, rec.Kinesis.SequenceNumber)
			if err != nil {
				return nil, err
			}
			if dropped[sh].set(pos) {
				res.Unrecoverable++
				row := int64(prod.rows[sh][pos-1])
				failedRows[row] = true
				if poison[row] {
					res.PoisonInFailDest++
				}
			}
		}
	}
	// Lost: records put that are neither processed nor unrecoverable.
	p.mu.Lock()
	eachRow(prod.rows, func(sh int, pos uint64, row int64) {
		if p.done[sh].has(pos) {
			res.ProcessedUnique++
			if flaky[row] {
				res.FlakyProcessed++
			}
		} else if !dropped[sh].has(pos) {
			res.Lost++
		}
	})
	res.Redeliveries = res.Deliveries - res.ProcessedUnique
	lat := p.latMs
	pipelineStats := p.stats
	p.mu.Unlock()
	res.Latency = percentiles(lat)

	// The independent computation: straight from the parquet file, leaving
	// out the rows in the Unrecoverable-DLQ.
	if err := res.check(cfg, total, failedRows, pipelineStats); err != nil {
		return nil, err
	}
	if inc != nil {
		if err := inc.finish(ctx, rn, p, cfg, src, prod.rows); err != nil {
			return nil, err
		}
		res.Incident = inc
	}
	return res, nil
}

// queueDepth is how many messages a queue holds (visible, in flight and
// delayed); -1 if it cannot be read.
func queueDepth(ctx context.Context, rn *runnel.Runnel, url string) int {
	a, err := rn.Queues.GetQueueAttributes(ctx, url, []string{"All"})
	if err != nil {
		return -1
	}
	n := 0
	for _, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		v, _ := strconv.Atoi(a[k])
		n += v
	}
	return n
}

// drainQueue receives every message of a queue (keeping them invisible
// while it reads) and returns their bodies.
func drainQueue(ctx context.Context, rn *runnel.Runnel, url string) ([]string, error) {
	var bodies []string
	for {
		vt, wait := 600, 0
		ms, err := rn.Queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: &vt, WaitTimeSeconds: &wait})
		if err != nil {
			return nil, err
		}
		if len(ms) == 0 {
			return bodies, nil
		}
		for _, m := range ms {
			bodies = append(bodies, m.Body)
		}
	}
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
