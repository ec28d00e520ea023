// Package builtin registers the handlers that ship in the runnel binary,
// for stack files run with `runnel serve`. Each takes stream events and
// queue events (the function of the two-tier dead-letter design consumes
// both); a queue message that is a failure record (a stream on-failure
// pointer, an async failure record, a retry envelope) is resolved back to
// its records first (package recovery).
//
//   - "noop": succeeds without looking at the records.
//   - "log": logs each record (event id, partition key, data) at info
//     level and succeeds.
//   - "slow-log": like "log", then waits 20 ms per batch (to watch
//     checkpoints, lag and restarts at human speed).
//   - "fail": fails every batch (to see retries, bisect and on-failure
//     destinations at work).
//   - "fail-on-poison": fails any record whose data contains the bytes
//     "poison": on a stream the whole batch fails (bisect isolates the
//     record); on a queue the message is reported in batchItemFailures.
//   - "log-fail-on-poison": "fail-on-poison", and the records of a batch
//     (a message) without poison are logged as "log" does: a logged
//     record is one the function succeeded on (the cluster fault test
//     reads them from the nodes' logs).
//
// Programs that embed runnel register their own handlers with
// function.Register, or in the function.Registry of their instance.
package builtin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// ErrPoison is the error of the "fail-on-poison" handler.
var ErrPoison = errors.New("record is poison")

// ErrAlwaysFails is the error of the "fail" handler.
var ErrAlwaysFails = errors.New("the fail handler fails every batch")

// perRecord turns a per-record function into an EventHandler: on a stream
// the first error fails the batch; on a queue each message is resolved
// and a message with a failing record is reported as a batch item failure.
type perRecord struct {
	streams *Streams
	log     *slog.Logger
	each    func(ctx context.Context, r events.KinesisEventRecord) error
	after   func(ctx context.Context) error
	// check, when set, is applied to every record of a batch (a message)
	// before each sees any: its first error fails the batch (the message).
	check func(r events.KinesisEventRecord) error
}

func (p perRecord) checkAll(recs []events.KinesisEventRecord) error {
	if p.check == nil {
		return nil
	}
	for _, r := range recs {
		if err := p.check(r); err != nil {
			return err
		}
	}
	return nil
}

func (p perRecord) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	if err := p.checkAll(ev.Records); err != nil {
		return events.KinesisEventResponse{}, err
	}
	for _, r := range ev.Records {
		if err := p.each(ctx, r); err != nil {
			return events.KinesisEventResponse{}, err
		}
	}
	if p.after != nil {
		return events.KinesisEventResponse{}, p.after(ctx)
	}
	return events.KinesisEventResponse{}, nil
}

func (p perRecord) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		recs := []events.KinesisEventRecord{{EventID: m.MessageId, Kinesis: events.KinesisRecord{Data: []byte(m.Body)}}}
		if s := p.streams.p.Load(); s != nil {
			if res, err := recovery.ResolveFrom(ctx, recovery.Sources{Streams: s, Mappings: p.streams.m.Load()}, []byte(m.Body)); err == nil && len(res.Records) > 0 {
				recs = res.Records
			} else if err != nil && errors.Is(err, recovery.ErrPastRetention) {
				p.log.Error("queue message points at records past retention; keeping it", "messageId", m.MessageId, "err", err)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				continue
			}
		}
		if err := p.checkAll(recs); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		for _, r := range recs {
			if err := p.each(ctx, r); err != nil {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
				break
			}
		}
	}
	if p.after != nil {
		return resp, p.after(ctx)
	}
	return resp, nil
}

// Streams lets the built-in handlers resolve failure records that reach
// them through a queue; set it once runnel is open.
type Streams struct {
	p atomic.Pointer[stream.Service]
	m atomic.Pointer[mapping.Service]
}

// Use sets the streams service the handlers read failure records from.
func (s *Streams) Use(svc *stream.Service) { s.p.Store(svc) }

// UseMappings sets the mappings whose FilterCriteria a resolved failure
// record's range is filtered by (recovery.Sources.Mappings): without it
// the records a mapping filtered out between a batch's records are
// handled too.
func (s *Streams) UseMappings(m *mapping.Service) { s.m.Store(m) }

// Register registers the built-in handlers in the default registry (see
// RegisterIn).
func Register(log *slog.Logger) *Streams { return RegisterIn(function.DefaultRegistry(), log) }

// RegisterIn registers the built-in handlers in reg. Call it before
// runnel.Open (stored functions find their handlers then), and call Use on
// the result once the streams service exists.
func RegisterIn(reg *function.Registry, log *slog.Logger) *Streams {
	register := func(name string, h perRecord) {
		if err := reg.Register(name, h); err != nil {
			panic(err) // a perRecord is always a handler
		}
	}
	if log == nil {
		log = slog.Default()
	}
	streams := &Streams{}
	logRecord := func(ctx context.Context, r events.KinesisEventRecord) error {
		log.Info("record", "eventID", r.EventID, "partitionKey", r.Kinesis.PartitionKey, "data", string(r.Kinesis.Data))
		return nil
	}
	register("noop", perRecord{streams: streams, log: log, each: func(context.Context, events.KinesisEventRecord) error { return nil }})
	register("log", perRecord{streams: streams, log: log, each: logRecord})
	register("slow-log", perRecord{streams: streams, log: log, each: logRecord, after: func(ctx context.Context) error {
		select {
		case <-time.After(20 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}})
	register("fail", perRecord{streams: streams, log: log, each: func(context.Context, events.KinesisEventRecord) error { return ErrAlwaysFails }})
	failOnPoison := func(r events.KinesisEventRecord) error {
		if bytes.Contains(r.Kinesis.Data, []byte("poison")) {
			return ErrPoison
		}
		return nil
	}
	register("fail-on-poison", perRecord{streams: streams, log: log, each: func(ctx context.Context, r events.KinesisEventRecord) error {
		return failOnPoison(r)
	}})
	register("log-fail-on-poison", perRecord{streams: streams, log: log, check: failOnPoison, each: logRecord})
	return streams
}
