package table

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// TestIndexMatchesAReference runs random creations, replacements and
// deletions, with ordered reads in between, against a plain map: every
// point read and every ordered read (which settles the pending keys)
// agrees, and ordered reads come in key order.
func TestIndexMatchesAReference(t *testing.T) {
	t.Run("partition and sort key", func(t *testing.T) { testIndex(t, false) })
	t.Run("partition key only", func(t *testing.T) { testIndex(t, true) })
}

func testIndex(t *testing.T, hashOnly bool) {
	ks := []KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}, {AttributeName: "sk", KeyType: KeyTypeRange}}
	defs := []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}, {AttributeName: "sk", AttributeType: TypeN}}
	if hashOnly {
		ks, defs = ks[:1], defs[:1]
	}
	sc, err := newSchema(ks, defs)
	if err != nil {
		t.Fatal(err)
	}
	x := newIndex(sc.less, hashOnly)
	ref := map[pointKey]entry{}
	rng := rand.New(rand.NewPCG(1, 2))
	keyOf := func() pointKey {
		if hashOnly {
			return pointKey{h: hashKey("S", strconv.Itoa(rng.IntN(300)))}
		}
		return pointKey{h: hashKey("S", strconv.Itoa(rng.IntN(50))), rk: strconv.Itoa(rng.IntN(20))}
	}
	for i := range 20000 {
		k := keyOf()
		switch op := rng.IntN(10); {
		case op < 6:
			e := entry{h: k.h, rk: k.rk, pos: uint64(i)}
			old, had := x.ReplaceOrInsert(e)
			want, wantHad := ref[k]
			if had != wantHad || old != want {
				t.Fatalf("op %d: ReplaceOrInsert returned %v %v, want %v %v", i, old, had, want, wantHad)
			}
			ref[k] = e
		case op < 9:
			old, had := x.Delete(entry{h: k.h, rk: k.rk})
			want, wantHad := ref[k]
			if had != wantHad || old != want {
				t.Fatalf("op %d: Delete returned %v %v, want %v %v", i, old, had, want, wantHad)
			}
			delete(ref, k)
		default:
			var got []entry
			x.Ascend(func(e entry) bool { got = append(got, e); return true })
			if len(got) != len(ref) || x.Len() != len(ref) {
				t.Fatalf("op %d: Ascend visited %d, Len %d, want %d", i, len(got), x.Len(), len(ref))
			}
			for j, e := range got {
				if ref[pointKey{e.h, e.rk}] != e {
					t.Fatalf("op %d: Ascend visited %v, want %v", i, e, ref[pointKey{e.h, e.rk}])
				}
				if j > 0 && !sc.less(got[j-1], e) {
					t.Fatalf("op %d: Ascend out of order at %d", i, j)
				}
			}
		}
		if got, ok := x.Get(entry{h: k.h, rk: k.rk}); ok != (ref[k] != entry{}) || got != ref[k] {
			t.Fatalf("op %d: Get = %v %v, want %v", i, got, ok, ref[k])
		}
	}
	if hashOnly {
		return
	}
	// A partition's range read from a bound, after creations only.
	h := hashKey("S", "7")
	for _, rk := range []string{"3", "1", "2"} {
		x.ReplaceOrInsert(entry{h: h, rk: rk, pos: 1})
		ref[pointKey{h, rk}] = entry{h: h, rk: rk, pos: 1}
	}
	var rks []string
	x.AscendGreaterOrEqual(entry{h: h, bound: -1}, func(e entry) bool {
		if e.h != h {
			return false
		}
		rks = append(rks, e.rk)
		return true
	})
	var want []string
	for k := range ref {
		if k.h == h {
			want = append(want, k.rk)
		}
	}
	slices.SortFunc(want, func(a, b string) int { return sc.compareRange(a, b) })
	if !slices.Equal(rks, want) {
		t.Fatalf("partition range %v, want %v", rks, want)
	}
}

// TestIndexPendingKeysStayBounded: a table that creates and deletes
// unique keys and is never read in order keeps at most about twice its
// items in pending keys, and what survives still settles in order.
func TestIndexPendingKeysStayBounded(t *testing.T) {
	for _, hashOnly := range []bool{true, false} {
		sc, err := newSchema([]KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}}, []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}})
		if err != nil {
			t.Fatal(err)
		}
		x := newIndex(sc.less, hashOnly)
		for i := range 100_000 {
			e := entry{h: hashKey("S", strconv.Itoa(i)), pos: uint64(i)}
			x.ReplaceOrInsert(e)
			if i%10 != 0 {
				x.Delete(e)
			}
		}
		pending := len(x.pendingH) + len(x.pendingK)
		if x.Len() != 10_000 || pending > 2*x.Len()+1024 {
			t.Fatalf("hashOnly %v: %d items, %d pending keys; want 10000 items and at most %d pending", hashOnly, x.Len(), pending, 2*x.Len()+1024)
		}
		n := 0
		var prev entry
		x.Ascend(func(e entry) bool {
			if n > 0 && !sc.less(prev, e) {
				t.Fatalf("out of order at %d", n)
			}
			prev, n = e, n+1
			return true
		})
		if n != 10_000 {
			t.Fatalf("hashOnly %v: Ascend visited %d, want 10000", hashOnly, n)
		}
	}
}
