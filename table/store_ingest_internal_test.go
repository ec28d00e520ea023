package table

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestAFillIngestsEntriesInKeyOrderAndBatchesTheRest: a table's keys,
// cleared over keys the store held (a range deletion), are filled with
// entries as a snapshot object lists them: in the store's key order
// (ingested as files), then, for an object whose order breaks (a heap
// holder's may), the rest through batches. Every entry reads back as
// given, the count and size are those of the entries and survive a new
// open, the key filter, built after the fill, knows every key, and no
// file is left behind.
func TestAFillIngestsEntriesInKeyOrderAndBatchesTheRest(t *testing.T) {
	// Entries for three chunks to the file writer (fillChunkKeys), so that
	// a chunk's buffer used again while the writer reads it would show.
	const n = 3*fillChunkKeys - 100
	for _, tc := range []struct {
		name    string
		inOrder int // of n entries, how many come first in key order
	}{{"all in key order", n}, {"order broken in the third chunk", 2*fillChunkKeys + 7}, {"no order", 0}} {
		t.Run(tc.name, func(t *testing.T) {
			ks := []KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}, {AttributeName: "sk", KeyType: KeyTypeRange}}
			defs := []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}, {AttributeName: "sk", AttributeType: TypeN}}
			sc, err := newSchema(ks, defs)
			if err != nil {
				t.Fatal(err)
			}
			x := diskIndexFor(t, sc).(*diskIndex)
			rng := rand.New(rand.NewPCG(3, uint64(tc.inOrder)))
			es := make([]entry, n)
			for i := range es {
				es[i] = entry{h: hashKey("S", "p"+strconv.Itoa(i%700)), rk: strconv.Itoa(i), pos: uint64(i + 1), size: int32(10 + i%50), shard: uint16(i % 3), exp: int64(i % 2)}
			}
			// The store held these keys (and others) with other values,
			// then the fill's caller cleared them.
			for i := range n + 500 {
				e := entry{h: hashKey("S", "p"+strconv.Itoa(i%700)), rk: strconv.Itoa(i), pos: 99999, size: 1}
				x.ReplaceOrInsert(e)
			}
			if err := x.reset(); err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(es, func(a, b entry) int { return bytes.Compare(x.key(a.h, a.rk), x.key(b.h, b.rk)) })
			rest := es[tc.inOrder:]
			rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })

			fill, err := x.newFill(n)
			if err != nil {
				t.Fatal(err)
			}
			var err2 error
			for _, e := range es {
				if err2 = fill.add(e); err2 != nil {
					break
				}
			}
			if err := fill.finish(err2); err != nil {
				t.Fatal(err)
			}
			x.filter.mu.Lock()
			built := x.filter.built
			x.filter.mu.Unlock()
			<-built // the filter's build after the ingestion
			if !x.filter.ready.Load() {
				t.Fatal("the key filter is not ready after its build")
			}
			var size int64
			for _, e := range es {
				size += int64(e.size)
				got, ok := x.Get(entry{h: e.h, rk: e.rk})
				if !ok || got.pos != e.pos || got.size != e.size || got.shard != e.shard || got.exp != e.exp {
					t.Fatalf("entry %x/%s: got %+v (found %v), want %+v", e.h[:4], e.rk, got, ok, e)
				}
				if !x.filter.mayHold(x.key(e.h, e.rk)) {
					t.Fatalf("the key filter does not know %x/%s", e.h[:4], e.rk)
				}
			}
			if x.Len() != n || x.Bytes() != size {
				t.Fatalf("count %d, size %d; want %d, %d", x.Len(), x.Bytes(), n, size)
			}
			y, err := openDiskIndex(x.st, "table-id", sc.rngType)
			if err != nil {
				t.Fatal(err)
			}
			if y.Len() != n || y.Bytes() != size {
				t.Fatalf("opened again: count %d, size %d; want %d, %d", y.Len(), y.Bytes(), n, size)
			}
			found := 0
			y.Ascend(func(entry) bool { found++; return true })
			if found != n {
				t.Fatalf("opened again: %d entries, want %d (the cleared ones must stay gone)", found, n)
			}
			if left, _ := filepath.Glob(filepath.Join(x.st.dir, ingestDirPattern)); len(left) > 0 {
				t.Fatalf("the ingestion's directory is left behind: %v", left)
			}
		})
	}
}

// TestTheStoreOpenRemovesFilesACrashLeftMidFill: a fill's files, left by
// a crash before their ingestion, are removed at the store's next open
// (they would otherwise stay on disk for good).
func TestTheStoreOpenRemovesFilesACrashLeftMidFill(t *testing.T) {
	dir := t.TempDir()
	left := filepath.Join(dir, "ingest-1234")
	if err := os.MkdirAll(left, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(left, "000000.sst"), []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(dir, 8<<20, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.close(false)
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("%s is still there after the open (stat: %v)", left, err)
	}
}
