package engine_test

import (
	"slices"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

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

// TestEveryBucketMethodHandsBackNames: AWS resource names may begin or
// end with '.', or hold "..": Scheduler schedule names match
// ^[0-9a-zA-Z-_.]+$ (Scheduler API Reference, CreateSchedule), an
// EventBridge bus name may hold '.' (CreateEventBus), a DynamoDB
// TableName is [a-zA-Z0-9_.-]+ (CreateTable). A bucket stores such a name
// escaped, and every method must take and give the name: the watchers
// and listers (WatchAll, Watch, WatchFiltered, ListKeys,
// ListKeysFiltered) and every entry's Key(). Before, only the methods
// taking one key escaped it: WatchAll handed out "default/tick=2E" for
// the schedule "default/tick.", which the scheduler and EventBridge held
// as a second resource beside the one their calls used, and a filter
// built from such a name (".ab.>") was refused ("nats: invalid key").
// Keys stored escaped before the fix read back as names.
func TestEveryBucketMethodHandsBackNames(t *testing.T) {
	e := open(t, engine.Config{DataDir: t.TempDir()})
	ctx := t.Context()
	kv, err := e.Bucket(ctx, "names2")
	if err != nil {
		t.Fatal(err)
	}
	// As the bucket held it before the fix: escaped by hand.
	raw, err := e.JS.KeyValue(ctx, "names2")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Put(ctx, "old=2E", []byte("old.")); err != nil {
		t.Fatal(err)
	}
	names := []string{".ab.L1", "a..b.L3", "a.b.L4", "ab..L2", "ab.L5", "default/tick.", "old.", "x"}
	for _, n := range names {
		if n != "old." {
			if _, err := kv.Put(ctx, n, []byte(n)); err != nil {
				t.Fatalf("Put %q: %v", n, err)
			}
		}
	}
	for _, n := range names {
		got, err := kv.Get(ctx, n)
		if err != nil || got.Key() != n || string(got.Value()) != n {
			t.Fatalf("Get %q: %v %v", n, got, err)
		}
		if got, err := kv.GetRevision(ctx, n, got.Revision()); err != nil || got.Key() != n {
			t.Fatalf("GetRevision %q: %v %v", n, got, err)
		}
		h, err := kv.History(ctx, n)
		if err != nil || len(h) != 1 || h[0].Key() != n {
			t.Fatalf("History %q: %v %v", n, h, err)
		}
	}
	if keys, err := kv.Keys(ctx); err != nil || !slices.Equal(keys, names) {
		t.Fatalf("Keys: %q %v, want %q", keys, err, names)
	}
	list := func(l jetstream.KeyLister, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for k := range l.Keys() {
			out = append(out, k)
		}
		slices.Sort(out)
		return out
	}
	if got := list(kv.ListKeys(ctx)); !slices.Equal(got, names) {
		t.Fatalf("ListKeys: %q, want %q", got, names)
	}
	filtered := map[string][]string{
		">":             names,
		".ab.>":         {".ab.L1"},
		"ab..>":         {"ab..L2"},
		"a..b.>":        {"a..b.L3"},
		"a.b.>":         {"a.b.L4"},
		"ab.>":          {"ab.L5"},
		"ab..*":         {"ab..L2"},
		"*":             {"x"},
		"default/tick.": {"default/tick."},
		"old.":          {"old."},
	}
	for f, want := range filtered {
		if got := list(kv.ListKeysFiltered(ctx, f)); !slices.Equal(got, want) {
			t.Errorf("ListKeysFiltered(%q): %q, want %q", f, got, want)
		}
	}
	if got := list(kv.ListKeysFiltered(ctx, ".ab.>", "a.b.>", "x")); !slices.Equal(got, []string{".ab.L1", "a.b.L4", "x"}) {
		t.Errorf("ListKeysFiltered of three: %q", got)
	}

	// watched: the initial values, then a put and a delete of a dotted name.
	watch := func(want []string) func(jetstream.KeyWatcher, error) jetstream.KeyWatcher {
		return func(w jetstream.KeyWatcher, err error) jetstream.KeyWatcher {
			t.Helper()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { w.Stop() })
			var got []string
			for e := range w.Updates() {
				if e == nil {
					break
				}
				got = append(got, e.Key())
			}
			slices.Sort(got)
			if !slices.Equal(got, want) {
				t.Fatalf("watched %q, want %q", got, want)
			}
			return w
		}
	}
	all := watch(names)(kv.WatchAll(ctx))
	one := watch([]string{"default/tick."})(kv.Watch(ctx, "default/tick."))
	dotted := watch([]string{"ab..L2"})(kv.Watch(ctx, "ab..>"))
	several := watch([]string{"ab..L2", "default/tick."})(kv.WatchFiltered(ctx, []string{"ab..>", "default/tick."}))
	if _, err := kv.Put(ctx, "ab..L9", []byte("new")); err != nil {
		t.Fatal(err)
	}
	if err := kv.Delete(ctx, "default/tick."); err != nil {
		t.Fatal(err)
	}
	next := func(w jetstream.KeyWatcher, key string, op jetstream.KeyValueOp) {
		t.Helper()
		e := <-w.Updates()
		if e == nil || e.Key() != key || e.Operation() != op {
			t.Fatalf("watched %v, want %s %v", e, key, op)
		}
	}
	next(all, "ab..L9", jetstream.KeyValuePut)
	next(all, "default/tick.", jetstream.KeyValueDelete)
	next(one, "default/tick.", jetstream.KeyValueDelete)
	next(dotted, "ab..L9", jetstream.KeyValuePut)
	next(several, "ab..L9", jetstream.KeyValuePut)
	next(several, "default/tick.", jetstream.KeyValueDelete)
	if err := all.Stop(); err != nil {
		t.Fatal(err)
	}
	for range all.Updates() { // closes once stopped
	}
}
