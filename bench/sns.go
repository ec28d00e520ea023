package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/sns"
)

// RunnelSNSFanout is the SNS scenario: messages published to a topic and
// delivered to three queue subscriptions (issue 16's target: 30,000
// published messages/s, against JetStreamPublish in the same run).
const RunnelSNSFanout = "runnel-sns-fanout-3-queues"

// RunnelSNSFanoutRaw is the same with RawMessageDelivery on each
// subscription: the message without SNS's envelope, so without its
// RSA signature (about 1 ms of CPU per published message).
const RunnelSNSFanoutRaw = "runnel-sns-fanout-3-queues-raw"

// snsSubscribers is how many queues the scenario's topic fans out to.
const snsSubscribers = 3

// snsPublishers is how many PublishBatch calls run at once: each call
// waits for its durable writes, so the rate is bounded by concurrency
// times batch size over write latency.
const snsPublishers = 16

// runRunnelSNSFanout publishes n messages to a standard topic with
// snsPublishers publishers in PublishBatch calls of 10, and stops the clock
// when each of the three subscribed queues holds all n (the topic's
// Delivered counter reaches 3n).
func runRunnelSNSFanout(ctx context.Context, e *env, n int, t timer) (string, error) {
	return snsFanout(ctx, e, n, t, false)
}

// runRunnelSNSFanoutRaw is runRunnelSNSFanout with raw delivery.
func runRunnelSNSFanoutRaw(ctx context.Context, e *env, n int, t timer) (string, error) {
	return snsFanout(ctx, e, n, t, true)
}

func snsFanout(ctx context.Context, e *env, n int, t timer, raw bool) (string, error) {
	svc := e.rn.SNS
	name := "bench-" + nuid.Next()
	topic, err := svc.CreateTopic(ctx, name, nil, nil)
	if err != nil {
		return "", err
	}
	for i := range snsSubscribers {
		q := name + "-" + strconv.Itoa(i)
		if _, err := e.rn.Queues.CreateQueue(ctx, q, nil); err != nil {
			return "", err
		}
		in := sns.SubscribeInput{TopicArn: topic, Protocol: sns.ProtocolSQS, Endpoint: e.rn.Queues.ARN(q)}
		if raw {
			in.Attributes = map[string]string{sns.AttrRawMessageDelivery: "true"}
		}
		if _, err := svc.Subscribe(ctx, in); err != nil {
			return "", err
		}
	}
	body := string(e.payload)
	t.Start()
	err = inParallel(n, sns.MaxBatchEntries, func(lo, hi int) error {
		var entries []sns.PublishBatchEntry
		for j := lo; j < hi; j++ {
			entries = append(entries, sns.PublishBatchEntry{Id: strconv.Itoa(j - lo), PublishInput: sns.PublishInput{Message: body}})
		}
		out, err := svc.PublishBatch(ctx, topic, entries)
		if err == nil && len(out.Failed) > 0 {
			err = fmt.Errorf("publish: %d failed: %+v", len(out.Failed), out.Failed[0])
		}
		return err
	})
	if err == nil {
		err = waitUntil(ctx, func() (bool, error) {
			st := svc.Stats(name)
			if st.Failed > 0 {
				return false, fmt.Errorf("sns: %d deliveries failed", st.Failed)
			}
			return st.Delivered >= int64(snsSubscribers*n), nil
		})
	}
	if err != nil {
		return "", err
	}
	t.Stop()
	kind := "signed envelopes"
	if raw {
		kind = "RawMessageDelivery"
	}
	return fmt.Sprintf("standard topic, %d queue subscriptions (%s); %d publishers PublishBatch(10); until every queue holds all messages", snsSubscribers, kind, snsPublishers), nil
}

// inParallel splits [0, n) among snsPublishers goroutines, each calling
// call on its consecutive ranges [lo, hi) of at most batch, and returns
// the first error.
func inParallel(n, batch int, call func(lo, hi int) error) error {
	return splitRun(n, snsPublishers, batch, call)
}

// splitRun splits [0, n) evenly among workers goroutines, each calling
// call on its consecutive ranges [lo, hi) of at most batch, and runs each
// of also in a goroutine of its own, at the same time. It returns the
// first error once all have ended (a failed goroutine stops; the others
// run on to their end, as a benchmark's failure is fatal anyway).
func splitRun(n, workers, batch int, call func(lo, hi int) error, also ...func() error) error {
	errs := make(chan error, workers+len(also))
	var wg sync.WaitGroup
	per := (n + workers - 1) / workers
	for w := range workers {
		wg.Go(func() {
			for i := w * per; i < min(n, (w+1)*per); i += batch {
				if err := call(i, min(i+batch, (w+1)*per, n)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for _, f := range also {
		wg.Go(func() {
			if err := f(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// waitUntil polls done every 2 ms until it reports true or an error.
func waitUntil(ctx context.Context, done func() (bool, error)) error {
	for {
		ok, err := done()
		if ok || err != nil {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(2 * time.Millisecond)
	}
}
