package table

import (
	"bytes"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cockroachdb/apd/v3"
)

// TestIndexMatchesAReference runs random creations, replacements and
// deletions, with ordered reads in between, against a plain map: every
// point read and every ordered read (which settles the pending keys)
// agrees, and ordered reads come in key order.
func TestIndexMatchesAReference(t *testing.T) {
	heap := func(t *testing.T, sc schema) itemIndex { return newIndex(sc.less, sc.rng == "") }
	t.Run("partition and sort key", func(t *testing.T) { testIndex(t, false, heap) })
	t.Run("partition key only", func(t *testing.T) { testIndex(t, true, heap) })
	t.Run("disk/partition and sort key", func(t *testing.T) { testIndex(t, false, diskIndexFor) })
	t.Run("disk/partition key only", func(t *testing.T) { testIndex(t, true, diskIndexFor) })
}

// diskIndexFor opens an index store in a temporary directory and a table
// index of schema sc in it.
func diskIndexFor(t *testing.T, sc schema) itemIndex {
	st, err := openStore(t.TempDir(), 8<<20, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.close(false) })
	x, err := openDiskIndex(st, "table-id", sc.rngType)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func testIndex(t *testing.T, hashOnly bool, open func(*testing.T, schema) itemIndex) {
	ks := []KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}, {AttributeName: "sk", KeyType: KeyTypeRange}}
	defs := []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}, {AttributeName: "sk", AttributeType: TypeN}}
	if hashOnly {
		ks, defs = ks[:1], defs[:1]
	}
	sc, err := newSchema(ks, defs)
	if err != nil {
		t.Fatal(err)
	}
	x := open(t, sc)
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
			e := entry{h: k.h, rk: k.rk, pos: uint64(i), size: int32(i % 7), exp: int64(i % 3), shard: uint16(i % 5)}
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
			var bytes int64
			for _, e := range ref {
				bytes += int64(e.size)
			}
			if x.Bytes() != bytes {
				t.Fatalf("op %d: Bytes %d, want %d", i, x.Bytes(), bytes)
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
	// Backwards from the partition's end, and from a key (included).
	rks = nil
	x.DescendLessOrEqual(entry{h: h, bound: 1}, func(e entry) bool {
		if e.h != h {
			return false
		}
		rks = append(rks, e.rk)
		return true
	})
	slices.Reverse(want)
	if !slices.Equal(rks, want) {
		t.Fatalf("partition range backwards %v, want %v", rks, want)
	}
	rks = nil
	x.DescendLessOrEqual(entry{h: h, rk: "2"}, func(e entry) bool {
		if e.h != h {
			return false
		}
		rks = append(rks, e.rk)
		return true
	})
	var below []string
	for _, rk := range want {
		if sc.compareRange(rk, "2") <= 0 {
			below = append(below, rk)
		}
	}
	if !slices.Equal(rks, below) {
		t.Fatalf("backwards from 2: %v, want %v", rks, below)
	}
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestNumberKeysOrderInTheStoreAsNumbers: the index store orders Number
// sort keys by their encoding's bytes; that order is the numbers' order
// (negative, zero, fractions, exponents from -130 to +125).
func TestNumberKeysOrderInTheStoreAsNumbers(t *testing.T) {
	nums := []string{"0", "1", "-1", "1.5", "-1.5", "10", "9", "-10", "-9", "0.001", "-0.001", "1E+125", "-1E+125",
		"1E-130", "-1E-130", "9.9999999999999999999999999999999999999E+125", "123456789012345678901234567890123456.78",
		"100", "101", "99.99", "-100", "-101", "-99.99", "0.1", "0.15", "0.2", "-0.1", "-0.15", "-0.2", "2", "20", "200.5"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 500 {
		m := rng.Int64N(1_000_000) - 500_000
		nums = append(nums, strconv.FormatInt(m, 10)+"E"+strconv.Itoa(rng.IntN(40)-20))
	}
	for _, a := range nums {
		for _, b := range nums {
			var x, y apd.Decimal
			x.SetString(a)
			y.SetString(b)
			want := x.Cmp(&y)
			got := bytes.Compare(appendNumberOrdered(nil, a), appendNumberOrdered(nil, b))
			if got != want {
				t.Fatalf("%s vs %s: the encodings compare %d, the numbers %d", a, b, got, want)
			}
		}
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

// TestTheIndexStoreKeepsTheImageOfTheEntrysChange: the index store
// serves an item's image only for the log position it was written at: a
// change of the expiry alone keeps it, a change at another position (a
// write whose image came without one) does not, so a reader falls back to
// the log rather than read another change's image.
func TestTheIndexStoreKeepsTheImageOfTheEntrysChange(t *testing.T) {
	sc, err := newSchema([]KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}}, []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}})
	if err != nil {
		t.Fatal(err)
	}
	x := diskIndexFor(t, sc).(*diskIndex)
	it := Item{"pk": events.NewStringAttribute("a"), "n": events.NewNumberAttribute("1.5"), "l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewBooleanAttribute(true)})}
	e := entry{h: hashKey("S", "a"), shard: 2, pos: 7, size: 30}
	x.put(e, it)
	got, ok := x.image(e)
	if !ok || !itemsEqual(got, it) {
		t.Fatalf("image at the change's position: %v %v, want %v", got, ok, it)
	}
	e.exp = 99
	x.ReplaceOrInsert(e)
	if got, ok := x.image(e); !ok || !itemsEqual(got, it) {
		t.Fatalf("after the expiry alone moved: %v %v, want the image", got, ok)
	}
	if _, ok := x.image(entry{h: e.h, shard: 2, pos: 8}); ok {
		t.Fatal("an image served for another log position")
	}
	e.pos = 8
	x.ReplaceOrInsert(e)
	if got, ok := x.image(e); ok {
		t.Fatalf("an image kept across a change without one: %v", got)
	}
	if x.Len() != 1 || x.Bytes() != 30 {
		t.Fatalf("Len %d Bytes %d, want 1 and 30", x.Len(), x.Bytes())
	}
}
