package table_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestKeyLimits: a partition key value over 2048 bytes and a sort key
// value over 1024 are refused, in DynamoDB's words; at the limits they
// are stored. A Query's filter may not name a key attribute (a Scan's
// may).
func TestKeyLimits(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "limits",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "sk", AttributeType: "S"}},
	}); err != nil {
		t.Fatal(err)
	}
	put := func(pk, sk string) error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "limits", Item: table.Item{"pk": S(pk), "sk": S(sk)}})
		return err
	}
	if err := put(strings.Repeat("é", 1024), strings.Repeat("x", 1024)); err != nil {
		t.Fatalf("keys at the limits: %v", err)
	}
	if err := put(strings.Repeat("é", 1024)+"x", "x"); err == nil || err.Error() != "ValidationException: One or more parameter values were invalid: Size of hashkey has exceeded the maximum size limit of2048 bytes" {
		t.Errorf("hash key of 2049 bytes: %v", err)
	}
	if err := put("x", strings.Repeat("x", 1025)); err == nil || !strings.HasSuffix(err.Error(), "One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of 1024 bytes") {
		t.Errorf("range key of 1025 bytes: %v", err)
	}
	_, err := tb.GetItem(ctx, table.GetItemInput{TableName: "limits", Key: table.Item{"pk": S(strings.Repeat("x", 2049)), "sk": S("x")}})
	if err == nil || !strings.Contains(err.Error(), "Size of hashkey has exceeded") {
		t.Errorf("GetItem with a hash key of 2049 bytes: %v", err)
	}

	for _, filter := range []string{"sk = :v", "attribute_exists(#p) AND n > :v", "size(sk) > :n OR n = :v"} {
		_, err := tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
			TableName:                 "limits",
			FilterExpression:          filter,
			ExpressionAttributeNames:  map[string]string{"#p": "pk"},
			ExpressionAttributeValues: table.Item{":p": S("x"), ":v": S("x"), ":n": N("1")},
		}, KeyConditionExpression: "pk = :p"})
		if err == nil || !strings.Contains(err.Error(), "Filter Expression can only contain non-primary key attributes: Primary key attribute: ") {
			t.Errorf("Query filter %q: %v", filter, err)
		}
	}
	if _, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "limits", FilterExpression: "sk = :v", ExpressionAttributeValues: table.Item{":v": S("x")}}}); err != nil {
		t.Errorf("Scan filter on a key: %v", err)
	}
}

// TestProjectionExpressionGoesOnlyWithSpecificAttributes: "If you use the
// ProjectionExpression parameter, then the value for Select can only be
// SPECIFIC_ATTRIBUTES" (API_Query, API_Scan). Query and Scan refuse any
// other Select beside one; they answered as if Select were alone.
func TestProjectionExpressionGoesOnlyWithSpecificAttributes(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "proj", "n", "")
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "proj", Item: table.Item{"pk": S("p"), "n": N("1"), "x": S("v")}}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ sel, words string }{
		{table.SelectCount, "only the Count"},
		{table.SelectAllAttributes, "ALL_ATTRIBUTES"},
	} {
		r := table.ReadInput{TableName: "proj", Select: c.sel, ProjectionExpression: "x", ExpressionAttributeValues: table.Item{":p": S("p")}}
		_, err := tb.Query(ctx, table.QueryInput{ReadInput: r, KeyConditionExpression: "pk = :p"})
		if !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "Cannot specify the ProjectionExpression when choosing to get "+c.words) {
			t.Errorf("Query, Select %s with a ProjectionExpression: %v", c.sel, err)
		}
		r.ExpressionAttributeValues = nil
		if _, err := tb.Scan(ctx, table.ScanInput{ReadInput: r}); !errors.Is(err, awserr.ErrValidation) {
			t.Errorf("Scan, Select %s with a ProjectionExpression: %v", c.sel, err)
		}
	}
	r := table.ReadInput{TableName: "proj", Select: table.SelectSpecific, ProjectionExpression: "x"}
	if out, err := tb.Scan(ctx, table.ScanInput{ReadInput: r}); err != nil || len(out.Items) != 1 || len(out.Items[0]) != 1 {
		t.Fatalf("SPECIFIC_ATTRIBUTES with a ProjectionExpression: %+v %v", out, err)
	}
}

// TestQueryPages: a Limit that stops on the partition's last item still
// gives a LastEvaluatedKey (the next page is empty, without one), as
// DynamoDB's does; Select COUNT answers without Items.
func TestQueryPages(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "pages", "n", "")
	for _, n := range []string{"1", "2", "3"} {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "pages", Item: table.Item{"pk": S("p"), "n": N(n)}}); err != nil {
			t.Fatal(err)
		}
	}
	q := table.QueryInput{ReadInput: table.ReadInput{TableName: "pages", ExpressionAttributeValues: table.Item{":p": S("p")}, Limit: 3}, KeyConditionExpression: "pk = :p"}
	out, err := tb.Query(ctx, q)
	if err != nil || out.Count != 3 || out.LastEvaluatedKey["n"].Number() != "3" {
		t.Fatalf("Limit 3 of 3: %+v %v", out, err)
	}
	q.ExclusiveStartKey = out.LastEvaluatedKey
	if out, err = tb.Query(ctx, q); err != nil || out.Count != 0 || out.LastEvaluatedKey != nil {
		t.Fatalf("after the last: %+v %v", out, err)
	}
	q.ExclusiveStartKey, q.Limit = nil, 4
	if out, err = tb.Query(ctx, q); err != nil || out.Count != 3 || out.LastEvaluatedKey != nil {
		t.Fatalf("Limit 4 of 3: %+v %v", out, err)
	}

	q.Select, q.Limit = table.SelectCount, 0
	out, err = tb.Query(ctx, q)
	if err != nil || out.Count != 3 {
		t.Fatalf("COUNT: %+v %v", out, err)
	}
	if b, _ := json.Marshal(out); string(b) != `{"Count":3,"ScannedCount":3}` {
		t.Errorf("COUNT answer %s", b)
	}
	q.Select, q.ExpressionAttributeValues = "", table.Item{":p": S("none")}
	out, _ = tb.Query(ctx, q)
	if b, _ := json.Marshal(out); string(b) != `{"Items":[],"Count":0,"ScannedCount":0}` {
		t.Errorf("empty answer %s", b)
	}
}

// TestTableIdIsUUID: a table's TableId is a UUID, as DynamoDB's.
func TestTableIdIsUUID(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "ids", "", "")
	d, err := tb.DescribeTable(ctx, "ids")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := uuid.Parse(d.TableId); err != nil || len(d.TableId) != 36 {
		t.Errorf("TableId %q: %v", d.TableId, err)
	}
}

// TestCanonicalNumbers: numbers outside keys, at any depth, and the ones
// an update copies, are stored and returned in DynamoDB's canonical form.
func TestCanonicalNumbers(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "numbers", "", "")
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "numbers", Item: table.Item{"pk": S("a"),
		"n": N("01.50"), "ns": events.NewNumberSetAttribute([]string{"1.0", "2"}),
		"m": events.NewMapAttribute(table.Item{"x": N("1e2")}), "l": events.NewListAttribute([]events.DynamoDBAttributeValue{N("-0"), S("s")}),
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "numbers", Key: table.Item{"pk": S("a")}, UpdateExpression: "SET u = :u",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":u": N("2.50")}}}); err != nil {
		t.Fatal(err)
	}
	it := get(t, tb, "numbers", table.Item{"pk": S("a")})
	if it["n"].Number() != "1.5" || it["ns"].NumberSet()[0] != "1" || it["m"].Map()["x"].Number() != "100" ||
		it["l"].List()[0].Number() != "0" || it["l"].List()[1].String() != "s" || it["u"].Number() != "2.5" {
		t.Fatalf("item %v", it)
	}
}

// TestNumberKeysAreStoredInCanonicalForm: DynamoDB stores and returns a
// number in its canonical form ("2.0" is 2, "5.50" is 5.5), a key's as
// any other. An UpdateItem that creates its item from a Key of "2.0", and
// the change records of writes named by such a Key, carry the canonical
// form. (The Key's form was stored as given and returned by every read.)
func TestNumberKeysAreStoredInCanonicalForm(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "nums", "n", table.ViewNewAndOldImages)
	out, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "nums", Key: table.Item{"pk": S("p"), "n": N("2.0")},
		UpdateExpression: "SET x = :v", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": S("v")}}, ReturnValues: "ALL_NEW"})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.Attributes["n"].Number(); got != "2" {
		t.Errorf("ALL_NEW n = %q, want 2", got)
	}
	if got := get(t, tb, "nums", table.Item{"pk": S("p"), "n": N("2")})["n"].Number(); got != "2" {
		t.Errorf("GetItem n = %q, want 2", got)
	}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "nums", Item: table.Item{"pk": S("p"), "n": N("5.50")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "nums", Key: table.Item{"pk": S("p"), "n": N("0002.000")}}); err != nil {
		t.Fatal(err)
	}
	cs := changes(t, tb, "nums")
	if len(cs) != 3 {
		t.Fatalf("%d change records, want 3", len(cs))
	}
	for i, want := range []string{"2", "5.5", "2"} {
		if got := cs[i].Keys["n"].Number(); got != want {
			t.Errorf("change %d (%s): Keys.n = %q, want %q", i, cs[i].EventName, got, want)
		}
	}
}
