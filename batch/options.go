package batch

// Option changes how a batch is processed.
type Option func(*options)

type options struct {
	stopOnFirstFailure bool
	skipGroupOnError   bool
	entireBatchError   bool
}

func newOptions(opts []Option) options {
	o := options{entireBatchError: true}
	for _, opt := range opts {
		opt(&o)
	}
	return o
}

// StopOnFirstFailure makes a Kinesis or DynamoDB batch stop at the first
// failed record and report it and every later record as failed (the later
// ones with ErrNotProcessed). Default off, as Powertools' BatchProcessor:
// every record runs. Use it for shards whose order matters: Lambda
// retries from the first failure anyway, so the later records would run
// again. SQS FIFO batches always stop (see SkipGroupOnError); standard
// SQS batches ignore it.
func StopOnFirstFailure() Option { return func(o *options) { o.stopOnFirstFailure = true } }

// SkipGroupOnError makes an SQS FIFO batch skip (report failed) only the
// later messages of a failed message's MessageGroupId, and go on with
// the other groups. Default off: the first failure stops the whole batch.
// Powertools: SqsFifoPartialProcessor(skip_group_on_error=True).
func SkipGroupOnError() Option { return func(o *options) { o.skipGroupOnError = true } }

// EntireBatchError sets whether a batch whose records all failed returns
// an error wrapping ErrEntireBatchFailed (true, the default, as
// Powertools' raise_on_entire_batch_failure) or a response listing every
// record (false).
func EntireBatchError(on bool) Option { return func(o *options) { o.entireBatchError = on } }
