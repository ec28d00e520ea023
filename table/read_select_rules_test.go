package table_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// wantValidation fails unless err is a ValidationException whose message
// is msg.
func wantValidation(t *testing.T, what string, err error, msg string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), "ValidationException") || !strings.HasSuffix(err.Error(), msg) {
		t.Fatalf("%s: got %v, want ValidationException %q", what, err, msg)
	}
}

// TestASelectOfSpecificAttributesNamesThem: Select SPECIFIC_ATTRIBUTES
// returns the attributes AttributesToGet or ProjectionExpression names
// (API_Query, API_Scan), and DynamoDB refuses it without either: Query
// "1 validation error detected: Must specify the AttributesToGet or
// ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES", Scan the
// same without the "1 validation error detected: " (moto's
// tests/test_dynamodb/test_dynamodb_select.py, verified against AWS).
// runnel used to answer whole items.
func TestASelectOfSpecificAttributesNamesThem(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	putItem(t, tb, "idx", table.Item{"pk": S("a"), "sk": N("1"), "x": S("x1")})
	const msg = "Must specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES"
	r := table.ReadInput{TableName: "idx", Select: table.SelectSpecific, ExpressionAttributeValues: table.Item{":p": S("a")}}
	_, err := tb.Query(ctx, table.QueryInput{ReadInput: r, KeyConditionExpression: "pk = :p"})
	wantValidation(t, "Query", err, "1 validation error detected: "+msg)
	r.ExpressionAttributeValues = nil
	_, err = tb.Scan(ctx, table.ScanInput{ReadInput: r})
	wantValidation(t, "Scan", err, ": "+msg)
	if strings.Contains(err.Error(), "1 validation error") {
		t.Errorf("Scan: %v, want the message without the Query's prefix", err)
	}
	r.ProjectionExpression = "x"
	out, err := tb.Scan(ctx, table.ScanInput{ReadInput: r})
	if err != nil || out.Count != 1 || len(out.Items[0]) != 1 {
		t.Fatalf("Scan SPECIFIC_ATTRIBUTES with a ProjectionExpression: %+v %v", out, err)
	}
}

// TestAllProjectedAttributesAreAnIndexes: Select ALL_PROJECTED_ATTRIBUTES
// is "Allowed only when querying an index" (API_Query, API_Scan); on a
// table DynamoDB refuses it: Query "1 validation error detected:
// ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an
// IndexName", Scan the same without the prefix (moto's
// test_dynamodb_select.py, verified against AWS). runnel used to refuse
// it in words of its own.
func TestAllProjectedAttributesAreAnIndexes(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	const msg = "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName"
	r := table.ReadInput{TableName: "idx", Select: table.SelectAllProjected, ExpressionAttributeValues: table.Item{":p": S("a")}}
	_, err := tb.Query(ctx, table.QueryInput{ReadInput: r, KeyConditionExpression: "pk = :p"})
	wantValidation(t, "Query", err, "1 validation error detected: "+msg)
	r.ExpressionAttributeValues = nil
	_, err = tb.Scan(ctx, table.ScanInput{ReadInput: r})
	wantValidation(t, "Scan", err, ": "+msg)
	if strings.Contains(err.Error(), "1 validation error") {
		t.Errorf("Scan: %v, want the message without the Query's prefix", err)
	}
	r.IndexName = "byOwner"
	if _, err := tb.Scan(ctx, table.ScanInput{ReadInput: r}); err != nil {
		t.Fatalf("Scan of an index with ALL_PROJECTED_ATTRIBUTES: %v", err)
	}
}

// TestAGSIReadAsksOnlyForWhatTheIndexProjects: "If you query or scan a
// global secondary index, you can only request attributes that are
// projected into the index. Global secondary index queries cannot fetch
// attributes from the parent table" (API_Query, API_Scan, Select). A GSI
// projects the table's and its own key attributes, and INCLUDE's
// NonKeyAttributes (ALL: every attribute). DynamoDB refuses a
// ProjectionExpression of a Query or Scan naming another: "One or more
// parameter values were invalid: Global secondary index X does not
// project [a]", and a Query's FilterExpression naming one: "One or more
// parameter values were invalid: Secondary index X does not project one
// or more filter attributes: [a, b]" (the words its users quote, and
// DynamoDB Local's). A Scan's filter is not checked: it sees the attribute
// absent (DynamoDB Local checks a Query's only; AWS's index scans "match
// nothing rather than failing", as dynoxide recorded). runnel used to
// accept both, answering a projection without the attribute and a filter
// that matched nothing; an LSI, which fetches from the table, is not
// checked.
func TestAGSIReadAsksOnlyForWhatTheIndexProjects(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	_, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "inc",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "sk", AttributeType: "N"}, {AttributeName: "g", AttributeType: "S"}},
		GlobalSecondaryIndexes: []table.SecondaryIndex{{IndexName: "byG", KeySchema: []table.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}},
			Projection: table.Projection{ProjectionType: "INCLUDE", NonKeyAttributes: []string{"note"}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	putItem(t, tb, "idx", table.Item{"pk": S("a"), "sk": N("1"), "owner": S("ann"), "city": S("oslo"), "score": N("1"), "at": N("5"), "note": S("n"), "x": S("x1")})
	putItem(t, tb, "idx", table.Item{"pk": S("a"), "sk": N("2"), "owner": S("ann"), "x": S("x2")})
	putItem(t, tb, "inc", table.Item{"pk": S("a"), "sk": N("1"), "g": S("g"), "note": S("n"), "x": S("x1"), "m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"a": S("1")})})

	const invalid = "One or more parameter values were invalid: "
	q := func(tableName, index, kc, filter, proj string, vals table.Item) (*table.QueryOutput, error) {
		return tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{TableName: tableName, IndexName: index, FilterExpression: filter, ProjectionExpression: proj,
			ExpressionAttributeValues: vals}, KeyConditionExpression: kc})
	}
	_, err = q("idx", "byOwner", "owner = :o", "x = :x", "", table.Item{":o": S("ann"), ":x": S("x1")})
	wantValidation(t, "Query KEYS_ONLY filter on x", err, invalid+"Secondary index byOwner does not project one or more filter attributes: [x]")
	_, err = q("idx", "byOwner", "owner = :o", "x = :x AND note = :n AND sk > :z", "", table.Item{":o": S("ann"), ":x": S("x1"), ":n": S("n"), ":z": N("0")})
	wantValidation(t, "Query KEYS_ONLY filter on x, note and sk", err, invalid+"Secondary index byOwner does not project one or more filter attributes: [note, x]")
	_, err = q("idx", "byOwner", "owner = :o", "", "x, pk", table.Item{":o": S("ann")})
	wantValidation(t, "Query KEYS_ONLY projection of x", err, invalid+"Global secondary index byOwner does not project [x]")
	_, err = tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byOwner", ProjectionExpression: "x"}})
	wantValidation(t, "Scan KEYS_ONLY projection of x", err, invalid+"Global secondary index byOwner does not project [x]")
	_, err = q("inc", "byG", "g = :g", "", "note, m.a, x", table.Item{":g": S("g")})
	wantValidation(t, "Query INCLUDE projection of note, m.a and x", err, invalid+"Global secondary index byG does not project [m, x]")

	// What the index holds may be asked for.
	if out, err := q("idx", "byOwner", "owner = :o", "sk > :z", "pk, sk", table.Item{":o": S("ann"), ":z": N("1")}); err != nil || out.Count != 1 {
		t.Fatalf("Query KEYS_ONLY of its keys: %+v %v", out, err)
	}
	if out, err := q("inc", "byG", "g = :g", "note = :n", "note, pk, g", table.Item{":g": S("g"), ":n": S("n")}); err != nil || out.Count != 1 || len(out.Items[0]) != 3 {
		t.Fatalf("Query INCLUDE of note: %+v %v", out, err)
	}
	if out, err := q("idx", "byCity", "city = :c", "x = :x", "x", table.Item{":c": S("oslo"), ":x": S("x1")}); err != nil || out.Count != 1 {
		t.Fatalf("Query ALL of x: %+v %v", out, err)
	}
	// A Scan's filter sees the attribute absent; an LSI fetches from the table.
	if out, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byOwner", FilterExpression: "attribute_exists(x)"}}); err != nil || out.Count != 0 || out.ScannedCount != 2 {
		t.Fatalf("Scan KEYS_ONLY filter on x: %+v %v", out, err)
	}
	if out, err := q("idx", "byTime", "pk = :p", "x = :x", "x", table.Item{":p": S("a"), ":x": S("x1")}); err != nil || out.Count != 1 {
		t.Fatalf("Query LSI filter on x: %+v %v", out, err)
	}
}
