package async

import (
	"context"
	"errors"
	"strings"
	"sync"
)

// Fanout is how asynchronous invocation reaches the services built after
// it: SNS (whose Lambda subscriptions invoke through this package) and
// EventBridge. runnel.Open sets it once both exist (SetFanout); until
// then, and in a Service without it, an SNS topic or an event bus as a
// destination is refused.
type Fanout struct {
	// Publish publishes message to the SNS topic topicARN.
	Publish func(ctx context.Context, topicARN, message string) error
	// TopicFIFO reports whether topicARN names a FIFO topic, or an error
	// (ErrNotFound-like) when it names no topic.
	TopicFIFO func(ctx context.Context, topicARN string) (bool, error)
	// PutEvent puts one event on the bus busARN (a failed entry is an
	// error).
	PutEvent func(ctx context.Context, busARN, source, detailType, detail string, resources []string) error
	// BusExists reports an error when busARN names no event bus.
	BusExists func(ctx context.Context, busARN string) error
}

// Detail types of the events an EventBridge destination receives, with
// source "lambda" (invocation-async-retain-records; SPEC-aws-semantics
// "Conditions").
const (
	DetailTypeSuccess = "Lambda Function Invocation Result - Success"
	DetailTypeFailure = "Lambda Function Invocation Result - Failure"
)

type fanoutHolder struct {
	mu sync.RWMutex
	f  Fanout
}

func (h *fanoutHolder) get() Fanout {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return h.f
}

// SetFanout gives the service its SNS and EventBridge destinations.
func (s *Service) SetFanout(f Fanout) {
	s.fanout.mu.Lock()
	s.fanout.f = f
	s.fanout.mu.Unlock()
}

// checkFanoutDestination checks an SNS topic or event bus destination.
func (s *Service) checkFanoutDestination(ctx context.Context, field, arn string) error {
	f := s.fanout.get()
	switch {
	case strings.HasPrefix(arn, "arn:aws:sns:"):
		if f.TopicFIFO == nil {
			return invalid("%s: %q: this process has no SNS service to deliver to", field, arn)
		}
		fifo, err := f.TopicFIFO(ctx, arn)
		if err != nil {
			return invalid("%s: topic %s does not exist", field, arn)
		}
		if fifo {
			return invalid("%s: %s is a FIFO topic; Lambda supports only standard topics as destinations", field, arn)
		}
		return nil
	default: // arn:aws:events:
		if f.BusExists == nil {
			return invalid("%s: %q: this process has no EventBridge service to deliver to", field, arn)
		}
		if !strings.Contains(arn, ":event-bus/") {
			return invalid("%s: %q is not an event bus ARN (arn:aws:events:<region>:<account>:event-bus/<name>)", field, arn)
		}
		if err := f.BusExists(ctx, arn); err != nil {
			return invalid("%s: event bus %s does not exist", field, arn)
		}
		return nil
	}
}

// sendFanout delivers a record to an SNS topic (the record is the
// message) or an event bus (the record is the detail of an event from
// source "lambda", its detail type saying success or failure, its
// resources the bus and the function version that ran).
func (s *Service) sendFanout(ctx context.Context, arn string, rec []byte, functionARN string, success bool) error {
	f := s.fanout.get()
	if strings.HasPrefix(arn, "arn:aws:sns:") {
		if f.Publish == nil {
			return errNoFanout
		}
		return f.Publish(ctx, arn, string(rec))
	}
	if f.PutEvent == nil {
		return errNoFanout
	}
	dt := DetailTypeFailure
	if success {
		dt = DetailTypeSuccess
	}
	return f.PutEvent(ctx, arn, "lambda", dt, string(rec), []string{arn, functionARN})
}

var errNoFanout = errors.New("async: this process has no SNS or EventBridge service to deliver to")
