package queue

// Queue tags, and the dead-letter sources of a queue.
//
// Tags are metadata: they live with the queue's attributes in the
// "runnel_queues" KV bucket (queueMeta.Tags), so a write goes through the
// process holding the queues (owner.go), which keeps its loaded copy of
// the metadata, and a read (ListQueueTags) reads the bucket. Tags are
// stored and listed, never used for cost allocation or access control.
//
// AWS: https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/API_TagQueue.html
// and https://docs.aws.amazon.com/AWSSimpleQueueService/latest/SQSDeveloperGuide/sqs-queue-tags.html
// (at most 50 tags a queue; keys 1..128 characters, values 0..256; keys
// are case-sensitive; a tag of an existing key replaces it).

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"sort"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// MaxTags is the most tags a queue has.
const MaxTags = 50

// checkTags checks tags' keys (1..128 characters) and values (0..256):
// awserr.ErrSQSInvalidParameterValue.
func checkTags(name string, tags map[string]string) error {
	if len(tags) > MaxTags {
		return tooManyTags(name)
	}
	for k, v := range tags {
		if n := utf8.RuneCountInString(k); n < 1 || n > 128 {
			return awserr.New(awserr.ErrSQSInvalidParameterValue, "Tag keys must be between 1 and 128 characters in length.")
		}
		if utf8.RuneCountInString(v) > 256 {
			return awserr.New(awserr.ErrSQSInvalidParameterValue, "Tag values must be between 0 and 256 characters in length.")
		}
	}
	return nil
}

func tooManyTags(name string) error {
	return awserr.New(awserr.ErrSQSInvalidParameterValue, "Too many tags added for queue %s.", name)
}

// TagQueue adds tags to a queue or replaces the values of its keys
// (API_TagQueue). No tags is awserr.ErrMissingParameter; more than
// MaxTags on the queue afterwards, a key outside 1..128 characters or a
// value over 256 is awserr.ErrSQSInvalidParameterValue.
func (s *Service) TagQueue(ctx context.Context, queueURL string, tags map[string]string) error {
	if remote, err := s.forward(ctx, "TagQueue", lease.Pair(queueURL, tags), nil); remote {
		return err
	}
	if len(tags) == 0 {
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter Tags.")
	}
	name, _ := nameOf(queueURL)
	if err := checkTags(name, tags); err != nil {
		return err
	}
	return s.updateMeta(ctx, queueURL, func(m *queueMeta) error {
		if m.Tags == nil {
			m.Tags = map[string]string{}
		}
		maps.Copy(m.Tags, tags)
		if len(m.Tags) > MaxTags {
			return tooManyTags(m.Name)
		}
		return nil
	})
}

// UntagQueue removes the tags of keys from a queue (API_UntagQueue); a
// key the queue has no tag of is passed over. No keys is
// awserr.ErrMissingParameter.
func (s *Service) UntagQueue(ctx context.Context, queueURL string, keys []string) error {
	if remote, err := s.forward(ctx, "UntagQueue", lease.Pair(queueURL, keys), nil); remote {
		return err
	}
	if len(keys) == 0 {
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter TagKeys.")
	}
	return s.updateMeta(ctx, queueURL, func(m *queueMeta) error {
		for _, k := range keys {
			delete(m.Tags, k)
		}
		return nil
	})
}

// ListQueueTags returns a queue's tags (API_ListQueueTags), read from the
// bucket.
func (s *Service) ListQueueTags(ctx context.Context, queueURL string) (map[string]string, error) {
	m, err := s.loadMeta(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	return m.Tags, nil
}

// ListDeadLetterSourceQueues returns the names of the queues whose
// RedrivePolicy names queueURL's queue as their dead-letter queue, sorted
// (API_ListDeadLetterSourceQueues; the endpoint pages them), read from
// the bucket.
func (s *Service) ListDeadLetterSourceQueues(ctx context.Context, queueURL string) ([]string, error) {
	dlq, err := s.loadMeta(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	keys, err := s.meta.Keys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return nil, nil
	}
	if err != nil {
		return nil, awserr.New(awserr.ErrInternal, "list queues: %v", err)
	}
	var out []string
	for _, k := range keys {
		m, err := s.loadMeta(ctx, k)
		if errors.Is(err, awserr.ErrQueueDoesNotExist) {
			continue // deleted meanwhile
		} else if err != nil {
			return nil, err
		}
		p, err := ParseRedrivePolicy(m.Attributes[AttrRedrivePolicy])
		if err != nil || p == nil {
			continue
		}
		if name, ok := NameFromARN(p.DeadLetterTargetArn); ok && name == dlq.Name {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

// updateMeta changes the metadata of the loaded queue ref names by fn
// (on a copy, under the queue's lock), stores it (and a new retention
// period in the queue's stream), then keeps it as the queue's and runs
// after, still under the lock. The caller has forwarded the call to the
// process holding the queues.
func (s *Service) updateMeta(ctx context.Context, ref string, fn func(m *queueMeta) error, after ...func(q *queue)) error {
	q, err := s.liveQueue(ctx, ref)
	if err != nil {
		return err
	}
	defer q.mu.Unlock()
	meta := q.meta
	meta.Attributes, meta.Tags = maps.Clone(q.meta.Attributes), maps.Clone(q.meta.Tags)
	if meta.Attributes == nil {
		meta.Attributes = map[string]string{}
	}
	if err := fn(&meta); err != nil {
		return err
	}
	if len(meta.Tags) == 0 {
		meta.Tags = nil
	}
	b, _ := json.Marshal(meta)
	if _, err := s.meta.Put(ctx, q.name, b); err != nil {
		return awserr.New(awserr.ErrInternal, "update queue %s: %v", q.name, err)
	}
	if attr(meta.Attributes, AttrMessageRetentionPeriod) != attr(q.meta.Attributes, AttrMessageRetentionPeriod) {
		if _, err := s.eng.UpdateStream(ctx, s.streamConfig(&meta)); err != nil {
			s.log.Warn("queue: update stream retention", "queue", q.name, "err", err)
		}
	}
	q.meta = meta
	q.cfg = parseConfig(meta.Attributes, meta.FIFO)
	for _, f := range after {
		f(q) // under q.mu, with the new config
	}
	return nil
}
