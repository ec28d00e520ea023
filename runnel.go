// Package runnel wires runnel's services together over one engine (NATS
// JetStream, embedded or external): streams (the Kinesis model), queues
// (SQS), tables with change streams (DynamoDB), functions (Lambda, with
// in-process handlers from a function.Registry), asynchronous invocation
// with retries and destinations, and the event source mappings that feed
// functions from streams, queues and table change streams. Open it, use
// the services, Close it.
//
//	rn, err := runnel.Open(ctx, runnel.Config{})      // embedded, ./runnel-data
//	rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s", ShardCount: 2})
//	rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "f", Handler: "my-handler"})
//	rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{...})
//	rn.Async.Invoke(ctx, "f", async.Event, payload)
//
// See docs/design.md for the map of the code.
package runnel

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/scheduler"
	"github.com/runnel-dev/runnel/sns"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/target"
)

// Config configures Open: the engine (embedded or external JetStream),
// the handler registry and the services' runtime knobs.
type Config struct {
	Engine   engine.Config
	Mappings mapping.Options
	Tables   table.Options
	// SNS are the SNS service's knobs (the base URL of its links);
	// Mappings.Passive makes it passive too.
	SNS sns.Options
	// Targets tunes the delivery to rule and schedule targets; it is
	// Passive when Mappings is.
	Targets target.Options
	// Registry holds the in-process handlers the instance's functions
	// run. Default (nil): function.DefaultRegistry(), which
	// function.Register fills.
	Registry *function.Registry
	// RetentionInterval is how often expired records are trimmed by the
	// engine's clock. Default 1 minute; negative disables the trimmer
	// (JetStream's MaxAge still trims by wall-clock time).
	RetentionInterval time.Duration
}

// Runnel is an open runnel instance.
type Runnel struct {
	Engine  *engine.Engine
	Streams *stream.Service
	Queues  *queue.Service
	// Tables is the DynamoDB model (tables, transactions, TTL, change
	// streams).
	Tables    *table.Service
	Functions *function.Service
	Mappings  *mapping.Service
	// Async is asynchronous invocation (Invoke with InvocationType Event,
	// retries, destinations).
	Async *async.Service
	// SNS is topics and subscriptions (fan-out to queues, functions and
	// HTTP endpoints).
	SNS *sns.Service
	// Targets delivers to the targets of rules and schedules (retries,
	// dead letters); Events is EventBridge.
	Targets   *target.Service
	Events    *eventbus.Service
	Schedules *scheduler.Service
	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Open starts (or connects to) the engine and opens every service. Stored
// mappings whose functions are registered in this process resume from
// their checkpoints. When a step fails, Open closes what it opened, in the
// reverse order, and returns the error.
func Open(ctx context.Context, cfg Config) (*Runnel, error) {
	eng, err := engine.Open(ctx, cfg.Engine)
	if err != nil {
		return nil, err
	}
	rn := &Runnel{Engine: eng, done: make(chan struct{})}
	fail := func(err error) (*Runnel, error) {
		rn.closeServices()
		eng.Close()
		return nil, err
	}
	if rn.Streams, err = stream.New(ctx, eng); err != nil {
		return fail(err)
	}
	if rn.Queues, err = queue.New(ctx, eng); err != nil {
		return fail(err)
	}
	if !cfg.Mappings.Passive {
		// This process serves the queues (a passive one, a CLI command,
		// forwards its calls to the process that does).
		if err := rn.Queues.Serve(ctx); err != nil {
			return fail(err)
		}
	}
	if rn.Tables, err = table.New(ctx, eng, cfg.Tables); err != nil {
		return fail(err)
	}
	if !cfg.Mappings.Passive {
		// The same for the tables: this process serves them (loads their
		// indexes) if no other does.
		if err := rn.Tables.Serve(ctx); err != nil {
			return fail(err)
		}
	}
	if rn.Functions, err = function.NewService(ctx, eng, cfg.Registry); err != nil {
		return fail(err)
	}
	if rn.Async, err = async.New(ctx, eng, rn.Functions, rn.Queues, rn.Streams, async.Options{Passive: cfg.Mappings.Passive}); err != nil {
		return fail(err)
	}
	snsOpts := cfg.SNS
	snsOpts.Passive = snsOpts.Passive || cfg.Mappings.Passive
	if rn.SNS, err = sns.New(ctx, eng, rn.Queues, rn.Async, snsOpts); err != nil {
		return fail(err)
	}
	topts := cfg.Targets
	topts.Passive = topts.Passive || cfg.Mappings.Passive
	if rn.Targets, err = target.New(ctx, eng, rn.Queues, rn.Streams, rn.Async, topts); err != nil {
		return fail(err)
	}
	if rn.Events, err = eventbus.New(ctx, eng, rn.Targets, eventbus.Options{Passive: cfg.Mappings.Passive}); err != nil {
		return fail(err)
	}
	if rn.Schedules, err = scheduler.New(ctx, eng, rn.Targets, scheduler.Options{Passive: cfg.Mappings.Passive}); err != nil {
		return fail(err)
	}
	rn.Async.SetFanout(asyncFanout(rn.SNS, rn.Events))
	if rn.Mappings, err = mapping.NewService(ctx, eng, rn.Streams, rn.Queues, rn.Tables, rn.Functions, cfg.Mappings); err != nil {
		return fail(err)
	}
	bg, cancel := context.WithCancel(context.Background())
	rn.cancel = cancel
	interval := cfg.RetentionInterval
	if interval == 0 {
		interval = time.Minute
	}
	go func() {
		defer close(rn.done)
		if interval > 0 {
			rn.Streams.RunRetention(bg, interval)
		}
	}()
	return rn, nil
}

// closeServices closes the services that are open, in the reverse order
// of Open: the mappings (storing their checkpoints), the SNS delivery
// workers, the asynchronous invocation pollers, the tables, the queues.
// Streams and functions hold nothing to close.
func (rn *Runnel) closeServices() {
	closeOpen(rn.Mappings)
	closeOpen(rn.SNS)
	closeOpen(rn.Schedules)
	closeOpen(rn.Events)
	closeOpen(rn.Targets)
	closeOpen(rn.Async)
	closeOpen(rn.Tables)
	closeOpen(rn.Functions)
	closeOpen(rn.Queues)
}

// closeOpen closes s unless it is nil (a service Open did not get to).
func closeOpen[T any, S interface {
	*T
	Close()
}](s S) {
	if s != nil {
		s.Close()
	}
}

// Close stops everything Open started, in the reverse order: the
// retention trimmer, the mappings (storing their checkpoints), the
// asynchronous invocation pollers, the tables, the queues, and the engine.
// Close and Crash may be called more than once; only the first call acts.
func (rn *Runnel) Close() error {
	rn.closeOnce.Do(func() {
		rn.cancel()
		<-rn.done
		rn.closeServices()
		rn.closeErr = rn.Engine.Close()
	})
	return rn.closeErr
}

// Crash stops everything at once, without final checkpoints, as a killed
// process would: the engine first, then every service Close stops. For
// tests of recovery.
func (rn *Runnel) Crash() {
	rn.closeOnce.Do(func() {
		rn.cancel()
		rn.Engine.Crash()
		rn.closeServices()
		<-rn.done
	})
}

// asyncFanout gives asynchronous invocation its SNS topic and event bus
// destinations (SNS is built after async: its Lambda subscriptions invoke
// through it).
func asyncFanout(topics *sns.Service, buses *eventbus.Service) async.Fanout {
	return async.Fanout{
		Publish: func(ctx context.Context, topicARN, message string) error {
			_, err := topics.Publish(ctx, sns.PublishInput{TopicArn: topicARN, Message: message})
			return err
		},
		TopicFIFO: func(_ context.Context, topicARN string) (bool, error) {
			attrs, err := topics.GetTopicAttributes(topicARN)
			return attrs[sns.AttrFifoTopic] == "true", err
		},
		PutEvent: func(ctx context.Context, busARN, source, detailType, detail string, resources []string) error {
			out, err := buses.PutEvents(ctx, []eventbus.PutEventsRequestEntry{{Source: source, DetailType: detailType,
				Detail: detail, Resources: resources, EventBusName: busARN}})
			if err != nil {
				return err
			}
			if out.FailedEntryCount > 0 {
				return fmt.Errorf("PutEvents to %s: %s: %s", busARN, out.Entries[0].ErrorCode, out.Entries[0].ErrorMessage)
			}
			return nil
		},
		BusExists: func(_ context.Context, busARN string) error {
			_, err := buses.DescribeEventBus(busARN)
			return err
		},
	}
}
