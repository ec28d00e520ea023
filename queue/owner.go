package queue

import (
	"context"
	"errors"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/runnel-dev/runnel/lease"
)

// Which process serves the queues.
//
// A queue's index lives in one process's memory, so exactly one process
// may hold it: two indexes of one queue would each hand out, delete and
// purge messages the other does not know about. The queue service of
// every process that shares a JetStream (a `runnel serve`, a CLI command
// run against it with --nats-url, the nodes of a cluster) therefore
// competes for one lease, "sqs" (package lease). The holder loads indexes
// and answers every call; every other process forwards its calls to the
// holder over NATS request-reply on subject rpcSubject, so a purge, a
// redrive or a receive through any process acts on the one index.
//
// All queues go to one holder (not one lease per queue) because a receive
// past maxReceiveCount and a message move task write into a second
// queue's index under the first one's lock.
//
// A process calling Serve takes the lease when it is free and keeps
// trying while another holds it (so a serve takes over within the lease
// TTL when the holder dies); a process that never calls Serve (a CLI
// command) takes it only when a call finds nobody serving, and gives it
// back at Close. When the holder loses the lease (it could not renew it
// in time), it drops every index, cancels its move tasks, and answers
// calls in progress with ServiceException (retryable): the new holder
// rebuilds the indexes from JetStream. A message handed out by a forwarded
// receive whose caller gave up before the answer came is in flight and
// comes back after its visibility timeout, as any unanswered receive.
const (
	rpcSubject = "runnel.sqs.rpc"
	leaseKey   = "sqs"
)

// forwarded are the calls a process that does not hold the queues
// forwards to the one that does (forward), by operation: each takes the
// values its method takes after the context (one, or a lease.Two or
// lease.Three of several) and answers what the method returns.
var forwarded = lease.Ops[*Service]{
	"CreateQueue":                   lease.Call3((*Service).CreateQueueWithTags),
	"EnsureQueue":                   lease.Call2((*Service).EnsureQueue),
	"TagQueue":                      lease.Do2((*Service).TagQueue),
	"UntagQueue":                    lease.Do2((*Service).UntagQueue),
	"AddPermission":                 lease.Do2((*Service).AddPermission),
	"RemovePermission":              lease.Do2((*Service).RemovePermission),
	"DeleteQueue":                   lease.Do((*Service).DeleteQueue),
	"GetQueueAttributes":            lease.Call2((*Service).GetQueueAttributes),
	"SetQueueAttributes":            lease.Do2((*Service).SetQueueAttributes),
	"SendMessageBatch":              lease.Call2((*Service).SendMessageBatch),
	"ReceiveMessage":                lease.Call2((*Service).ReceiveMessage),
	"DeleteMessageBatch":            lease.Call2((*Service).DeleteMessageBatch),
	"ChangeMessageVisibilityBatch":  lease.Call2((*Service).ChangeMessageVisibilityBatch),
	"PurgeQueue":                    lease.Do((*Service).PurgeQueue),
	"MoveToDeadLetterQueue":         lease.Do2((*Service).MoveToDeadLetterQueue),
	"ApproximateAgeOfOldestMessage": lease.Call((*Service).ApproximateAgeOfOldestMessage),
	"StartMessageMoveTask":          lease.Call3((*Service).StartMessageMoveTask),
	"ListMessageMoveTasks":          lease.Call((*Service).ListMessageMoveTasks),
	"CancelMessageMoveTask":         lease.Call((*Service).CancelMessageMoveTask),
}

// newOwner makes the queues served by one process (lease.Owner).
func (s *Service) newOwner() *lease.Owner {
	return lease.NewOwner(s.bg, lease.OwnerConfig{
		Key: leaseKey, Subject: rpcSubject, What: "the queues",
		Conn: s.eng.NC, Leases: s.eng.Leases, Logger: s.log,
		Serve:    forwarded.Serve("queue", s),
		Lost:     s.dropIndexes,
		Acquired: s.resumeTasks,
	})
}

// mayAct reports whether this process may still count its writes as the
// queues' holder: it holds the lease and the lease is valid now
// (lease.Lease.Valid), or no other process can reach its JetStream
// (engine.Engine.Shared). holdingHook, for tests, replaces the answer.
func (s *Service) mayAct() bool {
	if h := s.holdingHook; h != nil {
		return h()
	}
	return !s.eng.Shared() || s.own.Holding()
}

// reloadIndex forgets q's index, so that the next call loads it again
// from the stream; calls waiting on it answer errMoved (retryable). For
// an index found behind its stream (a record number refused as taken).
func (s *Service) reloadIndex(q *queue) {
	s.log.Warn("queue: a record number was already taken in the stream; loading the queue's index again", "queue", q.name)
	s.mu.Lock()
	if s.queues[q.name] == q {
		delete(s.queues, q.name)
	}
	s.mu.Unlock()
	q.mu.Lock()
	q.deleted, q.moved = true, true
	q.wake()
	q.mu.Unlock()
}

// isWrongLastSequence reports whether err is JetStream refusing a publish
// whose expected last (subject) sequence did not hold.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// forward runs the call op(in) at the process holding the queues when
// that is not this one (lease.Owner.Forward; in: the value the method
// takes after its context, see forwarded).
func (s *Service) forward(ctx context.Context, op string, in, out any) (remote bool, err error) {
	return s.own.Forward(ctx, op, in, out)
}

// forwardOut is forward for the calls that answer a *T.
func forwardOut[T any](ctx context.Context, s *Service, op string, in any) (remote bool, out *T, err error) {
	out = new(T)
	if remote, err = s.forward(ctx, op, in, out); !remote || err != nil {
		out = nil
	}
	return remote, out, err
}

// errMoved answers a call that reached a process which no longer holds
// the queues; the caller retries it at the new holder.
var errMoved = lease.ErrMoved

// dropIndexes forgets every loaded queue (waiting receives return
// errMoved) and stops the running move tasks without storing an end: the
// next holder resumes them from their stored state.
func (s *Service) dropIndexes() {
	s.mu.Lock()
	queues := s.queues
	s.queues = map[string]*queue{}
	tasks := slices.Collect(maps.Values(s.tasks))
	s.mu.Unlock()
	for _, q := range queues {
		q.mu.Lock()
		q.deleted, q.moved = true, true
		q.wake()
		q.mu.Unlock()
	}
	for _, t := range tasks {
		t.mu.Lock()
		if t.info.Status == MoveTaskRunning && !t.lost {
			t.lost = true
			close(t.cancel)
		}
		t.mu.Unlock()
	}
}

// Serve makes this process serve the queues: it takes the lease now if it
// is free, and keeps trying while another process holds it, until Close.
// `runnel serve` and the demos call it; a CLI command does not (it serves
// only when nobody else does).
func (s *Service) Serve(ctx context.Context) error { return s.own.Serve(ctx) }
