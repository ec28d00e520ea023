package queue

// GetQueueAttributes and SetQueueAttributes; the attributes' rules are in
// attributes.go.

import (
	"context"
	"maps"
	"strconv"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// GetQueueAttributes returns the attributes names asks for ("All" for all)
// (API_GetQueueAttributes): the settable ones (their value or default;
// policies only when set; FIFO ones only on FIFO queues) and QueueArn,
// CreatedTimestamp, LastModifiedTimestamp (Unix seconds),
// ApproximateNumberOfMessages (visible), ApproximateNumberOfMessagesNotVisible
// (in flight) and ApproximateNumberOfMessagesDelayed, counted by the
// engine clock. An unknown name is awserr.ErrInvalidAttributeName.
func (s *Service) GetQueueAttributes(ctx context.Context, queueURL string, names []string) (map[string]string, error) {
	var attrs map[string]string
	if remote, err := s.forward(ctx, "GetQueueAttributes", lease.Pair(queueURL, names), &attrs); remote {
		return attrs, err
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, n := range names {
		if n == AttrAll {
			continue
		}
		if _, ok := attrSpecs[n]; !ok && !contains(readOnlyAttrs, n) {
			return nil, awserr.New(awserr.ErrInvalidAttributeName, "Unknown Attribute %s.", n)
		}
		want[n] = true
	}
	all := contains(names, AttrAll)
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return nil, q.goneErr(queueURL)
	}
	q.advance(s.eng.Clock.Now().UnixMilli())
	futs, _ := q.flush()
	all2 := map[string]string{
		AttrApproximateNumberOfMessages:           strconv.Itoa(q.nVisible),
		AttrApproximateNumberOfMessagesNotVisible: strconv.Itoa(q.nInflight),
		AttrApproximateNumberOfMessagesDelayed:    strconv.Itoa(q.nDelayed),
		AttrCreatedTimestamp:                      strconv.FormatInt(q.meta.Created, 10),
		AttrLastModifiedTimestamp:                 strconv.FormatInt(q.meta.LastModified, 10),
		AttrQueueArn:                              q.arn,
	}
	for n, spec := range attrSpecs {
		if spec.fifoOnly && !q.meta.FIFO {
			continue
		}
		if v := attr(q.meta.Attributes, n); v != "" {
			all2[n] = v
		}
	}
	if q.meta.FIFO {
		all2[AttrFifoQueue] = "true"
	}
	q.mu.Unlock()
	q.cleanup(futs)
	out := map[string]string{}
	for n, v := range all2 {
		if all || want[n] {
			out[n] = v
		}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// SetQueueAttributes changes attributes of a queue (API_SetQueueAttributes).
// Settable: DelaySeconds (0..900, default 0), MaximumMessageSize
// (1024..1048576, default 262144), MessageRetentionPeriod (60..1209600 s,
// default 345600), ReceiveMessageWaitTimeSeconds (0..20, default 0),
// VisibilityTimeout (0..43200, default 30), Policy, RedrivePolicy
// (`{"deadLetterTargetArn":...,"maxReceiveCount":1..1000}`; the
// dead-letter queue must exist and be of the same type), RedriveAllowPolicy,
// KmsMasterKeyId, KmsDataKeyReusePeriodSeconds, SqsManagedSseEnabled and,
// on FIFO queues, ContentBasedDeduplication, DeduplicationScope
// (messageGroup|queue) and FifoThroughputLimit (perQueue|perMessageGroupId).
// An empty policy removes it. FifoQueue can't be changed. New values apply
// to messages already in the queue (retention, visibility of later
// receives); a new DeduplicationScope to the deduplication ids of the
// last 5 minutes (a resend in the same group with the same id is still a
// duplicate).
func (s *Service) SetQueueAttributes(ctx context.Context, queueURL string, attributes map[string]string) error {
	if remote, err := s.forward(ctx, "SetQueueAttributes", lease.Pair(queueURL, attributes), nil); remote {
		return err
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return err
	}
	q.mu.Lock()
	fifo, name := q.meta.FIFO, q.name
	q.mu.Unlock()
	attrs, err := validateAttributes(attributes, fifo, false)
	if err != nil {
		return err
	}
	if err := s.checkRedrive(ctx, name, fifo, attrs[AttrRedrivePolicy]); err != nil {
		return err
	}
	return s.updateMeta(ctx, queueURL, func(m *queueMeta) error {
		next := maps.Clone(m.Attributes)
		for k, v := range attrs {
			if v == "" {
				delete(next, k)
			} else {
				next[k] = v
			}
		}
		if err := checkThroughputScope(next); fifo && err != nil {
			return err
		}
		m.Attributes = next
		m.LastModified = s.eng.Clock.Now().Unix()
		return nil
	}, func(q *queue) {
		if _, ok := attrs[AttrDelaySeconds]; ok && fifo {
			q.redelay(s.eng.Clock.Now().UnixMilli())
		}
		if _, ok := attrs[AttrDeduplicationScope]; ok && fifo {
			q.rekeyDedup() // the ids of the last 5 minutes, keyed by the new scope
		}
	})
}
