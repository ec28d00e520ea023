package function

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// KinesisHandler is the in-process form of a function fed by a stream
// event source mapping. Returning an error fails the whole batch; returning
// a response with batchItemFailures reports a partial failure (honoured only
// when the mapping has FunctionResponseTypes ["ReportBatchItemFailures"]).
type KinesisHandler func(ctx context.Context, event events.KinesisEvent) (events.KinesisEventResponse, error)

// SQSHandler is the in-process form of a function fed by a queue event
// source mapping. Returning an error fails the whole batch; a response with
// batchItemFailures (message ids) reports a partial failure, honoured with
// FunctionResponseTypes ["ReportBatchItemFailures"].
type SQSHandler func(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error)

// DynamoDBHandler is the in-process form of a function fed by a DynamoDB
// stream (a table's change stream) through an event source mapping. The
// rules are those of KinesisHandler; batchItemFailures name
// dynamodb.SequenceNumber.
type DynamoDBHandler func(ctx context.Context, event events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

// EventHandler handles stream and queue events both: the function of the
// whitepaper's flows, which consumes a stream and, through a second
// mapping, its Retry-DLQ queue. Each event arrives typed on its method;
// JSON input is told apart by its eventSource.
type EventHandler interface {
	HandleKinesis(ctx context.Context, event events.KinesisEvent) (events.KinesisEventResponse, error)
	HandleSQS(ctx context.Context, event events.SQSEvent) (events.SQSEventResponse, error)
}

// invoker is what every registered handler is turned into. event is the
// typed event when the caller has one (nil otherwise); payload is its JSON.
// resp is a typed response when the handler produced one.
type invoker interface {
	invoke(ctx context.Context, event any, payload func() ([]byte, error)) (resp any, out []byte, err error)
}

// typedInvoker is a handler typed for events of type E: it takes the
// event as is when the caller has one of type *E, else decodes the JSON.
type typedInvoker[E, R any] func(ctx context.Context, event E) (R, error)

func (h typedInvoker[E, R]) invoke(ctx context.Context, event any, payload func() ([]byte, error)) (any, []byte, error) {
	ev, ok := event.(*E)
	if !ok {
		b, err := payload()
		if err != nil {
			return nil, nil, err
		}
		ev = new(E)
		if err := json.Unmarshal(b, ev); err != nil {
			return nil, nil, err
		}
	}
	resp, err := h(ctx, *ev)
	return &resp, nil, err
}

// takes reports whether event is of the handler's type, *E.
func (h typedInvoker[E, R]) takes(event any) bool {
	_, ok := event.(*E)
	return ok
}

type (
	kinesisInvoker  = typedInvoker[events.KinesisEvent, events.KinesisEventResponse]
	sqsInvoker      = typedInvoker[events.SQSEvent, events.SQSEventResponse]
	dynamodbInvoker = typedInvoker[events.DynamoDBEvent, events.DynamoDBEventResponse]
)

type dualInvoker struct{ h EventHandler }

func (d dualInvoker) invoke(ctx context.Context, event any, payload func() ([]byte, error)) (any, []byte, error) {
	switch ev := event.(type) {
	case *events.KinesisEvent:
		return kinesisInvoker(d.h.HandleKinesis).invoke(ctx, ev, payload)
	case *events.SQSEvent:
		return sqsInvoker(d.h.HandleSQS).invoke(ctx, ev, payload)
	}
	b, err := payload()
	if err != nil {
		return nil, nil, err
	}
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	if json.Unmarshal(b, &probe) == nil && len(probe.Records) > 0 && probe.Records[0].EventSource == "aws:sqs" {
		return sqsInvoker(d.h.HandleSQS).invoke(ctx, nil, payload)
	}
	return kinesisInvoker(d.h.HandleKinesis).invoke(ctx, nil, payload)
}

// Event kinds for Function.Accepts.
const (
	EventKinesis  = "kinesis"
	EventSQS      = "sqs"
	EventDynamoDB = "dynamodb"
)

// accepts reports whether an invoker can take events of a kind: a typed
// Kinesis handler takes only stream events, a typed SQS handler only queue
// events; EventHandlers and JSON handlers take both.
func accepts(inv invoker, kind string) bool {
	switch inv.(type) {
	case kinesisInvoker:
		return kind == EventKinesis
	case sqsInvoker:
		return kind == EventSQS
	case dynamodbInvoker:
		return kind == EventDynamoDB
	case dualInvoker:
		return kind != EventDynamoDB
	}
	return true
}

// acceptsTyped reports whether an invoker takes event as a Go value (so
// Invoke need not encode it).
func acceptsTyped(inv invoker, event any) bool {
	switch h := inv.(type) {
	case kinesisInvoker, sqsInvoker, dynamodbInvoker:
		return h.(interface{ takes(any) bool }).takes(event)
	case dualInvoker:
		switch event.(type) {
		case *events.KinesisEvent, *events.SQSEvent:
			return true
		}
	}
	return false
}

// rawInvoker is a lambda.Handler registered as it is: it must be safe for
// concurrent use (a function runs up to its concurrency of invocations at
// once).
type rawInvoker struct{ h lambda.Handler }

func (r rawInvoker) invoke(ctx context.Context, _ any, payload func() ([]byte, error)) (any, []byte, error) {
	b, err := payload()
	if err != nil {
		return nil, nil, err
	}
	out, err := r.h.Invoke(ctx, b)
	return nil, bytes.Clone(out), err
}

// reflectInvoker is a handler of any other signature lambda.Start
// accepts, through aws-lambda-go's lambda.NewHandler. The trap: that
// handler encodes every response into one buffer of its own, which its
// next Invoke overwrites, so one such handler must not serve two
// invocations at once (Lambda never asks it to: one environment runs one
// invocation at a time). Each invocation here takes a handler of its own
// from a pool and copies the response out before giving it back.
type reflectInvoker struct{ pool *sync.Pool }

func newReflectInvoker(h any) reflectInvoker {
	r := reflectInvoker{pool: &sync.Pool{New: func() any { return lambda.NewHandler(h) }}}
	r.pool.Put(lambda.NewHandler(h)) // made at registration, as before the pool
	return r
}

func (r reflectInvoker) invoke(ctx context.Context, _ any, payload func() ([]byte, error)) (any, []byte, error) {
	b, err := payload()
	if err != nil {
		return nil, nil, err
	}
	h := r.pool.Get().(lambda.Handler)
	out, err := h.Invoke(ctx, b)
	out = bytes.Clone(out)
	r.pool.Put(h)
	return nil, out, err
}

// errorOnly turns a handler that returns only an error into one that
// returns the zero response R with it.
func errorOnly[E, R any](f func(context.Context, E) error) typedInvoker[E, R] {
	return func(ctx context.Context, e E) (R, error) {
		var zero R
		return zero, f(ctx, e)
	}
}

func toInvoker(h any) (invoker, error) {
	inv, err := handlerInvoker(h)
	if err != nil {
		return inv, err
	}
	self := selfLogged{invoker: inv}
	if sl, ok := h.(SelfLogging); ok && sl.WritesInvocationLog() {
		self.logs = true
	}
	if st, ok := h.(SelfTimed); ok {
		self.bound = st.MaxInvocationTime()
	}
	if self.logs || self.bound > 0 {
		inv = self
	}
	return inv, nil
}

func handlerInvoker(h any) (invoker, error) {
	switch f := h.(type) {
	case KinesisHandler:
		return kinesisInvoker(f), nil
	case func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error):
		return kinesisInvoker(f), nil
	case func(context.Context, events.KinesisEvent) error:
		return errorOnly[events.KinesisEvent, events.KinesisEventResponse](f), nil
	case SQSHandler:
		return sqsInvoker(f), nil
	case func(context.Context, events.SQSEvent) (events.SQSEventResponse, error):
		return sqsInvoker(f), nil
	case DynamoDBHandler:
		return dynamodbInvoker(f), nil
	case func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error):
		return dynamodbInvoker(f), nil
	case func(context.Context, events.DynamoDBEvent) error:
		return errorOnly[events.DynamoDBEvent, events.DynamoDBEventResponse](f), nil
	case EventHandler:
		return dualInvoker{f}, nil
	case lambda.Handler:
		return rawInvoker{f}, nil
	}
	if reflect.TypeOf(h) == nil || reflect.TypeOf(h).Kind() != reflect.Func {
		return nil, fmt.Errorf("function: handler of type %T is not a function or lambda.Handler", h)
	}
	// Any other signature lambda.Start accepts, with JSON in and out.
	return newReflectInvoker(h), nil
}
