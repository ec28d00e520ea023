package function

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

// KinesisHandler is the in-process form of a function fed by a stream
// event source mapping. Returning an error fails the whole batch; returning
// a response with batchItemFailures reports a partial failure (honoured only
// when the mapping has FunctionResponseTypes ["ReportBatchItemFailures"]).
type KinesisHandler func(ctx context.Context, event events.KinesisEvent) (events.KinesisEventResponse, error)

// invoker is what every registered handler is turned into. event is the
// typed event when the caller has one (nil otherwise); payload is its JSON.
// resp is a typed response when the handler produced one.
type invoker interface {
	invoke(ctx context.Context, event any, payload func() ([]byte, error)) (resp any, out []byte, err error)
}

type kinesisInvoker KinesisHandler

func (h kinesisInvoker) invoke(ctx context.Context, event any, payload func() ([]byte, error)) (any, []byte, error) {
	ev, ok := event.(*events.KinesisEvent)
	if !ok {
		b, err := payload()
		if err != nil {
			return nil, nil, err
		}
		ev = new(events.KinesisEvent)
		if err := json.Unmarshal(b, ev); err != nil {
			return nil, nil, err
		}
	}
	resp, err := h(ctx, *ev)
	return &resp, nil, err
}

type rawInvoker struct{ h lambda.Handler }

func (r rawInvoker) invoke(ctx context.Context, _ any, payload func() ([]byte, error)) (any, []byte, error) {
	b, err := payload()
	if err != nil {
		return nil, nil, err
	}
	out, err := r.h.Invoke(ctx, b)
	// aws-lambda-go returns a pooled buffer that its next invocation reuses.
	return nil, bytes.Clone(out), err
}

func toInvoker(h any) (invoker, error) {
	switch f := h.(type) {
	case KinesisHandler:
		return kinesisInvoker(f), nil
	case func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error):
		return kinesisInvoker(f), nil
	case func(context.Context, events.KinesisEvent) error:
		return kinesisInvoker(func(ctx context.Context, e events.KinesisEvent) (events.KinesisEventResponse, error) {
			return events.KinesisEventResponse{}, f(ctx, e)
		}), nil
	case lambda.Handler:
		return rawInvoker{f}, nil
	}
	if reflect.TypeOf(h) == nil || reflect.TypeOf(h).Kind() != reflect.Func {
		return nil, fmt.Errorf("function: handler of type %T is not a function or lambda.Handler", h)
	}
	// Any other signature lambda.Start accepts, with JSON in and out.
	return rawInvoker{lambda.NewHandler(h)}, nil
}

var (
	regMu    sync.RWMutex
	registry = map[string]invoker{}
)

// Register makes an in-process handler available under name, for
// Config.Handler. h may be a KinesisHandler, a
// func(context.Context, events.KinesisEvent) error, a lambda.Handler, or
// any handler signature aws-lambda-go's lambda.Start accepts (it then gets
// the event as JSON). Registering a name twice replaces the handler for
// functions created afterwards. It panics if h is not a function.
func Register(name string, h any) {
	inv, err := toInvoker(h)
	if err != nil {
		panic(err)
	}
	regMu.Lock()
	registry[name] = inv
	regMu.Unlock()
}

func lookup(name string) (invoker, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	inv, ok := registry[name]
	return inv, ok
}

// Handlers lists the registered handler names, sorted.
func Handlers() []string {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]string, 0, len(registry))
	for k := range registry {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func isKinesisEvent(event any) bool {
	_, ok := event.(*events.KinesisEvent)
	return ok
}
