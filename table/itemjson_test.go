package table

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

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
			out[i] = randomItem(r, 0)
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
			q.LastEvaluatedKey = randomItem(r, 0)
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
			g.Item = randomItem(r, 0)
		}
		got, err = g.AppendJSON(nil)
		check(fmt.Sprint("get ", i), got, err, g)

		b := BatchGetItemOutput{}
		if r.IntN(4) > 0 {
			b.Responses = map[string][]Item{}
			for k := range r.IntN(4) {
				b.Responses[fmt.Sprint("t<", k, ">\u2028")] = items()
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
