package queue

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/clocks"
	"github.com/runnel-dev/runnel/lease"
)

// Statuses of a message move task (API_ListMessageMoveTasksResultEntry).
const (
	MoveTaskRunning    = "RUNNING"
	MoveTaskCompleted  = "COMPLETED"
	MoveTaskCancelling = "CANCELLING"
	MoveTaskCancelled  = "CANCELLED"
	MoveTaskFailed     = "FAILED"
)

// MessageMoveTask describes a message move task
// (API_ListMessageMoveTasksResultEntry).
type MessageMoveTask struct {
	// TaskHandle is set while the task runs; CancelMessageMoveTask takes it.
	TaskHandle string
	// Status is one of the MoveTask* constants.
	Status string
	// SourceArn is the dead-letter queue the messages leave.
	SourceArn string
	// DestinationArn is where they go; empty means each message's original
	// source queue (its DeadLetterQueueSourceArn).
	DestinationArn string
	// MaxNumberOfMessagesPerSecond is the rate limit, 1..500.
	MaxNumberOfMessagesPerSecond int
	// ApproximateNumberOfMessagesMoved so far.
	ApproximateNumberOfMessagesMoved int64
	// ApproximateNumberOfMessagesToMove is how many messages the source
	// held when the task started; messages sent later are not moved.
	ApproximateNumberOfMessagesToMove int64
	// FailureReason says why a FAILED task stopped.
	FailureReason string
	// StartedTimestamp is when the task started, Unix milliseconds.
	StartedTimestamp int64
}

type moveTask struct {
	mu     sync.Mutex
	info   MessageMoveTask
	handle string
	limit  uint64 // messages from record limit on were sent after the start
	srcID  string // the source queue's id
	lost   bool   // stopped because this process no longer serves the queues
	cancel chan struct{}
	done   chan struct{}
}

func (t *moveTask) snapshot() MessageMoveTask {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.info
}

// maxTasksListed is how many tasks ListMessageMoveTasks keeps per source.
const maxTasksListed = 10

// StartMessageMoveTask starts moving the messages of a dead-letter queue
// (sourceArn) to destinationArn, or, when destinationArn is empty, each
// back to the queue it was dead-lettered from (API_StartMessageMoveTask).
// Only messages in the source at the start are moved, visible ones, in
// send order, at most maxPerSecond per second by the engine clock (1..500;
// 0 means 500). A moved message keeps its body, attributes, group and
// deduplication ids and starts afresh in the destination as a new message:
// a new MessageId, receive count 0, SentTimestamp now (retention from
// now). The task runs in the background; ListMessageMoveTasks reports it.
// Its state is stored (movetask_store.go): a task running when its
// process stops, or loses the queues to another, goes on in the next
// process that serves them, with the same TaskHandle; what it moved
// stays moved.
//
// Errors: awserr.ErrResourceNotFound for a source or destination that does
// not exist; awserr.ErrUnsupportedOperation when the source is no queue's
// dead-letter queue or already has a running task;
// awserr.ErrSQSInvalidParameterValue for a rate outside 1..500, a destination equal
// to the source or of the other queue type.
func (s *Service) StartMessageMoveTask(ctx context.Context, sourceArn, destinationArn string, maxPerSecond int) (string, error) {
	var handle string
	if remote, err := s.forward(ctx, "StartMessageMoveTask", lease.Triple(sourceArn, destinationArn, maxPerSecond), &handle); remote {
		return handle, err
	}
	if err := s.waitTasksLoaded(ctx); err != nil {
		return "", err
	}
	srcName, ok := NameFromARN(sourceArn)
	if !ok {
		return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter SourceArn is invalid. Reason: not an SQS queue ARN.", sourceArn)
	}
	if maxPerSecond == 0 {
		maxPerSecond = MaxMoveTaskRate
	}
	if maxPerSecond < 1 || maxPerSecond > MaxMoveTaskRate {
		return "", awserr.OutOfRange(awserr.ErrSQSInvalidParameterValue, "MaxNumberOfMessagesPerSecond", maxPerSecond, 1, MaxMoveTaskRate)
	}
	src, err := s.queue(ctx, sourceArn)
	if err != nil {
		if errors.Is(err, awserr.ErrQueueDoesNotExist) {
			return "", awserr.New(awserr.ErrResourceNotFound, "The resource that you specified for the SourceArn parameter doesn't exist: %s.", sourceArn)
		}
		return "", err
	}
	isDLQ, err := s.isDeadLetterQueue(ctx, srcName)
	if err != nil {
		return "", err
	}
	if !isDLQ {
		return "", awserr.New(awserr.ErrUnsupportedOperation, "Source queue %s must be configured as a dead-letter queue of another queue.", srcName)
	}
	if destinationArn != "" {
		dstName, ok := NameFromARN(destinationArn)
		if !ok {
			return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter DestinationArn is invalid. Reason: not an SQS queue ARN.", destinationArn)
		}
		if dstName == srcName {
			return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter DestinationArn is invalid. Reason: the destination is the source.", destinationArn)
		}
		dst, err := s.queue(ctx, destinationArn)
		if err != nil {
			if errors.Is(err, awserr.ErrQueueDoesNotExist) {
				return "", awserr.New(awserr.ErrResourceNotFound, "The resource that you specified for the DestinationArn parameter doesn't exist: %s.", destinationArn)
			}
			return "", err
		}
		if dst.fifo != src.fifo {
			return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter DestinationArn is invalid. Reason: the destination must be a %s queue like the source.", destinationArn, kind(src.fifo))
		}
	}
	src.mu.Lock()
	src.advance(s.eng.Clock.Now().UnixMilli())
	toMove := int64(src.nVisible + src.nInflight + src.nDelayed)
	limit := src.nextN
	src.mu.Unlock()
	hb, _ := json.Marshal(map[string]string{"taskId": nuid.Next(), "sourceArn": sourceArn})
	t := &moveTask{
		handle: base64.StdEncoding.EncodeToString(hb), limit: limit, srcID: src.id,
		cancel: make(chan struct{}), done: make(chan struct{}),
	}
	t.info = MessageMoveTask{
		TaskHandle: t.handle, Status: MoveTaskRunning, SourceArn: sourceArn, DestinationArn: destinationArn,
		MaxNumberOfMessagesPerSecond: maxPerSecond, ApproximateNumberOfMessagesToMove: toMove,
		StartedTimestamp: s.eng.Clock.Now().UnixMilli(),
	}
	s.mu.Lock()
	for _, o := range s.bySrc[srcName] {
		if o.snapshot().Status == MoveTaskRunning {
			s.mu.Unlock()
			return "", awserr.New(awserr.ErrUnsupportedOperation, "A message move task is already running on %s; there can be only one per queue.", srcName)
		}
	}
	if s.bg.Err() != nil {
		s.mu.Unlock()
		return "", awserr.New(awserr.ErrInternal, "the queue service is closed")
	}
	list := append([]*moveTask{t}, s.bySrc[srcName]...)
	if len(list) > maxTasksListed {
		for _, old := range list[maxTasksListed:] {
			delete(s.tasks, old.handle)
		}
		list = list[:maxTasksListed]
	}
	s.bySrc[srcName] = list
	s.tasks[t.handle] = t
	s.tasksWG.Add(1)
	s.mu.Unlock()
	if err := s.saveTasks(ctx, srcName); err != nil {
		t.mu.Lock()
		t.info.Status, t.info.FailureReason, t.info.TaskHandle = MoveTaskFailed, "could not store the task: "+err.Error(), ""
		t.mu.Unlock()
		s.tasksWG.Done()
		close(t.done)
		return "", awserr.New(awserr.ErrInternal, "store the message move task of %s: %v", srcName, err)
	}
	go s.runMove(t, src, srcName, destinationArn, maxPerSecond, limit)
	return t.handle, nil
}

// isDeadLetterQueue reports whether some queue's RedrivePolicy names
// queue name.
func (s *Service) isDeadLetterQueue(ctx context.Context, name string) (bool, error) {
	keys, err := s.meta.Keys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return false, nil
		}
		return false, awserr.New(awserr.ErrInternal, "list queues: %v", err)
	}
	for _, k := range keys {
		m, err := s.loadMeta(ctx, k)
		if err != nil {
			continue
		}
		if p := m.Attributes[AttrRedrivePolicy]; p != "" {
			if rp, err := ParseRedrivePolicy(p); err == nil {
				if n, _ := NameFromARN(rp.DeadLetterTargetArn); n == name {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

// ListMessageMoveTasks lists the latest (up to 10) move tasks of a source
// queue, most recent first (API_ListMessageMoveTasks).
func (s *Service) ListMessageMoveTasks(ctx context.Context, sourceArn string) ([]MessageMoveTask, error) {
	var tasks []MessageMoveTask
	if remote, err := s.forward(ctx, "ListMessageMoveTasks", sourceArn, &tasks); remote {
		return tasks, err
	}
	name, ok := NameFromARN(sourceArn)
	if !ok {
		return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter SourceArn is invalid. Reason: not an SQS queue ARN.", sourceArn)
	}
	if _, err := s.loadMeta(ctx, name); err != nil {
		return nil, awserr.New(awserr.ErrResourceNotFound, "The resource that you specified for the SourceArn parameter doesn't exist: %s.", sourceArn)
	}
	if err := s.waitTasksLoaded(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	list := s.bySrc[name]
	s.mu.Unlock()
	out := make([]MessageMoveTask, 0, len(list))
	for _, t := range list {
		out = append(out, t.snapshot())
	}
	return out, nil
}

// CancelMessageMoveTask stops a running task and returns how many
// messages it had moved (API_CancelMessageMoveTask). Moved messages stay
// moved. An unknown handle, or a task no longer running, is
// awserr.ErrResourceNotFound.
func (s *Service) CancelMessageMoveTask(ctx context.Context, taskHandle string) (int64, error) {
	var moved int64
	if remote, err := s.forward(ctx, "CancelMessageMoveTask", taskHandle, &moved); remote {
		return moved, err
	}
	if err := s.waitTasksLoaded(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	t := s.tasks[taskHandle]
	s.mu.Unlock()
	if t == nil {
		return 0, awserr.New(awserr.ErrResourceNotFound, "Task does not exist: %s.", taskHandle)
	}
	t.mu.Lock()
	if t.info.Status != MoveTaskRunning || t.lost {
		t.mu.Unlock()
		return 0, awserr.New(awserr.ErrResourceNotFound, "Task %s is not running (%s); only running tasks can be cancelled.", taskHandle, t.info.Status)
	}
	t.info.Status = MoveTaskCancelling
	close(t.cancel)
	t.mu.Unlock()
	// Stored CANCELLING: a crash before the task ends must not resume it.
	if name, ok := NameFromARN(t.info.SourceArn); ok {
		if err := s.saveTasks(ctx, name); err != nil {
			s.log.Warn("queue: cannot store a message move task's cancellation", "queue", name, "err", err)
		}
	}
	select {
	case <-t.done:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	return t.snapshot().ApproximateNumberOfMessagesMoved, nil
}

// runMove is a task's loop: batches of up to 10 messages, at most rate
// per engine-clock second. Each batch's progress and the task's end are
// stored (saveTasks); a task stopped because its process closes or loses
// the queues stores nothing more, so the next holder resumes it.
func (s *Service) runMove(t *moveTask, src *queue, srcName, dest string, rate int, limit uint64) {
	defer s.tasksWG.Done()
	defer close(t.done)
	save := func() {
		if err := s.saveTasks(s.bg, srcName); err != nil && s.bg.Err() == nil {
			s.log.Warn("queue: cannot store a message move task's progress; a resumed task may move again what it moved since", "queue", srcName, "err", err)
		}
	}
	finish := func(status, reason string) {
		t.mu.Lock()
		if t.lost {
			t.mu.Unlock()
			return
		}
		t.info.Status, t.info.FailureReason, t.info.TaskHandle = status, reason, ""
		t.mu.Unlock()
		save()
	}
	clock := s.eng.Clock
	window := clock.Now()
	inWindow := 0
	for {
		select {
		case <-t.cancel:
			finish(MoveTaskCancelled, "")
			return
		case <-s.bg.Done():
			return // stored RUNNING: the next holder resumes it
		default:
		}
		if inWindow >= rate {
			if !src.moreToMove(limit) {
				finish(MoveTaskCompleted, "")
				return
			}
			next := window.Add(time.Second)
			tm := clocks.TimerAt(clock, next)
			select {
			case <-tm.Chan():
			case <-t.cancel:
			case <-s.bg.Done():
			}
			tm.Stop()
			window, inWindow = next, 0
			if now := clock.Now(); now.Sub(window) >= time.Second {
				window = now // the clock jumped: don't burst to catch up
			}
			continue
		}
		msgs, payloads, err := src.takeForMove(min(MaxBatchEntries, rate-inWindow), limit)
		if err != nil {
			finish(MoveTaskFailed, err.Error())
			return
		}
		if len(msgs) == 0 {
			finish(MoveTaskCompleted, "")
			return
		}
		moved, reason := s.moveBatch(src, msgs, payloads, dest)
		t.mu.Lock()
		t.info.ApproximateNumberOfMessagesMoved += int64(moved)
		t.mu.Unlock()
		if reason == "" && moved > 0 {
			save()
		}
		if reason != "" {
			finish(MoveTaskFailed, reason)
			return
		}
		inWindow += len(msgs)
	}
}

// takeForMove sets aside up to n visible messages sent before record
// limit, in send order.
func (q *queue) takeForMove(n int, limit uint64) ([]*message, []*payload, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return nil, nil, q.goneErr(q.name)
	}
	q.advance(q.svc.eng.Clock.Now().UnixMilli())
	var msgs []*message
	var payloads []*payload
	for len(msgs) < n && q.ready.len() > 0 && q.ready.peek().rec.n < limit {
		m := q.ready.pop()
		q.setStatus(m, stMoving)
		if q.fifo {
			q.groups[m.group].inflight++
		}
		msgs = append(msgs, m)
		payloads = append(payloads, m.payload)
	}
	futs, _ := q.flush()
	q.cleanup(futs)
	return msgs, payloads, nil
}

// moreToMove reports whether a visible message sent before record limit
// is left.
func (q *queue) moreToMove(limit uint64) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.advance(q.svc.eng.Clock.Now().UnixMilli())
	return !q.deleted && q.ready.len() > 0 && q.ready.peek().rec.n < limit
}

// moveBatch stores msgs in their destinations and deletes them from src;
// the ones that could not be moved become visible again in src. It
// returns how many moved and, on failure, why.
func (s *Service) moveBatch(src *queue, msgs []*message, payloads []*payload, dest string) (int, string) {
	ctx := s.bg
	now := s.eng.Clock.Now().UnixMilli()
	byDest := map[string][]int{}
	var order []string
	reason := ""
	for i, m := range msgs {
		d := dest
		if d == "" {
			d = m.dlqSource
		}
		if d == "" {
			reason = "message " + m.id + " has no source queue (it was not moved here by a RedrivePolicy); give a DestinationArn"
			continue
		}
		if _, ok := byDest[d]; !ok {
			order = append(order, d)
		}
		byDest[d] = append(byDest[d], i)
	}
	ok := make([]bool, len(msgs))
	for _, d := range order {
		idx := byDest[d]
		dq, err := s.queue(ctx, d)
		if err == nil && dq.fifo != src.fifo {
			err = errors.New("it is a " + kind(dq.fifo) + " queue")
		}
		if err != nil {
			reason = "destination " + d + ": " + err.Error()
			continue
		}
		var copies []*message
		var of []int // copies[j] is of msgs[of[j]]
		for _, i := range idx {
			p := payloads[i]
			if p == nil {
				if p, err = src.fetchPayload(ctx, msgs[i]); err != nil {
					// Never moved without its body: it stays (visible
					// again) and the task reports why.
					reason = "message " + msgs[i].id + ": body unreadable: " + err.Error()
					continue
				}
			}
			// "All redriven messages are considered new messages and are
			// assigned a new messageID and enqueueTime"
			// (sqs-configure-dead-letter-queue-redrive); before, the copy
			// kept the MessageId.
			copies = append(copies, moved(msgs[i], p, uuid.NewString(), msgs[i].dedup, now, now, ""))
			of = append(of, i)
		}
		if len(copies) == 0 {
			continue
		}
		_, errs := dq.store(ctx, copies, now, false)
		for j, i := range of {
			if errs[j] == nil {
				ok[i] = true
			} else {
				reason = "destination " + d + ": " + errs[j].Error()
			}
		}
	}
	src.mu.Lock()
	n := 0
	for i, m := range msgs {
		if m.st != stMoving {
			continue
		}
		if ok[i] {
			src.remove(m)
			n++
		} else {
			src.makeVisible(m)
		}
	}
	futs, ferr := src.flush()
	src.mu.Unlock()
	if err := durable(ctx, futs, ferr); err != nil && reason == "" {
		reason = err.Error()
	}
	return n, reason
}
