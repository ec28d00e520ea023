package target

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// Deliver makes the first attempt of the SQS queue deliveries of ds at
// once, one SendMessageBatch per queue (10 messages at most each), and
// stores the others with Enqueue: a delivery to another kind of target,
// and a failed first attempt (stored again with its first backoff, or
// dead-lettered as the poller would). It returns once every delivery is
// in its queue, in the internal queue, or dead-lettered; on an error
// some may be: the caller reports the event failed, and a retry of it
// may duplicate them (at least once). A Passive service only enqueues.
func (s *Service) Deliver(ctx context.Context, ds []Delivery) error {
	if s.passive {
		return s.Enqueue(ctx, ds)
	}
	now := s.eng.Clock.Now().UnixMilli()
	byQueue := map[string][]int{}
	var rest []Delivery
	for i := range ds {
		if ds[i].Accepted == 0 {
			ds[i].Accepted = now
		}
		if strings.HasPrefix(ds[i].TargetArn, "arn:aws:sqs:") {
			byQueue[ds[i].TargetArn] = append(byQueue[ds[i].TargetArn], i)
		} else {
			rest = append(rest, ds[i])
		}
	}
	errs := make([]error, len(ds))
	var wg sync.WaitGroup
	for arn, idx := range byQueue {
		wg.Go(func() { s.sendQueue(ctx, arn, ds, idx, errs) })
	}
	wg.Wait()
	s.enqueued.Add(int64(len(ds) - len(rest)))
	var firstErr error
	for arn, idx := range byQueue {
		for _, i := range idx {
			d := &ds[i]
			if errs[i] == nil {
				s.delivered.Add(1)
				s.count(d, false)
				continue
			}
			code, emsg, retry := classify(ctx, errs[i])
			retries, _ := d.Retry.Resolved()
			if err := s.failed(ctx, nil, *d, code, emsg, retry, retries); err != nil && firstErr == nil {
				firstErr = awserr.New(awserr.ErrInternalFailure, "storing a failed delivery to %s: %v", arn, err)
			}
		}
	}
	if len(rest) > 0 {
		if err := s.Enqueue(ctx, rest); err != nil {
			return err
		}
	}
	return firstErr
}

// sendQueue sends the deliveries ds[idx] to one queue and sets errs[i]
// for each that was not stored.
func (s *Service) sendQueue(ctx context.Context, arn string, ds []Delivery, idx []int, errs []error) {
	fifo := strings.HasSuffix(arn, ".fifo")
	for lo := 0; lo < len(idx); lo += queue.MaxBatchEntries {
		part := idx[lo:min(len(idx), lo+queue.MaxBatchEntries)]
		entries := make([]queue.SendMessageBatchRequestEntry, len(part))
		size := 0
		for k, i := range part {
			d := &ds[i]
			entries[k] = queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(k), SendMessageInput: queue.SendMessageInput{MessageBody: d.Payload, MessageGroupId: d.MessageGroupId}}
			if fifo {
				entries[k].MessageDeduplicationId = d.ID
			}
			size += len(d.Payload)
		}
		if size > queue.MaxBatchSize { // one at a time: each fails or succeeds alone
			for _, i := range part {
				d := &ds[i]
				in := queue.SendMessageInput{MessageBody: d.Payload, MessageGroupId: d.MessageGroupId}
				if fifo {
					in.MessageDeduplicationId = d.ID
				}
				_, errs[i] = s.queues.SendMessage(ctx, arn, in)
			}
			continue
		}
		out, err := s.queues.SendMessageBatch(ctx, arn, entries)
		if err != nil {
			for _, i := range part {
				errs[i] = err
			}
			continue
		}
		for _, f := range out.Failed {
			k, _ := strconv.Atoi(f.Id)
			errs[part[k]] = &awserr.Error{Code: f.Code, Message: f.Message}
		}
	}
}
