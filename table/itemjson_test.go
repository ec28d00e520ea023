package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// jsonStrings are the strings whose JSON needs care: quotes, backslashes,
// every kind of control character, the HTML characters encoding/json
// escapes, U+2028 and U+2029, invalid UTF-8, multi-byte runes.
var jsonStrings = []string{"", "plain", `q"uote`, `back\slash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<a href='x'>&amp;</a>",
	"line\u2028sep\u2029", "bad\xffutf8\xc3", "é日本語🙂", "\xed\xa0\x80"}

func jsonValue(r *rand.Rand, depth int) events.DynamoDBAttributeValue {
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
		return events.NewMapAttribute(jsonItem(r, depth+1, 5))
	case 6:
		l := make([]events.DynamoDBAttributeValue, r.IntN(4))
		for i := range l {
			l[i] = jsonValue(r, depth+1)
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

func jsonItem(r *rand.Rand, depth, most int) Item {
	it := Item{}
	for i := range r.IntN(most + 1) {
		it[fmt.Sprint(jsonStrings[r.IntN(len(jsonStrings))], i)] = jsonValue(r, depth)
	}
	return it
}

// TestAppendItemJSONIsJSONMarshal: the answers that carry items are
// written by AppendItemJSON, so its bytes must be json.Marshal's through
// aws-lambda-go's MarshalJSON, for every type, nil lists, maps, sets and
// binaries, items of more than 16 attributes, and strings with every
// character encoding/json escapes.
func TestAppendItemJSONIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for i := range 3000 {
		it := jsonItem(r, 0, 20)
		if i%500 == 0 {
			it = nil
		}
		want, err := json.Marshal(it)
		if err != nil {
			t.Fatal(err)
		}
		if got := AppendItemJSON(nil, it); !bytes.Equal(got, want) {
			t.Fatalf("item %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// TestAnswersWithItemsAreWrittenAsJSONMarshalWritesThem: Query's and
// Scan's, GetItem's and BatchGetItem's AppendJSON against json.Marshal of
// the same answer without its method, every member present or absent.
func TestAnswersWithItemsAreWrittenAsJSONMarshalWritesThem(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	items := func() []Item {
		if r.IntN(5) == 0 {
			return nil
		}
		out := make([]Item, r.IntN(4))
		for i := range out {
			out[i] = jsonItem(r, 0, 4)
		}
		return out
	}
	capacity := func() *ConsumedCapacity {
		if r.IntN(2) == 0 {
			return nil
		}
		return &ConsumedCapacity{TableName: "t<1>", CapacityUnits: 1.5, Table: &Capacity{CapacityUnits: 1.5},
			GlobalSecondaryIndexes: map[string]*Capacity{"g": {CapacityUnits: 0.5}}}
	}
	check := func(what string, got []byte, err error, reference any) {
		t.Helper()
		want, werr := json.Marshal(reference)
		if err != nil || werr != nil || !bytes.Equal(got, want) {
			t.Fatalf("%s:\n got %s (%v)\nwant %s (%v)", what, got, err, want, werr)
		}
	}
	for i := range 500 {
		q := QueryOutput{Items: items(), Count: r.IntN(100), ScannedCount: r.IntN(100), ConsumedCapacity: capacity()}
		if r.IntN(2) == 0 {
			q.LastEvaluatedKey = jsonItem(r, 0, 2)
		}
		type plainQuery QueryOutput // json.Marshal of the members, without MarshalJSON
		var ref any = plainQuery(q)
		if q.Items == nil { // Select COUNT: no Items member
			ref = struct {
				plainQuery
				Items []Item `json:"Items,omitempty"`
			}{plainQuery: plainQuery(q)}
		}
		got, err := q.AppendJSON(nil)
		check(fmt.Sprint("query ", i), got, err, ref)
		viaMethod, err := json.Marshal(q)
		check(fmt.Sprint("query ", i, " through MarshalJSON"), viaMethod, err, ref)

		g := GetItemOutput{ConsumedCapacity: capacity()}
		if r.IntN(3) > 0 {
			g.Item = jsonItem(r, 0, 6)
		}
		got, err = g.AppendJSON(nil)
		check(fmt.Sprint("get ", i), got, err, g)

		b := BatchGetItemOutput{}
		if r.IntN(4) > 0 {
			b.Responses = map[string][]Item{}
			for k := range r.IntN(4) {
				b.Responses[fmt.Sprint("t", k, jsonStrings[r.IntN(len(jsonStrings))])] = items()
			}
		}
		if r.IntN(2) == 0 {
			b.UnprocessedKeys = map[string]KeysAndAttributes{"t": {Keys: items(), ProjectionExpression: "a"}}
		}
		if c := capacity(); c != nil {
			b.ConsumedCapacity = []ConsumedCapacity{*c}
		}
		got, err = b.AppendJSON(nil)
		check(fmt.Sprint("batch get ", i), got, err, b)
	}
}

// TestAnswersWithItemsHaveTheMembersTheirAppendJSONWrites: a member added
// to one of these answers must be added to its AppendJSON too (the test
// above sets only the members it knows of).
func TestAnswersWithItemsHaveTheMembersTheirAppendJSONWrites(t *testing.T) {
	for typ, want := range map[reflect.Type][]string{
		reflect.TypeFor[QueryOutput]():        {"Items", "Count", "ScannedCount", "LastEvaluatedKey", "ConsumedCapacity"},
		reflect.TypeFor[GetItemOutput]():      {"Item", "ConsumedCapacity"},
		reflect.TypeFor[BatchGetItemOutput](): {"Responses", "UnprocessedKeys", "ConsumedCapacity"},
	} {
		var got []string
		for f := range typ.Fields() {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s has members %v; its AppendJSON writes %v", typ, got, want)
		}
	}
}
