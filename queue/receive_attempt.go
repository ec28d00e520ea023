package queue

import (
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// A FIFO receive whose answer was lost can be retried with its
// ReceiveRequestAttemptId: "During a visibility timeout, subsequent calls
// with the same ReceiveRequestAttemptId return the same messages and
// receipt handles. If a retry occurs within the deduplication interval,
// it resets the visibility timeout", and "it is possible to retry ... if
// none of the messages have been modified (deleted or had their
// visibility changes)" (API_ReceiveMessage). Before, the id was ignored:
// the retry got nothing, and the lost messages, their groups blocked,
// came back only after their visibility timeout.
//
// The receives are kept by the process holding the queues, in memory: a
// retry after a restart or a hand-over is answered as a new receive.

// AttemptWindow is how long a ReceiveRequestAttemptId can be retried.
const AttemptWindow = 5 * time.Minute

// receiveAttempt is a FIFO receive kept for a retry with its id.
type receiveAttempt struct {
	at  int64      // Unix ms of the receive
	ds  []delivery // without payloads
	vis []int64    // each message's visibleAt as this receive (or its last retry) set it
}

// keepAttempt keeps the deliveries of a receive made with attempt id.
func (q *queue) keepAttempt(id string, ds []delivery) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.svc.eng.Clock.Now().UnixMilli()
	q.pruneAttempts(now)
	a := &receiveAttempt{at: now, ds: make([]delivery, len(ds)), vis: make([]int64, len(ds))}
	for i, d := range ds {
		d.p = nil
		a.ds[i], a.vis[i] = d, d.m.visibleAt
	}
	if q.attempts == nil {
		q.attempts = map[string]*receiveAttempt{}
	}
	q.attempts[id] = a
}

// retryAttempt answers a receive retried with attempt id: the same
// deliveries, their visibility timeout reset to vt from now, when the
// id was used within AttemptWindow and none of its messages was deleted,
// received again, had its visibility changed or became visible again
// (its visibility timeout ended) since. ok is false otherwise: the
// caller receives as usual.
func (q *queue) retryAttempt(id string, vt time.Duration) (ds []delivery, futs []jetstream.PubAckFuture, ok bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.deleted {
		return nil, nil, false
	}
	now := q.svc.eng.Clock.Now().UnixMilli()
	// Visibility timeouts that ended make their messages visible first:
	// the retry of a receive whose timeout ended is a new receive (the
	// receive count advances, maxReceiveCount dead-letters). Before, the
	// index was not advanced here, the messages still looked in flight,
	// and a consumer reusing its attempt id got the same message and
	// handle again and again for 5 minutes, its receive count never
	// growing, never dead-lettered.
	q.advance(now)
	q.pruneAttempts(now)
	a := q.attempts[id]
	if a == nil {
		return nil, nil, false
	}
	for i, d := range a.ds {
		m := d.m
		if m.st != stInflight || m.nonce != d.nonce || m.visibleAt != a.vis[i] {
			delete(q.attempts, id) // modified: the id no longer replays
			return nil, nil, false
		}
	}
	ds = make([]delivery, len(a.ds))
	for i, d := range a.ds {
		m := d.m
		m.visibleAt = now + vt.Milliseconds()
		q.schedule(m)
		q.markDirty(m.rec)
		a.vis[i] = m.visibleAt
		d.p = m.payload // nil when evicted: deliver reads it back
		ds[i] = d
	}
	futs, err := q.flush()
	if err != nil {
		q.svc.log.Warn("queue: receive state not stored", "queue", q.name, "err", err)
	}
	return ds, futs, true
}

// pruneAttempts forgets the receives older than AttemptWindow.
func (q *queue) pruneAttempts(now int64) {
	for id, a := range q.attempts {
		if now-a.at > AttemptWindow.Milliseconds() {
			delete(q.attempts, id)
		}
	}
}
