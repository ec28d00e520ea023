// Package sns implements Amazon SNS topics on runnel's engine: standard
// and FIFO topics, subscriptions for sqs, lambda, http/https (with the
// confirmation handshake) and application endpoints (recorded, not
// delivered), filter policies, raw delivery, per-subscription redrive to
// a dead-letter queue, Publish and PublishBatch with the SNS envelope.
// See https://docs.aws.amazon.com/sns/latest/dg/welcome.html; "API_X" in a
// doc comment is the page https://docs.aws.amazon.com/sns/latest/api/API_X.html.
//
// # Durability: persist, then deliver
//
// Publish returns a MessageId only once the message is stored in the
// topic's internal queue ("_sns-<topic id>", a runnel queue; FIFO for a
// FIFO topic), so a message accepted is never lost across a crash. A
// worker per topic receives from that queue and fans the message out to
// every confirmed subscription whose filter policy matches; it deletes
// the message only once each delivery succeeded, was handed to a retry
// (a new message of the internal queue naming the subscription, sent
// before the delete) or went to the subscription's dead-letter queue.
// A crash in between delivers again (at-least-once), never loses.
//
// # Retries (https://docs.aws.amazon.com/sns/latest/dg/sns-message-delivery-retries.html)
//
// sqs and lambda endpoints: 3 immediate retries, 2 after 1 s, 10 with
// exponential backoff from 1 s to 20 s, then 100,000 after 20 s (23 days),
// as AWS. http/https: the delivery policy (subscription, else topic,
// else AWS's default: 3 retries 20 s apart). A client-side error (the
// queue or function no longer exists) is not retried. When the retries
// are spent, or at once for a client-side error, the message goes to
// the subscription's RedrivePolicy dead-letter queue as it would have
// been delivered (envelope or raw body and attributes; AWS adds no error
// attributes). Without a dead-letter queue, AWS discards it; runnel logs
// it at WARN with its MessageId and subscription and counts it
// (Stats.Failed), so nothing is lost silently.
//
// FIFO topics deliver only to SQS queues, in the order of each message
// group: the internal FIFO queue holds a group's next message back until
// the previous one is done (its retries happen in place, through the
// visibility timeout). Deduplication is the internal FIFO queue's (5
// minutes, by MessageDeduplicationId or the SHA-256 of the body), and the
// group and deduplication ids are forwarded to FIFO subscribers.
//
// # Storage
//
// Topics in KV bucket "runnel_sns_topics" (key = topic name),
// subscriptions in "runnel_sns_subscriptions" (key = subscription id),
// the envelopes' signing key and certificate in "runnel_sns_signing".
// Every process opening the engine watches both (watch.go), so all see
// the same topics and subscriptions and each runs delivery workers.
package sns

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/closing"
	"github.com/runnel-dev/runnel/queue"
)

// The KV buckets of the service.
const (
	topicBucket = "runnel_sns_topics"
	subBucket   = "runnel_sns_subscriptions"
)

// QueuePrefix begins the name of every topic's internal queue.
const QueuePrefix = "_sns-"

// Options are the service's runtime knobs.
type Options struct {
	// BaseURL is the address written in SubscribeURL, UnsubscribeURL and
	// SigningCertURL: the runnel endpoint as subscribers reach it.
	// Default "http://sns.<region>.localhost:4566".
	BaseURL string
	// Passive stores published messages but runs no delivery worker
	// (another process delivers them).
	Passive bool
}

// Service is the SNS API over one engine. It is safe for concurrent use.
type Service struct {
	eng              *engine.Engine
	queues           *queue.Service
	async            *async.Service
	topicsKV, subsKV jetstream.KeyValue
	log              *slog.Logger
	opts             Options

	bg     context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	throttles sync.Map // subscription id -> *throttle

	signMu sync.Mutex
	sg     *signer // the signing key, once loaded (signing.go)

	mu     sync.Mutex
	topics map[string]*topic        // by name
	subs   map[string]*subscription // by id
	// revs: by bucket key ("t." topic name, "s." subscription id), the
	// newest revision this process wrote or applied: the watch skips
	// older entries, so an entry of its own earlier write, seen after a
	// later one, does not bring back the older state (a subscription
	// attribute set twice read back with its first value for a moment).
	revs   map[string]uint64
	closed bool
}

// Stats counts what a topic's deliveries came to.
type Stats struct {
	// Published is the number of messages Publish and PublishBatch stored
	// (NumberOfMessagesPublished).
	Published int64
	// Delivered counts successful deliveries (NumberOfNotificationsDelivered).
	Delivered int64
	// Failed counts deliveries that ended without success
	// (NumberOfNotificationsFailed): sent to a dead-letter queue or, when
	// the subscription has none, logged and dropped.
	Failed int64
	// DeadLettered counts the failed deliveries stored in a dead-letter
	// queue (NumberOfNotificationsRedrivenToDlq).
	DeadLettered int64
	// DeadLetterFailed counts the failed deliveries whose dead-letter
	// queue refused them (NumberOfNotificationsFailedToRedriveToDlq),
	// each logged at ERROR with its MessageId.
	DeadLetterFailed int64
	// FilteredOut counts deliveries a filter policy skipped
	// (NumberOfNotificationsFilteredOut).
	FilteredOut int64
}

type counters struct {
	published, delivered, failed, deadLettered, deadLetterFailed, filteredOut atomic.Int64
}

// New opens the SNS service: it loads the stored topics and
// subscriptions and starts a delivery worker per topic (unless Passive),
// so messages stored before a crash are delivered.
func New(ctx context.Context, eng *engine.Engine, queues *queue.Service, as *async.Service, opts Options) (*Service, error) {
	if opts.BaseURL == "" {
		opts.BaseURL = fmt.Sprintf("http://sns.%s.localhost:4566", eng.Region())
	}
	opts.BaseURL = strings.TrimSuffix(opts.BaseURL, "/")
	var tkv, skv jetstream.KeyValue
	if err := eng.Buckets(ctx, map[string]*jetstream.KeyValue{topicBucket: &tkv, subBucket: &skv}); err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Service{eng: eng, queues: queues, async: as, topicsKV: tkv, subsKV: skv,
		log: eng.Logger.With("service", "sns"), opts: opts, bg: bg, cancel: cancel,
		topics: map[string]*topic{}, subs: map[string]*subscription{}, revs: map[string]uint64{}}
	if err := s.load(ctx); err != nil {
		cancel()
		return nil, err
	}
	for _, w := range []struct {
		kv    jetstream.KeyValue
		apply func(string, []byte, uint64)
	}{{tkv, s.applyTopic}, {skv, s.applySubscription}} {
		if err := s.watch(bg, w.kv, w.apply); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

// load reads the stored topics and subscriptions and starts the workers.
func (s *Service) load(ctx context.Context) error {
	err := engine.LoadJSON(ctx, s.topicsKV, func(key string, m topicMeta, err error) {
		if err != nil {
			s.log.Error("sns: a stored topic does not decode; skipped", "key", key, "err", err)
			return
		}
		s.topics[m.Name] = newTopic(m)
	})
	if err != nil {
		return err
	}
	err = engine.LoadJSON(ctx, s.subsKV, func(key string, m subMeta, err error) {
		if err == nil {
			var sub *subscription
			if sub, err = newSubscription(m); err == nil {
				s.subs[m.ID] = sub
				return
			}
		}
		s.log.Error("sns: a stored subscription does not load; skipped", "key", key, "err", err)
	})
	if err != nil {
		return err
	}
	for _, t := range s.topics {
		s.startWorker(t)
	}
	return nil
}

// Close stops the delivery workers; messages not yet delivered stay in
// the internal queues and are delivered after the next New.
func (s *Service) Close() { closing.Close(&s.mu, &s.closed, s.cancel, &s.wg) }

// Stats returns the counters of a topic (zero for an unknown one).
func (s *Service) Stats(topicName string) Stats {
	s.mu.Lock()
	t := s.topics[topicName]
	s.mu.Unlock()
	if t == nil {
		return Stats{}
	}
	c := t.c
	return Stats{Published: c.published.Load(), Delivered: c.delivered.Load(), Failed: c.failed.Load(),
		DeadLettered: c.deadLettered.Load(), DeadLetterFailed: c.deadLetterFailed.Load(), FilteredOut: c.filteredOut.Load()}
}

// TopicARN returns arn:aws:sns:<region>:<account>:<name>.
func (s *Service) TopicARN(name string) string {
	return fmt.Sprintf("arn:aws:sns:%s:%s:%s", s.eng.Region(), s.eng.AccountID(), name)
}

// invalid is SNS's InvalidParameter: "Invalid parameter: <msg>".
func invalid(format string, args ...any) error {
	return awserr.New(awserr.ErrSNSInvalidParameter, "Invalid parameter: "+format, args...)
}

// notFound is SNS's NotFound with AWS's message.
func notFound(what string) error {
	return awserr.New(awserr.ErrSNSNotFound, "%s does not exist", what)
}

// topicName returns the name in a topic ARN of this region and account.
func (s *Service) topicName(arn string) (string, error) {
	prefix := s.TopicARN("")
	name, ok := strings.CutPrefix(arn, prefix)
	if !ok || name == "" || strings.Contains(name, ":") {
		if arn == "" {
			return "", invalid("TopicArn")
		}
		return "", invalid("TopicArn Reason: An ARN must have the form arn:aws:sns:%s:%s:<name>, got %q", s.eng.Region(), s.eng.AccountID(), arn)
	}
	return name, nil
}

// topicByARN returns the loaded topic of arn, or NotFound.
func (s *Service) topicByARN(arn string) (*topic, error) {
	name, err := s.topicName(arn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	t := s.topics[name]
	s.mu.Unlock()
	if t == nil {
		return nil, notFound("Topic")
	}
	return t, nil
}

// TopicNames returns the names of every topic, in order.
func (s *Service) TopicNames() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return sortedKeys(s.topics)
}

// DeadLetterQueues returns the queues named by subscriptions'
// RedrivePolicy, each with the subscriptions (ARNs) that name it: for
// the operator's view of dead-letter queues and their alarms.
func (s *Service) DeadLetterQueues() map[string][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for _, sub := range s.subs {
		if sub.dlq != "" {
			out[sub.dlq] = append(out[sub.dlq], sub.arn(s))
		}
	}
	return out
}
