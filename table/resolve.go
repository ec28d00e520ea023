package table

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// Writes whose outcome is unknown.
//
// A table decides every condition on its index, so the index must say
// what the log says. A log write whose answer is lost (a timeout, a
// connection lost under it) may or may not have landed; an index that
// stays where it was while the change is in the log accepts a second
// attribute_not_exists put (two INSERTs in the change stream) or writes
// an UpdateItem computed from the image before the landed change over it
// (a lost update). So the outcome is learned, never guessed:
//
//   - Every log write carries JetStream message ids (stream.PutLogRecords),
//     and one whose answer does not come is published again with the same
//     ids until JetStream answers (for stream.ResolveWithin): a stored
//     message is answered with its first sequence and not stored twice.
//     The writer then applies exactly what the log holds and answers its
//     caller as usual.
//   - Past that (JetStream unreachable), the caller hears a retryable
//     error (500) and the write's items are held (unsure): a write of a
//     held item, single, batched (UnprocessedItems) or transactional, is
//     refused with a retryable error instead of being decided on the
//     index; a read still reads the index (the write, if it lands, lands
//     later). A resolver (resolveLater) tries again after 1 s, backing off
//     to 30 s: it looks for each message still unknown in its shard by its
//     message id (stream.ResolveLogRecords), publishes one it does not
//     find again with the same id, applies what the log holds under the
//     items' stripes, and releases the items. It never publishes a message
//     that was acknowledged: its items were free meanwhile, and a copy
//     stored after the duplicate window would land after their later
//     writes. It waits while mayAct is false (a lease whose renewals lapse
//     may be valid again with the tables kept); it lets go when the tables
//     are dropped with the lease (the next holder reads the log). No
//     snapshot covers the table while a resolver of it runs
//     (Table.unresolved, counted by resolveCounted).
//
// The trap: JetStream's duplicate window (stream.LogDuplicateWindow, 5 s
// for the logs; 2 minutes for the transaction log) is shorter than a
// resolver's wait. The publishing connections keep no reconnect buffer
// (engine.Open), so no copy waits in the client; but a first publish that
// a stalled JetStream stores only after the resolver looked for it and
// after the window is stored twice: its change is then in the log twice
// for its item (held: nothing else was written to it in between), and
// the change stream delivers it twice. At least once, never lost, never
// decided on a stale item. A search that fails or is cut short publishes
// nothing (ResolveLogRecords).
//
// A transaction's commit record (transact.go) is published with its id
// as its message id for 4 s in the request (it holds snapGate); past
// that, its items are held, its ClientRequestToken stays in progress
// (TransactionInProgressException), and a resolver publishes it again
// (within the transaction log's 2-minute window it is stored once; a
// second copy later is harmless: recovery skips changes already in the
// logs), then writes its changes and ends the token. A committed
// transaction whose changes did not all land holds their items until a
// resolver has written them.

// errUnknownOutcome marks a write whose outcome is not known yet; its
// items are held until a resolver learns it (it may land).
type errUnknownOutcome struct{ err error }

func (e errUnknownOutcome) Error() string { return e.err.Error() }
func (e errUnknownOutcome) Unwrap() error { return e.err }

func unknownOutcome(table, why string) error {
	return errUnknownOutcome{awserr.New(awserr.ErrService, "table %s: the write's outcome is not known yet (%s); runnel keeps trying to learn it: retry", table, why)}
}

// errHeldUnsure refuses a write of an item held by a write whose outcome
// is unknown: retryable (500), as the write that holds it.
func errHeldUnsure() error {
	return awserr.New(awserr.ErrService, "an earlier write of this item has an outcome not known yet (its answer was lost); runnel is learning it: retry")
}

// unsureItems counts, per itemID, the writes of unknown outcome that hold
// the item (a count: a transaction's hold and one of its changes' may
// overlap).
type unsureItems struct {
	mu    sync.Mutex
	n     int          // holds in all
	count atomic.Int64 // n, read without the lock (any)
	m     map[string]int
}

func (u *unsureItems) add(ids []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.m == nil {
		u.m = map[string]int{}
	}
	for _, id := range ids {
		u.m[id]++
	}
	u.n += len(ids)
	u.count.Store(int64(u.n))
}

func (u *unsureItems) release(ids []string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, id := range ids {
		if u.m[id]--; u.m[id] <= 0 {
			delete(u.m, id)
		}
	}
	u.n -= len(ids)
	u.count.Store(int64(u.n))
}

// any reports whether any item is held, without the lock's cost when
// none is (every single write asks).
func (u *unsureItems) any() bool { return u.count.Load() > 0 }

// busy returns the indexes of the ids held.
func (u *unsureItems) busy(ids []string) []int {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.n == 0 {
		return nil
	}
	var out []int
	for i, id := range ids {
		if u.m[id] > 0 {
			out = append(out, i)
		}
	}
	return out
}

// heldUnsure is how many items writes of unknown outcome hold.
func (s *Service) heldUnsure() int {
	s.unsure.mu.Lock()
	defer s.unsure.mu.Unlock()
	return len(s.unsure.m)
}

// resolveLater holds the items ids and runs settle, after a pause
// (resolvePause, doubled each time up to 30 s), until it reports the
// outcome known (true), or the items no longer this process's to hold
// (the tables dropped with the lease: the next holder reads the log);
// then it releases them. It stops, leaving them held, when the service
// closes (the next open reads the log: the index says what it holds).
// A settle waits, returning false, while mayAct is false: a lease whose
// renewals lapse may be valid again without the tables being dropped.
func (s *Service) resolveLater(ids []string, settle func(ctx context.Context) bool) {
	s.unsure.add(ids)
	s.wakeMu.Lock()
	if s.resolveClosed {
		s.wakeMu.Unlock()
		return // closing: the items stay held; the next open reads the log
	}
	s.resolving.Add(1)
	s.wakeMu.Unlock()
	wake := s.resolveWake() // taken now: a wake from now on is seen
	go func() {
		defer s.resolving.Done()
		pause := s.resolvePause
		if pause <= 0 {
			pause = time.Second
		}
		for {
			select {
			case <-s.bg.Done():
				return
			case <-time.After(pause):
			case <-wake:
			}
			wake = s.resolveWake()
			pause = min(2*pause, 30*time.Second)
			done := settle(s.bg)
			s.resolveAttempts.Add(1)
			if done {
				s.unsure.release(ids)
				return
			}
		}
	}()
}

// resolveCounted is resolveLater for writes of tables whose outcome the
// index lacks until settle succeeds: each table's unresolved count is
// raised now and lowered when settle succeeds, so that no index snapshot
// covers their log positions meanwhile (snapshot.go). A resolver that
// stops with the service leaves it raised (the next open reads the log).
func (s *Service) resolveCounted(tables []*Table, ids []string, settle func(ctx context.Context) bool) {
	for _, t := range tables {
		t.unresolved.Add(1)
	}
	s.resolveLater(ids, func(ctx context.Context) bool {
		if !settle(ctx) {
			return false
		}
		for _, t := range tables {
			t.unresolved.Add(-1)
		}
		return true
	})
}

// resolveWake is closed when the resolvers are to try at once
// (ResolveNow in tests).
func (s *Service) resolveWake() chan struct{} {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	if s.wake == nil {
		s.wake = make(chan struct{})
	}
	return s.wake
}

// wakeResolvers makes every resolver waiting try at once.
func (s *Service) wakeResolvers() {
	s.wakeMu.Lock()
	defer s.wakeMu.Unlock()
	if s.wake != nil {
		close(s.wake)
	}
	s.wake = make(chan struct{})
}

// settleAppend is the resolver of a log write of t made at since whose
// outcome is unknown: entries (written with the message id id) and their
// changes ps; done[j] marks those stored and applied already, which are
// neither looked for nor published again (stream.ResolveLogRecords). It
// applies every change the log turns out to hold, under the items'
// stripes (refreshTTL and reindex read and write an entry under its
// stripe), and settles once all are. While this process may not act as
// the tables' holder (mayAct) it waits; when the tables it belongs to
// were dropped or the table deleted, it settles with nothing to apply
// (the next holder reads the log).
func (t *Table) settleAppend(id string, entries []stream.PutRecordsRequestEntry, ps []*pending, done []bool, since time.Time) func(ctx context.Context) bool {
	return func(ctx context.Context) bool {
		if t.gone() {
			return true
		}
		if !t.s.mayAct() {
			return false
		}
		out, err := t.s.logs.ResolveLogRecords(ctx, t.logName, id, entries, done, since, t.s.mayAct)
		if err == nil && t.s.replyLost != nil {
			err = t.s.replyLost(t.tableName)
		}
		if err != nil {
			t.s.eng.Logger.Warn("table write of unknown outcome: still unknown", "table", t.tableName, "id", id, "err", err)
			return false
		}
		var as []applied
		left := 0
		for j, r := range out.Records {
			if done[j] {
				continue
			}
			if r.ErrorCode != "" {
				left++
				continue
			}
			sh, pos, derr := stream.DecodeSequenceNumber(t.numbering, r.SequenceNumber)
			if derr != nil {
				left++
				continue
			}
			as = append(as, applied{p: ps[j], shard: uint16(sh), pos: pos})
			done[j] = true
		}
		// Applied under the items' stripes (refreshTTL and reindex read
		// and write an entry under its stripe); writers are kept off by
		// the hold, so the search and the publish above need none.
		mine := make([]*pending, len(as))
		for i, a := range as {
			mine[i] = a.p
		}
		unlock := lockPending(mine)
		t.s.snapGate.RLock()
		t.applyAll(as)
		t.s.snapGate.RUnlock()
		unlock()
		if left > 0 {
			t.s.eng.Logger.Warn("table write of unknown outcome: still unknown", "table", t.tableName, "id", id, "changes", left, "applied", len(as))
			return false
		}
		t.s.eng.Logger.Info("table write of unknown outcome: settled", "table", t.tableName, "id", id, "applied", len(as))
		return true
	}
}

// gone reports whether t is no longer one of the tables this process
// serves: deleted, or dropped with the lease.
func (t *Table) gone() bool {
	t.s.mu.RLock()
	defer t.s.mu.RUnlock()
	return t.s.tables[t.tableName] != t
}

// lockPending locks the stripes of ps' items as lockItems does.
func lockPending(ps []*pending) (unlock func()) {
	ops := make([]*op, len(ps))
	for i, p := range ps {
		ops[i] = &op{t: p.t, k: p.k}
	}
	return lockItems(ops)
}

// publishCommit publishes a transaction's commit record with its id as
// the message id, again while its outcome is unknown (each attempt waits
// a second), for stream.ResolveWithin: short, because a transaction
// holds snapGate meanwhile (every write and snapshot shares it); a
// resolver goes on without it. The transaction log keeps JetStream's
// default duplicate window, 2 minutes (transactions are few). It returns nil once JetStream has stored it
// (once); an error with lost=false when JetStream refused the first
// attempt (first: nothing was published with this id before), and one
// with lost=true when the outcome is still unknown.
func (s *Service) publishCommit(ctx context.Context, id string, b []byte, first bool) (lost bool, err error) {
	started := time.Now()
	within := stream.ResolveWithin
	if s.resolveWithin > 0 {
		within = s.resolveWithin
	}
	pause := 50 * time.Millisecond
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		// A publishing connection: no reconnect buffer to hold the
		// record and send it late (engine.Open).
		_, err = s.eng.NextPublisherJS().Publish(actx, txlogSubject, b, jetstream.WithMsgID(id))
		cancel()
		if err == nil && s.commitLost != nil {
			err = s.commitLost()
		}
		if err == nil {
			return false, nil
		}
		var je jetstream.JetStreamError
		if first && attempt == 0 && errors.As(err, &je) && je.APIError() != nil {
			return false, err // refused: not stored
		}
		if time.Since(started) >= within || ctx.Err() != nil {
			return true, err
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
		}
		pause = min(2*pause, 2*time.Second)
	}
}
