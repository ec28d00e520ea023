package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
type IdempotentSupported struct {
	Streams *stream.Service
	Handle  RecordHandler
	Logger  *slog.Logger
}

// HandleKinesis processes a stream batch; the first error fails it.
func (f *IdempotentSupported) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	for _, r := range ev.Records {
		if err := f.Handle(ctx, r, 1); err != nil {
			return events.KinesisEventResponse{}, fmt.Errorf("%s: %w", r.EventID, err)
		}
	}
	return events.KinesisEventResponse{}, nil
}

// HandleSQS processes Retry-DLQ messages; a message whose records do not
// all succeed is reported in batchItemFailures and stays in the queue.
func (f *IdempotentSupported) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return handleRetryQueue(ctx, f.Streams, f.Handle, logger(f.Logger), ev)
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
//     Unrecoverable-DLQ.
type IdempotentUnsupported struct {
	Streams  *stream.Service
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
		err := f.Handle(ctx, r, 1)
		if err == nil {
			continue
		}
		if ierr := InsertRetry(ctx, f.Queues, f.RetryDLQ, r, now(f.Clock)); ierr != nil {
			logger(f.Logger).Error("record failed and could not be inserted into the Retry-DLQ; reporting it to the stream",
				"eventID", r.EventID, "err", err, "insertErr", ierr)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: r.Kinesis.SequenceNumber})
			// The mapping discards this record and the later ones (never
			// handed to Handle) to its OnFailure destination, the Retry-DLQ:
			// a pointer record, resolved from the stream by HandleSQS, so
			// each of them is processed once. Stop here.
			return resp, nil
		}
		logger(f.Logger).Info("record failed; inserted into the Retry-DLQ", "eventID", r.EventID, "err", err)
	}
	return resp, nil
}

// CheckMapping reports, in one error, what in cfg (the stream mapping
// that invokes this flow) breaks its guarantee: MaximumRetryAttempts
// must be 0, BisectBatchOnFunctionError off, FunctionResponseTypes
// ReportBatchItemFailures, and the OnFailure destination the Retry-DLQ.
// Check it before creating the mapping.
func (f *IdempotentUnsupported) CheckMapping(cfg mapping.Config) error {
	var errs []error
	if cfg.MaximumRetryAttempts == nil || *cfg.MaximumRetryAttempts != 0 {
		errs = append(errs, errors.New("MaximumRetryAttempts must be 0: a failed record is inserted into the Retry-DLQ, and a retry of its batch would process the records after it twice"))
	}
	if cfg.BisectBatchOnFunctionError {
		errs = append(errs, errors.New("BisectBatchOnFunctionError must be off"))
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

// HandleSQS processes Retry-DLQ messages.
func (f *IdempotentUnsupported) HandleSQS(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return handleRetryQueue(ctx, f.Streams, f.Handle, logger(f.Logger), ev)
}

func handleRetryQueue(ctx context.Context, streams *stream.Service, handle RecordHandler, log *slog.Logger, ev events.SQSEvent) (events.SQSEventResponse, error) {
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for _, m := range ev.Records {
		res, err := Resolve(ctx, streams, []byte(m.Body))
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
		if len(res.Records) == 0 {
			// An async failure record (requestPayload) holds no stream
			// records for these flows to process: keep it in the DLQ (it
			// moves on to the Unrecoverable-DLQ) rather than delete it.
			log.Error("Retry-DLQ message holds no stream records (kind "+res.Kind+"); keeping it in the DLQ", "messageId", m.MessageId)
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
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
			if err := handle(ctx, r, attempt); err != nil {
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
