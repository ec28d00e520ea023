package lease

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/clocks"
)

// Owner makes one process at a time serve a piece of state that lives in
// a process's memory (the queue indexes, the table indexes), and makes
// every other process sharing the JetStream forward its calls to that
// process over NATS request-reply.
//
// The processes compete for one lease (Config.Key). The holder answers
// calls on Config.Subject; a process calling Serve takes the lease when it
// is free and keeps trying while another holds it (so it takes over within
// the lease TTL when the holder dies); a process that never calls Serve (a
// CLI command) takes it only when a call finds nobody serving, and gives
// it back at Release. When the holder loses the lease (it could not renew
// it in time), Owner calls Config.Lost, which must drop the local state:
// the new holder rebuilds it from JetStream. Calls in progress then answer
// ErrMoved, which callers retry.
//
// Trap: a forwarded call's caller may give up (its context ends) after the
// holder acted; as with any unanswered AWS call, the caller cannot tell
// whether it took effect. Every forwarded write must therefore be one an
// AWS client already retries safely (a receive whose messages come back
// after their visibility timeout, a write with a condition or a token).
type Owner struct {
	cfg OwnerConfig
	bg  context.Context
	wg  sync.WaitGroup

	mu    sync.Mutex
	lease *Lease
	sub   *nats.Subscription
}

// OwnerConfig configures an Owner. Every field is required.
type OwnerConfig struct {
	Key     string // the lease key, e.g. "sqs"
	Subject string // the request-reply subject, e.g. "runnel.sqs.rpc"
	What    string // what is served, for errors and logs: "the queues"
	Conn    *nats.Conn
	Leases  func(context.Context) (*Manager, error)
	// Serve runs a forwarded call here: op and its JSON arguments as
	// Forward was given them. Its answer is JSON-encoded.
	Serve func(ctx context.Context, op string, args json.RawMessage) (any, error)
	// Lost drops the local state when the lease is lost.
	Lost func()
	// Acquired (optional) is called each time this process takes the
	// lease, under the Owner's lock: it must not block or call the
	// Owner (start a goroutine for work).
	Acquired func()
	Logger   *slog.Logger
	// Detail and Undetail (optional) carry errors that are not an
	// *awserr.Error (a failed condition with the old item, a cancelled
	// transaction's reasons) across the call: Detail names the kind and
	// its JSON (ok false: not such an error), Undetail rebuilds it.
	Detail   func(err error) (kind string, detail any, ok bool)
	Undetail func(kind string, detail json.RawMessage) (error, bool)
}

// ErrMoved answers a call that reached a process which no longer serves
// the state; Forward retries it at the new holder.
var ErrMoved = awserr.New(awserr.ErrService, "the state moved to another runnel process; retry")

// holdersGroup is the NATS queue group of the processes answering a
// subject's forwarded calls.
const holdersGroup = "holders"

// forwardWait bounds how long Forward waits for a holder (a late renewal,
// a failover) before it answers ServiceException, which callers retry:
// longer than a lease's TTL, so a dead holder's lease has expired.
const forwardWait = DefaultTTL + 5*time.Second

// rpcTimeout bounds a forwarded call whose context has no deadline:
// longer than the longest wait a call may make (a 20 s receive).
const rpcTimeout = 60 * time.Second

type envelope struct {
	Op         string          `json:"op"`
	Args       json.RawMessage `json:"args,omitempty"`
	DeadlineMs int64           `json:"deadline_ms"` // the caller's remaining time
}

type answer struct {
	Out    json.RawMessage `json:"out,omitempty"`
	Err    *awserr.Error   `json:"err,omitempty"`
	Kind   string          `json:"kind,omitempty"`   // OwnerConfig.Detail's
	Detail json.RawMessage `json:"detail,omitempty"` // the same
}

type servedKey struct{}

// Served reports whether ctx is the context of a call this process serves
// for another (Serve's ctx).
func Served(ctx context.Context) bool { return ctx.Value(servedKey{}) != nil }

// NewOwner returns an Owner whose background work ends with bg.
func NewOwner(bg context.Context, cfg OwnerConfig) *Owner {
	return &Owner{cfg: cfg, bg: bg}
}

// Forward runs the call op(args) at the process serving the state when
// that is not this one, decoding the answer into out (nil: none). remote
// is false when the caller must run the call here: this process holds the
// lease (or has just taken it), or the call is one it serves for another.
// Errors are AWS errors; a call that cannot reach a holder before ctx
// ends is ServiceException (retryable).
func (o *Owner) Forward(ctx context.Context, op string, args, out any) (remote bool, err error) {
	if Served(ctx) {
		if !o.Holding() {
			return true, ErrMoved
		}
		return false, nil
	}
	deadline := time.Now().Add(forwardWait)
	for attempt := 1; ; attempt++ {
		held, valid := o.state()
		if valid {
			return false, nil
		}
		if !held {
			// The holder first: trying the lease before every forwarded
			// call (a KeyValue Create refused while another process holds
			// it, under the Owner's lock) serialized a node's calls behind
			// one round trip each. The lease is tried only when no process
			// answers for the holder (it died, or none holds the lease) or
			// the holder moved.
			err := o.call(ctx, op, args, out)
			if !errors.Is(err, nats.ErrNoResponders) && !errors.Is(err, ErrMoved) {
				return true, err
			}
			ok, err := o.tryAcquire(ctx, false)
			if err != nil {
				return true, err
			}
			if ok {
				return false, nil
			}
		}
		// Held but not valid: the renewal is late; it succeeds or the
		// lease is lost. Not held: the holder died or is handing over; its
		// lease expires within the TTL and a later attempt takes it or
		// finds the new holder.
		if time.Now().After(deadline) {
			return true, awserr.New(awserr.ErrService, "no runnel process has served %s for %v (a failover in progress); retry", o.cfg.What, forwardWait)
		}
		if err := sleep(ctx, time.Duration(min(attempt, 10))*100*time.Millisecond); err != nil {
			return true, awserr.New(awserr.ErrService, "no runnel process serves %s now: %v", o.cfg.What, err)
		}
	}
}

// sleep waits d on the real clock, or until ctx ends (ctx.Err()).
func sleep(ctx context.Context, d time.Duration) error {
	return clocks.Sleep(ctx, clockwork.NewRealClock(), d)
}

func (o *Owner) call(ctx context.Context, op string, args, out any) error {
	timeout := rpcTimeout
	if d, ok := ctx.Deadline(); ok {
		timeout = time.Until(d)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		return err
	}
	body, err := json.Marshal(envelope{Op: op, Args: raw, DeadlineMs: timeout.Milliseconds()})
	if err != nil {
		return err
	}
	c, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := o.request(c, body)
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) || errors.Is(err, ErrMoved) {
			return err
		}
		return awserr.New(awserr.ErrService, "forward %s to the runnel process serving %s: %v", op, o.cfg.What, err)
	}
	var r answer
	if err := json.Unmarshal(msg.Data, &r); err != nil {
		return awserr.New(awserr.ErrService, "forward %s: bad answer: %v", op, err)
	}
	if r.Kind != "" && o.cfg.Undetail != nil {
		if err, ok := o.cfg.Undetail(r.Kind, r.Detail); ok {
			return err
		}
	}
	if r.Err != nil {
		if r.Err.Code == ErrMoved.Code && r.Err.Message == ErrMoved.Message {
			return ErrMoved
		}
		return r.Err
	}
	if out != nil && len(r.Out) > 0 {
		if err := json.Unmarshal(r.Out, out); err != nil {
			return awserr.New(awserr.ErrService, "forward %s: bad answer: %v", op, err)
		}
	}
	return nil
}

// request sends a forwarded call and waits for its answer. While it
// waits, it asks every probeEvery whether anyone still serves the
// subject: when nobody does (the holder died: its subscription went with
// its connection), the call is abandoned with ErrMoved, which Forward
// retries at the next holder, instead of waiting for the caller's
// deadline (up to a minute) for an answer that cannot come.
//
// Trap: the dead holder may have acted on the call before it died; as
// with any unanswered AWS call, the retry may repeat it (see Owner).
func (o *Owner) request(ctx context.Context, body []byte) (*nats.Msg, error) {
	type reply struct {
		msg *nats.Msg
		err error
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan reply, 1)
	go func() {
		msg, err := o.cfg.Conn.RequestWithContext(ctx, o.cfg.Subject, body)
		done <- reply{msg, err}
	}()
	tick := time.NewTicker(probeEvery)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.msg, r.err
		case <-tick.C:
			pctx, pcancel := context.WithTimeout(ctx, probeEvery)
			_, err := o.cfg.Conn.RequestWithContext(pctx, o.cfg.Subject, probeBody)
			pcancel()
			// Only "no responders" is an answer: a probe that times out
			// (a loaded holder, a route still closing) proves nothing.
			if errors.Is(err, nats.ErrNoResponders) {
				o.cfg.Logger.Warn("the runnel process serving " + o.cfg.What + " is gone; the forwarded call is tried again")
				return nil, ErrMoved
			}
		}
	}
}

// probeEvery is how often a forwarded call in progress checks that its
// holder is still there (wall clock).
const probeEvery = time.Second

// probeOp names the probe request, which the holder answers at once
// without serving anything; no operation has this name.
const probeOp = "\x00probe"

var probeBody, _ = json.Marshal(envelope{Op: probeOp})

// handle answers one forwarded call (in its own goroutine: a call may
// wait, a receive up to 20 s), or a probe.
func (o *Owner) handle(m *nats.Msg) {
	var e envelope
	var r answer
	if err := json.Unmarshal(m.Data, &e); err != nil {
		r.Err = awserr.New(awserr.ErrService, "bad forwarded call: %v", err)
	} else if e.Op == probeOp {
		// answered empty
	} else {
		ctx, cancel := context.WithTimeout(context.WithValue(o.bg, servedKey{}, true), time.Duration(e.DeadlineMs)*time.Millisecond)
		out, err := o.cfg.Serve(ctx, e.Op, e.Args)
		cancel()
		if err != nil {
			if o.cfg.Detail != nil {
				if kind, d, ok := o.cfg.Detail(err); ok {
					r.Kind = kind
					r.Detail, _ = json.Marshal(d)
				}
			}
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
		o.cfg.Logger.Warn("answering a forwarded call failed; the caller retries", "op", e.Op, "err", err)
	}
}

// Holding reports whether this process holds the lease and may act on it
// now.
func (o *Owner) Holding() bool {
	_, valid := o.state()
	return valid
}

// state reports whether this process holds the lease, and whether it may
// act on it now.
func (o *Owner) state() (held, valid bool) {
	o.mu.Lock()
	l := o.lease
	o.mu.Unlock()
	return l != nil, l != nil && l.Valid()
}

// tryAcquire takes the lease if it is free, and starts answering
// forwarded calls. ok is false when another process holds it.
func (o *Owner) tryAcquire(ctx context.Context, serving bool) (ok bool, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lease != nil {
		return true, nil
	}
	if o.bg.Err() != nil {
		return false, awserr.New(awserr.ErrService, "%s: service closed", o.cfg.What)
	}
	leases, err := o.cfg.Leases(ctx)
	if err != nil {
		return false, awserr.New(awserr.ErrService, "%s: %v", o.cfg.What, err)
	}
	l, err := leases.Acquire(ctx, o.cfg.Key)
	if errors.Is(err, ErrHeld) {
		return false, nil
	}
	if err != nil {
		return false, awserr.New(awserr.ErrService, "%s: %v", o.cfg.What, err)
	}
	// A queue group: while a former holder that has lost the lease is
	// still subscribed, each call reaches one of the two, never both. With
	// a plain subscription both got every call: the former holder's quick
	// ErrMoved won, the caller sent the call again, and the new holder ran
	// it each time.
	sub, err := o.cfg.Conn.QueueSubscribe(o.cfg.Subject, holdersGroup, func(m *nats.Msg) { go o.handle(m) })
	if err != nil {
		l.Release(ctx)
		return false, awserr.New(awserr.ErrService, "%s: serve forwarded calls: %v", o.cfg.What, err)
	}
	o.lease, o.sub = l, sub
	o.cfg.Logger.Debug("serving "+o.cfg.What, "node", leases.Node(), "serve", serving)
	if o.cfg.Acquired != nil {
		o.cfg.Acquired()
	}
	go o.watch(l)
	return true, nil
}

// watch drops the local state when the lease is lost.
func (o *Owner) watch(l *Lease) {
	select {
	case <-l.Lost():
	case <-o.bg.Done():
		return
	}
	o.mu.Lock()
	if o.lease == l {
		o.lease = nil
		if o.sub != nil {
			o.sub.Unsubscribe()
			o.sub = nil
		}
	}
	o.mu.Unlock()
	o.cfg.Logger.Warn("lost the lease of " + o.cfg.What + ": another runnel process serves them now; dropping this process's state")
	o.cfg.Lost()
}

// Serve makes this process serve the state: it takes the lease now if it
// is free, and keeps trying every half TTL while another process holds
// it, until bg ends. `runnel serve` and the demos call it; a CLI command
// does not (it serves only when nobody else does).
//
// A failure to take the lease now (the leases' stream electing a leader
// after a node died) is logged and tried again by the loop, not returned.
func (o *Owner) Serve(ctx context.Context) error {
	if _, err := o.tryAcquire(ctx, true); err != nil {
		o.cfg.Logger.Warn("taking the lease of "+o.cfg.What+" failed; will retry", "err", err)
	}
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		for sleep(o.bg, DefaultTTL/2) == nil {
			if _, err := o.tryAcquire(o.bg, true); err != nil && o.bg.Err() == nil {
				o.cfg.Logger.Warn("taking the lease of "+o.cfg.What+" failed; will retry", "err", err)
			}
		}
	}()
	return nil
}

// Release gives the lease back (at Close, after bg ended) and waits for
// Serve's loop.
func (o *Owner) Release() {
	o.wg.Wait()
	o.mu.Lock()
	l, sub := o.lease, o.sub
	o.lease, o.sub = nil, nil
	o.mu.Unlock()
	if sub != nil {
		sub.Unsubscribe()
	}
	if l != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := l.Release(ctx); err != nil {
			o.cfg.Logger.Warn("releasing the lease of "+o.cfg.What+" failed; it expires by its TTL", "err", err)
		}
	}
}
