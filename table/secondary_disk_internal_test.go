package table

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// dynamoOrder is the order of a secondary index's entries, as DynamoDB
// defines it: index partition (by its hash), index sort key (numbers as
// numbers, strings and binaries by their bytes), then the table key.
func dynamoOrder(x *secondary, a, b *sEntry) int {
	if a.h != b.h {
		return compareHash(a.h, b.h)
	}
	if c := x.sc.compareRange(a.rk, b.rk); c != 0 {
		return c
	}
	if a.k.h != b.k.h {
		return compareHash(a.k.h, b.k.h)
	}
	return x.table.compareRange(a.k.rk, b.k.rk)
}

// An index's entries compare (secondary.compare, on their ordKey) and the
// store orders their forward keys as DynamoDB orders them (dynamoOrder),
// whatever the sort keys hold: zero bytes, one key a prefix of another,
// numbers of any sign and exponent. A Query, a Scan and a page's
// ExclusiveStartKey read that order from the heap's B-tree or the store.
func TestIndexEntriesOrderAsDynamoDBOrdersThem(t *testing.T) {
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
		s := &secStore{lo: []byte("x-prefix"), tblN: x.table.rngType == TypeN}
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
			e.ord = x.ordKey(e)
			entries = append(entries, e)
		}
		want := slices.Clone(entries)
		slices.SortStableFunc(want, func(a, b *sEntry) int { return dynamoOrder(x, a, b) })
		for what, cmp := range map[string]func(a, b *sEntry) int{
			"compare": x.compare,
			"store":   func(a, b *sEntry) int { return bytes.Compare(s.forward(a), s.forward(b)) },
		} {
			got := slices.Clone(entries)
			slices.SortStableFunc(got, cmp)
			for i := range want {
				if dynamoOrder(x, want[i], got[i]) != 0 {
					t.Fatalf("types %v: entry %d in DynamoDB's order is (%q, %q), in the %s order (%q, %q)",
						types, i, want[i].rk, want[i].k.rk, what, got[i].rk, got[i].k.rk)
				}
			}
		}
	}
}
