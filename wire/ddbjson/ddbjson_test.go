package ddbjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// jsonStrings are the strings whose JSON needs care: quotes, backslashes,
// every kind of control character, the HTML characters encoding/json
// escapes, U+2028 and U+2029, invalid UTF-8, multi-byte runes.
var jsonStrings = []string{"", "plain", `q"uote`, `back\slash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>",
	"line\u2028sep\u2029", "bad\xffutf8\xc3", "é日本語🙂", "\xed\xa0\x80"}

func randomValue(r *rand.Rand, depth int) events.DynamoDBAttributeValue {
	str := func() string { return jsonStrings[r.IntN(len(jsonStrings))] }
	k := r.IntN(16)
	if depth > 2 && (k == 5 || k == 6) {
		k = 0
	}
	switch k {
	case 0:
		return events.NewStringAttribute(str())
	case 1:
		return events.NewNumberAttribute(fmt.Sprint(r.IntN(1e6), ".", r.IntN(100)))
	case 2:
		return events.NewBinaryAttribute([]byte(str()))
	case 3:
		return events.NewBooleanAttribute(r.IntN(2) == 1)
	case 4:
		return events.NewNullAttribute()
	case 5:
		return events.NewMapAttribute(randomItem(r, depth+1, 5))
	case 6:
		l := make([]events.DynamoDBAttributeValue, r.IntN(4))
		for i := range l {
			l[i] = randomValue(r, depth+1)
		}
		return events.NewListAttribute(l)
	case 7:
		return events.NewStringSetAttribute([]string{str(), str()})
	case 8:
		return events.NewNumberSetAttribute([]string{"1", "2.5"})
	case 9:
		return events.NewBinarySetAttribute([][]byte{[]byte(str()), nil, {}})
	case 10:
		return events.NewListAttribute(nil)
	case 11:
		return events.NewMapAttribute(nil)
	case 12:
		return events.NewStringSetAttribute(nil)
	case 13:
		return events.NewBinaryAttribute(nil)
	case 14:
		return events.NewBinarySetAttribute(nil)
	}
	return events.NewNumberSetAttribute(nil)
}

func randomItem(r *rand.Rand, depth, most int) map[string]events.DynamoDBAttributeValue {
	it := map[string]events.DynamoDBAttributeValue{}
	for i := range r.IntN(most + 1) {
		it[fmt.Sprint(jsonStrings[r.IntN(len(jsonStrings))], i)] = randomValue(r, depth)
	}
	return it
}

// TestAppendItemIsJSONMarshal: AppendItem's bytes must be json.Marshal's through
// aws-lambda-go's MarshalJSON, for every type, nil lists, maps, sets and
// binaries, items of more than 16 attributes, and strings with every
// character encoding/json escapes.
func TestAppendItemIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		it := randomItem(r, 0, 20)
		if i%500 == 0 {
			it = nil
		}
		want, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendItem(nil, it); !bytes.Equal(got, want) {
			t.Fatalf("item %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestAppendEventIsJSONMarshal: a DynamoDB event and its records, every
// member present or absent (images, keys, the TTL deletion's identity, no
// records at all), and creation times json.Marshal writes in either of
// its float forms.
func TestAppendEventIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	times := []time.Time{time.Unix(1767323045, 0), time.Unix(1767323045, 123456789), time.Unix(0, 0), time.Unix(0, 1), time.Unix(-5, 0), {}}
	for i := range 1000 {
		ev := events.DynamoDBEvent{}
		if i%50 != 0 {
			ev.Records = make([]events.DynamoDBEventRecord, r.IntN(4))
		}
		for k := range ev.Records {
			rec := events.DynamoDBEventRecord{AWSRegion: "us-east-1", EventID: fmt.Sprint("id", k), EventName: "MODIFY", EventSource: "aws:dynamodb",
				EventVersion: "1.1", EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/t<1>/stream/x",
				Change: events.DynamoDBStreamRecord{ApproximateCreationDateTime: events.SecondsEpochTime{Time: times[r.IntN(len(times))]},
					SequenceNumber: fmt.Sprint(r.Uint64()), SizeBytes: r.Int64N(1 << 20), StreamViewType: "NEW_AND_OLD_IMAGES"}}
			if r.IntN(4) > 0 {
				rec.Change.Keys = randomItem(r, 2, 2)
			}
			if r.IntN(3) > 0 {
				rec.Change.NewImage = randomItem(r, 0, 5)
			}
			if r.IntN(3) > 0 {
				rec.Change.OldImage = randomItem(r, 0, 5)
			}
			if r.IntN(5) == 0 {
				rec.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
			}
			ev.Records[k] = rec
		}
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendEvent(nil, &ev); !bytes.Equal(got, want) {
			t.Fatalf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// benchEvent is 100 records of a table of the benchmark's items (pk, sk,
// 100 bytes of data, n), with both images.
func benchEvent() *events.DynamoDBEvent {
	ev := &events.DynamoDBEvent{}
	for i := range 100 {
		img := map[string]events.DynamoDBAttributeValue{
			"pk": events.NewStringAttribute(fmt.Sprint("p", i/25)), "sk": events.NewNumberAttribute(fmt.Sprint(i % 25)),
			"data": events.NewStringAttribute(fmt.Sprintf("%-100d", i)), "n": events.NewNumberAttribute("1")}
		ev.Records = append(ev.Records, events.DynamoDBEventRecord{AWSRegion: "us-east-1", EventID: "0123456789abcdef0123456789abcdef",
			EventName: "MODIFY", EventSource: "aws:dynamodb", EventVersion: "1.1", EventSourceArn: "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/x",
			Change: events.DynamoDBStreamRecord{ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(1767323045, 0)},
				Keys: map[string]events.DynamoDBAttributeValue{"pk": img["pk"], "sk": img["sk"]}, NewImage: img, OldImage: img,
				SequenceNumber: "49590338271490256608559692538361571095921575989136588898", SizeBytes: 300, StreamViewType: "NEW_AND_OLD_IMAGES"}})
	}
	return ev
}

// BenchmarkEvent: a DynamoDB event of 100 records written by AppendEvent,
// and by json.Marshal (the baseline, in the same run).
func BenchmarkEvent(b *testing.B) {
	ev := benchEvent()
	b.Run("AppendEvent", func(b *testing.B) {
		var buf []byte
		for range b.N {
			buf = AppendEvent(buf[:0], ev)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ev.Records)), "ns/record")
	})
	b.Run("json.Marshal", func(b *testing.B) {
		for range b.N {
			if _, err := json.Marshal(ev); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ev.Records)), "ns/record")
	})
}
