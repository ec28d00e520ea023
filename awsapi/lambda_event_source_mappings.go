package awsapi

// Lambda: event source mappings (REST, /2015-03-31/event-source-mappings)
// over package mapping: Kinesis streams, DynamoDB streams and SQS queues
// feeding functions, with batching, filters, retries, bisection, partial
// batch responses, tumbling windows (streams) and on-failure destinations.
// No Kafka or MQ sources, no OnSuccess destination.

import (
	"errors"

	"encoding/json"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
)

// mappingInput is CreateEventSourceMapping's and UpdateEventSourceMapping's
// request: pointers tell "not given" from zero.
type mappingInput struct {
	EventSourceArn, FunctionName                                     string
	Enabled                                                          *bool
	BatchSize, MaximumBatchingWindowInSeconds, ParallelizationFactor *int
	StartingPosition                                                 string
	StartingPositionTimestamp                                        *float64
	MaximumRetryAttempts, MaximumRecordAgeInSeconds                  *int
	BisectBatchOnFunctionError                                       *bool
	FunctionResponseTypes                                            []string
	DestinationConfig                                                *destinations
	FilterCriteria                                                   *filter.Criteria
	ScalingConfig                                                    *mapping.ScalingConfig
	// RetryPolicy is a runnel extension (queue sources).
	RetryPolicy             *backoff.Policy
	TumblingWindowInSeconds *int

	// Parameters of other event sources, refused when set.
	Topics, Queues             []string
	SourceAccessConfigurations []json.RawMessage
	SelfManagedEventSource     json.RawMessage
}

func (in *mappingInput) check() error {
	switch {
	case len(in.Topics) > 0, len(in.Queues) > 0, len(in.SourceAccessConfigurations) > 0, len(in.SelfManagedEventSource) > 0:
		return lambdaInvalid("Topics, Queues, SourceAccessConfigurations and SelfManagedEventSource are for Kafka and MQ event sources, which runnel does not have")
	case in.BatchSize != nil && *in.BatchSize < 1:
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "BatchSize", *in.BatchSize, 1, mapping.MaxBatchSize)
	case in.ParallelizationFactor != nil && *in.ParallelizationFactor < 1:
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "ParallelizationFactor", *in.ParallelizationFactor, 1, mapping.MaxParallelizationFactor)
	case in.DestinationConfig != nil && in.DestinationConfig.OnSuccess != nil && in.DestinationConfig.OnSuccess.Destination != "":
		return lambdaInvalid("DestinationConfig.OnSuccess: not supported for stream and queue event sources (only OnFailure)")
	}
	return nil
}

// destinations converts the request's DestinationConfig: nil when not
// given, an empty one (no destination) when OnFailure is absent or empty.
func (in *mappingInput) destinations() *mapping.DestinationConfig {
	if in.DestinationConfig == nil {
		return nil
	}
	d := &mapping.DestinationConfig{}
	if f := in.DestinationConfig.OnFailure; f != nil && f.Destination != "" {
		d.OnFailure = &mapping.OnFailure{Destination: f.Destination}
	}
	return d
}

type mappingOutput struct {
	UUID, EventSourceArn, FunctionArn, State, StateTransitionReason string
	LastModified                                                    float64
	LastProcessingResult                                            string `json:",omitempty"`
	BatchSize, MaximumBatchingWindowInSeconds                       int
	ParallelizationFactor                                           int                    `json:",omitempty"`
	StartingPosition                                                string                 `json:",omitempty"`
	StartingPositionTimestamp                                       float64                `json:",omitempty"`
	MaximumRetryAttempts, MaximumRecordAgeInSeconds                 *int                   `json:",omitempty"`
	BisectBatchOnFunctionError                                      *bool                  `json:",omitempty"`
	FunctionResponseTypes                                           []string               `json:",omitempty"`
	DestinationConfig                                               *destinations          `json:",omitempty"`
	FilterCriteria                                                  *filter.Criteria       `json:",omitempty"`
	ScalingConfig                                                   *mapping.ScalingConfig `json:",omitempty"`
	RetryPolicy                                                     *backoff.Policy        `json:",omitempty"`
	TumblingWindowInSeconds                                         *int                   `json:",omitempty"`
}

func (h *Handler) mappingOut(c *mapping.Config) mappingOutput {
	out := mappingOutput{
		UUID: c.UUID, EventSourceArn: c.EventSourceArn, FunctionArn: c.FunctionArn,
		State: c.State, StateTransitionReason: c.StateTransitionReason, LastModified: epochSecondsOf(c.LastModified),
		BatchSize: c.BatchSize, MaximumBatchingWindowInSeconds: c.MaximumBatchingWindowInSeconds,
		ParallelizationFactor: c.ParallelizationFactor, StartingPosition: c.StartingPosition,
		MaximumRetryAttempts: c.MaximumRetryAttempts, MaximumRecordAgeInSeconds: c.MaximumRecordAgeInSeconds,
		FunctionResponseTypes: c.FunctionResponseTypes, FilterCriteria: c.FilterCriteria,
		ScalingConfig: c.ScalingConfig, RetryPolicy: c.RetryPolicy,
	}
	if c.StartingPositionTimestamp != nil {
		out.StartingPositionTimestamp = epochSecondsOf(*c.StartingPositionTimestamp)
	}
	if !strings.HasPrefix(c.EventSourceArn, "arn:aws:sqs:") {
		b := c.BisectBatchOnFunctionError
		out.BisectBatchOnFunctionError = &b
		out.TumblingWindowInSeconds = new(0)
		if c.TumblingWindowInSeconds != nil {
			out.TumblingWindowInSeconds = new(*c.TumblingWindowInSeconds)
		}
		out.DestinationConfig = &destinations{OnFailure: &destination{}}
		if c.DestinationConfig != nil && c.DestinationConfig.OnFailure != nil {
			out.DestinationConfig.OnFailure.Destination = c.DestinationConfig.OnFailure.Destination
		}
	}
	if st, err := h.rn.Mappings.Status(c.UUID); err == nil {
		switch {
		case st.Queue != nil:
			out.LastProcessingResult = st.Queue.LastProcessingResult
		case len(st.Shards) > 0:
			out.LastProcessingResult = st.Shards[0].LastProcessingResult
		}
	}
	return out
}

// config is the mapping.Config the request's fields give, on top of base
// (the stored mapping's, for an update).
func (in *mappingInput) config(base mapping.Config) mapping.Config {
	cfg := base
	cfg.FunctionName, cfg.Enabled = in.FunctionName, in.Enabled
	cfg.MaximumRetryAttempts, cfg.MaximumRecordAgeInSeconds = in.MaximumRetryAttempts, in.MaximumRecordAgeInSeconds
	cfg.FunctionResponseTypes, cfg.DestinationConfig = in.FunctionResponseTypes, in.destinations()
	cfg.FilterCriteria, cfg.ScalingConfig, cfg.RetryPolicy = in.FilterCriteria, in.ScalingConfig, in.RetryPolicy
	cfg.TumblingWindowInSeconds = in.TumblingWindowInSeconds
	setIf(&cfg.BatchSize, in.BatchSize)
	setIf(&cfg.MaximumBatchingWindowInSeconds, in.MaximumBatchingWindowInSeconds)
	setIf(&cfg.ParallelizationFactor, in.ParallelizationFactor)
	setIf(&cfg.BisectBatchOnFunctionError, in.BisectBatchOnFunctionError)
	return cfg
}

func lambdaCreateEventSourceMapping(rq *request, in *mappingInput) (any, error) {
	cfg := in.config(mapping.Config{EventSourceArn: in.EventSourceArn, StartingPosition: in.StartingPosition})
	if cfg.DestinationConfig != nil && cfg.DestinationConfig.OnFailure == nil {
		cfg.DestinationConfig = nil
	}
	if in.StartingPositionTimestamp != nil {
		t := epochSeconds(*in.StartingPositionTimestamp).UTC()
		cfg.StartingPositionTimestamp = &t
	}
	out, err := rq.h.rn.Mappings.CreateEventSourceMapping(rq.ctx, cfg)
	if errors.Is(err, awserr.ErrQueueDoesNotExist) {
		// Lambda answers with its own code, quoting SQS's.
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Error occurred while ReceiveMessage. SQS Error Code: AWS.SimpleQueueService.NonExistentQueue. "+
			"SQS Error Message: The specified queue does not exist for this wsdl version.")
	}
	if err != nil {
		return nil, err
	}
	return rq.h.mappingOut(out), nil
}

func lambdaGetEventSourceMapping(rq *request, _ *noInput) (any, error) {
	return answer(rq.h.mappingOut)(rq.h.rn.Mappings.GetEventSourceMapping(rq.r.PathValue("uuid")))
}

func lambdaListEventSourceMappings(rq *request, _ *noInput) (any, error) {
	q := rq.r.URL.Query()
	src, fn := q.Get("EventSourceArn"), q.Get("FunctionName")
	if fn != "" {
		name, q, err := function.ParseRef(fn)
		if err != nil {
			return nil, err
		}
		fn = rq.h.rn.Functions.QualifiedARN(name, strings.TrimPrefix(q, function.Latest))
	}
	var all []mapping.Config
	for _, c := range rq.h.rn.Mappings.ListEventSourceMappings() {
		if src != "" && c.EventSourceArn != src {
			continue
		}
		if fn != "" && strings.TrimSuffix(c.FunctionArn, ":$LATEST") != fn {
			continue
		}
		all = append(all, c)
	}
	return pageOf(rq, all, 100, "EventSourceMappings", rq.h.mappingOut)
}

func lambdaUpdateEventSourceMapping(rq *request, in *mappingInput) (any, error) {
	switch {
	case in.EventSourceArn != "":
		return nil, lambdaInvalid("EventSourceArn: cannot be changed; create a new mapping")
	case in.StartingPosition != "" || in.StartingPositionTimestamp != nil:
		return nil, lambdaInvalid("StartingPosition: cannot be changed; create a new mapping")
	}
	old, err := rq.h.rn.Mappings.GetEventSourceMapping(rq.r.PathValue("uuid"))
	if err != nil {
		return nil, err
	}
	// BisectBatchOnFunctionError and MaximumBatchingWindowInSeconds are
	// always taken as given by the service: keep the stored values unless
	// the request sets them.
	cfg := in.config(mapping.Config{UUID: old.UUID, BisectBatchOnFunctionError: old.BisectBatchOnFunctionError,
		MaximumBatchingWindowInSeconds: old.MaximumBatchingWindowInSeconds})
	return answer(rq.h.mappingOut)(rq.h.rn.Mappings.UpdateEventSourceMapping(rq.ctx, cfg))
}

func lambdaDeleteEventSourceMapping(rq *request, _ *noInput) (any, error) {
	id := rq.r.PathValue("uuid")
	c, err := rq.h.rn.Mappings.GetEventSourceMapping(id)
	if err != nil {
		return nil, err
	}
	if err := rq.h.rn.Mappings.DeleteEventSourceMapping(rq.ctx, id); err != nil {
		return nil, err
	}
	out := rq.h.mappingOut(c)
	out.State, out.LastProcessingResult = "Deleting", ""
	return out, nil
}
