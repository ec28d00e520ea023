package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

func randomValue(r *rand.Rand, depth int) events.DynamoDBAttributeValue {
	k := r.IntN(10)
	if depth > 3 && k >= 5 && k <= 6 {
		k = 0
	}
	switch k {
	case 0:
		return events.NewStringAttribute(fmt.Sprint("s", r.IntN(1000), "é\x00"))
	case 1:
		return events.NewNumberAttribute(fmt.Sprint(r.IntN(1e6), ".", r.IntN(100)))
	case 2:
		return events.NewBinaryAttribute([]byte{byte(r.IntN(256)), 0, 1})
	case 3:
		return events.NewBooleanAttribute(r.IntN(2) == 1)
	case 4:
		return events.NewNullAttribute()
	case 5:
		return events.NewMapAttribute(randomItem(r, depth+1))
	case 6:
		l := make([]events.DynamoDBAttributeValue, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return events.NewListAttribute(l)
	case 7:
		return events.NewStringSetAttribute([]string{"a", fmt.Sprint(r.IntN(9))})
	case 8:
		return events.NewNumberSetAttribute([]string{"1", "2.5"})
	default:
		return events.NewBinarySetAttribute([][]byte{{1}, {2, 3}})
	}
}

func randomItem(r *rand.Rand, depth int) Item {
	it := Item{}
	for i := range r.IntN(6) {
		it[fmt.Sprint("a", i)] = randomValue(r, depth)
	}
	return it
}

// The binary form carries everything the JSON form does: a change decoded
// from it marshals to the same JSON as the original.
func TestChangeCodecRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		c := &Change{EventName: []string{"INSERT", "MODIFY", "REMOVE"}[i%3], Keys: randomItem(r, 0), Label: fmt.Sprint("l", i%2),
			View: ViewNewAndOldImages, TTL: i%7 == 0, TimeMs: int64(r.IntN(1 << 40)), Txn: fmt.Sprint("tx", i%5), TxnIndex: i % 4}
		if i%3 != 2 {
			c.NewImage = randomItem(r, 0)
		}
		if i%3 != 0 {
			c.OldImage = randomItem(r, 0)
		}
		if i%11 == 0 {
			c.NewImage = Item{} // present but empty stays present
		}
		b := encodeChange(nil, c)
		got, err := DecodeChange(b)
		if err != nil {
			t.Fatalf("change %d: %v", i, err)
		}
		want, _ := json.Marshal(c)
		have, _ := json.Marshal(got)
		if !bytes.Equal(want, have) || (c.NewImage == nil) != (got.NewImage == nil) {
			t.Fatalf("change %d:\n got %s\nwant %s", i, have, want)
		}
		// Every truncation fails cleanly, never panics or succeeds.
		for cut := 0; cut < len(b); cut += 1 + len(b)/17 {
			if _, err := DecodeChange(b[:cut]); err == nil && cut > 0 {
				t.Fatalf("change %d cut at %d of %d decoded", i, cut, len(b))
			}
		}
	}
}

// Change records written as JSON (before the binary form) are still read.
func TestChangeCodecReadsJSON(t *testing.T) {
	c := &Change{EventName: "MODIFY", Keys: Item{"id": events.NewStringAttribute("x")}, NewImage: Item{"n": events.NewNumberAttribute("10")}, TimeMs: 5}
	b, _ := json.Marshal(c)
	got, err := DecodeChange(b)
	if err != nil || got.EventName != "MODIFY" || got.NewImage["n"].Number() != "10" || got.Keys["id"].String() != "x" {
		t.Fatalf("DecodeChange(JSON) = %+v, %v", got, err)
	}
}
