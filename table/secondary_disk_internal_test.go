package table

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// The store orders a secondary index's forward keys as the index orders
// its entries (secondary.compare: index partition, index sort key in
// DynamoDB's order, then the table key), whatever the sort keys hold:
// zero bytes, one key a prefix of another, numbers of any sign and
// exponent. A Query, a Scan and a page's ExclusiveStartKey read that
// order from the store.
func TestSecondaryForwardKeysOrderAsTheIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 17))
	randBytes := func() string {
		b := make([]byte, 1+rng.IntN(4))
		for i := range b {
			b[i] = []byte{0, 1, 0xff, 'a', 'b'}[rng.IntN(5)]
		}
		return string(b)
	}
	randNumber := func() string {
		text := fmt.Sprintf("%d", rng.IntN(2000)-1000)
		if rng.IntN(2) == 0 {
			text = fmt.Sprintf("%de%d", rng.IntN(200)-100, rng.IntN(20)-10)
		}
		c, err := canonical("n", TypeN, events.NewNumberAttribute(text))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, types := range [][2]string{{TypeS, TypeN}, {TypeN, TypeS}, {TypeB, TypeB}, {"", TypeN}} {
		x := &secondary{sc: schema{hash: "g", hashType: TypeS, rng: "r", rngType: types[0]},
			table: schema{hash: "pk", hashType: TypeS, rng: "sk", rngType: types[1]}}
		if types[0] == "" {
			x.sc.rng, x.sc.rngType = "", ""
		}
		s := &secStore{lo: []byte("x-prefix"), rngN: x.sc.rngType == TypeN, tblN: x.table.rngType == TypeN}
		gen := func(typ string) string {
			switch typ {
			case "":
				return ""
			case TypeN:
				return randNumber()
			}
			return randBytes()
		}
		var entries []*sEntry
		for range 3000 {
			e := &sEntry{rk: gen(x.sc.rngType), k: key{rk: gen(x.table.rngType)}}
			e.h[0], e.k.h[0] = byte(rng.IntN(2)), byte(rng.IntN(3))
			entries = append(entries, e)
		}
		byIndex := slices.Clone(entries)
		slices.SortStableFunc(byIndex, x.compare)
		byStore := slices.Clone(entries)
		slices.SortStableFunc(byStore, func(a, b *sEntry) int { return bytes.Compare(s.forward(a), s.forward(b)) })
		for i := range byIndex {
			if x.compare(byIndex[i], byStore[i]) != 0 {
				t.Fatalf("types %v: entry %d in the index's order is (%q, %q), in the store's (%q, %q)",
					types, i, byIndex[i].rk, byIndex[i].k.rk, byStore[i].rk, byStore[i].k.rk)
			}
		}
	}
}
