package mapping

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// A checkpoint write is fenced: once another process wrote the key since
// this one last read or wrote it, the write is refused and the stored
// value is the other process's.
func TestACheckpointWriteAfterAnotherProcessWroteTheKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	s, ck := passiveCheckpoints(t)
	key := checkpointKey("m-1", "shardId-000000000000")
	if err := s.ckPut(ctx, "m-1", key, []byte("id:5")); err != nil {
		t.Fatal(err)
	}
	if err := s.ckPut(ctx, "m-1", key, []byte("id:9")); err != nil {
		t.Fatalf("a second write by the same holder: %v", err)
	}
	anotherProcessFences(t, s, ck, key, "id:7", "id:12")
}

// A write whose reply was lost may have landed: the next write takes the
// key's revision as its own only when the key holds exactly that write's
// value; another process's write after it still fences it.
func TestAWriteWhoseReplyWasLostFencesOnlyAnotherProcess(t *testing.T) {
	ctx := context.Background()
	s, ck := passiveCheckpoints(t)
	var err error
	key := checkpointKey("m-1", "shardId-000000000000")
	lost := func(ctx context.Context, key string) error { return context.Canceled }
	if err := s.ckPut(ctx, "m-1", key, []byte("id:5")); err != nil {
		t.Fatal(err)
	}
	writeReplyLost.Store(&lost)
	err = s.ckPut(ctx, "m-1", key, []byte("id:9"))
	writeReplyLost.Store(nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a write whose reply was lost: %v", err)
	}
	if err := s.ckPut(ctx, "m-1", key, []byte("id:12")); err != nil {
		t.Fatalf("the next write after this process's own landed write: %v", err)
	}
	writeReplyLost.Store(&lost)
	_ = s.ckPut(ctx, "m-1", key, []byte("id:15"))
	writeReplyLost.Store(nil)
	anotherProcessFences(t, s, ck, key, "id:13", "id:20") // the new holder, after it
}

// passiveCheckpoints opens an engine and a passive Service on its
// checkpoint bucket (no leases: ckPut alone), closed at the end of t.
func passiveCheckpoints(t *testing.T) (*Service, jetstream.KeyValue) {
	t.Helper()
	ctx := context.Background()
	eng, err := engine.Open(ctx, engine.Config{DataDir: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	ck, err := eng.Bucket(ctx, "runnel_checkpoints")
	if err != nil {
		t.Fatal(err)
	}
	return &Service{eng: eng, ck: ck, opts: Options{Passive: true}, own: owner{revs: map[string]uint64{}}}, ck
}

// anotherProcessFences writes theirs to key as another process would,
// then requires s's write of mine to be refused (errFenced) and theirs
// to stay stored.
func anotherProcessFences(t *testing.T, s *Service, ck jetstream.KeyValue, key, theirs, mine string) {
	t.Helper()
	ctx := context.Background()
	if _, err := ck.Put(ctx, key, []byte(theirs)); err != nil {
		t.Fatal(err)
	}
	if err := s.ckPut(ctx, "m-1", key, []byte(mine)); !errors.Is(err, errFenced) {
		t.Fatalf("a write after another process's: %v, want errFenced", err)
	}
	e, err := ck.Get(ctx, key)
	if err != nil || string(e.Value()) != theirs {
		t.Fatalf("stored %q, %v; want the other process's %s", e.Value(), err, theirs)
	}
}
