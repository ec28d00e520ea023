package eventbus

// Replays in a cluster. One process at a time runs the replays: the
// holder of the lease "eventbridge-replays" (package lease, as the
// scheduled rules' "eventbridge-schedules"). It watches the bucket
// "runnel_event_replays" and runs every unfinished replay (STARTING,
// RUNNING, CANCELLING) from its saved progress (Replay.Seq), each in a
// goroutine of its own, and every replay that StartReplay stores later,
// in whatever process. When the holder's lease is lost (its process died,
// or stalled past the lease's validity) its runners stop, and the process
// that takes the lease over resumes each replay from its saved progress.
//
// Each runner saves its progress with a compare-and-set on the revision it
// wrote last. A save that finds another write there is taken in when it
// is a CancelReplay (the replay is then cancelled); any other write means
// another runner owns the replay now, and this one stops without writing
// (errReplayTaken), so the progress saved never moves backwards. A runner
// that stopped so, or could not save, is started again from the stored
// state a second later while this process holds the lease. The trap it
// closes: every process started ran the unfinished replays beside the one
// already running them (5 archived events reached a target 9 times), its
// failed saves ignored, and a replay whose process died was resumed by
// nobody until that process came back.

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ReplayLease is the lease whose holder runs the replays.
const ReplayLease = "eventbridge-replays"

// errReplayTaken: a replay's stored record was written by another runner
// since this one's last save; this runner stops.
var errReplayTaken = errors.New("eventbridge: the replay is run by another process now")

// errReplayCancelSeen: a replay's save found a CancelReplay; the replay's
// state is now CANCELLING (read back into it) and the save may be tried
// again.
var errReplayCancelSeen = errors.New("eventbridge: the replay was cancelled meanwhile")

// replayRestartDelay is how long a runner that stopped with its replay
// unfinished (it could not save) waits before it starts again.
const replayRestartDelay = time.Second

// unfinished reports whether a replay in state still has to run.
func unfinished(state string) bool {
	return state == ReplayStarting || state == ReplayRunning || state == ReplayCancelling
}

// runReplays runs the replays while this process holds the lease
// ReplayLease: until ctx ends (the lease lost, or Close). It returns once
// its runners have stopped.
func (s *Service) runReplays(ctx context.Context) {
	w, err := s.replayKV.WatchAll(ctx)
	if err != nil {
		s.log.Warn("eventbridge: replays not watched; trying again", "err", err)
		sleepCtx(ctx, replayRestartDelay)
		return
	}
	defer w.Stop()
	running := map[string]bool{}
	done := make(chan string)
	n := 0
	defer func() {
		for ; n > 0; n-- {
			<-done
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case name := <-done:
			n--
			delete(running, name)
		case e, ok := <-w.Updates():
			if !ok {
				return
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut || running[e.Key()] {
				continue
			}
			var r Replay
			if json.Unmarshal(e.Value(), &r) != nil || !unfinished(r.State) {
				continue
			}
			running[e.Key()] = true
			n++
			go func(name string) {
				s.superviseReplay(ctx, name)
				done <- name
			}(e.Key())
		}
	}
}

// superviseReplay runs one replay from its stored state until it is
// finished, deleted, or ctx ends; a runner that stops with the replay
// unfinished (another runner's write, a failed save) is started again
// from the stored state after replayRestartDelay.
func (s *Service) superviseReplay(ctx context.Context, name string) {
	for try := 0; ctx.Err() == nil; try++ {
		if try > 0 && !sleepCtx(ctx, replayRestartDelay) {
			return
		}
		e, err := s.replayKV.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			return
		}
		if err != nil {
			continue
		}
		var r Replay
		if json.Unmarshal(e.Value(), &r) != nil || !unfinished(r.State) {
			return
		}
		s.runReplay(ctx, r, e.Revision())
	}
}

// sleepCtx waits d (real time, as the leases do) or until ctx ends; it
// reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
