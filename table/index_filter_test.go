package table

import (
	"strconv"
	"testing"
)

// TestTheKeyFilterKnowsEveryKeyTheStoreHeldAtOpen: a table's index opened
// on a store that already holds its keys answers, once its key filter is
// built, every key the store holds (those of the first open, across more
// than one of the builder's chunks, and those written while the filter was
// being built), and says "absent" for keys never written without reading
// the store (the filter must not pass everything).
func TestTheKeyFilterKnowsEveryKeyTheStoreHeldAtOpen(t *testing.T) {
	sc, err := newSchema([]KeySchemaElement{{AttributeName: "pk", KeyType: KeyTypeHash}}, []AttributeDefinition{{AttributeName: "pk", AttributeType: TypeS}})
	if err != nil {
		t.Fatal(err)
	}
	x := diskIndexFor(t, sc).(*diskIndex)
	entryOf := func(k string) entry { return entry{h: hashKey("S", k), pos: 1, size: 10} }
	const n = 3*keyFilterChunk + 17
	for i := range n {
		x.ReplaceOrInsert(entryOf("k" + strconv.Itoa(i)))
	}
	for i := 0; i < n; i += 7 {
		x.Delete(entryOf("k" + strconv.Itoa(i)))
	}

	// The same table opened again on the same store: its filter is not
	// ready until built; a writer meanwhile adds its keys itself.
	y, err := openDiskIndex(x.st, "table-id", sc.rngType)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		y.ReplaceOrInsert(entryOf("n" + strconv.Itoa(i)))
	}
	<-y.filter.built // the open's build, to its end
	if !y.filter.ready.Load() {
		t.Fatal("the filter is not ready after its build")
	}
	for i := range n {
		k := "k" + strconv.Itoa(i)
		_, ok := y.Get(entryOf(k))
		if want := i%7 != 0; ok != want {
			t.Fatalf("%s: found %v, want %v", k, ok, want)
		}
	}
	for i := range 100 {
		if _, ok := y.Get(entryOf("n" + strconv.Itoa(i))); !ok {
			t.Fatalf("n%d, written during the build, not found", i)
		}
	}
	passed := 0
	for i := range 10000 {
		if y.filter.mayHold(y.key(hashKey("S", "never"+strconv.Itoa(i)), "")) {
			passed++
		}
	}
	if passed > 200 {
		t.Fatalf("the filter passed %d of 10000 keys never written (want at most 2%%)", passed)
	}
}

// TestTheKeyFilterGrowsWithoutForgetting: past its first part's capacity
// the filter adds parts and still knows every key added, with at most
// about 1 % false positives over all its parts.
func TestTheKeyFilterGrowsWithoutForgetting(t *testing.T) {
	f := newKeyFilter(0, true)
	const n = 5*keyFilterFirstCap + 1000 // two growths
	key := func(p string, i int) []byte { return []byte(p + strconv.Itoa(i)) }
	for i := range n {
		f.add(key("k", i))
	}
	if len(f.parts) < 3 {
		t.Fatalf("%d parts after %d keys, want 3 (capacities %d, then %d times more)", len(f.parts), n, keyFilterFirstCap, keyFilterGrowth)
	}
	for i := range n {
		if !f.mayHold(key("k", i)) {
			t.Fatalf("key %d forgotten", i)
		}
	}
	passed := 0
	const probes = 100000
	for i := range probes {
		if f.mayHold(key("z", i)) {
			passed++
		}
	}
	if passed > probes*15/1000 {
		t.Fatalf("%d of %d absent keys passed, want at most 1.5 %%", passed, probes)
	}
	f.clear()
	if f.mayHold(key("k", 1)) && f.mayHold(key("k", 2)) && f.mayHold(key("k", 3)) {
		t.Fatal("a cleared filter still knows its keys")
	}
}
