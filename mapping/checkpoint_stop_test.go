package mapping_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

// TestACleanStopStoresTheFinalCheckpoint: a mapping that stops cleanly
// stores its checkpoint once more after its lanes have stopped, so what
// it processed since its last periodic write is not delivered again
// after a restart. With a CheckpointInterval of an hour the periodic
// writer stores once (after records 1-3) and then waits; records 4-6 are
// covered by the final write alone.
func TestACleanStopStoresTheFinalCheckpoint(t *testing.T) {
	opts, rn, arn, f := startHourlyCheckpoints(t)
	first := put(t, rn, "src", "k", "1", "2", "3")
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: "fn", BatchSize: 3})
	testenv.Eventually(t, wait, "the periodic checkpoint write after records 1-3", func() bool {
		st, err := rn.Mappings.Status(m.UUID)
		return err == nil && len(st.Shards) == 1 && seqCmp(st.Shards[0].Checkpoint, first[2]) > 0
	})
	put(t, rn, "src", "k", "4", "5", "6")
	testenv.Eventually(t, wait, "records 4-6 processed", func() bool { return f.processed() == 6 })
	restartProcessesEachOnce(t, rn, opts, m.UUID, f, "the final checkpoint was not stored")
}

// TestAPeriodicWriteCutShortByCloseDoesNotFenceTheFinalOne: a periodic
// checkpoint write that landed while Close cancelled it (its reply lost)
// moved the key's revision; the final write must take that revision as
// its own, not refuse itself as fenced, so records 4-6, processed after
// it, are not delivered again after the restart.
func TestAPeriodicWriteCutShortByCloseDoesNotFenceTheFinalOne(t *testing.T) {
	opts, rn, arn, f := startHourlyCheckpoints(t)
	landed := make(chan struct{})
	var once sync.Once
	t.Cleanup(func() { mapping.SetWriteReplyLost(nil) })
	mapping.SetWriteReplyLost(func(ctx context.Context, key string) error {
		cut := false
		if strings.Count(key, ".") == 1 && f.processed() == 3 { // the periodic write after 1-3
			once.Do(func() { cut = true })
		}
		if !cut {
			return nil
		}
		close(landed)
		<-ctx.Done() // until Close
		return ctx.Err()
	})
	put(t, rn, "src", "k", "1", "2", "3")
	m := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: "fn", BatchSize: 3})
	select {
	case <-landed:
	case <-time.After(wait):
		t.Fatalf("no periodic checkpoint write after records 1-3; calls %v", f.Calls())
	}
	put(t, rn, "src", "k", "4", "5", "6")
	testenv.Eventually(t, wait, "records 4-6 processed", func() bool { return f.processed() == 6 })
	restartProcessesEachOnce(t, rn, opts, m.UUID, f, "the final checkpoint write was refused")
}

// startHourlyCheckpoints starts a process whose mappings store their
// checkpoint at most once an hour (so the final write alone covers what
// follows the first), with a one-shard stream "src" and a recorder "fn".
func startHourlyCheckpoints(t *testing.T) (testenv.Options, *runnel.Runnel, string, *recorder) {
	t.Helper()
	opts := testenv.Options{Dir: t.TempDir(), Mappings: mapping.Options{CheckpointInterval: time.Hour}}
	rn := testenv.Start(t, opts)
	arn := createStream(t, rn, "src", 1)
	return opts, rn, arn, newRecorder(t, rn, function.Config{FunctionName: "fn"}, nil)
}

// restartProcessesEachOnce stops rn cleanly, starts the process again and
// requires each of the records 1-6 to have been processed exactly once.
func restartProcessesEachOnce(t *testing.T, rn *runnel.Runnel, opts testenv.Options, uuid string, f *recorder, why string) {
	t.Helper()
	if err := rn.Close(); err != nil {
		t.Fatal(err)
	}
	rn2 := testenv.Start(t, opts)
	settle(t, rn2, uuid, "src")
	for _, d := range []string{"1", "2", "3", "4", "5", "6"} {
		if n := f.processedCount(d); n != 1 {
			t.Fatalf("record %s processed %d times, want once (calls %v): %s", d, n, f.Calls(), why)
		}
	}
}
