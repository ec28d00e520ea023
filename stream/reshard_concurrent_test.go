package stream_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// TestUpdateShardCountCompletesUnderSteadyTagAndRetentionWrites:
// UpdateShardCount "returns immediately and sets the status of the
// stream to UPDATING. After the update is complete, Kinesis Data Streams
// sets the status of the stream back to ACTIVE" (API_UpdateShardCount),
// and AddTagsToStream and Increase/DecreaseStreamRetentionPeriod need
// the stream ACTIVE, else ResourceInUseException (Kinesis model). With a
// writer tagging (or changing the retention of) the stream over and over
// during UpdateShardCount(8 to 12), the reshard completes: ACTIVE, 12
// open shards, every closed shard sealed, one scaling counted; each
// write either succeeded or was ResourceInUseException (and a reshard
// arriving while a retention change holds the stream UPDATING is
// refused as such, and tried again). Before, the
// first write between the reshard's read and its write failed
// UpdateShardCount with "was changed by another request" (every time
// with a steady writer), and one between its rounds left the stream
// UPDATING with the first round's shards open (128 for 64 to 96) and
// their parents unsealed, which the retention pass later turned ACTIVE
// as they were.
func TestUpdateShardCountCompletesUnderSteadyTagAndRetentionWrites(t *testing.T) {
	for _, mode := range []string{"tags", "retention"} {
		t.Run(mode, func(t *testing.T) {
			rn := testenv.Start(t, testenv.Options{Clock: newClock()})
			ctx := t.Context()
			createStream(t, rn, "r", 8)
			done := make(chan struct{})
			var wg sync.WaitGroup
			var ok, refused int
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := 0; ; k++ {
					select {
					case <-done:
						return
					default:
					}
					var err error
					if mode == "tags" {
						err = rn.Streams.AddTagsToStream(ctx, "r", map[string]string{"team": "a"})
					} else {
						err = rn.Streams.UpdateRetentionPeriod(ctx, "r", 48+k%2)
					}
					switch {
					case err == nil:
						ok++
					case errors.Is(err, awserr.ErrResourceInUse):
						refused++
					default:
						t.Errorf("%s write: %v", mode, err)
						return
					}
					runtime.Gosched()
				}
			}()
			// A retention change holds the stream UPDATING while its
			// shards take the new period: a reshard arriving then is
			// refused before it changes anything, as any call on a stream
			// that is not ACTIVE; it is tried again. Tag writes never
			// hold the stream: the first call succeeds.
			var out *stream.UpdateShardCountOutput
			var err error
			calls := 0
			for calls < 100000 {
				calls++
				out, err = rn.Streams.UpdateShardCount(ctx, "r", 12, stream.UniformScaling)
				if mode == "tags" || err == nil || !strings.Contains(err.Error(), "not ACTIVE, instead in state UPDATING") {
					break
				}
				runtime.Gosched()
			}
			close(done)
			wg.Wait()
			t.Logf("%s writes: %d stored, %d refused; UpdateShardCount calls: %d", mode, ok, refused, calls)
			if err != nil {
				t.Fatalf("UpdateShardCount(8 to 12) under steady %s writes: %v", mode, err)
			}
			if out.CurrentShardCount != 8 || out.TargetShardCount != 12 {
				t.Errorf("UpdateShardCount = %+v", out)
			}
			d := describe(t, rn, "r")
			if d.StreamStatus != stream.StatusActive || d.OpenShardCount() != 12 || len(d.Scalings) != 1 {
				t.Errorf("after: StreamStatus %s, %d open, %d scalings counted; want ACTIVE, 12, 1", d.StreamStatus, d.OpenShardCount(), len(d.Scalings))
			}
			for _, sh := range d.Shards {
				if !sh.Open() && sh.SequenceNumberRange.EndingSequenceNumber == "" {
					t.Errorf("closed shard %s has no EndingSequenceNumber", sh.ShardID)
				}
			}
			if _, err := rn.Streams.UpdateShardCount(ctx, "r", 8, stream.UniformScaling); err != nil {
				t.Errorf("UpdateShardCount right after: %v", err)
			}
		})
	}
}
