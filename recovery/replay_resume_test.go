package recovery_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// resumeFn records the data of every record it processes; while failBad
// is set a batch holding "bad" fails.
type resumeFn struct {
	mu      sync.Mutex
	failBad bool
	seen    []string
}

func (f *resumeFn) HandleKinesis(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range ev.Records {
		if f.failBad && string(r.Kinesis.Data) == "bad" {
			return events.KinesisEventResponse{}, errors.New("bad record")
		}
	}
	for _, r := range ev.Records {
		f.seen = append(f.seen, string(r.Kinesis.Data))
	}
	return events.KinesisEventResponse{}, nil
}

// twoShardReplay makes a stream "multi" of 2 shards with 20 records in
// each (at least), the 6th of shard 0 being "bad", and a function "replayed" of fn.
// It returns the time range that holds them all and every record's data.
func twoShardReplay(t *testing.T, fn *resumeFn) (*recovery.Services, time.Time, time.Time, []string) {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "multi", ShardCount: 2}); err != nil {
		t.Fatal(err)
	}
	from := time.Now().Add(-time.Minute)
	perShard := map[string]int{}
	var all []string
	bad := false
	for i := 0; perShard["shardId-000000000000"] < 20 || perShard["shardId-000000000001"] < 20; i++ {
		k := fmt.Sprintf("pk%d", i)
		r, err := rn.Streams.PutRecord(ctx, "multi", stream.PutRecordsRequestEntry{PartitionKey: k, Data: []byte("ok-" + k)})
		if err != nil {
			t.Fatal(err)
		}
		perShard[r.ShardId]++
		all = append(all, "ok-"+k)
		if !bad && r.ShardId == "shardId-000000000000" && perShard[r.ShardId] == 5 {
			if _, err := rn.Streams.PutRecord(ctx, "multi", stream.PutRecordsRequestEntry{PartitionKey: k, Data: []byte("bad")}); err != nil {
				t.Fatal(err)
			}
			perShard[r.ShardId]++
			all = append(all, "bad")
			bad = true
		}
	}
	function.Register("resume-replay", fn.HandleKinesis)
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "replayed", Handler: "resume-replay", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	return &recovery.Services{Streams: rn.Streams, Functions: rn.Functions}, from, time.Now().Add(time.Minute), all
}

// replayLeft replays every range res.Resume lists, as the printed
// commands do (a sequence range each).
func replayLeft(t *testing.T, svc *recovery.Services, res *recovery.ReplayResult) {
	t.Helper()
	for _, r := range res.Resume {
		if r.State == recovery.ResumeDone {
			continue
		}
		if _, err := recovery.Replay(context.Background(), *svc, recovery.ReplayOptions{
			Range:  recovery.ReplayRange{Stream: "multi", FromSeq: r.FromSequenceNumber, ToSeq: r.ToSequenceNumber},
			Target: recovery.ReplayTarget{Function: "replayed"}, BatchSize: 1}); err != nil {
			t.Fatalf("replay of what is left of %s: %v", r.ShardID, err)
		}
	}
}

func sorted(s []string) string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return strings.Join(s, " ")
}

// TestAReplayThatStopsSaysWhereToResumeEveryShard: replay's help says it
// "stops at the first batch the target rejects and says where to resume".
// Before, a time range over every shard that failed in shard 0 gave only
// shard 0's resume point (ResumeSequenceNumber, printed as "resume with
// --from-seq X (shard)", which needs a --to-seq and names one shard):
// following it never replayed shard 1's records. A read that failed
// (Ctrl-C while reading) gave no resume point at all. Now Resume lists
// every shard of the plan (done, stopped, not read) with the sequence
// range left; replaying those ranges replays every record not replayed,
// each once.
func TestAReplayThatStopsSaysWhereToResumeEveryShard(t *testing.T) {
	t.Run("a batch the target rejects", func(t *testing.T) {
		fn := &resumeFn{failBad: true}
		svc, from, to, all := twoShardReplay(t, fn)
		res, err := recovery.Replay(context.Background(), *svc, recovery.ReplayOptions{
			Range:  recovery.ReplayRange{Stream: "multi", FromTime: from, ToTime: to},
			Target: recovery.ReplayTarget{Function: "replayed"}, BatchSize: 1})
		if err == nil || len(res.Resume) != 2 {
			t.Fatalf("Replay = %v, resume %+v; want it stopped at the bad record, with both shards in Resume", err, res.Resume)
		}
		if r := res.Resume[0]; r.State != recovery.ResumeStopped || r.FromSequenceNumber != res.ResumeSequenceNumber || r.ToSequenceNumber != res.Plan.Shards[0].ToSequenceNumber {
			t.Errorf("shard 0: %+v; want stopped from %s to %s", r, res.ResumeSequenceNumber, res.Plan.Shards[0].ToSequenceNumber)
		}
		if r := res.Resume[1]; r.State != recovery.ResumeNotRead || r.FromSequenceNumber != res.Plan.Shards[1].FromSequenceNumber || r.ToSequenceNumber != res.Plan.Shards[1].ToSequenceNumber {
			t.Errorf("shard 1: %+v; want not read, its whole range %s..%s", r, res.Plan.Shards[1].FromSequenceNumber, res.Plan.Shards[1].ToSequenceNumber)
		}
		fn.mu.Lock()
		fn.failBad = false // the cause is fixed
		fn.mu.Unlock()
		replayLeft(t, svc, res)
		if got, want := sorted(fn.seen), sorted(all); got != want {
			t.Errorf("records processed after following Resume:\n got %d: %s\nwant %d: %s", len(fn.seen), got, len(all), want)
		}
	})
	t.Run("a read that fails", func(t *testing.T) {
		fn := &resumeFn{}
		svc, from, to, all := twoShardReplay(t, fn)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// Ctrl-C once the first chunk of shard 0 (16 stored messages) is
		// read, before it is sent (batches of 100): the second progress
		// call (the first is before any read).
		calls := 0
		res, err := recovery.Replay(ctx, *svc, recovery.ReplayOptions{
			Range:  recovery.ReplayRange{Stream: "multi", FromTime: from, ToTime: to},
			Target: recovery.ReplayTarget{Function: "replayed"},
			Progress: func(done, total int64) {
				if calls++; calls == 2 {
					cancel()
				}
			}})
		if res != nil && res.Read != 16 {
			t.Errorf("read %d records before the failed read; want the first chunk, 16", res.Read)
		}
		if err == nil || res == nil || len(res.Resume) != 2 {
			t.Fatalf("Replay = %v, %+v; want it stopped with both shards in Resume", err, res)
		}
		if r := res.Resume[0]; r.State != recovery.ResumeStopped || r.FromSequenceNumber != res.Plan.Shards[0].FromSequenceNumber {
			t.Errorf("shard 0: %+v; want stopped at its first record %s", r, res.Plan.Shards[0].FromSequenceNumber)
		}
		if res.Resume[1].State != recovery.ResumeNotRead {
			t.Errorf("shard 1: %+v; want not read", res.Resume[1])
		}
		replayLeft(t, svc, res)
		if got, want := sorted(fn.seen), sorted(all); got != want {
			t.Errorf("records processed after following Resume:\n got %d: %s\nwant %d: %s", len(fn.seen), got, len(all), want)
		}
	})
}
