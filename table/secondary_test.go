package table_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// createIndexed creates "idx": pk (S) and sk (N), a GSI byCity (city S,
// score N, ALL), a GSI byOwner (owner S, KEYS_ONLY), an LSI byTime (pk,
// at N, INCLUDE note).
func createIndexed(t *testing.T, tb *table.Service) *table.TableDescription {
	t.Helper()
	d, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "idx",
		KeySchema: []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "sk", AttributeType: "N"},
			{AttributeName: "city", AttributeType: "S"}, {AttributeName: "score", AttributeType: "N"}, {AttributeName: "owner", AttributeType: "S"}, {AttributeName: "at", AttributeType: "N"}},
		GlobalSecondaryIndexes: []table.SecondaryIndex{
			{IndexName: "byCity", KeySchema: []table.KeySchemaElement{{AttributeName: "city", KeyType: "HASH"}, {AttributeName: "score", KeyType: "RANGE"}}, Projection: table.Projection{ProjectionType: "ALL"}},
			{IndexName: "byOwner", KeySchema: []table.KeySchemaElement{{AttributeName: "owner", KeyType: "HASH"}}, Projection: table.Projection{ProjectionType: "KEYS_ONLY"}},
		},
		LocalSecondaryIndexes: []table.SecondaryIndex{
			{IndexName: "byTime", KeySchema: []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "at", KeyType: "RANGE"}}, Projection: table.Projection{ProjectionType: "INCLUDE", NonKeyAttributes: []string{"note"}}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func putItem(t *testing.T, tb *table.Service, name string, it table.Item) {
	t.Helper()
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: name, Item: it}); err != nil {
		t.Fatal(err)
	}
}

func query(t *testing.T, tb *table.Service, in table.QueryInput) *table.QueryOutput {
	t.Helper()
	out, err := tb.Query(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// attrsOf lists attribute a of items.
func attrsOf(items []table.Item, a string) []string {
	var out []string
	for _, it := range items {
		b, _ := json.Marshal(it[a])
		out = append(out, strings.Trim(string(b[strings.IndexByte(string(b), ':')+1:]), `"}`))
	}
	return out
}

func TestSecondaryIndexes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	d := createIndexed(t, tb)
	if len(d.GlobalSecondaryIndexes) != 2 || d.GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE" || d.GlobalSecondaryIndexes[0].Backfilling != nil ||
		d.GlobalSecondaryIndexes[0].IndexArn != d.TableArn+"/index/byCity" || len(d.LocalSecondaryIndexes) != 1 || d.LocalSecondaryIndexes[0].IndexStatus != "" ||
		len(d.AttributeDefinitions) != 6 || *d.GlobalSecondaryIndexes[0].ProvisionedThroughput != (table.Throughput{}) {
		t.Fatalf("description %+v", d)
	}
	items := []table.Item{
		{"pk": S("a"), "sk": N("1"), "city": S("oslo"), "score": N("30"), "owner": S("ann"), "at": N("5"), "note": S("n1"), "x": S("x1")},
		{"pk": S("a"), "sk": N("2"), "city": S("oslo"), "score": N("10"), "at": N("3"), "x": S("x2")},
		{"pk": S("b"), "sk": N("1"), "city": S("oslo"), "score": N("20"), "owner": S("ann"), "x": S("x3")},
		{"pk": S("c"), "sk": N("1"), "city": S("rome"), "owner": S("bob")}, // no score: not in byCity
		{"pk": S("d"), "sk": N("1"), "x": S("x5")},                         // in no index
	}
	for _, it := range items {
		putItem(t, tb, "idx", it)
	}
	d, _ = tb.DescribeTable(ctx, "idx")
	if g := d.GlobalSecondaryIndexes; g[0].ItemCount != 3 || g[1].ItemCount != 3 || d.LocalSecondaryIndexes[0].ItemCount != 2 || g[0].IndexSizeBytes == 0 {
		t.Fatalf("counts %+v %+v", g, d.LocalSecondaryIndexes)
	}

	city := func(c string) table.QueryInput {
		return table.QueryInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byCity", ExpressionAttributeValues: table.Item{":c": S(c)}}, KeyConditionExpression: "city = :c"}
	}
	out := query(t, tb, city("oslo"))
	if got := attrsOf(out.Items, "score"); !slices.Equal(got, []string{"10", "20", "30"}) || out.Items[0]["x"].String() != "x2" {
		t.Fatalf("byCity oslo: %v %v", got, out.Items)
	}
	back := city("oslo")
	back.ScanIndexForward = new(bool)
	back.KeyConditionExpression = "city = :c AND score > :s"
	back.ExpressionAttributeValues[":s"] = N("10")
	if got := attrsOf(query(t, tb, back).Items, "score"); !slices.Equal(got, []string{"30", "20"}) {
		t.Fatalf("byCity descending, score > 10: %v", got)
	}
	back.Limit = 1
	var desc []string
	for {
		o := query(t, tb, back)
		desc = append(desc, attrsOf(o.Items, "score")...)
		if back.ExclusiveStartKey = o.LastEvaluatedKey; o.LastEvaluatedKey == nil || len(desc) > 3 {
			break
		}
	}
	if !slices.Equal(desc, []string{"30", "20"}) {
		t.Fatalf("byCity descending, a page of 1 at a time: %v", desc)
	}
	back.Limit, back.ExclusiveStartKey = 0, nil
	// Paging: LastEvaluatedKey holds the table's and the index's keys.
	page := city("oslo")
	page.Limit = 2
	p1 := query(t, tb, page)
	if lek := p1.LastEvaluatedKey; len(lek) != 4 || lek["score"].Number() != "20" || lek["pk"].String() != "b" {
		t.Fatalf("LastEvaluatedKey %v", lek)
	}
	page.ExclusiveStartKey = p1.LastEvaluatedKey
	if p2 := query(t, tb, page); !slices.Equal(attrsOf(p2.Items, "score"), []string{"30"}) || p2.LastEvaluatedKey != nil {
		t.Fatalf("page 2: %v %v", p2.Items, p2.LastEvaluatedKey)
	}
	// KEYS_ONLY: the table's and the index's keys.
	owner := table.QueryInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byOwner", ExpressionAttributeNames: map[string]string{"#o": "owner"}, ExpressionAttributeValues: table.Item{":o": S("ann")}}, KeyConditionExpression: "#o = :o"}
	if o := query(t, tb, owner); o.Count != 2 || len(o.Items[0]) != 3 || o.Items[0]["owner"].String() != "ann" {
		t.Fatalf("byOwner: %v", o.Items)
	}
	// INCLUDE on an LSI: keys, the LSI key and note; ALL_ATTRIBUTES and
	// ConsistentRead are allowed on an LSI.
	lsi := table.QueryInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byTime", ExpressionAttributeValues: table.Item{":p": S("a")}, ConsistentRead: true}, KeyConditionExpression: "pk = :p"}
	o := query(t, tb, lsi)
	if !slices.Equal(attrsOf(o.Items, "at"), []string{"3", "5"}) || len(o.Items[1]) != 4 || o.Items[1]["note"].String() != "n1" {
		t.Fatalf("byTime: %v", o.Items)
	}
	lsi.Select = "ALL_ATTRIBUTES"
	if o := query(t, tb, lsi); o.Items[1]["x"].String() != "x1" {
		t.Fatalf("byTime ALL_ATTRIBUTES: %v", o.Items)
	}
	// Scan of an index: its items only.
	sc, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byCity"}})
	if err != nil || sc.Count != 3 {
		t.Fatalf("Scan byCity: %v %v", sc, err)
	}

	// Writes move the index: an update to another city, a delete, a
	// removed index attribute.
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: table.Item{"pk": S("a"), "sk": N("2")}, UpdateExpression: "SET city = :r", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":r": S("rome")}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "idx", Key: table.Item{"pk": S("b"), "sk": N("1")}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: table.Item{"pk": S("a"), "sk": N("1")}, UpdateExpression: "REMOVE score"}); err != nil {
		t.Fatal(err)
	}
	if o := query(t, tb, city("oslo")); o.Count != 0 {
		t.Fatalf("oslo after the writes: %v", o.Items)
	}
	if o := query(t, tb, city("rome")); !slices.Equal(attrsOf(o.Items, "sk"), []string{"2"}) {
		t.Fatalf("rome after the writes: %v", o.Items)
	}
	// An entry that no longer matches its item (a reader that listed the
	// entries before a write moved them) is passed over.
	table.IndexAs(t, tb, "idx", "byCity", table.Item{"pk": S("a"), "sk": N("2"), "city": S("oslo"), "score": N("10")})
	if o := query(t, tb, city("oslo")); o.Count != 0 {
		t.Fatalf("a stale entry read: %v", o.Items)
	}

	refused := []struct {
		name string
		call func() error
		msg  string
	}{
		{"consistent read on a GSI", func() error { q := city("oslo"); q.ConsistentRead = true; _, err := tb.Query(ctx, q); return err }, "Consistent reads are not supported on global secondary indexes"},
		{"ALL_ATTRIBUTES on a KEYS_ONLY GSI", func() error { q := owner; q.Select = "ALL_ATTRIBUTES"; _, err := tb.Query(ctx, q); return err },
			"Select type ALL_ATTRIBUTES is not supported for global secondary index byOwner because its projection type is not ALL"},
		{"unknown index", func() error { q := city("oslo"); q.IndexName = "nope"; _, err := tb.Query(ctx, q); return err }, "The table does not have the specified index: nope"},
		{"filter on the index key", func() error {
			q := city("oslo")
			q.FilterExpression = "score > :s"
			q.ExpressionAttributeValues[":s"] = N("1")
			_, err := tb.Query(ctx, q)
			return err
		},
			"Filter Expression can only contain non-primary key attributes: Primary key attribute: score"},
		{"index key of the wrong type", func() error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "idx", Item: table.Item{"pk": S("e"), "sk": N("1"), "city": N("5")}})
			return err
		},
			"Type mismatch for Index Key city Expected: S Actual: N IndexName: byCity"},
		{"update giving an index key a :value of another type, before the item is read", func() error {
			_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: table.Item{"pk": S("g"), "sk": N("1")},
				UpdateExpression: "SET x = missing[1], city = :n", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":n": N("5")}}})
			return err
		},
			"One or more parameter values were invalid: Type mismatch for Index Key city Expected: S Actual: N IndexName: byCity"},
		{"update reading into an index key", func() error {
			_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: table.Item{"pk": S("g"), "sk": N("1")}, UpdateExpression: "SET x = city.a"})
			return err
		},
			"Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: city"},
		{"update giving an index key an attribute of another type", func() error {
			_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: table.Item{"pk": S("g"), "sk": N("1")},
				UpdateExpression: "SET other = :n", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":n": N("5")}}})
			if err != nil {
				return err
			}
			_, err = tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: table.Item{"pk": S("g"), "sk": N("1")}, UpdateExpression: "SET city = other"})
			return err
		},
			"The update expression attempted to update the secondary index key to unsupported type"},
		{"empty index key", func() error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "idx", Item: table.Item{"pk": S("e"), "sk": N("1"), "owner": S("")}})
			return err
		},
			"The AttributeValue for a key attribute cannot contain an empty string value. IndexName: byOwner, IndexKey: owner"},
		{"start key of another partition", func() error {
			q := city("oslo")
			q.ExclusiveStartKey = table.Item{"pk": S("a"), "sk": N("2"), "city": S("rome"), "score": N("10")}
			_, err := tb.Query(ctx, q)
			return err
		}, "The provided starting key is outside query boundaries based on provided conditions"},
		{"index partition key over 2048 bytes", func() error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "idx", Item: table.Item{"pk": S("e"), "sk": N("1"), "owner": S(strings.Repeat("o", 2049))}})
			return err
		}, "Size of hashkey has exceeded the maximum size limit of2048 bytes"},
		{"a batch with an index key too long, refused whole", func() error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "idx", Item: table.Item{"pk": S("e"), "sk": N("1"), "city": S("c"), "score": N("1" + strings.Repeat("0", 37)), "at": N("1")}})
			if err != nil {
				return err
			}
			_, err = tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"idx": {
				{PutRequest: &table.PutRequest{Item: table.Item{"pk": S("f"), "sk": N("1")}}},
				{PutRequest: &table.PutRequest{Item: table.Item{"pk": S("e"), "sk": N("2"), "city": S(strings.Repeat("c", 3000))}}},
			}}})
			return err
		}, "Size of hashkey has exceeded the maximum size limit of2048 bytes"},
		{"bad start key", func() error {
			q := city("rome")
			q.ExclusiveStartKey = table.Item{"pk": S("a"), "sk": N("2")}
			_, err := tb.Query(ctx, q)
			return err
		}, "The provided starting key is invalid"},
	}
	for _, c := range refused {
		wantError(t, c.call(), awserr.ErrValidation, c.msg)
	}
	if get(t, tb, "idx", table.Item{"pk": S("f"), "sk": N("1")}) != nil {
		t.Fatal("a request of a refused batch was written")
	}
}

func TestCreateTableIndexRules(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	ks := func(names ...string) []table.KeySchemaElement {
		out := []table.KeySchemaElement{{AttributeName: names[0], KeyType: "HASH"}}
		if len(names) > 1 {
			out = append(out, table.KeySchemaElement{AttributeName: names[1], KeyType: "RANGE"})
		}
		return out
	}
	defs := func(names ...string) []table.AttributeDefinition {
		var out []table.AttributeDefinition
		for _, n := range names {
			out = append(out, table.AttributeDefinition{AttributeName: n, AttributeType: "S"})
		}
		return out
	}
	all := table.Projection{ProjectionType: "ALL"}
	gsis := func(n int) []table.SecondaryIndex {
		var out []table.SecondaryIndex
		for i := range n {
			out = append(out, table.SecondaryIndex{IndexName: fmt.Sprint("gsi", i), KeySchema: ks("g"), Projection: all})
		}
		return out
	}
	lsis := func(n int) []table.SecondaryIndex {
		var out []table.SecondaryIndex
		for i := range n {
			out = append(out, table.SecondaryIndex{IndexName: fmt.Sprint("lsi", i), KeySchema: ks("pk", "l"), Projection: all})
		}
		return out
	}
	cases := []struct {
		name string
		in   table.CreateTableInput
		msg  string
	}{
		{"21 GSIs", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g"), GlobalSecondaryIndexes: gsis(21)}, "GlobalSecondaryIndex count exceeds the per-table limit of 20"},
		{"6 LSIs", table.CreateTableInput{KeySchema: ks("pk", "sk"), AttributeDefinitions: defs("pk", "sk", "l"), LocalSecondaryIndexes: lsis(6)}, "Number of LocalSecondaryIndexes exceeds per-table limit of 5"},
		{"LSI without table range key", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "l"), LocalSecondaryIndexes: lsis(1)}, "Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex"},
		{"LSI of another hash key", table.CreateTableInput{KeySchema: ks("pk", "sk"), AttributeDefinitions: defs("pk", "sk", "l"),
			LocalSecondaryIndexes: []table.SecondaryIndex{{IndexName: "lsi", KeySchema: ks("l", "sk"), Projection: all}}},
			"Index KeySchema does not have the same leading hash key as table KeySchema for index: lsi. index hash key: l, table hash key: pk"},
		{"LSI without range key", table.CreateTableInput{KeySchema: ks("pk", "sk"), AttributeDefinitions: defs("pk", "sk"),
			LocalSecondaryIndexes: []table.SecondaryIndex{{IndexName: "lsi", KeySchema: ks("pk"), Projection: all}}}, "Index KeySchema does not have a range key for index: lsi"},
		{"duplicate name", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g"), GlobalSecondaryIndexes: append(gsis(1), gsis(1)...)}, "Duplicate index name: gsi0"},
		{"undefined index key", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk"), GlobalSecondaryIndexes: gsis(1)}, "Some index key attributes are not defined in AttributeDefinitions. Keys: [g]"},
		{"unused definition", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g", "z"), GlobalSecondaryIndexes: gsis(1)},
			"Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions"},
		{"ALL with NonKeyAttributes", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g"),
			GlobalSecondaryIndexes: []table.SecondaryIndex{{IndexName: "gsi", KeySchema: ks("g"), Projection: table.Projection{ProjectionType: "ALL", NonKeyAttributes: []string{"a"}}}}},
			"ProjectionType is ALL, but NonKeyAttributes is specified"},
		{"GSI of a provisioned table without throughput", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g"), GlobalSecondaryIndexes: gsis(1),
			BillingMode: table.BillingProvisioned, ProvisionedThroughput: &table.Throughput{ReadCapacityUnits: 5, WriteCapacityUnits: 5}},
			"ProvisionedThroughput must be specified for index: gsi0"},
		{"GSI of an on-demand table with throughput", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g"), BillingMode: table.BillingPayPerRequest,
			GlobalSecondaryIndexes: []table.SecondaryIndex{{IndexName: "gsi", KeySchema: ks("g"), Projection: all, ProvisionedThroughput: &table.Throughput{ReadCapacityUnits: 1, WriteCapacityUnits: 1}}}},
			"ProvisionedThroughput should not be specified for index: gsi when BillingMode is PAY_PER_REQUEST"},
		{"101 projected attributes", table.CreateTableInput{KeySchema: ks("pk"), AttributeDefinitions: defs("pk", "g"), GlobalSecondaryIndexes: func() []table.SecondaryIndex {
			var out []table.SecondaryIndex
			for i := range 6 {
				p := table.Projection{ProjectionType: "INCLUDE"}
				for j := range 17 {
					p.NonKeyAttributes = append(p.NonKeyAttributes, fmt.Sprint("a", j))
				}
				out = append(out, table.SecondaryIndex{IndexName: fmt.Sprint("gsi", i), KeySchema: ks("g"), Projection: p})
			}
			return out
		}()}, "Number of projected attributes in all indexes exceeds limit of 100"},
	}
	for _, c := range cases {
		c.in.TableName = "rules"
		_, err := tb.CreateTable(ctx, c.in)
		wantError(t, err, awserr.ErrValidation, c.msg)
	}
	// The limits themselves are accepted.
	if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "max", KeySchema: ks("pk", "sk"), AttributeDefinitions: defs("pk", "sk", "g", "l"),
		GlobalSecondaryIndexes: gsis(20), LocalSecondaryIndexes: lsis(5)}); err != nil {
		t.Fatal(err)
	}
	// An index sort key has the table sort key's limit, 1024 bytes.
	_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "max", Item: table.Item{"pk": S("p"), "sk": S("s"), "l": S(strings.Repeat("l", 1025))}})
	wantError(t, err, awserr.ErrValidation, "Aggregated size of all range keys has exceeded the size limit of 1024 bytes")
	putItem(t, tb, "max", table.Item{"pk": S("p"), "sk": S("s"), "l": S(strings.Repeat("l", 1024))})
}

// TestUpdateTableCreatesAndDeletesGSI: a GSI added to a table with items
// is CREATING (Backfilling false) in UpdateTable's answer, then
// Backfilling true while it is filled, refused to readers, but kept up to
// date by writes; then ACTIVE with every item. Deleting it removes it.
func TestUpdateTableCreatesAndDeletesGSI(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "grow", "", "")
	for i := range 50 {
		putItem(t, tb, "grow", table.Item{"pk": S(fmt.Sprint("k", i)), "g": S(fmt.Sprint("g", i%5))})
	}
	// The backfill stops at an item whose lock a "transaction" holds.
	release := table.HoldItems(t, tb, "grow", table.Item{"pk": S("k7")})
	create := table.GlobalSecondaryIndexUpdate{Create: &table.SecondaryIndex{IndexName: "byG", KeySchema: []table.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: table.Projection{ProjectionType: "KEYS_ONLY"}}}
	gdef := []table.AttributeDefinition{{AttributeName: "g", AttributeType: "S"}}
	d, err := tb.UpdateGlobalSecondaryIndexes(ctx, "grow", gdef, []table.GlobalSecondaryIndexUpdate{create})
	if err != nil {
		t.Fatal(err)
	}
	if g := d.GlobalSecondaryIndexes; len(g) != 1 || g[0].IndexStatus != "CREATING" || g[0].Backfilling == nil || *g[0].Backfilling || len(d.AttributeDefinitions) != 2 {
		t.Fatalf("UpdateTable's answer: %+v", d)
	}
	testenv.Eventually(t, 10*time.Second, "backfilling", func() bool {
		d, _ := tb.DescribeTable(ctx, "grow")
		b := d.GlobalSecondaryIndexes[0].Backfilling
		return b != nil && *b
	})
	q := table.QueryInput{ReadInput: table.ReadInput{TableName: "grow", IndexName: "byG", ExpressionAttributeValues: table.Item{":g": S("new")}}, KeyConditionExpression: "g = :g"}
	_, err = tb.Query(ctx, q)
	wantError(t, err, awserr.ErrValidation, "Cannot read from backfilling global secondary index: byG")
	_, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{{Create: &table.SecondaryIndex{IndexName: "other", KeySchema: create.Create.KeySchema, Projection: create.Create.Projection}}})
	wantError(t, err, awserr.ErrLimitExceeded, "Only 1 online index can be created or deleted simultaneously per table")
	putItem(t, tb, "grow", table.Item{"pk": S("k1"), "g": S("new")}) // during the backfill
	release()
	testenv.Eventually(t, 10*time.Second, "ACTIVE", func() bool {
		d, _ := tb.DescribeTable(ctx, "grow")
		return d.GlobalSecondaryIndexes[0].IndexStatus == "ACTIVE" && d.GlobalSecondaryIndexes[0].Backfilling == nil
	})
	if o := query(t, tb, q); o.Count != 1 || o.Items[0]["pk"].String() != "k1" {
		t.Fatalf("new: %v", o.Items)
	}
	q.ExpressionAttributeValues[":g"] = S("g1")
	if o := query(t, tb, q); o.Count != 9 { // k1 moved to "new"
		t.Fatalf("g1: %d items", o.Count)
	}
	if d, _ := tb.DescribeTable(ctx, "grow"); d.GlobalSecondaryIndexes[0].ItemCount != 50 {
		t.Fatalf("ItemCount %d", d.GlobalSecondaryIndexes[0].ItemCount)
	}

	_, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", gdef, []table.GlobalSecondaryIndexUpdate{create})
	wantError(t, err, awserr.ErrValidation, "Attempting to create an index which already exists")
	_, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{create, {Delete: &table.IndexRef{IndexName: "byG"}}})
	wantError(t, err, awserr.ErrLimitExceeded, "Only 1 online index can be created or deleted simultaneously per table")
	_, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{{Delete: &table.IndexRef{IndexName: "nope"}}})
	wantError(t, err, awserr.ErrResourceNotFound, "nope")
	_, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{{Update: &table.IndexRef{IndexName: "nope"}}})
	wantError(t, err, awserr.ErrResourceNotFound, "nope")
	_, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{{}})
	wantError(t, err, awserr.ErrValidation, "One of GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Update, or GlobalSecondaryIndexUpdate.Delete must be specified")
	// Update (throughput) changes nothing runnel enforces.
	if d, err := tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{{Update: &table.IndexRef{IndexName: "byG"}}}); err != nil || d.GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE" {
		t.Fatalf("Update: %+v %v", d, err)
	}
	d, err = tb.UpdateGlobalSecondaryIndexes(ctx, "grow", nil, []table.GlobalSecondaryIndexUpdate{{Delete: &table.IndexRef{IndexName: "byG"}}})
	if err != nil || len(d.GlobalSecondaryIndexes) != 0 || len(d.AttributeDefinitions) != 1 {
		t.Fatalf("delete: %+v %v", d, err)
	}
	_, err = tb.Query(ctx, q)
	wantError(t, err, awserr.ErrValidation, "The table does not have the specified index: byG")
}

// TestBackfillOfADeletedTable: a table deleted during its GSI's backfill,
// and another created under its name: the backfill ends without storing
// anything, so the new table's description (here after a restart) is the
// new table's.
func TestBackfillOfADeletedTable(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	tb := rn.Tables
	createTable(t, tb, "grow", "", "")
	putItem(t, tb, "grow", table.Item{"pk": S("k"), "g": S("g")})
	release := table.HoldItems(t, tb, "grow", table.Item{"pk": S("k")})
	if _, err := tb.UpdateGlobalSecondaryIndexes(ctx, "grow", []table.AttributeDefinition{{AttributeName: "g", AttributeType: "S"}}, []table.GlobalSecondaryIndexUpdate{
		{Create: &table.SecondaryIndex{IndexName: "byG", KeySchema: []table.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}}, Projection: table.Projection{ProjectionType: "ALL"}}},
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.DeleteTable(ctx, "grow"); err != nil {
		t.Fatal(err)
	}
	createTable(t, tb, "grow", "sk", "")
	release()
	table.WaitBackfills(tb)
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	d, err := rn.Tables.DescribeTable(ctx, "grow")
	if err != nil || len(d.GlobalSecondaryIndexes) != 0 || len(d.KeySchema) != 2 {
		t.Fatalf("the new table after a restart: %+v %v", d, err)
	}
}

// indexView is what an index holds, by table key: the projected item,
// printed; computed from an index Scan or, as it should be, from the
// table's items.
func indexView(t *testing.T, tb *table.Service, index string) map[string]string {
	t.Helper()
	out := map[string]string{}
	var start table.Item
	for {
		page, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: index, ExclusiveStartKey: start, Limit: 37}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range page.Items {
			out[it["pk"].String()+"/"+it["sk"].Number()] = printItem(it)
		}
		if start = page.LastEvaluatedKey; start == nil {
			return out
		}
	}
}

func printItem(it table.Item) string {
	b, _ := json.Marshal(it) // map keys sorted
	return string(b)
}

// expectedView is what index should hold of the table's items.
func expectedView(t *testing.T, tb *table.Service, index string) map[string]string {
	t.Helper()
	keys := map[string][]string{"byCity": {"city", "score"}, "byOwner": {"owner"}, "byTime": {"at"}}[index]
	out := map[string]string{}
	sc, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range sc.Items {
		in := true
		for _, k := range keys {
			_, ok := it[k]
			in = in && ok
		}
		if !in {
			continue
		}
		p := table.Item{}
		for a, v := range it {
			if index == "byCity" || slices.Contains(append([]string{"pk", "sk", "note"}, keys...), a) && (index != "byOwner" || a != "note") {
				p[a] = v
			}
		}
		out[it["pk"].String()+"/"+it["sk"].Number()] = printItem(p)
	}
	return out
}

// TestIndexesAgreeAfterCrash: writers put, update and delete items of a
// table with two GSIs and an LSI when the process is killed (Crash: the
// engine stops at once, writes in flight fail or land, the index store
// loses what it had not flushed); after the table opens again (from the
// snapshot taken midway, then the log after it), every index holds
// exactly what the table's items say it should.
func TestIndexesAgreeAfterCrash(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	createIndexed(t, rn.Tables)
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := 0
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 9))
			for {
				if err := randomIndexedWrite(rn.Tables, rng, 20, 10); err != nil {
					return // the engine is gone
				}
				mu.Lock()
				written++
				mu.Unlock()
			}
		}()
	}
	writes := func(n int) {
		testenv.Eventually(t, 20*time.Second, "writes", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return written >= n
		})
	}
	// A snapshot (with the index store: its header, flushed) midway, so
	// that the open replays the changes after it over the indexes.
	writes(200)
	table.WriteIndexSnapshots(t, rn.Tables)
	writes(400)
	rn.Crash()
	wg.Wait() // a write in flight fails after the publish's ack timeout

	rn = testenv.Start(t, testenv.Options{Dir: dir})
	if fromSnapshot, replayed := table.OpenedFrom(t, rn.Tables, "idx"); !fromSnapshot || replayed == 0 {
		t.Fatalf("the open read the snapshot: %v, and replayed %d changes after it; want true and some", fromSnapshot, replayed)
	}
	wantIndexesAgree(t, rn.Tables)
}

// randomIndexedWrite puts, updates or deletes an item of createIndexed's
// table "idx" at random (partition keys p0..p<parts-1>, sort keys
// 0..sorts-1).
func randomIndexedWrite(tb *table.Service, rng *rand.Rand, parts, sorts int) error {
	k := table.Item{"pk": S(fmt.Sprint("p", rng.IntN(parts))), "sk": N(fmt.Sprint(rng.IntN(sorts)))}
	var err error
	switch rng.IntN(4) {
	case 0:
		_, err = tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "idx", Key: k})
	case 1:
		_, err = tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "idx", Key: k, UpdateExpression: "SET city = :c REMOVE #o",
			WriteExpr: table.WriteExpr{
				ExpressionAttributeNames:  map[string]string{"#o": "owner"},
				ExpressionAttributeValues: table.Item{":c": S(fmt.Sprint("c", rng.IntN(3)))},
			}})
	default:
		it := table.Item{"pk": k["pk"], "sk": k["sk"], "city": S(fmt.Sprint("c", rng.IntN(3))), "score": N(fmt.Sprint(rng.IntN(100))), "note": S("n")}
		if rng.IntN(2) == 0 {
			it["owner"], it["at"] = S(fmt.Sprint("o", rng.IntN(4))), N(fmt.Sprint(rng.IntN(50)))
		}
		_, err = tb.PutItem(ctx, table.PutItemInput{TableName: "idx", Item: it})
	}
	return err
}

// TestIndexReadCapacity: with INDEXES, a Query or Scan of an index reports
// its units under the index (LocalSecondaryIndexes or
// GlobalSecondaryIndexes, by name) and none under the table, as DynamoDB
// does; a read of the table reports them under Table.
func TestIndexReadCapacity(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	putItem(t, tb, "idx", table.Item{"pk": S("a"), "sk": N("1"), "city": S("oslo"), "score": N("30"), "at": N("5")})
	for _, tt := range []struct {
		index       string
		local, glob map[string]*table.Capacity
		tableUnits  float64
	}{
		{"", nil, nil, 0.5},
		{"byTime", map[string]*table.Capacity{"byTime": {CapacityUnits: 0.5}}, nil, 0},
		{"byCity", nil, map[string]*table.Capacity{"byCity": {CapacityUnits: 0.5}}, 0},
	} {
		in := table.QueryInput{ReadInput: table.ReadInput{
			TableName:                 "idx",
			IndexName:                 tt.index,
			ExpressionAttributeValues: table.Item{":p": S("a")},
			ReturnConsumedCapacity:    "INDEXES",
		}, KeyConditionExpression: "pk = :p"}
		if tt.index == "byCity" {
			in.KeyConditionExpression, in.ExpressionAttributeValues = "city = :p", table.Item{":p": S("oslo")}
		}
		cc := query(t, tb, in).ConsumedCapacity
		want := &table.ConsumedCapacity{TableName: "idx", CapacityUnits: 0.5, Table: &table.Capacity{CapacityUnits: tt.tableUnits},
			LocalSecondaryIndexes: tt.local, GlobalSecondaryIndexes: tt.glob}
		got, _ := json.Marshal(cc)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("index %q: %s, want %s", tt.index, got, exp)
		}
		sc, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: tt.index, ReturnConsumedCapacity: "INDEXES"}})
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := json.Marshal(sc.ConsumedCapacity); string(got) != string(exp) {
			t.Errorf("Scan of index %q: %s, want %s", tt.index, got, exp)
		}
	}
	// an LSI read with Select ALL_ATTRIBUTES beyond its projection fetches
	// the items from the table, which costs the table too (dynalite's
	// query test: Table 3, index 1, 4 in all)
	in := table.QueryInput{ReadInput: table.ReadInput{
		TableName:                 "idx",
		IndexName:                 "byTime",
		ExpressionAttributeValues: table.Item{":p": S("a")},
		Select:                    table.SelectAllAttributes,
		ReturnConsumedCapacity:    "INDEXES",
	}, KeyConditionExpression: "pk = :p"}
	got, _ := json.Marshal(query(t, tb, in).ConsumedCapacity)
	exp, _ := json.Marshal(&table.ConsumedCapacity{TableName: "idx", CapacityUnits: 1, Table: &table.Capacity{CapacityUnits: 0.5},
		LocalSecondaryIndexes: map[string]*table.Capacity{"byTime": {CapacityUnits: 0.5}}})
	if string(got) != string(exp) {
		t.Errorf("byTime, Select ALL_ATTRIBUTES: %s, want %s", got, exp)
	}
}

// TestIndexStartKeyWording: a Scan of an index refuses an ExclusiveStartKey
// in DynamoDB's words, by what is wrong: not the index's and the table's
// key attributes in number, the index's key, the table's key.
func TestIndexStartKeyWording(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	for _, tt := range []struct {
		esk table.Item
		msg string
	}{
		{table.Item{"city": S("oslo")}, "The provided starting key is invalid"},
		{table.Item{"pk": S("a"), "sk": N("1"), "city": S("oslo"), "score": N("1"), "x": S("x")}, "The provided starting key is invalid"},
		{table.Item{"pk": S("a"), "sk": N("1"), "city": S("oslo"), "score": S("1")}, "The provided key element does not match the schema"},
		{table.Item{"x": S("a"), "y": N("1"), "city": N("1"), "score": N("1")}, "The provided key element does not match the schema"},
		{table.Item{"pk": S("a"), "sk": S("1"), "city": S("oslo"), "score": N("1")}, "The provided starting key is invalid: The provided key element does not match the schema"},
		{table.Item{"x": S("a"), "y": N("1"), "city": S("oslo"), "score": N("1")}, "The provided starting key is invalid: The provided key element does not match the schema"},
	} {
		_, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", IndexName: "byCity", ExclusiveStartKey: tt.esk}})
		var e *awserr.Error
		if !errors.As(err, &e) || e.Message != tt.msg {
			t.Errorf("Scan byCity from %v: %v, want %q", tt.esk, err, tt.msg)
		}
	}
}

// TestFilterIntoKeys: a Scan's or Query's filter may not read into a key
// attribute of the table ("Key: sk") or of an index ("IndexKey: score"),
// in DynamoDB's words.
func TestFilterIntoKeys(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createIndexed(t, tb)
	const words = "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: "
	for _, tt := range []struct {
		query  bool
		filter string
		msg    string
	}{
		{false, "attribute_exists(sk.x) AND x = :v", words + "Key: sk"},
		{false, "city[0] = :v", words + "IndexKey: city"},
		{true, "attribute_exists(score.x) AND x = :v", words + "IndexKey: score"},
	} {
		var err error
		if tt.query {
			_, err = tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
				TableName:                 "idx",
				FilterExpression:          tt.filter,
				ExpressionAttributeValues: table.Item{":v": S("a")},
			}, KeyConditionExpression: "pk = :v"})
		} else {
			_, err = tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "idx", FilterExpression: tt.filter, ExpressionAttributeValues: table.Item{":v": S("a")}}})
		}
		var e *awserr.Error
		if !errors.As(err, &e) || e.Message != tt.msg {
			t.Errorf("filter %q: %v, want %q", tt.filter, err, tt.msg)
		}
	}
}

// TestABackfillLeavesOutItemsWhoseIndexKeyIsTooLong: "the violating
// items are not included in the index" — among the violations, "an
// attribute value from the table exceeds the maximum length for an index
// key attribute. The maximum length of a partition key is 2048 bytes, and
// the maximum length of a sort key is 1024 bytes"
// (GSI.OnlineOps.ViolationDetection). Before, the backfill indexed them:
// they showed in the index's Scan and ItemCount, and no Query reached
// them.
func TestABackfillLeavesOutItemsWhoseIndexKeyIsTooLong(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "long", "", "")
	putItem(t, tb, "long", table.Item{"pk": S("short"), "g": S("a"), "s": S("x")})
	putItem(t, tb, "long", table.Item{"pk": S("longhash"), "g": S(strings.Repeat("h", 2049)), "s": S("x")})
	putItem(t, tb, "long", table.Item{"pk": S("longsort"), "g": S("a"), "s": S(strings.Repeat("s", 1025))})
	putItem(t, tb, "long", table.Item{"pk": S("atlimits"), "g": S(strings.Repeat("h", 2048)), "s": S(strings.Repeat("s", 1024))})
	create := table.GlobalSecondaryIndexUpdate{Create: &table.SecondaryIndex{IndexName: "byGS",
		KeySchema:  []table.KeySchemaElement{{AttributeName: "g", KeyType: "HASH"}, {AttributeName: "s", KeyType: "RANGE"}},
		Projection: table.Projection{ProjectionType: "KEYS_ONLY"}}}
	defs := []table.AttributeDefinition{{AttributeName: "g", AttributeType: "S"}, {AttributeName: "s", AttributeType: "S"}}
	if _, err := tb.UpdateGlobalSecondaryIndexes(ctx, "long", defs, []table.GlobalSecondaryIndexUpdate{create}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "ACTIVE", func() bool {
		d, _ := tb.DescribeTable(ctx, "long")
		return d.GlobalSecondaryIndexes[0].IndexStatus == "ACTIVE"
	})
	out, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "long", IndexName: "byGS"}})
	if err != nil {
		t.Fatal(err)
	}
	got := attrsOf(out.Items, "pk")
	slices.Sort(got)
	if !slices.Equal(got, []string{"atlimits", "short"}) {
		t.Fatalf("the index holds %v, want [atlimits short]", got)
	}
	if d, _ := tb.DescribeTable(ctx, "long"); d.GlobalSecondaryIndexes[0].ItemCount != 2 {
		t.Fatalf("the index's ItemCount %d, want 2", d.GlobalSecondaryIndexes[0].ItemCount)
	}
}
