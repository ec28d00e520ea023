package table

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire/ddbjson"
)

// sizeStrings hold every kind of byte JSON escapes.
var sizeStrings = []string{"", "plain", `q"uote\`, "\b\f\n\r\t\x00\x1f", "<&>", "line\u2028\u2029", "bad\xff\xc3", "é日本🙂"}

func sizeValue(r *rand.Rand, depth int) events.DynamoDBAttributeValue {
	str := func() string { return sizeStrings[r.IntN(len(sizeStrings))] }
	k := r.IntN(12)
	if depth > 2 && (k == 5 || k == 6) {
		k = 0
	}
	switch k {
	case 0:
		return events.NewStringAttribute(str())
	case 1:
		return events.NewNumberAttribute(fmt.Sprint(r.IntN(1e6)))
	case 2:
		return events.NewBinaryAttribute([]byte(str()))
	case 3:
		return events.NewBooleanAttribute(r.IntN(2) == 1)
	case 4:
		return events.NewNullAttribute()
	case 5:
		m := sizeItem(r, depth+1)
		if m == nil {
			m = Item{} // what a table holds: a request's {"M":{}}
		}
		return events.NewMapAttribute(m)
	case 6:
		l := make([]events.DynamoDBAttributeValue, r.IntN(4))
		for i := range l {
			l[i] = sizeValue(r, depth+1)
		}
		return events.NewListAttribute(l)
	case 7:
		return events.NewStringSetAttribute([]string{str(), str()})
	case 8:
		return events.NewNumberSetAttribute([]string{"1", "2.5"})
	case 9:
		return events.NewBinarySetAttribute([][]byte{[]byte(str()), {}})
	case 10:
		return events.NewMapAttribute(Item{})
	}
	return events.NewListAttribute([]events.DynamoDBAttributeValue{})
}

func sizeItem(r *rand.Rand, depth int) Item {
	if r.IntN(6) == 0 {
		return nil
	}
	it := Item{}
	for i := range r.IntN(6) {
		it[fmt.Sprint(sizeStrings[r.IntN(len(sizeStrings))], i)] = sizeValue(r, depth)
	}
	return it
}

// TestEventRecordSizeIsTheEventRecordsJSON: a DynamoDB stream mapping
// cuts its batches at Lambda's 6 MB payload with EventRecordSize, counted
// from the stored change; it must be the length of the JSON the function
// receives, for every value type, empty and absent images, every stream
// view, TTL deletions and strings JSON escapes. Before, a record counted
// 4/3 of its stored change plus 400 bytes, and items of many small
// attributes made events over 6 MB.
func TestEventRecordSizeIsTheEventRecordsJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	views := []string{"", ViewKeysOnly, ViewNewImage, ViewOldImage, ViewNewAndOldImages}
	names := []string{"INSERT", "MODIFY", "REMOVE"}
	arn := "arn:aws:dynamodb:eu-west-1:000000000000:table/t<&>/stream/2026-11-28T10:00:00.000"
	for i := range 5000 {
		c := &Change{EventName: names[r.IntN(3)], Label: "2026", View: views[r.IntN(len(views))],
			TimeMs: r.Int64N(4e12), TTL: r.IntN(4) == 0,
			Keys: sizeItem(r, 0), NewImage: sizeItem(r, 0), OldImage: sizeItem(r, 0)}
		rec := &stream.Record{Data: encodeChange(nil, c), SequenceNumber: fmt.Sprint(r.Int64()), ShardID: "shardId-000000000000"}
		ev := EventRecordShared(rec, c, "eu-west-1", arn)
		want := len(ddbjson.AppendEventRecord(nil, &ev))
		decoded, err := DecodeChange(rec.Data)
		if err != nil {
			t.Fatal(err)
		}
		// The record of a change still in the table's ring of recent
		// changes and of one read back from the log are the same bytes.
		dv := EventRecordShared(rec, decoded, "eu-west-1", arn)
		if a, b := ddbjson.AppendEventRecord(nil, &ev), ddbjson.AppendEventRecord(nil, &dv); string(a) != string(b) {
			t.Fatalf("change %d: written %s, read back %s", i, a, b)
		}
		if got := EventRecordSize(rec, "eu-west-1", arn); got != want {
			t.Fatalf("change %d (%+v): EventRecordSize = %d, the record's JSON is %d bytes: %s", i, c, got, want, ddbjson.AppendEventRecord(nil, &ev))
		}
	}
}

// benchChange is a trades-like change: a small item, both images.
func benchChange() (*stream.Record, *Change) {
	it := Item{"pk": events.NewStringAttribute("ACME-2026-11-28"), "qty": events.NewNumberAttribute("12345"),
		"notional": events.NewNumberAttribute("1234567.89"), "count": events.NewNumberAttribute("42"), "last": events.NewStringAttribute("t-000123")}
	c := &Change{EventName: "MODIFY", Label: "x", View: ViewNewAndOldImages, TimeMs: 1764000000000, Keys: Item{"pk": it["pk"]}, NewImage: it, OldImage: it}
	return &stream.Record{Data: encodeChange(nil, c), SequenceNumber: "49600000000000000000000000000000000000000000000000000001"}, c
}

// BenchmarkEventRecordSize is the 6 MB cut's count of one record
// (docs/benchmarks/tables.md); BenchmarkEventRecordJSON, the baseline, is
// what counting it by encoding would cost (decode, then ddbjson).
func BenchmarkEventRecordSize(b *testing.B) {
	rec, _ := benchChange()
	for b.Loop() {
		EventRecordSize(rec, "us-east-1", "arn:aws:dynamodb:us-east-1:000000000000:table/state/stream/2026")
	}
}

func BenchmarkEventRecordJSON(b *testing.B) {
	rec, _ := benchChange()
	var buf []byte
	for b.Loop() {
		c, _ := DecodeChange(rec.Data)
		r := EventRecordShared(rec, c, "us-east-1", "arn:aws:dynamodb:us-east-1:000000000000:table/state/stream/2026")
		buf = ddbjson.AppendEventRecord(buf[:0], &r)
	}
}
