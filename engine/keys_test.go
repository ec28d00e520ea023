package engine_test

import (
	"slices"
	"testing"

	"github.com/runnel-dev/runnel/engine"
)

// TestBucketKeysAreNames stores names Kinesis and DynamoDB allow that are
// not NATS keys (a leading or trailing '.', "..") and reads them back, by
// name and in Keys, as they were given.
func TestBucketKeysAreNames(t *testing.T) {
	e := open(t, engine.Config{DataDir: t.TempDir()})
	ctx := t.Context()
	kv, err := e.Bucket(ctx, "names")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{".000", "a..b", "end.", "plain.name", "x"}
	for _, n := range names {
		if _, err := kv.Create(ctx, n, []byte(n)); err != nil {
			t.Fatalf("Create %q: %v", n, err)
		}
		got, err := kv.Get(ctx, n)
		if err != nil || string(got.Value()) != n {
			t.Fatalf("Get %q: %v %v", n, got, err)
		}
	}
	keys, err := kv.Keys(ctx)
	slices.Sort(keys)
	if err != nil || !slices.Equal(keys, names) {
		t.Fatalf("Keys: %q %v, want %q", keys, err, names)
	}
	if err := kv.Purge(ctx, ".000"); err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Get(ctx, ".000"); err == nil {
		t.Fatal("Get after Purge found the key")
	}
}
