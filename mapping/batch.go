package mapping

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

// outcome of one invocation of a batch.
type outcome int

const (
	outcomeOK      outcome = iota // every record processed
	outcomeFailed                 // function error, or a response that fails the whole batch
	outcomePartial                // batchItemFailures: records before failIdx processed
)

// invocation is the result of invoking a (sub-)batch.
type invocation struct {
	outcome outcome
	failIdx int              // outcomePartial: index of the lowest failed record
	invokes int              // how many invocations these records have been in
	last    *function.Result // the last invocation's result, for the on-failure record
	ran     string           // the version the last invocation ran ($LATEST or a number)
	state   json.RawMessage  // a windowed invocation's response state
}

// batchRun resolves one batch: it invokes the function, retries, bisects
// and discards until every record of the batch is either processed or
// discarded. Its rules, in the words of the Lambda docs
// (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html):
//
//   - A function error fails the batch. Without BisectBatchOnFunctionError
//     the batch is retried whole, each retry consuming one of
//     MaximumRetryAttempts; after the last one its records are discarded
//     with condition RetryAttemptsExhausted.
//   - With BisectBatchOnFunctionError a failed batch of two or more records
//     is split in two and both halves are invoked, then each half is
//     resolved in turn. "Splitting batches doesn't consume the retry quota":
//     only a failing single record uses up retries. For five records that
//     always fail and MaximumRetryAttempts 0 the invocations are 12345,
//     123, 45, 12, 3, 1, 2, 4, 5.
//   - With ReportBatchItemFailures the lowest reported sequence number is
//     the checkpoint: records before it are done, the rest is retried (a
//     retry without bisect; with bisect the batch is split at that record
//     and the remainder invoked without consuming the quota). An empty,
//     null or unknown itemIdentifier fails the whole batch.
//   - Before every invocation, records older than MaximumRecordAgeInSeconds
//     are discarded with condition RecordAgeExceeded.
//   - A throttle (the function's concurrency in use) is retried after a
//     backoff without consuming the quota, as is a missing function.
//
// Retries of the same records wait an exponential backoff with full jitter
// (Options.RetryBaseDelay doubling up to Options.RetryMaxDelay); splits are
// invoked at once. Retries reuse the records read for the batch: records
// are immutable, so this is the same as re-reading from the checkpoint.
type batchRun struct {
	l *lane
	w *shardWorker
	r *runner
}

func (b *batchRun) run(ctx context.Context, recs []stream.Record) error {
	recs, inv, err := b.invoke(ctx, recs, invocation{})
	if err != nil {
		return err
	}
	return b.resolve(ctx, recs, inv, 0)
}

func (b *batchRun) resolve(ctx context.Context, recs []stream.Record, inv invocation, attempts int) error {
	cfg := &b.r.cfg
	// A windowed batch is retried whole, with the state it was given.
	bisect := cfg.BisectBatchOnFunctionError && b.l.win == nil
	var err error
	for len(recs) > 0 {
		switch inv.outcome {
		case outcomeOK:
			if b.l.win != nil {
				if err := b.fold(ctx, recs, inv.state); err != nil {
					return err
				}
			}
			b.w.counters.processedRecords.Add(int64(len(recs)))
			b.l.markDone(recs)
			return nil
		case outcomePartial:
			if b.l.win != nil {
				if err := b.fold(ctx, recs[:inv.failIdx], inv.state); err != nil {
					return err
				}
			}
			b.w.counters.partialFailures.Add(1)
			b.w.counters.processedRecords.Add(int64(inv.failIdx))
			b.l.markDone(recs[:inv.failIdx])
			recs = recs[inv.failIdx:]
			if bisect && inv.failIdx > 0 {
				b.w.counters.bisects.Add(1)
				if recs, inv, err = b.invoke(ctx, recs, inv); err != nil {
					return err
				}
				continue
			}
		}
		// The records in recs failed.
		if bisect && len(recs) > 1 {
			b.w.counters.bisects.Add(1)
			mid := (len(recs) + 1) / 2
			left, invL, err := b.invoke(ctx, recs[:mid], inv)
			if err != nil {
				return err
			}
			right, invR, err := b.invoke(ctx, recs[mid:], inv)
			if err != nil {
				return err
			}
			if err := b.resolve(ctx, left, invL, attempts); err != nil {
				return err
			}
			return b.resolve(ctx, right, invR, attempts)
		}
		attempts++
		if max := *cfg.MaximumRetryAttempts; max >= 0 && attempts > max {
			return b.discard(ctx, recs, ConditionRetryAttemptsExhausted, inv)
		}
		b.w.counters.retries.Add(1)
		if err := b.r.svc.backoff(ctx, attempts); err != nil {
			return err
		}
		if recs, inv, err = b.invoke(ctx, recs, inv); err != nil {
			return err
		}
	}
	return nil
}

// invoke discards aged records, then invokes the function with the rest,
// waiting out throttles. It returns the records actually invoked. It
// returns an error only when ctx ends.
//
// prev is the previous invocation of these records (zero for a new batch):
// its invoke count and result carry over into on-failure records.
func (b *batchRun) invoke(ctx context.Context, recs []stream.Record, prev invocation) ([]stream.Record, invocation, error) {
	inv := invocation{invokes: prev.invokes, last: prev.last, ran: prev.ran}
	for wait := 1; ; wait++ {
		var err error
		if recs, err = b.dropAged(ctx, recs, inv, inv.invokes > 0 || wait > 1); err != nil {
			return nil, inv, err
		}
		if len(recs) == 0 {
			return nil, inv, nil
		}
		fn, err := b.r.function()
		if err != nil {
			b.w.setResult("PROBLEM: Function not found")
			b.w.setErr(err)
			if err := b.r.svc.backoff(ctx, wait); err != nil {
				return nil, inv, err
			}
			continue
		}
		if kind := b.r.eventKind(); !fn.Accepts(kind) {
			// Replaced since the mapping was made (PutFunction) by a
			// handler of another event type: it would get an empty event,
			// "succeed", and the records would be checkpointed unprocessed.
			// The shard waits, as for a missing function, not counted as
			// a retry.
			b.w.setResult("PROBLEM: Function's handler takes no " + kind + " events")
			b.w.setErr(fmt.Errorf("the handler of %s does not take %s events; the shard waits for a handler that does", b.r.cfg.FunctionName, kind))
			if err := b.r.svc.backoff(ctx, wait); err != nil {
				return nil, inv, err
			}
			continue
		}
		ev := b.event(recs)
		res, err := fn.Invoke(ctx, ev)
		if ctx.Err() != nil {
			return nil, inv, ctx.Err()
		}
		if err != nil {
			if errors.Is(err, awserr.ErrTooManyRequests) {
				b.w.setResult("PROBLEM: Function call throttled")
				b.w.counters.throttles.Add(1)
			} else {
				b.w.setErr(err)
			}
			if err := b.r.svc.backoff(ctx, wait); err != nil {
				return nil, inv, err
			}
			continue
		}
		inv.invokes++
		inv.last, inv.ran = res, fn.Config().ExecutedVersion()
		inv.outcome, inv.failIdx = b.classify(recs, res)
		if b.l.win != nil && inv.outcome != outcomeFailed {
			if inv.state, err = windowResponseState(res); err != nil {
				inv.outcome = outcomeFailed
				b.w.setErr(err)
			}
		}
		if inv.outcome == outcomeOK {
			b.w.setResult("OK")
		} else {
			b.w.setResult("PROBLEM: Function call failed")
			if res.Error != nil {
				b.w.setErr(res.Error)
			}
			b.w.counters.functionErrors.Add(1)
		}
		b.w.counters.invocations.Add(1)
		b.w.counters.deliveredRecords.Add(int64(len(recs)))
		return recs, inv, nil
	}
}

// event builds the event of a batch: a Kinesis event, or a DynamoDB
// event when the source is a table's change stream.
func (b *batchRun) event(recs []stream.Record) any {
	if b.l.win != nil {
		return b.windowEvent(recs, false, false)
	}
	if b.r.ddb != nil {
		return b.r.ddb.event(b.r, recs)
	}
	return b.kinesisEvent(recs)
}

// kinesisEvent builds the Kinesis event of a batch (the shape of aws-lambda-go's
// events/testdata/kinesis-event.json).
func (b *batchRun) kinesisEvent(recs []stream.Record) *events.KinesisEvent {
	ev := &events.KinesisEvent{Records: make([]events.KinesisEventRecord, len(recs))}
	region := b.r.svc.eng.Region()
	role := "arn:aws:iam::" + b.r.svc.eng.AccountID() + ":role/runnel-event-source-mapping"
	for i := range recs {
		r := &recs[i]
		ev.Records[i] = r.KinesisEventRecord(b.r.streamARN)
		ev.Records[i].AwsRegion, ev.Records[i].InvokeIdentityArn = region, role
	}
	return ev
}

// classify reads an invocation result. Without ReportBatchItemFailures any
// response is a success. With it, the response's batchItemFailures decide:
// empty, null or absent means success; an item whose itemIdentifier is
// empty, null, missing or not a sequence number of the batch fails the
// whole batch; otherwise the lowest listed record is where processing
// resumes.
func (b *batchRun) classify(recs []stream.Record, res *function.Result) (outcome, int) {
	if res.Failed() {
		return outcomeFailed, 0
	}
	if !b.r.cfg.reportBatchItemFailures() {
		return outcomeOK, 0
	}
	ids, ok := itemFailures(res)
	if !ok {
		return outcomeFailed, 0
	}
	if len(ids) == 0 {
		return outcomeOK, 0
	}
	low := len(recs)
	for _, id := range ids {
		if id == "" {
			return outcomeFailed, 0
		}
		q, err := stream.ParseSequenceNumber("itemIdentifier", b.r.numbering, b.w.shard, id)
		if err != nil {
			return outcomeFailed, 0
		}
		i := sort.Search(len(recs), func(i int) bool { return recs[i].Seq >= q })
		if i == len(recs) || recs[i].Seq != q {
			return outcomeFailed, 0 // unknown itemIdentifier
		}
		low = min(low, i)
	}
	return outcomePartial, low
}

// itemFailures extracts the itemIdentifiers of a response; ok is false when
// the response fails the whole batch (invalid JSON, an item without an
// itemIdentifier string).
func itemFailures(res *function.Result) (ids []string, ok bool) {
	if r, isTyped := res.Response.(*events.KinesisEventResponse); isTyped {
		for _, f := range r.BatchItemFailures {
			ids = append(ids, f.ItemIdentifier)
		}
		return ids, true
	}
	if r, isTyped := res.Response.(*events.DynamoDBEventResponse); isTyped {
		for _, f := range r.BatchItemFailures {
			ids = append(ids, f.ItemIdentifier)
		}
		return ids, true
	}
	p := bytes.TrimSpace(res.Payload)
	if len(p) == 0 || bytes.Equal(p, []byte("null")) {
		return nil, true
	}
	if !json.Valid(p) {
		return nil, false
	}
	if p[0] != '{' {
		return nil, true
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(p, &top); err != nil {
		return nil, false
	}
	raw, present := top["batchItemFailures"]
	if !present || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, true
	}
	var items []map[string]any
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, false
	}
	for _, it := range items {
		id, isString := it["itemIdentifier"].(string)
		if !isString {
			return nil, false
		}
		ids = append(ids, id)
	}
	return ids, true
}

// dropAged discards the records older than MaximumRecordAgeInSeconds and
// returns the others, in order. Arrival times mostly grow with the
// sequence number, but two concurrent PutRecords calls may stamp theirs a
// few milliseconds out of order, so every record is checked; each run of
// consecutive aged records becomes one on-failure record.
//
// When retrying (the records were invoked, or throttled, before), a
// record older than the stream's retention period is discarded the same
// way, whatever MaximumRecordAgeInSeconds says (-1 included): Lambda
// retries a failing record "until it expires" from the stream
// (with-kinesis.html, with-ddb.html), then goes on with the shard. The
// batch holds its records in memory, so without this check a record that
// always failed was retried from memory long after the stream had dropped
// it, and its shard never moved on. AWS loses such a record with no
// trace; runnel sends its on-failure record (condition RecordAgeExceeded)
// to the destination, or logs and counts it. A first invocation is not
// held to the retention: a record read is delivered (a table's change log
// is never trimmed, so a DynamoDB stream mapping may read changes older
// than the stream's 24 hours; AWS would have lost them, runnel delivers
// them).
func (b *batchRun) dropAged(ctx context.Context, recs []stream.Record, inv invocation, retrying bool) ([]stream.Record, error) {
	if len(recs) == 0 {
		return recs, nil
	}
	now := b.r.svc.eng.Clock.Now()
	var cutoff time.Time // records that arrived before it are discarded
	if age := *b.r.cfg.MaximumRecordAgeInSeconds; age >= 0 {
		cutoff = now.Add(-time.Duration(age) * time.Second)
	}
	if oldest := recs[0].ApproximateArrivalTimestamp; retrying && now.Sub(oldest) > time.Hour {
		// Only a batch an hour old can be near the retention (24 h at
		// least): the stream's description is not read for the others.
		if ret := b.r.retentionPeriod(ctx); ret > 0 && now.Add(-ret).After(cutoff) {
			cutoff = now.Add(-ret)
		}
	}
	if cutoff.IsZero() {
		return recs, nil
	}
	aged := func(r *stream.Record) bool { return r.ApproximateArrivalTimestamp.Before(cutoff) }
	any := false
	for i := range recs {
		if aged(&recs[i]) {
			any = true
			break
		}
	}
	if !any {
		return recs, nil
	}
	keep := make([]stream.Record, 0, len(recs))
	for i := 0; i < len(recs); {
		if !aged(&recs[i]) {
			keep = append(keep, recs[i])
			i++
			continue
		}
		j := i
		for j < len(recs) && aged(&recs[j]) {
			j++
		}
		if err := b.discard(ctx, recs[i:j], ConditionRecordAgeExceeded, inv); err != nil {
			return nil, err
		}
		i = j
	}
	return keep, nil
}

// discard gives up on recs: it sends one on-failure record pointing at
// them to the destination (retrying until it is stored) or, with no
// destination, logs them with shard and sequence numbers and counts them.
// Only then are they resolved, so the checkpoint never passes a record
// that was neither processed nor accounted for.
func (b *batchRun) discard(ctx context.Context, recs []stream.Record, condition string, inv invocation) error {
	first, last := recs[0], recs[len(recs)-1]
	rec := &wire.OnFailureRecord{
		RequestContext: wire.RequestContext{FunctionArn: b.r.cfg.FunctionArn, Condition: condition, ApproximateInvokeCount: inv.invokes},
		Version:        wire.RecordVersion,
		Timestamp:      wire.Timestamp(b.r.svc.eng.Clock.Now()),
		KinesisBatchInfo: &wire.KinesisBatchInfo{
			ShardID:                         b.w.shardID,
			StartSequenceNumber:             first.SequenceNumber,
			EndSequenceNumber:               last.SequenceNumber,
			ApproximateArrivalOfFirstRecord: wire.Timestamp(first.ApproximateArrivalTimestamp),
			ApproximateArrivalOfLastRecord:  wire.Timestamp(last.ApproximateArrivalTimestamp),
			BatchSize:                       len(recs),
			StreamArn:                       b.r.streamARN,
		},
	}
	if b.r.ddb != nil {
		info := rec.KinesisBatchInfo
		info.ApproximateArrivalOfFirstRecord = wire.TimestampSeconds(first.ApproximateArrivalTimestamp)
		info.ApproximateArrivalOfLastRecord = wire.TimestampSeconds(last.ApproximateArrivalTimestamp)
		rec.KinesisBatchInfo, rec.DDBStreamBatchInfo = nil, info
	}
	if inv.last != nil {
		rec.RequestContext.RequestID = inv.last.RequestID
		rec.ResponseContext = wire.ResponseContext{StatusCode: 200, ExecutedVersion: cmp.Or(inv.ran, wire.ExecutedVersion), FunctionError: inv.last.FunctionError}
	}
	log := b.r.svc.eng.Logger
	if b.r.dest == nil {
		log.Warn("records discarded: the mapping has no on-failure destination",
			"mapping", b.r.cfg.UUID, "shard", b.w.shardID, "condition", condition,
			"startSequenceNumber", first.SequenceNumber, "endSequenceNumber", last.SequenceNumber, "count", len(recs))
	} else {
		body := marshal(rec)
		for attempt := 1; ; attempt++ {
			err := b.r.dest.Send(ctx, body)
			if err == nil {
				break
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			b.w.setErr(fmt.Errorf("on-failure destination %s: %w", b.r.cfg.onFailure(), err))
			b.w.setResult("PROBLEM: on-failure destination write failed")
			log.Error("on-failure destination write failed; retrying, the checkpoint waits",
				"mapping", b.r.cfg.UUID, "shard", b.w.shardID, "destination", b.r.cfg.onFailure(), "attempt", attempt, "err", err)
			if err := b.r.svc.backoff(ctx, attempt); err != nil {
				return err
			}
		}
		log.Info("records sent to the on-failure destination", "mapping", b.r.cfg.UUID, "shard", b.w.shardID,
			"condition", condition, "startSequenceNumber", first.SequenceNumber, "endSequenceNumber", last.SequenceNumber, "count", len(recs))
	}
	b.w.counters.discardedRecords.Add(int64(len(recs)))
	b.r.svc.discarded.Add(int64(len(recs)))
	b.l.markDone(recs)
	return nil
}

// backoff waits the attempt-th retry delay: a uniformly random duration in
// [0, min(RetryMaxDelay, RetryBaseDelay*2^(attempt-1))) ("full jitter").
func (s *Service) backoff(ctx context.Context, attempt int) error {
	base, cap := s.opts.RetryBaseDelay, s.opts.RetryMaxDelay
	if base <= 0 {
		return ctx.Err()
	}
	d := base << min(attempt-1, 30)
	if d > cap || d <= 0 {
		d = cap
	}
	return engine.Sleep(ctx, s.eng.Clock, time.Duration(rand.Int64N(int64(d))+1))
}
