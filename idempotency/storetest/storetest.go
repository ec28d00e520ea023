// Package storetest is the conformance suite of idempotency.Store, in the
// manner of watermill's pubsub tests: every Store runs the same Run, which
// checks the Store contract and then the whole idempotency state machine
// (package idempotency's Do and Wrap) on that store, on a fake clock.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Features{ReturnsExisting: true}, func(t *testing.T, clock clockwork.Clock) idempotency.Store {
//			return newEmptyStore(t)
//		})
//	}
package storetest

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/idempotency"
)

// Features declares what a store can do; the suite skips what it can't.
type Features struct {
	// ReturnsExisting: Put's *ExistsError carries the existing record
	// (DynamoDB's ReturnValuesOnConditionCheckFailure ALL_OLD).
	ReturnsExisting bool
}

// NewStore returns an empty store for one test. clock is the test's fake
// clock; stores whose backend reads time may run on it (the suite passes
// every "now" to the store explicitly, so most ignore it).
type NewStore func(t *testing.T, clock clockwork.Clock) idempotency.Store

// Start is the fake clock's start in every test.
var Start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// Run runs the suite.
func Run(t *testing.T, f Features, newStore NewStore) {
	t.Run("Store", func(t *testing.T) { runStore(t, f, newStore) })
	t.Run("StateMachine", func(t *testing.T) { runStateMachine(t, newStore) })
}

func setup(t *testing.T, newStore NewStore) (context.Context, *clockwork.FakeClock, idempotency.Store) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(Start)
	return context.Background(), clock, newStore(t, clock)
}

func inProgress(id string, now time.Time) idempotency.Record {
	return idempotency.Record{ID: id, Status: idempotency.StatusInProgress,
		Expiration: now.Add(time.Hour).Unix(), InProgressExpiration: now.Add(30 * time.Second).UnixMilli()}
}

func mustGet(t *testing.T, s idempotency.Store, id string) *idempotency.Record {
	t.Helper()
	r, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatalf("Get(%s): %v", id, err)
	}
	return r
}

func mustPut(t *testing.T, s idempotency.Store, r idempotency.Record, now time.Time) {
	t.Helper()
	if err := s.Put(context.Background(), r, now); err != nil {
		t.Fatalf("Put(%+v): %v", r, err)
	}
}

func equal(t *testing.T, what string, got *idempotency.Record, want idempotency.Record) {
	t.Helper()
	if got == nil || !reflect.DeepEqual(*got, want) {
		t.Fatalf("%s = %+v, want %+v", what, got, want)
	}
}

// expectReplaced checks that a Put at now of a new in-progress record
// for id is accepted over the record stored, and that Get returns it.
func expectReplaced(t *testing.T, s idempotency.Store, id string, now time.Time) {
	t.Helper()
	next := inProgress(id, now)
	mustPut(t, s, next, now)
	equal(t, "Get", mustGet(t, s, id), next)
}

// expectExists checks that Put is refused, and that the refusal carries
// the existing record when the store can return it.
func expectExists(t *testing.T, f Features, s idempotency.Store, r idempotency.Record, now time.Time, existing idempotency.Record) {
	t.Helper()
	err := s.Put(context.Background(), r, now)
	var ex *idempotency.ExistsError
	if !errors.Is(err, idempotency.ErrRecordExists) || !errors.As(err, &ex) {
		t.Fatalf("Put over a live record = %v, want *ExistsError", err)
	}
	if f.ReturnsExisting {
		equal(t, "ExistsError.Record", ex.Record, existing)
	}
	equal(t, "record after refused Put", mustGet(t, s, r.ID), existing)
}

func runStore(t *testing.T, f Features, newStore NewStore) {
	t.Run("PutThenGet", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#1", clock.Now())
		r.Validation = "abc"
		mustPut(t, s, r, clock.Now())
		equal(t, "Get", mustGet(t, s, r.ID), r)
	})
	t.Run("GetMissingIsNotFound", func(t *testing.T) {
		ctx, _, s := setup(t, newStore)
		if _, err := s.Get(ctx, "fn.h#none"); !errors.Is(err, idempotency.ErrRecordNotFound) {
			t.Fatalf("Get missing = %v, want ErrRecordNotFound", err)
		}
	})
	t.Run("PutRefusedWhileLive", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#2", clock.Now())
		mustPut(t, s, r, clock.Now())
		clock.Advance(10 * time.Second)
		expectExists(t, f, s, inProgress(r.ID, clock.Now()), clock.Now(), r)
	})
	t.Run("PutRefusedAtExactExpiration", func(t *testing.T) {
		// #expiry < :now: a record whose expiration is now still counts.
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#3", clock.Now())
		r.InProgressExpiration = 0
		mustPut(t, s, r, clock.Now())
		now := time.Unix(r.Expiration, 0)
		expectExists(t, f, s, inProgress(r.ID, now), now, r)
	})
	t.Run("PutOverExpired", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#4", clock.Now())
		r.Status = idempotency.StatusCompleted
		mustPut(t, s, r, clock.Now())
		expectReplaced(t, s, r.ID, time.Unix(r.Expiration+1, 0))
	})
	t.Run("PutOverInProgressPastItsExpiry", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#5", clock.Now())
		mustPut(t, s, r, clock.Now())
		expectReplaced(t, s, r.ID, time.UnixMilli(r.InProgressExpiration+1))
	})
	t.Run("PutRefusedInProgressAtItsExactExpiry", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#6", clock.Now())
		mustPut(t, s, r, clock.Now())
		now := time.UnixMilli(r.InProgressExpiration)
		expectExists(t, f, s, inProgress(r.ID, now), now, r)
	})
	t.Run("PutRefusedInProgressWithoutInProgressExpiry", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#7", clock.Now())
		r.InProgressExpiration = 0
		mustPut(t, s, r, clock.Now())
		now := clock.Now().Add(30 * time.Minute)
		expectExists(t, f, s, inProgress(r.ID, now), now, r)
	})
	t.Run("PutRefusedCompletedPastInProgressExpiry", func(t *testing.T) {
		// The in-progress expiry frees only INPROGRESS records.
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#8", clock.Now())
		mustPut(t, s, r, clock.Now())
		done := idempotency.Record{ID: r.ID, Status: idempotency.StatusCompleted, Expiration: r.Expiration, Data: []byte(`{"ok":true}`)}
		if err := s.Update(context.Background(), done, r.InProgressExpiration); err != nil {
			t.Fatal(err)
		}
		done.InProgressExpiration = r.InProgressExpiration // Update leaves it
		now := time.UnixMilli(r.InProgressExpiration + 1000)
		expectExists(t, f, s, inProgress(r.ID, now), now, done)
	})
	t.Run("UpdateCompletes", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		r := inProgress("fn.h#9", clock.Now())
		r.Validation = "v1"
		mustPut(t, s, r, clock.Now())
		done := idempotency.Record{ID: r.ID, Status: idempotency.StatusCompleted, Expiration: r.Expiration + 5,
			Data: []byte(`{"n":1}`), Validation: "v1"}
		if err := s.Update(context.Background(), done, r.InProgressExpiration); err != nil {
			t.Fatal(err)
		}
		done.InProgressExpiration = r.InProgressExpiration
		equal(t, "Get", mustGet(t, s, r.ID), done)
	})
	// takenOver puts an INPROGRESS record, then a second one after the
	// first's in-progress expiry: the key taken over by a retry.
	takenOver := func(t *testing.T, s idempotency.Store, clock *clockwork.FakeClock, id string) (first, retry idempotency.Record) {
		first = inProgress(id, clock.Now())
		mustPut(t, s, first, clock.Now())
		clock.Advance(31 * time.Second)
		retry = inProgress(id, clock.Now())
		mustPut(t, s, retry, clock.Now())
		return first, retry
	}
	t.Run("UpdateOfARecordTakenOverChangesNothing", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		first, retry := takenOver(t, s, clock, "fn.h#12")
		done := idempotency.Record{ID: first.ID, Status: idempotency.StatusCompleted, Expiration: first.Expiration, Data: []byte(`{"late":true}`)}
		if err := s.Update(ctx, done, first.InProgressExpiration); !errors.Is(err, idempotency.ErrRecordChanged) {
			t.Fatalf("Update of a record taken over = %v, want ErrRecordChanged", err)
		}
		equal(t, "Get", mustGet(t, s, first.ID), retry)
		if err := s.Update(ctx, done, first.InProgressExpiration); !errors.Is(err, idempotency.ErrRecordChanged) {
			t.Fatalf("second Update = %v, want ErrRecordChanged", err)
		}
		if err := s.Update(ctx, idempotency.Record{ID: "fn.h#none", Status: idempotency.StatusCompleted, Expiration: first.Expiration}, 1); !errors.Is(err, idempotency.ErrRecordChanged) {
			t.Fatalf("Update of a missing record = %v, want ErrRecordChanged", err)
		}
		if _, err := s.Get(ctx, "fn.h#none"); !errors.Is(err, idempotency.ErrRecordNotFound) {
			t.Fatalf("Update of a missing record created it: %v", err)
		}
	})
	t.Run("DeleteOfARecordTakenOverLeavesIt", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		first, retry := takenOver(t, s, clock, "fn.h#13")
		if err := s.Delete(ctx, first.ID, first.InProgressExpiration); !errors.Is(err, idempotency.ErrRecordChanged) {
			t.Fatalf("Delete of a record taken over = %v, want ErrRecordChanged", err)
		}
		equal(t, "Get", mustGet(t, s, first.ID), retry)
		// A COMPLETED record is no one's to delete either.
		done := idempotency.Record{ID: retry.ID, Status: idempotency.StatusCompleted, Expiration: retry.Expiration, Data: []byte(`{}`)}
		if err := s.Update(ctx, done, retry.InProgressExpiration); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, retry.ID, retry.InProgressExpiration); !errors.Is(err, idempotency.ErrRecordChanged) {
			t.Fatalf("Delete of a completed record = %v, want ErrRecordChanged", err)
		}
	})
	t.Run("DeleteThenGet", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		r := inProgress("fn.h#10", clock.Now())
		mustPut(t, s, r, clock.Now())
		if err := s.Delete(ctx, r.ID, r.InProgressExpiration); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Get(ctx, r.ID); !errors.Is(err, idempotency.ErrRecordNotFound) {
			t.Fatalf("Get after Delete = %v", err)
		}
		if err := s.Delete(ctx, r.ID, r.InProgressExpiration); err != nil {
			t.Fatalf("Delete of a missing record = %v, want nil", err)
		}
		mustPut(t, s, r, clock.Now())
	})
	t.Run("ConcurrentPutsOneWins", func(t *testing.T) {
		_, clock, s := setup(t, newStore)
		var won, lost atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				err := s.Put(context.Background(), inProgress("fn.h#11", clock.Now()), clock.Now())
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, idempotency.ErrRecordExists):
					lost.Add(1)
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if won.Load() != 1 || lost.Load() != 7 {
			t.Fatalf("won %d, lost %d; want 1 and 7", won.Load(), lost.Load())
		}
	})
}

// result is what the test handlers return and the store keeps.
type result struct {
	Order string `json:"order"`
	Run   int    `json:"run"`
}

type counter struct{ n atomic.Int32 }

func (c *counter) fn(order string) func(context.Context) (result, error) {
	return func(context.Context) (result, error) {
		return result{Order: order, Run: int(c.n.Add(1))}, nil
	}
}

func config(clock clockwork.Clock) idempotency.Config {
	return idempotency.Config{FunctionName: "fn", Name: "charge", EventKeyJMESPath: "order", Clock: clock,
		Logger: slog.New(slog.DiscardHandler)}
}

type order struct {
	Order  string `json:"order"`
	Amount int    `json:"amount"`
}

func runStateMachine(t *testing.T, newStore NewStore) {
	t.Run("FirstCallRunsAndStores", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		var c counter
		got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1"))
		if err != nil || got != (result{"o-1", 1}) {
			t.Fatalf("Do = %+v, %v", got, err)
		}
		hash, _ := idempotency.Hash("o-1")
		r := mustGet(t, s, "fn.charge#"+hash)
		if r.Status != idempotency.StatusCompleted || string(r.Data) != `{"order":"o-1","run":1}` ||
			r.Expiration != clock.Now().Add(time.Hour).Unix() {
			t.Fatalf("stored %+v", r)
		}
	})
	t.Run("RepeatReturnsStoredResultWithoutRunning", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		var c counter
		first, _ := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1"))
		clock.Advance(59 * time.Minute)
		again, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1"))
		if err != nil || again != first || c.n.Load() != 1 {
			t.Fatalf("repeat = %+v, %v after %d runs; want %+v from 1 run", again, err, c.n.Load(), first)
		}
		// Another key runs.
		if other, err := idempotency.Do(ctx, s, config(clock), order{"o-2", 5}, c.fn("o-2")); err != nil || other.Run != 2 {
			t.Fatalf("other key = %+v, %v", other, err)
		}
	})
	t.Run("ExpiredRecordRunsAgain", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		var c counter
		cfg := config(clock)
		cfg.ExpiresAfter = 10 * time.Minute
		idempotency.Do(ctx, s, cfg, order{"o-1", 5}, c.fn("o-1"))
		clock.Advance(10 * time.Minute) // expiration == now: still counts
		if got, _ := idempotency.Do(ctx, s, cfg, order{"o-1", 5}, c.fn("o-1")); got.Run != 1 {
			t.Fatalf("at expiration: run %d, want the stored 1", got.Run)
		}
		clock.Advance(time.Second)
		if got, err := idempotency.Do(ctx, s, cfg, order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 2 {
			t.Fatalf("after expiry = %+v, %v; want a second run", got, err)
		}
	})
	t.Run("ConcurrentDuplicateIsAlreadyInProgress", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		started, release := make(chan struct{}), make(chan struct{})
		done := make(chan error, 1)
		go func() {
			_, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, func(context.Context) (result, error) {
				close(started)
				<-release
				return result{Order: "o-1", Run: 1}, nil
			})
			done <- err
		}()
		<-started
		var c counter
		_, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1"))
		if !errors.Is(err, idempotency.ErrAlreadyInProgress) || c.n.Load() != 0 {
			t.Fatalf("duplicate = %v (ran %d), want ErrAlreadyInProgress", err, c.n.Load())
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 1 || c.n.Load() != 0 {
			t.Fatalf("after the first finished = %+v, %v", got, err)
		}
	})
	t.Run("InProgressExpiresAtTheDeadline", func(t *testing.T) {
		// A crashed or timed-out execution holds the key until its
		// deadline (in_progress_expiration), not until the record expires.
		ctx, clock, s := setup(t, newStore)
		dctx, cancel := clockwork.WithTimeout(ctx, clock, 30*time.Second)
		defer cancel()
		hash, _ := idempotency.Hash("o-1")
		id := "fn.charge#" + hash
		started, release, finished := make(chan struct{}), make(chan struct{}), make(chan struct{})
		go func() {
			defer close(finished)
			idempotency.Do(dctx, s, config(clock), order{"o-1", 5}, func(context.Context) (result, error) {
				close(started)
				<-release
				return result{}, errors.New("late")
			})
		}()
		<-started
		defer func() { close(release); <-finished }()
		r := mustGet(t, s, id)
		if want := Start.Add(30 * time.Second).UnixMilli(); r.InProgressExpiration != want || r.Status != idempotency.StatusInProgress {
			t.Fatalf("in-progress record %+v, want in_progress_expiration %d (the deadline)", r, want)
		}
		var c counter
		clock.Advance(30 * time.Second)
		if _, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); !errors.Is(err, idempotency.ErrAlreadyInProgress) {
			t.Fatalf("at the deadline = %v, want ErrAlreadyInProgress", err)
		}
		clock.Advance(time.Millisecond)
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 1 {
			t.Fatalf("past the deadline = %+v, %v; want a run", got, err)
		}
	})
	// lateThenRetry starts a call with a 30 s deadline whose handler
	// blocks until late is sent its outcome, moves the clock past the
	// deadline, and starts a retry (no deadline) whose handler blocks
	// until retryDone is closed and then returns run 2. It returns the
	// late call's and the retry's answers.
	lateThenRetry := func(t *testing.T, ctx context.Context, clock *clockwork.FakeClock, s idempotency.Store) (late chan error, lateDone, retryAnswer chan result, retryDone chan struct{}) {
		dctx, cancel := clockwork.WithTimeout(ctx, clock, 30*time.Second)
		t.Cleanup(cancel)
		late, lateDone = make(chan error), make(chan result, 1)
		started := make(chan struct{})
		go func() {
			got, err := idempotency.Do(dctx, s, config(clock), order{"o-1", 5}, func(context.Context) (result, error) {
				close(started)
				return result{Order: "o-1", Run: 1}, <-late
			})
			if err != nil {
				got.Order = err.Error()
			}
			lateDone <- got
		}()
		<-started
		clock.Advance(31 * time.Second)
		retryStarted, retryDone, retryAnswer := make(chan struct{}), make(chan struct{}), make(chan result, 1)
		go func() {
			got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, func(context.Context) (result, error) {
				close(retryStarted)
				<-retryDone
				return result{Order: "o-1", Run: 2}, nil
			})
			if err != nil {
				got.Order = err.Error()
			}
			retryAnswer <- got
		}()
		<-retryStarted
		return late, lateDone, retryAnswer, retryDone
	}
	t.Run("ALateHandlersErrorLeavesTheRetrysRecord", func(t *testing.T) {
		// Powertools deletes unconditionally: the late handler's error
		// removed the running retry's record and a third call ran beside it.
		ctx, clock, s := setup(t, newStore)
		late, lateDone, retryAnswer, retryDone := lateThenRetry(t, ctx, clock, s)
		late <- errors.New("late failure")
		if got := <-lateDone; got.Order != "late failure" {
			t.Fatalf("late call = %+v, want its own error", got)
		}
		var c counter
		if _, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); !errors.Is(err, idempotency.ErrAlreadyInProgress) || c.n.Load() != 0 {
			t.Fatalf("a third call while the retry runs = %v (ran %d), want ErrAlreadyInProgress", err, c.n.Load())
		}
		close(retryDone)
		if got := <-retryAnswer; got.Run != 2 {
			t.Fatalf("retry = %+v", got)
		}
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 2 || c.n.Load() != 0 {
			t.Fatalf("after the retry = %+v, %v; want its stored run 2", got, err)
		}
	})
	t.Run("ALateHandlersResultLeavesTheRetrysRecord", func(t *testing.T) {
		// Unconditionally, the late result was saved over the running
		// retry's INPROGRESS record.
		ctx, clock, s := setup(t, newStore)
		late, lateDone, retryAnswer, retryDone := lateThenRetry(t, ctx, clock, s)
		late <- nil
		if got := <-lateDone; got.Run != 1 {
			t.Fatalf("late call = %+v, want its result returned unsaved", got)
		}
		hash, _ := idempotency.Hash("o-1")
		if r := mustGet(t, s, "fn.charge#"+hash); r.Status != idempotency.StatusInProgress {
			t.Fatalf("record after the late result: %+v, want the retry's INPROGRESS record", r)
		}
		close(retryDone)
		<-retryAnswer
		var c counter
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 2 {
			t.Fatalf("after the retry = %+v, %v; want the retry's stored run 2", got, err)
		}
	})
	t.Run("NoDeadlineHoldsForExpiresAfter", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		hash, _ := idempotency.Hash("o-1")
		_, _ = idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, func(ctx context.Context) (result, error) {
			r := mustGet(t, s, "fn.charge#"+hash)
			if want := Start.Add(time.Hour).UnixMilli(); r.InProgressExpiration != want {
				t.Errorf("in_progress_expiration %d, want %d", r.InProgressExpiration, want)
			}
			return result{}, nil
		})
	})
	t.Run("HandlerErrorDeletesTheRecord", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		boom := errors.New("boom")
		_, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, func(context.Context) (result, error) { return result{}, boom })
		if err != boom {
			t.Fatalf("Do = %v, want the handler's error unchanged", err)
		}
		hash, _ := idempotency.Hash("o-1")
		if _, err := s.Get(ctx, "fn.charge#"+hash); !errors.Is(err, idempotency.ErrRecordNotFound) {
			t.Fatalf("record after error: %v, want deleted", err)
		}
		var c counter
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 1 {
			t.Fatalf("retry = %+v, %v; want it to run", got, err)
		}
	})
	t.Run("PanicDeletesTheRecord", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		func() {
			defer func() {
				if recover() == nil {
					t.Fatal("panic swallowed")
				}
			}()
			idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, func(context.Context) (result, error) { panic("bad") })
		}()
		var c counter
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 1 {
			t.Fatalf("after panic = %+v, %v; want a run", got, err)
		}
	})
	t.Run("ValidationMismatch", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		cfg := config(clock)
		cfg.PayloadValidationJMESPath = "amount"
		var c counter
		if _, err := idempotency.Do(ctx, s, cfg, order{"o-1", 5}, c.fn("o-1")); err != nil {
			t.Fatal(err)
		}
		if got, err := idempotency.Do(ctx, s, cfg, order{"o-1", 5}, c.fn("o-1")); err != nil || got.Run != 1 {
			t.Fatalf("same payload = %+v, %v", got, err)
		}
		if _, err := idempotency.Do(ctx, s, cfg, order{"o-1", 6}, c.fn("o-1")); !errors.Is(err, idempotency.ErrValidationMismatch) || c.n.Load() != 1 {
			t.Fatalf("changed amount = %v (runs %d), want ErrValidationMismatch", err, c.n.Load())
		}
		// Without validation the changed payload is a plain repeat.
		if got, err := idempotency.Do(ctx, s, config(clock), order{"o-1", 6}, c.fn("o-1")); err != nil || got.Run != 1 {
			t.Fatalf("no validation = %+v, %v", got, err)
		}
	})
	t.Run("NoKeyWarnsAndRuns", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		var c counter
		for i := 1; i <= 2; i++ {
			got, err := idempotency.Do(ctx, s, config(clock), map[string]any{"other": 1}, c.fn(""))
			if err != nil || got.Run != i {
				t.Fatalf("call %d = %+v, %v; want a run each time", i, got, err)
			}
		}
	})
	t.Run("NoKeyRaises", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		cfg := config(clock)
		cfg.RaiseOnNoIdempotencyKey = true
		var c counter
		if _, err := idempotency.Do(ctx, s, cfg, map[string]any{"order": ""}, c.fn("")); !errors.Is(err, idempotency.ErrNoIdempotencyKey) || c.n.Load() != 0 {
			t.Fatalf("Do = %v, want ErrNoIdempotencyKey and no run", err)
		}
	})
	t.Run("WrapRawHandler", func(t *testing.T) {
		ctx, clock, s := setup(t, newStore)
		var runs atomic.Int32
		cfg := idempotency.Config{FunctionName: "fn", Clock: clock, EventKeyJMESPath: "powertools_json(body).id"}
		h, err := idempotency.Wrap(s, cfg, func(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) {
			runs.Add(1)
			return json.RawMessage(`{"statusCode":200}`), nil
		})
		if err != nil {
			t.Fatal(err)
		}
		ev := json.RawMessage(`{"body":"{\"id\":42}","headers":{"x":"1"}}`)
		for range 2 {
			out, err := h(ctx, ev)
			if err != nil || string(out) != `{"statusCode":200}` {
				t.Fatalf("h = %s, %v", out, err)
			}
		}
		if runs.Load() != 1 {
			t.Fatalf("ran %d times", runs.Load())
		}
	})
}
