package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

// RecordHandler is the business logic of the flows: it handles one stream
// record, wherever it comes from (the stream, or the Retry-DLQ). attempt
// is 1 on the stream and counts up through retries.
type RecordHandler func(ctx context.Context, rec events.KinesisEventRecord, attempt int) error

// IdempotentSupported is the function of the whitepaper's first flow, for
// records that are safe to process twice (an idempotency key, or the
// sequence number as one):
//
//   - the stream mapping uses BisectBatchOnFunctionError and retries; its
//     DestinationConfig.OnFailure is the Retry-DLQ queue, which receives
//     pointer records (KinesisBatchInfo);
//   - the same function consumes the Retry-DLQ through a queue mapping
//     (ReportBatchItemFailures; a RetryPolicy spaces the retries); each
//     message is resolved back into its records (Resolve) and processed;
//   - a message that keeps failing, or whose records aged out of the
//     stream, stays in the Retry-DLQ until its maxReceiveCount (or the
//     RetryPolicy) moves it to the Unrecoverable-DLQ.
//
// On the stream, a record's error fails the batch (so bisect isolates it).
// A panic in Handle is that record's error, in both flows and on both
// sources: before, it failed the whole invocation, so in the second flow
// the records already processed before it were sent to the Retry-DLQ
// with it and processed again.
//
// Mappings is where a pointer record's mapping is found, so that the
// records its FilterCriteria filtered out (Lambda discards them: they
// were never in the batch) are not handed to Handle (see
// Sources.Mappings). Nil: every record of the pointer's range is handed
// on, the filtered ones included, and a pointer that resolves to more
// records than its batchSize is logged.
type IdempotentSupported struct {
	Streams  *stream.Service
	Mappings *mapping.Service
	Handle   RecordHandler
	Logger   *slog.Logger
}

// HandleKinesis processes a stream batch; the first error fails it.
func (f *IdempotentSupported) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	for _, r := range ev.Records {
		if err := call(ctx, f.Handle, r, 1); err != nil {
			return events.KinesisEventResponse{}, fmt.Errorf("%s: %w", r.EventID, err)
		}
	}
	return events.KinesisEventResponse{}, nil
}

// HandleSQS processes Retry-DLQ messages; a message whose records do not
// all succeed is reported in batchItemFailures and stays in the queue.
func (f *IdempotentSupported) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return handleRetryQueue(ctx, Sources{Streams: f.Streams, Mappings: f.Mappings}, f.Handle, logger(f.Logger), ev, nil)
}

// IdempotentUnsupported is the function of the whitepaper's second flow,
// for records that must not be processed twice:
//
//   - the stream mapping has MaximumRetryAttempts 0, no bisect,
//     ReportBatchItemFailures, and the Retry-DLQ as its OnFailure
//     destination (CheckMapping says so);
//   - a record that fails is inserted into the Retry-DLQ (InsertRetry, in
//     a retry envelope) before the batch returns, and counted as done only
//     once the insert is stored: a crash in between means the record is
//     delivered again (a duplicate in the Retry-DLQ at worst), never lost;
//   - a record whose insert fails (the Retry-DLQ unreachable, or the
//     record too large for a retry envelope in a queue message) is
//     reported in batchItemFailures and the batch stops there: the
//     mapping (MaximumRetryAttempts 0) discards that record and the rest
//     of the batch to its OnFailure destination, the Retry-DLQ, as one
//     pointer record, which HandleSQS resolves from the stream. Without
//     that destination the rest of the batch was lost, with a log line;
//   - the same function consumes the Retry-DLQ (queue mapping with a
//     RetryPolicy); after MaxAttempts the message moves on to the
//     Unrecoverable-DLQ;
//   - a pointer record of more than one record is not processed as one
//     message (a retry of it would process again the records before the
//     failing one): on its receive HandleSQS splits it, sending each of
//     its records to the Retry-DLQ in a message of its own (a retry
//     envelope, with the attempt this receive is and the pointer's send
//     time as initial_timestamp; a record the queue does not take in an
//     envelope goes as a one-record pointer, whose attempts and age count
//     from the split), and reports the pointer done only once every send
//     is stored. A crash, or a send that fails, between the first send and
//     the pointer's delete makes the pointer split again on its next
//     receive: each of its records then has two messages, and is processed
//     twice at worst, as a crash between InsertRetry and the checkpoint
//     makes the inserted record; never lost. The split messages are
//     independent: the records' shard order is not kept, as it is not for
//     inserted records.
//
// Mappings is where a pointer record's mapping is found, so that the
// records its FilterCriteria filtered out are neither split nor handled
// (see Sources.Mappings); CheckMapping refuses a mapping with
// FilterCriteria when it is nil.
type IdempotentUnsupported struct {
	Streams  *stream.Service
	Mappings *mapping.Service
	Queues   *queue.Service
	RetryDLQ string // queue URL or name
	Handle   RecordHandler
	// Clock stamps the retry envelope's initial_timestamp; nil means the
	// real clock.
	Clock  clockwork.Clock
	Logger *slog.Logger
}

// HandleKinesis processes a stream batch, inserting failed records into
// the Retry-DLQ.
func (f *IdempotentUnsupported) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	var resp events.KinesisEventResponse
	resp.BatchItemFailures = []events.KinesisBatchItemFailure{}
	for _, r := range ev.Records {
		err := call(ctx, f.Handle, r, 1)
		if err == nil {
			continue
		}
		if ierr := InsertRetry(ctx, f.Queues, f.RetryDLQ, r, now(f.Clock)); ierr != nil {
			logger(f.Logger).Error("record failed and could not be inserted into the Retry-DLQ; reporting it to the stream",
				"eventID", r.EventID, "err", err, "insertErr", ierr)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: r.Kinesis.SequenceNumber})
			// The mapping discards this record and the later ones (never
			// handed to Handle) to its OnFailure destination, the Retry-DLQ:
			// a pointer record, which HandleSQS splits into one message per
			// record, so each of them is processed once. Stop here.
			return resp, nil
		}
		logger(f.Logger).Info("record failed; inserted into the Retry-DLQ", "eventID", r.EventID, "err", err)
	}
	return resp, nil
}

// CheckMapping reports, in one error, what in cfg (the stream mapping
// that invokes this flow) breaks its guarantee: MaximumRetryAttempts
// must be 0, BisectBatchOnFunctionError off, ParallelizationFactor 1 (or
// unset), FunctionResponseTypes ReportBatchItemFailures, and the
// OnFailure destination the Retry-DLQ. Check it before creating the
// mapping.
//
// Trap: with ParallelizationFactor above 1 a batch holds one lane's
// records (a subset of the shard's partition keys), but its OnFailure
// pointer names a range of the shard's sequence numbers, which holds the
// other lanes' records too, processed already; resolving and splitting
// the pointer would process them again.
//
// FilterCriteria: a pointer's range also holds the records the mapping
// filtered out between the batch's records (Lambda discards them; they
// must never reach Handle). The split drops them only when the flow can
// find the mapping (Mappings set: Resolve applies its FilterCriteria), so
// a mapping with FilterCriteria is refused when Mappings is nil, and
// accepted otherwise. Changing the mapping's FilterCriteria while pointers
// wait in the Retry-DLQ makes them resolve under the new ones.
func (f *IdempotentUnsupported) CheckMapping(cfg mapping.Config) error {
	var errs []error
	if cfg.MaximumRetryAttempts == nil || *cfg.MaximumRetryAttempts != 0 {
		errs = append(errs, errors.New("MaximumRetryAttempts must be 0: a failed record is inserted into the Retry-DLQ, and a retry of its batch would process the records after it twice"))
	}
	if cfg.FilterCriteria != nil && len(cfg.FilterCriteria.Filters) > 0 && f.Mappings == nil {
		errs = append(errs, errors.New("FilterCriteria need the flow's Mappings: an OnFailure pointer's range holds the records the mapping filtered out too, and without the mapping they would be split and handled"))
	}
	if cfg.BisectBatchOnFunctionError {
		errs = append(errs, errors.New("BisectBatchOnFunctionError must be off"))
	}
	if cfg.ParallelizationFactor > 1 {
		errs = append(errs, fmt.Errorf("ParallelizationFactor must be 1, not %d: an OnFailure pointer names a range of the shard's sequence numbers, which holds the other lanes' records too, already processed", cfg.ParallelizationFactor))
	}
	if !slices.Contains(cfg.FunctionResponseTypes, mapping.ReportBatchItemFailures) {
		errs = append(errs, errors.New("FunctionResponseTypes must hold ReportBatchItemFailures"))
	}
	want := f.Queues.ARN(queueName(f.RetryDLQ))
	if d := cfg.DestinationConfig; d == nil || d.OnFailure == nil || d.OnFailure.Destination != want {
		errs = append(errs, fmt.Errorf("DestinationConfig.OnFailure.Destination must be the Retry-DLQ %s: a record that cannot be inserted, and the rest of its batch, go there as a pointer record; without it they are lost", want))
	}
	if len(errs) > 0 {
		return fmt.Errorf("recovery: the stream mapping of IdempotentUnsupported: %w", errors.Join(errs...))
	}
	return nil
}

// HandleSQS processes Retry-DLQ messages, splitting a pointer record of
// more than one record into one message per record.
func (f *IdempotentUnsupported) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return handleRetryQueue(ctx, Sources{Streams: f.Streams, Mappings: f.Mappings}, f.Handle, logger(f.Logger), ev, f.split)
}

// split sends each record of the pointer message m (resolved as res) to
// the Retry-DLQ in a message of its own: a retry envelope for the attempt
// this receive is, or, when the queue does not take it, a one-record
// pointer. It returns an error, with the pointer to keep, when a send
// fails.
func (f *IdempotentUnsupported) split(ctx context.Context, m events.SQSMessage, res *Resolved) error {
	log := logger(f.Logger)
	var ptr wire.OnFailureRecord
	if err := json.Unmarshal([]byte(m.Body), &ptr); err != nil || ptr.KinesisBatchInfo == nil {
		return fmt.Errorf("recovery: the pointer message %s does not decode again: %v", m.MessageId, err)
	}
	attempt := receiveCount(m) + 1
	first := sentTime(m, now(f.Clock))
	for i, r := range res.Records {
		payload, err := json.Marshal(r)
		if err != nil {
			return err
		}
		env, err := json.Marshal(wire.RetryEnvelope{Metadata: wire.RetryMetadata{Attempt: attempt, InitialTimestamp: first.Unix()}, OriginalPayload: payload})
		if err != nil {
			return err
		}
		_, eerr := f.Queues.SendMessage(ctx, f.RetryDLQ, queue.SendMessageInput{MessageBody: string(env)})
		if eerr == nil {
			continue
		}
		one := ptr
		bi := *ptr.KinesisBatchInfo
		bi.StartSequenceNumber, bi.EndSequenceNumber = r.Kinesis.SequenceNumber, r.Kinesis.SequenceNumber
		at := wire.Timestamp(r.Kinesis.ApproximateArrivalTimestamp.Time)
		bi.ApproximateArrivalOfFirstRecord, bi.ApproximateArrivalOfLastRecord = at, at
		bi.BatchSize = 1
		one.KinesisBatchInfo = &bi
		body, err := json.Marshal(one)
		if err != nil {
			return err
		}
		if _, perr := f.Queues.SendMessage(ctx, f.RetryDLQ, queue.SendMessageInput{MessageBody: string(body)}); perr != nil {
			sent := make([]string, 0, i)
			for _, s := range res.Records[:i] {
				sent = append(sent, s.EventID)
			}
			log.Error("a record of a pointer message could not be sent to the Retry-DLQ; keeping the pointer, whose next receive sends again the records already sent",
				"messageId", m.MessageId, "eventID", r.EventID, "envelopeErr", eerr, "err", perr, "alreadySent", sent)
			return perr
		}
		log.Info("a record of a pointer message went to the Retry-DLQ as a one-record pointer (the queue did not take its retry envelope)",
			"messageId", m.MessageId, "eventID", r.EventID, "envelopeErr", eerr)
	}
	log.Info("pointer message split into one Retry-DLQ message per record", "messageId", m.MessageId, "records", len(res.Records), "attempt", attempt)
	return nil
}

// sentTime is m's SentTimestamp, or def when it has none.
func sentTime(m events.SQSMessage, def time.Time) time.Time {
	ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64)
	if err != nil {
		return def
	}
	return time.UnixMilli(ms)
}

// call runs handle on one record, a panic being that record's error.
func call(ctx context.Context, handle RecordHandler, r events.KinesisEventRecord, attempt int) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%w: %v", ErrHandlerPanicked, p)
		}
	}()
	return handle(ctx, r, attempt)
}

// ErrHandlerPanicked wraps the panic of a RecordHandler: the flows take it
// as that record's failure.
var ErrHandlerPanicked = errors.New("recovery: the record handler panicked")

// handleRetryQueue processes Retry-DLQ messages. split, when not nil,
// takes a pointer message of more than one record instead: the message is
// done when it returns nil.
func handleRetryQueue(ctx context.Context, src Sources, handle RecordHandler, log *slog.Logger, ev events.SQSEvent, split func(context.Context, events.SQSMessage, *Resolved) error) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		res, err := ResolveFrom(ctx, src, []byte(m.Body))
		if err != nil {
			if errors.Is(err, ErrPastRetention) {
				log.Error("Retry-DLQ message points at records past the stream's retention; keeping it in the DLQ",
					"messageId", m.MessageId, "err", err)
			} else {
				log.Error("Retry-DLQ message cannot be resolved; keeping it in the DLQ", "messageId", m.MessageId, "err", err)
			}
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		if res.Kind == KindStreamBatch && len(res.Records) == 0 && res.Filtered > 0 {
			// Every record of the range is one the mapping's FilterCriteria
			// filter out now (they changed since the pointer): nothing to do.
			log.Info("Retry-DLQ pointer message holds only records the mapping's FilterCriteria filter out; done", "messageId", m.MessageId, "filtered", res.Filtered, "mapping", res.Mapping)
			continue
		}
		if res.Unfiltered != "" && res.Info != nil && len(res.Records) > res.Info.BatchSize {
			log.Warn("Retry-DLQ pointer message resolves to more records than its batchSize; records the mapping filtered out may be handled",
				"messageId", m.MessageId, "records", len(res.Records), "batchSize", res.Info.BatchSize, "why", res.Unfiltered)
		}
		if len(res.Records) == 0 {
			// An async failure record (requestPayload) holds no stream
			// records for these flows to process: keep it in the DLQ (it
			// moves on to the Unrecoverable-DLQ) rather than delete it.
			log.Error("Retry-DLQ message holds no stream records (kind "+res.Kind+"); keeping it in the DLQ", "messageId", m.MessageId)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			continue
		}
		if split != nil && res.Kind == KindStreamBatch && len(res.Records) > 1 {
			if err := split(ctx, m, res); err != nil {
				log.Error("Retry-DLQ pointer message not split; keeping it in the DLQ", "messageId", m.MessageId, "err", err)
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
			continue
		}
		// The attempt this delivery is: a pointer record's first receive is
		// the second attempt (the stream had the first); an envelope says
		// its attempt itself.
		attempt := receiveCount(m) + 1
		if res.Kind == KindInserted {
			attempt = res.Attempt + receiveCount(m) - 1
		}
		failed := false
		for _, r := range res.Records {
			if err := call(ctx, handle, r, attempt); err != nil {
				log.Info("retry failed", "messageId", m.MessageId, "eventID", r.EventID, "err", err)
				failed = true
				break
			}
		}
		if failed {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
	}
	return resp, nil
}

func receiveCount(m events.SQSMessage) int {
	n := 0
	fmt.Sscanf(m.Attributes["ApproximateReceiveCount"], "%d", &n)
	return max(n, 1)
}

// InsertRetry puts a failed stream record into a Retry-DLQ queue, in a
// retry envelope (attempt 2, the first retry), and returns only once the
// queue has stored it. Call it before reporting the record as done.
func InsertRetry(ctx context.Context, queues *queue.Service, retryDLQ string, rec events.KinesisEventRecord, now time.Time) error {
	payload, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	body, err := wire.WrapRetry(payload, now)
	if err != nil {
		return err
	}
	in := queue.SendMessageInput{MessageBody: string(body)}
	_, err = queues.SendMessage(ctx, retryDLQ, in)
	return err
}

func now(c clockwork.Clock) time.Time {
	if c == nil {
		return time.Now()
	}
	return c.Now()
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}
