package queue

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/runnel-dev/runnel/awserr"
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

// rpcArgs carries the arguments of every forwarded call; each operation
// uses its own fields.
type rpcArgs struct {
	Op      string                                     `json:"op"`
	URL     string                                     `json:"url,omitempty"`
	Handle  string                                     `json:"handle,omitempty"`
	Names   []string                                   `json:"names,omitempty"`
	Attrs   map[string]string                          `json:"attrs,omitempty"`
	Receive *ReceiveMessageInput                       `json:"receive,omitempty"`
	Send    []SendMessageBatchRequestEntry             `json:"send,omitempty"`
	Delete  []DeleteMessageBatchRequestEntry           `json:"delete,omitempty"`
	Change  []ChangeMessageVisibilityBatchRequestEntry `json:"change,omitempty"`
	Dest    string                                     `json:"dest,omitempty"`
	Rate    int                                        `json:"rate,omitempty"`
	Tags    map[string]string                          `json:"tags,omitempty"`
	Perm    *Permission                                `json:"perm,omitempty"`
}

// serve dispatches a forwarded call to the local method.
func (s *Service) serveCall(ctx context.Context, a *rpcArgs) (any, error) {
	switch a.Op {
	case "CreateQueue":
		return s.CreateQueueWithTags(ctx, a.URL, a.Attrs, a.Tags)
	case "TagQueue":
		return nil, s.TagQueue(ctx, a.URL, a.Tags)
	case "UntagQueue":
		return nil, s.UntagQueue(ctx, a.URL, a.Names)
	case "AddPermission", "RemovePermission":
		if a.Perm == nil {
			a.Perm = &Permission{}
		}
		if a.Op == "RemovePermission" {
			return nil, s.RemovePermission(ctx, a.URL, a.Perm.Label)
		}
		return nil, s.AddPermission(ctx, a.URL, *a.Perm)
	case "DeleteQueue":
		return nil, s.DeleteQueue(ctx, a.URL)
	case "GetQueueAttributes":
		return s.GetQueueAttributes(ctx, a.URL, a.Names)
	case "SetQueueAttributes":
		return nil, s.SetQueueAttributes(ctx, a.URL, a.Attrs)
	case "SendMessageBatch":
		return s.SendMessageBatch(ctx, a.URL, a.Send)
	case "ReceiveMessage":
		if a.Receive == nil {
			a.Receive = &ReceiveMessageInput{}
		}
		return s.ReceiveMessage(ctx, a.URL, *a.Receive)
	case "DeleteMessageBatch":
		return s.DeleteMessageBatch(ctx, a.URL, a.Delete)
	case "ChangeMessageVisibilityBatch":
		return s.ChangeMessageVisibilityBatch(ctx, a.URL, a.Change)
	case "PurgeQueue":
		return nil, s.PurgeQueue(ctx, a.URL)
	case "MoveToDeadLetterQueue":
		return nil, s.MoveToDeadLetterQueue(ctx, a.URL, a.Handle)
	case "ApproximateAgeOfOldestMessage":
		return s.ApproximateAgeOfOldestMessage(ctx, a.URL)
	case "StartMessageMoveTask":
		return s.StartMessageMoveTask(ctx, a.URL, a.Dest, a.Rate)
	case "ListMessageMoveTasks":
		return s.ListMessageMoveTasks(ctx, a.URL)
	case "CancelMessageMoveTask":
		return s.CancelMessageMoveTask(ctx, a.Handle)
	}
	return nil, awserr.New(awserr.ErrService, "queue: unknown forwarded operation %q", a.Op)
}

// newOwner makes the queues served by one process (lease.Owner).
func (s *Service) newOwner() *lease.Owner {
	return lease.NewOwner(s.bg, lease.OwnerConfig{
		Key: leaseKey, Subject: rpcSubject, What: "the queues",
		Conn: s.eng.NC, Leases: s.eng.Leases, Logger: s.log,
		Serve: lease.ServeArgs("queue", func(a *rpcArgs, op string) { a.Op = op }, s.serveCall),
		Lost:  s.dropIndexes,
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
	q.moved = true
	q.wake()
	q.mu.Unlock()
}

// isWrongLastSequence reports whether err is JetStream refusing a publish
// whose expected last (subject) sequence did not hold.
func isWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence
}

// forward runs the call a at the process holding the queues when that is
// not this one (lease.Owner.Forward).
func (s *Service) forward(ctx context.Context, a rpcArgs, out any) (remote bool, err error) {
	return s.own.Forward(ctx, a.Op, a, out)
}

// forwardOut is forward for the calls that answer a *T.
func forwardOut[T any](ctx context.Context, s *Service, a rpcArgs) (remote bool, out *T, err error) {
	out = new(T)
	if remote, err = s.forward(ctx, a, out); !remote || err != nil {
		out = nil
	}
	return remote, out, err
}

// errMoved answers a call that reached a process which no longer holds
// the queues; the caller retries it at the new holder.
var errMoved = lease.ErrMoved

// dropIndexes forgets every loaded queue (waiting receives return
// errMoved) and cancels the running move tasks.
func (s *Service) dropIndexes() {
	s.mu.Lock()
	queues := s.queues
	s.queues = map[string]*queue{}
	tasks := slices.Collect(maps.Values(s.tasks))
	s.mu.Unlock()
	for _, q := range queues {
		q.mu.Lock()
		q.moved = true
		q.wake()
		q.mu.Unlock()
	}
	for _, t := range tasks {
		t.mu.Lock()
		if t.info.Status == MoveTaskRunning {
			t.info.Status = MoveTaskCancelling
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

func (a rpcArgs) String() string { return fmt.Sprintf("%s %s", a.Op, a.URL) }
