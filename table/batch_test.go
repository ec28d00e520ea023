package table_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// validationMsg fails unless err is a ValidationException with message msg.
func wantError(t *testing.T, err error, code *awserr.Error, msg string) {
	t.Helper()
	var ae *awserr.Error
	if !errors.As(err, &ae) || ae.Code != code.Code || !strings.Contains(ae.Message, msg) {
		t.Fatalf("got %v, want %s %q", err, code.Code, msg)
	}
}

func put(pk string, attrs ...string) table.WriteRequest {
	it := table.Item{"pk": S(pk)}
	for i := 0; i+1 < len(attrs); i += 2 {
		it[attrs[i]] = S(attrs[i+1])
	}
	return table.WriteRequest{PutRequest: &table.PutRequest{Item: it}}
}

func del(pk string) table.WriteRequest {
	return table.WriteRequest{DeleteRequest: &table.DeleteRequest{Key: table.Item{"pk": S(pk)}}}
}

func TestBatchWriteItem(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "aaa", "", table.ViewNewAndOldImages)
	createTable(t, tb, "bbb", "", "")
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "aaa", Item: table.Item{"pk": S("gone")}}); err != nil {
		t.Fatal(err)
	}
	var reqs []table.WriteRequest
	for i := range 24 {
		reqs = append(reqs, put(fmt.Sprint("k", i), "v", "x"))
	}
	out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{ReturnConsumedCapacity: "TOTAL", RequestItems: map[string][]table.WriteRequest{
		"aaa": append(reqs[:20:20], del("gone")), "bbb": reqs[20:],
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.UnprocessedItems) != 0 || len(out.ConsumedCapacity) != 2 || out.ConsumedCapacity[0].TableName != "aaa" || out.ConsumedCapacity[0].CapacityUnits != 21 {
		t.Fatalf("out %+v", out)
	}
	for _, c := range []struct {
		name string
		n    int64
	}{{"aaa", 20}, {"bbb", 4}} {
		if d, _ := tb.DescribeTable(ctx, c.name); d.ItemCount != c.n {
			t.Fatalf("%s: %d items, want %d", c.name, d.ItemCount, c.n)
		}
	}
	// The stream has each change, the delete with its old image.
	var removed int
	for _, c := range changes(t, tb, "aaa") {
		if c.EventName == table.EventRemove && c.OldImage["pk"].String() == "gone" {
			removed++
		}
	}
	if removed != 1 {
		t.Fatalf("%d REMOVE records of gone", removed)
	}

	refused := []struct {
		name string
		in   map[string][]table.WriteRequest
		code *awserr.Error
		msg  string
	}{
		{"26 requests", map[string][]table.WriteRequest{"aaa": append(reqs[:20:20], put("x1"), put("x2"), put("x3")), "bbb": reqs[20:23]}, awserr.ErrValidation, "Too many items requested for the BatchWriteItem call"},
		{"two on one item", map[string][]table.WriteRequest{"aaa": {put("z"), put("new"), del("z")}}, awserr.ErrValidation, "Provided list of item keys contains duplicates"},
		{"neither put nor delete", map[string][]table.WriteRequest{"aaa": {put("new"), {}}}, awserr.ErrValidation, "must contain exactly one of the supported datatypes"},
		{"key not the schema", map[string][]table.WriteRequest{"aaa": {put("new"), {DeleteRequest: &table.DeleteRequest{Key: table.Item{"pk": S("x"), "v": S("y")}}}}}, awserr.ErrValidation, "The provided key element does not match the schema"},
		{"missing key", map[string][]table.WriteRequest{"aaa": {put("new"), {PutRequest: &table.PutRequest{Item: table.Item{"v": S("y")}}}}}, awserr.ErrValidation, "The provided key element does not match the schema"}, // DynamoDB's words for a batch's item (PutItem names the key)
		{"item over 400 KB", map[string][]table.WriteRequest{"aaa": {put("new"), put("big", "v", strings.Repeat("x", table.MaxItemSize))}}, awserr.ErrValidation, "Item size has exceeded the maximum allowed size"},
		{"missing table", map[string][]table.WriteRequest{"aaa": {put("new")}, "nope": {put("x")}}, awserr.ErrResourceNotFound, "nope"},
	}
	for _, c := range refused {
		_, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: c.in})
		wantError(t, err, c.code, c.msg)
		if get(t, tb, "aaa", table.Item{"pk": S("new")}) != nil {
			t.Fatalf("%s: a request of a refused batch was written", c.name)
		}
	}
}

// TestBatchWriteItemHeldByTransaction: a request on an item a
// transaction holds comes back in UnprocessedItems; the others are
// written; all held: the conflict itself.
func TestBatchWriteItemHeldByTransaction(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "aaa", "", "")
	release := table.HoldItems(t, tb, "aaa", table.Item{"pk": S("held")})
	out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"aaa": {put("held"), put("free")}}})
	if err != nil {
		t.Fatal(err)
	}
	if u := out.UnprocessedItems["aaa"]; len(u) != 1 || u[0].PutRequest.Item["pk"].String() != "held" {
		t.Fatalf("unprocessed %+v", out.UnprocessedItems)
	}
	if get(t, tb, "aaa", table.Item{"pk": S("held")}) != nil || get(t, tb, "aaa", table.Item{"pk": S("free")}) == nil {
		t.Fatal("held written or free not written")
	}
	_, err = tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"aaa": {put("held")}}})
	wantError(t, err, awserr.ErrTransactionConflict, "Transaction is ongoing for the item")
	release()
	out, err = tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: out.UnprocessedItems})
	if err != nil || len(out.UnprocessedItems) != 0 || get(t, tb, "aaa", table.Item{"pk": S("held")}) == nil {
		t.Fatalf("retry: %+v %v", out, err)
	}
}

func TestBatchGetItem(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "aaa", "", "")
	createTable(t, tb, "rrr", "sk", "")
	for i := range 5 {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "aaa", Item: table.Item{"pk": S(fmt.Sprint("k", i)), "v": N(fmt.Sprint(i)), "w": S("w")}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "rrr", Item: table.Item{"pk": S("p"), "sk": N("1"), "v": S("rrr")}}); err != nil {
		t.Fatal(err)
	}
	out, err := tb.BatchGetItem(ctx, table.BatchGetItemInput{ReturnConsumedCapacity: "TOTAL", RequestItems: map[string]table.KeysAndAttributes{
		"aaa": {Keys: []table.Item{{"pk": S("k1")}, {"pk": S("missing")}, {"pk": S("k3")}}, ProjectionExpression: "#v", ExpressionAttributeNames: map[string]string{"#v": "v"}},
		"rrr": {Keys: []table.Item{{"pk": S("p"), "sk": N("1.0")}}, ConsistentRead: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	a := out.Responses["aaa"]
	if len(a) != 2 || len(a[0]) != 1 || a[0]["v"].Number() != "1" || a[1]["v"].Number() != "3" || len(out.Responses["rrr"]) != 1 || out.Responses["rrr"][0]["v"].String() != "rrr" {
		t.Fatalf("responses %+v", out.Responses)
	}
	if len(out.UnprocessedKeys) != 0 || len(out.ConsumedCapacity) != 2 || out.ConsumedCapacity[0].CapacityUnits != 1.5 || out.ConsumedCapacity[1].CapacityUnits != 1 {
		t.Fatalf("unprocessed %+v capacity %+v", out.UnprocessedKeys, out.ConsumedCapacity)
	}

	keys := func(n int) []table.Item {
		var ks []table.Item
		for i := range n {
			ks = append(ks, table.Item{"pk": S(fmt.Sprint("x", i))})
		}
		return ks
	}
	if _, err := tb.BatchGetItem(ctx, table.BatchGetItemInput{RequestItems: map[string]table.KeysAndAttributes{"aaa": {Keys: keys(99)}, "rrr": {Keys: []table.Item{{"pk": S("p"), "sk": N("1")}}}}}); err != nil {
		t.Fatalf("100 keys: %v", err)
	}
	refused := []struct {
		name string
		in   map[string]table.KeysAndAttributes
		code *awserr.Error
		msg  string
	}{
		{"101 keys", map[string]table.KeysAndAttributes{"aaa": {Keys: keys(100)}, "rrr": {Keys: []table.Item{{"pk": S("p"), "sk": N("1")}}}}, awserr.ErrValidation, "Too many items requested for the BatchGetItem call"},
		{"duplicate", map[string]table.KeysAndAttributes{"rrr": {Keys: []table.Item{{"pk": S("p"), "sk": N("1")}, {"pk": S("p"), "sk": N("1.00")}}}}, awserr.ErrValidation, "Provided list of item keys contains duplicates"},
		{"key not the schema", map[string]table.KeysAndAttributes{"rrr": {Keys: []table.Item{{"pk": S("p")}}}}, awserr.ErrValidation, "The provided key element does not match the schema"},
		{"unused name", map[string]table.KeysAndAttributes{"aaa": {Keys: keys(1), ProjectionExpression: "v", ExpressionAttributeNames: map[string]string{"#w": "w"}}}, awserr.ErrValidation, "unused in expressions"},
		{"missing table", map[string]table.KeysAndAttributes{"nope": {Keys: keys(1)}}, awserr.ErrResourceNotFound, "nope"},
	}
	for _, c := range refused {
		_, err := tb.BatchGetItem(ctx, table.BatchGetItemInput{RequestItems: c.in})
		wantError(t, err, c.code, c.msg)
	}
}

// TestBatchGetItemUnprocessedPast16MB: 45 items of about 390 KB are
// more than 16 MB; the keys past it come back in UnprocessedKeys with the
// table's projection and ConsistentRead, and reading them gets the rest.
func TestBatchGetItemUnprocessedPast16MB(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "big", "", "")
	big := strings.Repeat("x", 390*1024)
	var keys []table.Item
	for i := range 45 {
		k := table.Item{"pk": S(fmt.Sprint("k", i))}
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "big", Item: table.Item{"pk": k["pk"], "v": S(big)}}); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	req := table.KeysAndAttributes{Keys: keys, ProjectionExpression: "pk, v", ConsistentRead: true}
	got := 0
	for round := 0; ; round++ {
		out, err := tb.BatchGetItem(ctx, table.BatchGetItemInput{RequestItems: map[string]table.KeysAndAttributes{"big": req}})
		if err != nil {
			t.Fatal(err)
		}
		size := 0
		for _, it := range out.Responses["big"] {
			size += len(it["v"].String())
		}
		if size > table.MaxBatchBytes {
			t.Fatalf("round %d: %d bytes answered", round, size)
		}
		got += len(out.Responses["big"])
		u, ok := out.UnprocessedKeys["big"]
		if !ok {
			break
		}
		if round == 0 && (len(u.Keys) == 0 || u.ProjectionExpression != "pk, v" || !u.ConsistentRead || len(out.Responses["big"])+len(u.Keys) != 45) {
			t.Fatalf("unprocessed %d keys %q %v", len(u.Keys), u.ProjectionExpression, u.ConsistentRead)
		}
		req = u
		if round > 2 {
			t.Fatal("no progress")
		}
	}
	if got != 45 {
		t.Fatalf("read %d items", got)
	}
}
