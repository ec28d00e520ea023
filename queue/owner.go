package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
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
	// rpcTimeout bounds a forwarded call whose context has no deadline:
	// longer than the longest receive wait (20 s).
	rpcTimeout = 60 * time.Second
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
	// DeadlineMs is the caller's remaining time.
	DeadlineMs int64 `json:"deadline_ms"`
}

type rpcReply struct {
	Out json.RawMessage `json:"out,omitempty"`
	Err *awserr.Error   `json:"err,omitempty"`
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

type servedKey struct{}

// forward runs the call a at the process holding the queues when that is
// not this one, decoding the answer into out (nil: none). remote is false
// when the caller must run the call here: this process holds the lease
// (or has just taken it), or the call is one it serves for another.
func (s *Service) forward(ctx context.Context, a rpcArgs, out any) (remote bool, err error) {
	if ctx.Value(servedKey{}) != nil {
		if !s.holding() {
			return true, errMoved
		}
		return false, nil
	}
	for attempt := 1; ; attempt++ {
		held, valid := s.leaseState()
		if valid {
			return false, nil
		}
		if !held {
			ok, err := s.tryAcquire(ctx, false)
			if err != nil {
				return true, err
			}
			if ok {
				return false, nil
			}
			err = s.call(ctx, &a, out)
			if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, errMoved) {
				return true, err
			}
		}
		// Held but not valid: the renewal is late; it succeeds or the
		// lease is lost. Not held: the holder died or is handing over; its
		// lease expires within the TTL and a later attempt takes it or
		// finds the new holder.
		if err := engine.Sleep(ctx, clockwork.NewRealClock(), time.Duration(min(attempt, 10))*100*time.Millisecond); err != nil {
			return true, awserr.New(awserr.ErrService, "no runnel process serves the queues now: %v", err)
		}
	}
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
var errMoved = awserr.New(awserr.ErrService, "the queues moved to another runnel process; retry")

func (s *Service) call(ctx context.Context, a *rpcArgs, out any) error {
	timeout := rpcTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	a.DeadlineMs = timeout.Milliseconds()
	body, err := json.Marshal(a)
	if err != nil {
		return err
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := s.eng.NC.RequestWithContext(c, rpcSubject, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return err
		}
		return awserr.New(awserr.ErrService, "forward %s to the runnel process serving the queues: %v", a.Op, err)
	}
	var r rpcReply
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return awserr.New(awserr.ErrService, "forward %s: bad answer: %v", a.Op, err)
	}
	if r.Err != nil {
		if r.Err.Code == errMoved.Code && r.Err.Message == errMoved.Message {
			return errMoved
		}
		return r.Err
	}
	if out != nil && len(r.Out) > 0 {
		if err := json.Unmarshal(r.Out, out); err != nil {
			return awserr.New(awserr.ErrService, "forward %s: bad answer: %v", a.Op, err)
		}
	}
	return nil
}

// handle answers one forwarded call (in its own goroutine: a receive may
// wait up to 20 s).
func (s *Service) handle(m *nats.Msg) {
	var a rpcArgs
	var r rpcReply
	if err := json.Unmarshal(m.Data, &a); err != nil {
		r.Err = awserr.New(awserr.ErrService, "queue: bad forwarded call: %v", err)
	} else {
		ctx, cancel := context.WithTimeout(context.WithValue(s.bg, servedKey{}, true), time.Duration(a.DeadlineMs)*time.Millisecond)
		out, err := s.serveCall(ctx, &a)
		cancel()
		if err != nil {
			var ae *awserr.Error
			if !errors.As(err, &ae) {
				ae = &awserr.Error{Code: awserr.ErrService.Code, Message: err.Error()}
			}
			r.Err = ae
		} else if out != nil {
			r.Out, _ = json.Marshal(out)
		}
	}
	b, _ := json.Marshal(&r)
	if err := m.Respond(b); err != nil {
		s.log.Warn("queue: answering a forwarded call failed; the caller retries", "op", a.Op, "err", err)
	}
}

// holding reports whether this process holds the queues' lease and may
// act on it now.
func (s *Service) holding() bool {
	_, valid := s.leaseState()
	return valid
}

// leaseState reports whether this process holds the queues' lease, and
// whether it may act on it now.
func (s *Service) leaseState() (held, valid bool) {
	s.own.Lock()
	l := s.own.lease
	s.own.Unlock()
	return l != nil, l != nil && l.Valid()
}

// tryAcquire takes the queues' lease if it is free, and starts answering
// forwarded calls. ok is false when another process holds it.
func (s *Service) tryAcquire(ctx context.Context, serving bool) (ok bool, err error) {
	s.own.Lock()
	defer s.own.Unlock()
	if s.own.lease != nil {
		return true, nil
	}
	if s.bg.Err() != nil {
		return false, awserr.New(awserr.ErrService, "queue service closed")
	}
	leases, err := s.eng.Leases(ctx)
	if err != nil {
		return false, awserr.New(awserr.ErrService, "queue: %v", err)
	}
	l, err := leases.Acquire(ctx, leaseKey)
	if errors.Is(err, lease.ErrHeld) {
		return false, nil
	}
	if err != nil {
		return false, awserr.New(awserr.ErrService, "queue: %v", err)
	}
	sub, err := s.eng.NC.Subscribe(rpcSubject, func(m *nats.Msg) { go s.handle(m) })
	if err != nil {
		l.Release(ctx)
		return false, awserr.New(awserr.ErrService, "queue: serve forwarded calls: %v", err)
	}
	s.own.lease, s.own.sub = l, sub
	s.log.Debug("serving the queues", "node", leases.Node(), "serve", serving)
	go s.watchLease(l)
	return true, nil
}

// watchLease drops the indexes when the lease is lost.
func (s *Service) watchLease(l *lease.Lease) {
	select {
	case <-l.Lost():
	case <-s.bg.Done():
		return
	}
	s.own.Lock()
	if s.own.lease == l {
		s.own.lease = nil
		if s.own.sub != nil {
			s.own.sub.Unsubscribe()
			s.own.sub = nil
		}
	}
	s.own.Unlock()
	s.log.Warn("lost the queues' lease: another runnel process serves them now; dropping this process's indexes")
	s.dropIndexes()
}

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
// is free, and keeps trying every half TTL while another process holds
// it, until Close. `runnel serve` and the demos call it; a CLI command
// does not (it serves only when nobody else does). A failure to take the
// lease now (a leader election under way) is logged and tried again
// later, not returned: the error is for the future.
func (s *Service) Serve(ctx context.Context) error {
	if _, err := s.tryAcquire(ctx, true); err != nil {
		// The leases' stream may be electing a leader (a cluster node
		// died): the loop below tries again, as it does after a loss.
		s.log.Warn("queue: taking the queues' lease failed; will retry", "err", err)
	}
	s.tasksWG.Add(1)
	go func() {
		defer s.tasksWG.Done()
		for engine.Sleep(s.bg, clockwork.NewRealClock(), lease.DefaultTTL/2) == nil {
			if _, err := s.tryAcquire(s.bg, true); err != nil && s.bg.Err() == nil {
				s.log.Warn("queue: taking the queues' lease failed; will retry", "err", err)
			}
		}
	}()
	return nil
}

// release gives the lease back at Close.
func (s *Service) release() {
	s.own.Lock()
	l, sub := s.own.lease, s.own.sub
	s.own.lease, s.own.sub = nil, nil
	s.own.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.Release(ctx); err != nil {
			s.log.Warn("queue: releasing the queues' lease failed; it expires by its TTL", "err", err)
		}
	}
}

func (a rpcArgs) String() string { return fmt.Sprintf("%s %s", a.Op, a.URL) }
