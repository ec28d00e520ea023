package mapping

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/mapping/filter"
)

// Defaults and ranges of a stream event source mapping, from the Lambda
// API (API_CreateEventSourceMapping) and
// https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-parameters.html.
const (
	DefaultBatchSize             = 100
	MaxBatchSize                 = 10000
	MaxBatchingWindowInSeconds   = 300
	MaxParallelizationFactor     = 10
	MaxMaximumRetryAttempts      = 10000
	MinMaximumRecordAgeInSeconds = 60
	MaxMaximumRecordAgeInSeconds = 604800
	MaxFilters                   = 5
	// MaxBatchPayloadBytes closes a batch before its event would pass 6 MB,
	// Lambda's synchronous invocation payload limit.
	MaxBatchPayloadBytes = 6 << 20
)

// Starting positions (API_CreateEventSourceMapping.StartingPosition).
const (
	TrimHorizon = "TRIM_HORIZON"
	Latest      = "LATEST"
	AtTimestamp = "AT_TIMESTAMP"
)

// ReportBatchItemFailures is the only value of FunctionResponseTypes.
const ReportBatchItemFailures = "ReportBatchItemFailures"

// Mapping states (API_EventSourceMappingConfiguration.State).
const (
	StateEnabled  = "Enabled"
	StateDisabled = "Disabled"
)

// Conditions written in an on-failure record's requestContext.condition.
const (
	// ConditionRetryAttemptsExhausted: the records failed
	// MaximumRetryAttempts+1 times (AWS's value for streams).
	ConditionRetryAttemptsExhausted = "RetryAttemptsExhausted"
	// ConditionRecordAgeExceeded: the records were older than
	// MaximumRecordAgeInSeconds when a batch was formed or retried. AWS does
	// not document the value it writes for this case; runnel writes
	// "RecordAgeExceeded" (LocalStack's current value).
	ConditionRecordAgeExceeded = "RecordAgeExceeded"
)

// DestinationConfig says where records go that the mapping gives up on.
type DestinationConfig struct {
	OnFailure *OnFailure `json:"OnFailure,omitempty" yaml:"OnFailure"`
}

// OnFailure names the on-failure destination by ARN. runnel accepts a
// runnel stream (arn:aws:kinesis:<region>:<account>:stream/<name>) and any
// kind a DestinationResolver registered with the service knows.
type OnFailure struct {
	Destination string `json:"Destination" yaml:"Destination"`
}

// Config is an event source mapping for a stream
// (API_CreateEventSourceMapping). Pointer fields distinguish "not set"
// (the AWS default applies) from an explicit zero.
type Config struct {
	// UUID identifies the mapping; set by CreateEventSourceMapping.
	UUID string `json:"UUID" yaml:"UUID"`
	// EventSourceArn is the stream's ARN. Required.
	EventSourceArn string `json:"EventSourceArn" yaml:"EventSourceArn"`
	// FunctionName is the function's name or ARN. Required.
	FunctionName string `json:"FunctionName" yaml:"FunctionName"`
	// Enabled: whether the mapping polls. Default true.
	Enabled *bool `json:"Enabled,omitempty" yaml:"Enabled"`
	// BatchSize: most records per invocation, 1..10000. Default 100.
	BatchSize int `json:"BatchSize" yaml:"BatchSize"`
	// MaximumBatchingWindowInSeconds: how long to gather records before
	// invoking, 0..300. Default 0 (invoke as soon as records are there).
	// The window starts when the previous invocation of the same batch
	// lane completes.
	MaximumBatchingWindowInSeconds int `json:"MaximumBatchingWindowInSeconds" yaml:"MaximumBatchingWindowInSeconds"`
	// ParallelizationFactor: concurrent batches per shard, 1..10. Default 1.
	// Records of one partition key always go to the same batch lane, so
	// their order is kept.
	ParallelizationFactor int `json:"ParallelizationFactor" yaml:"ParallelizationFactor"`
	// StartingPosition: TRIM_HORIZON, LATEST or AT_TIMESTAMP. Required. It
	// is resolved once, when the mapping is created, into a durable
	// checkpoint per shard.
	StartingPosition string `json:"StartingPosition" yaml:"StartingPosition"`
	// StartingPositionTimestamp is required with AT_TIMESTAMP.
	StartingPositionTimestamp *time.Time `json:"StartingPositionTimestamp,omitempty" yaml:"StartingPositionTimestamp"`
	// MaximumRetryAttempts: retries of a failed batch before its records are
	// discarded, -1..10000; -1 retries until the records expire. Default -1.
	// Trap: with the default, one poison record blocks its shard until it
	// ages out of the stream.
	MaximumRetryAttempts *int `json:"MaximumRetryAttempts,omitempty" yaml:"MaximumRetryAttempts"`
	// MaximumRecordAgeInSeconds: records older than this are discarded
	// instead of invoked; -1 (infinite) or 60..604800. Default -1.
	MaximumRecordAgeInSeconds *int `json:"MaximumRecordAgeInSeconds,omitempty" yaml:"MaximumRecordAgeInSeconds"`
	// BisectBatchOnFunctionError: on a function error, split the batch in
	// two and invoke each half. Splitting does not consume the retry quota.
	// Default false.
	BisectBatchOnFunctionError bool `json:"BisectBatchOnFunctionError" yaml:"BisectBatchOnFunctionError"`
	// FunctionResponseTypes: ["ReportBatchItemFailures"] makes the mapping
	// read batchItemFailures from the response. Default none.
	FunctionResponseTypes []string `json:"FunctionResponseTypes,omitempty" yaml:"FunctionResponseTypes"`
	// DestinationConfig.OnFailure receives a record (KinesisBatchInfo) for
	// every batch the mapping discards. Without it discarded records are
	// logged with shard and sequence numbers and counted.
	DestinationConfig *DestinationConfig `json:"DestinationConfig,omitempty" yaml:"DestinationConfig"`
	// FilterCriteria: up to 5 EventBridge-style patterns; records matching
	// none are skipped (not invoked, checkpointed past). For a queue,
	// messages matching none are deleted, as Lambda does.
	FilterCriteria *filter.Criteria `json:"FilterCriteria,omitempty" yaml:"FilterCriteria"`
	// ScalingConfig (queues only) bounds the concurrent invocations of the
	// mapping.
	ScalingConfig *ScalingConfig `json:"ScalingConfig,omitempty" yaml:"ScalingConfig"`
	// TumblingWindowInSeconds (streams and DynamoDB streams): the length of
	// the tumbling windows whose state the function carries from one
	// invocation to the next, 0..900; 0 or unset: none. See window.go.
	TumblingWindowInSeconds *int `json:"TumblingWindowInSeconds,omitempty" yaml:"TumblingWindowInSeconds"`
	// RetryPolicy (queues only; a runnel extension) retries failed messages
	// with exponential backoff and full jitter applied through their
	// visibility timeout, and moves them to the queue's dead-letter queue
	// when MaxAttempts or MaximumAgeInSeconds is reached. Without it a
	// failed message simply becomes visible again after the queue's
	// VisibilityTimeout, as on AWS.
	RetryPolicy *backoff.Policy `json:"RetryPolicy,omitempty" yaml:"RetryPolicy"`

	// State is Enabled or Disabled; set by runnel.
	State string `json:"State" yaml:"-"`
	// StateTransitionReason says who set the state ("USER_INITIATED").
	StateTransitionReason string `json:"StateTransitionReason" yaml:"-"`
	// LastModified is when the configuration last changed.
	LastModified time.Time `json:"LastModified" yaml:"-"`
	// FunctionArn is the resolved function ARN; set by runnel.
	FunctionArn string `json:"FunctionArn" yaml:"-"`
}

// ScalingConfig of a queue event source mapping.
type ScalingConfig struct {
	// MaximumConcurrency: most concurrent invocations, 2..1000. Default:
	// DefaultQueueConcurrency (Lambda starts with 5 concurrent batches).
	MaximumConcurrency int `json:"MaximumConcurrency" yaml:"MaximumConcurrency"`
}

// Queue event source defaults and ranges
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-parameters.html).
const (
	DefaultQueueBatchSize     = 10
	MaxFIFOBatchSize          = 10
	DefaultQueueConcurrency   = 5
	MinMaximumConcurrency     = 2
	MaxMaximumConcurrency     = 1000
	sourceStream, sourceQueue = "kinesis", "sqs"
	sourceDynamoDB            = "dynamodb"
)

// sourceKind tells a stream source from a queue source by the ARN.
func (c *Config) sourceKind() string {
	if strings.HasPrefix(c.EventSourceArn, "arn:aws:sqs:") {
		return sourceQueue
	}
	if strings.HasPrefix(c.EventSourceArn, "arn:aws:dynamodb:") {
		return sourceDynamoDB
	}
	return sourceStream
}

// validateQueue checks the ranges of a queue source, with its defaults
// (WithDefaults); stream-only parameters are refused by name. It does not
// change c.
func (c Config) validateQueue(fifo bool) error {
	c = c.WithDefaults()
	if c.FunctionName == "" {
		return invalid("FunctionName: required")
	}
	// In a fixed order, so that the error names the same field every time.
	for _, f := range []struct {
		field string
		set   bool
	}{
		{"StartingPosition", c.StartingPosition != ""},
		{"StartingPositionTimestamp", c.StartingPositionTimestamp != nil},
		{"ParallelizationFactor", c.ParallelizationFactor != 0},
		{"MaximumRetryAttempts", c.MaximumRetryAttempts != nil},
		{"MaximumRecordAgeInSeconds", c.MaximumRecordAgeInSeconds != nil},
		{"BisectBatchOnFunctionError", c.BisectBatchOnFunctionError},
		{"DestinationConfig", c.DestinationConfig != nil},
		{"TumblingWindowInSeconds", c.TumblingWindowInSeconds != nil && *c.TumblingWindowInSeconds != 0},
	} {
		if f.set {
			return invalid("%s is not valid for an SQS event source (configure failures on the queue's RedrivePolicy)", f.field)
		}
	}
	maxBatch := MaxBatchSize
	if fifo {
		maxBatch = MaxFIFOBatchSize
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatch {
		return outOfRange("BatchSize", c.BatchSize, 1, maxBatch)
	}
	if c.MaximumBatchingWindowInSeconds < 0 || c.MaximumBatchingWindowInSeconds > MaxBatchingWindowInSeconds {
		return outOfRange("MaximumBatchingWindowInSeconds", c.MaximumBatchingWindowInSeconds, 0, MaxBatchingWindowInSeconds)
	}
	if fifo && c.MaximumBatchingWindowInSeconds > 0 {
		return invalid("MaximumBatchingWindowInSeconds is not supported for FIFO queues")
	}
	if c.BatchSize > 10 && c.MaximumBatchingWindowInSeconds < 1 {
		return invalid("Maximum batch window in seconds must be greater than 0 if maximum batch size is greater than 10")
	}
	if c.ScalingConfig != nil && (c.ScalingConfig.MaximumConcurrency < MinMaximumConcurrency || c.ScalingConfig.MaximumConcurrency > MaxMaximumConcurrency) {
		return outOfRange("ScalingConfig.MaximumConcurrency", c.ScalingConfig.MaximumConcurrency, MinMaximumConcurrency, MaxMaximumConcurrency)
	}
	if c.RetryPolicy != nil {
		if err := c.RetryPolicy.Validate("RetryPolicy."); err != nil {
			return err
		}
	}
	for i, t := range c.FunctionResponseTypes {
		if t != ReportBatchItemFailures {
			return invalid("FunctionResponseTypes[%d]: %q must be ReportBatchItemFailures", i, t)
		}
	}
	if _, err := filter.Compile(c.FilterCriteria); err != nil {
		return err
	}
	return nil
}

// WithDefaults returns c with AWS's defaults in its unset fields: Enabled
// true; for a queue source BatchSize 10 (DefaultQueueBatchSize) and the
// zero fields of RetryPolicy from backoff.Default; for a stream or
// DynamoDB stream source BatchSize 100 (DefaultBatchSize),
// ParallelizationFactor 1, MaximumRetryAttempts and
// MaximumRecordAgeInSeconds -1 (infinite). Pointer fields it fills are
// new values: c's are not changed.
func (c Config) WithDefaults() Config {
	if c.Enabled == nil {
		c.Enabled = new(true)
	}
	if c.sourceKind() == sourceQueue {
		c.BatchSize = cmp.Or(c.BatchSize, DefaultQueueBatchSize)
		if c.RetryPolicy != nil {
			c.RetryPolicy = new(c.RetryPolicy.WithDefaults())
		}
		return c
	}
	c.BatchSize = cmp.Or(c.BatchSize, DefaultBatchSize)
	c.ParallelizationFactor = cmp.Or(c.ParallelizationFactor, 1)
	c.MaximumRetryAttempts = cmp.Or(c.MaximumRetryAttempts, new(-1))
	c.MaximumRecordAgeInSeconds = cmp.Or(c.MaximumRecordAgeInSeconds, new(-1))
	return c
}

func invalid(format string, args ...any) error {
	return awserr.New(awserr.ErrInvalidParameterValue, format, args...)
}

// visibilityRulePrefix begins the message of the create-time rule "queue
// VisibilityTimeout >= function Timeout" that Service.validateQueue
// checks last (queue_poller.go); validate lets an update through it
// (service.go).
const visibilityRulePrefix = "Queue visibility timeout: "

// isVisibilityRule tells whether err is that rule's refusal.
func isVisibilityRule(err error) bool {
	var e *awserr.Error
	return errors.As(err, &e) && e.Code == awserr.ErrInvalidParameterValue.Code && strings.HasPrefix(e.Message, visibilityRulePrefix)
}

func outOfRange(field string, v any, lo, hi any) error {
	return awserr.OutOfRange(awserr.ErrInvalidParameterValue, field, v, lo, hi)
}

// Validate checks every field of a stream or DynamoDB stream source, with
// its defaults (WithDefaults), against its range. It returns an
// InvalidParameterValueException naming the field and the allowed values.
// It does not change c. (A queue source is checked against its queue by
// Service.CreateEventSourceMapping.)
func (c Config) Validate() error {
	c = c.WithDefaults()
	if c.EventSourceArn == "" {
		return invalid("EventSourceArn: required")
	}
	if c.FunctionName == "" {
		return invalid("FunctionName: required")
	}
	if c.BatchSize < 1 || c.BatchSize > MaxBatchSize {
		return outOfRange("BatchSize", c.BatchSize, 1, MaxBatchSize)
	}
	if c.MaximumBatchingWindowInSeconds < 0 || c.MaximumBatchingWindowInSeconds > MaxBatchingWindowInSeconds {
		return outOfRange("MaximumBatchingWindowInSeconds", c.MaximumBatchingWindowInSeconds, 0, MaxBatchingWindowInSeconds)
	}
	if c.ParallelizationFactor < 1 || c.ParallelizationFactor > MaxParallelizationFactor {
		return outOfRange("ParallelizationFactor", c.ParallelizationFactor, 1, MaxParallelizationFactor)
	}
	switch c.StartingPosition {
	case TrimHorizon, Latest:
	case AtTimestamp:
		if c.StartingPositionTimestamp == nil {
			return invalid("StartingPositionTimestamp: required when StartingPosition is AT_TIMESTAMP")
		}
	case "":
		return invalid("StartingPosition: required for a stream event source (TRIM_HORIZON, LATEST or AT_TIMESTAMP)")
	default:
		return invalid("StartingPosition: %q must be one of TRIM_HORIZON, LATEST, AT_TIMESTAMP", c.StartingPosition)
	}
	if r := *c.MaximumRetryAttempts; r < -1 || r > MaxMaximumRetryAttempts {
		return outOfRange("MaximumRetryAttempts", r, -1, MaxMaximumRetryAttempts)
	}
	if a := *c.MaximumRecordAgeInSeconds; a != -1 && (a < MinMaximumRecordAgeInSeconds || a > MaxMaximumRecordAgeInSeconds) {
		return invalid("MaximumRecordAgeInSeconds: value %d is not allowed: must be -1 (infinite) or between %d and %d", a, MinMaximumRecordAgeInSeconds, MaxMaximumRecordAgeInSeconds)
	}
	if w := c.TumblingWindowInSeconds; w != nil && (*w < 0 || *w > MaxTumblingWindowInSeconds) {
		return outOfRange("TumblingWindowInSeconds", *w, 0, MaxTumblingWindowInSeconds)
	}
	for i, t := range c.FunctionResponseTypes {
		if t != ReportBatchItemFailures {
			return invalid("FunctionResponseTypes[%d]: %q must be ReportBatchItemFailures", i, t)
		}
	}
	if c.DestinationConfig != nil && c.DestinationConfig.OnFailure != nil && c.DestinationConfig.OnFailure.Destination == "" {
		return invalid("DestinationConfig.OnFailure.Destination: required when OnFailure is set")
	}
	if c.ScalingConfig != nil || c.RetryPolicy != nil {
		return invalid("ScalingConfig and RetryPolicy are valid for SQS event sources only")
	}
	if c.FilterCriteria != nil && len(c.FilterCriteria.Filters) > MaxFilters {
		return outOfRange("FilterCriteria.Filters", len(c.FilterCriteria.Filters), 0, MaxFilters)
	}
	if _, err := filter.Compile(c.FilterCriteria); err != nil {
		return err
	}
	return nil
}

// reportBatchItemFailures reports whether the function's partial-failure
// responses are honoured.
func (c *Config) reportBatchItemFailures() bool {
	return slices.Contains(c.FunctionResponseTypes, ReportBatchItemFailures)
}

func (c *Config) onFailure() string {
	if c.DestinationConfig == nil || c.DestinationConfig.OnFailure == nil {
		return ""
	}
	return c.DestinationConfig.OnFailure.Destination
}

func (c *Config) String() string {
	return fmt.Sprintf("mapping %s (%s -> %s)", c.UUID, c.EventSourceArn, c.FunctionName)
}
