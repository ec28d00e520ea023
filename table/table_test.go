package table_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

func S(s string) events.DynamoDBAttributeValue { return events.NewStringAttribute(s) }
func N(s string) events.DynamoDBAttributeValue { return events.NewNumberAttribute(s) }

var ctx = context.Background()

func createTable(t *testing.T, tb *table.Service, name string, rangeKey string, view string) {
	t.Helper()
	in := table.CreateTableInput{TableName: name,
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
	}
	if rangeKey != "" {
		in.KeySchema = append(in.KeySchema, table.KeySchemaElement{AttributeName: rangeKey, KeyType: "RANGE"})
		in.AttributeDefinitions = append(in.AttributeDefinitions, table.AttributeDefinition{AttributeName: rangeKey, AttributeType: "N"})
	}
	if view != "" {
		in.StreamSpecification = &table.StreamSpecification{StreamEnabled: true, StreamViewType: view}
	}
	if _, err := tb.CreateTable(ctx, in); err != nil {
		t.Fatal(err)
	}
}

func get(t *testing.T, tb *table.Service, name string, key table.Item) table.Item {
	t.Helper()
	out, err := tb.GetItem(ctx, table.GetItemInput{TableName: name, Key: key})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

// changes reads every record of the table's change log.
func changes(t *testing.T, tb *table.Service, name string) []*table.Change {
	t.Helper()
	var out []*table.Change
	for _, r := range logRecords(t, tb, name) {
		c, err := table.DecodeChange(r.Data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// logRecords reads every record of the table's change log, shard by
// shard.
func logRecords(t *testing.T, tb *table.Service, name string) []stream.Record {
	t.Helper()
	tt, err := tb.Table(name)
	if err != nil {
		t.Fatal(err)
	}
	var out []stream.Record
	shards, _ := tb.Logs().ListShards(ctx, tt.LogName())
	for _, sh := range shards {
		_, last, err := tb.Logs().ShardBounds(ctx, tt.LogName(), sh.ShardID)
		if err != nil {
			t.Fatal(err)
		}
		if last == 0 {
			continue
		}
		recs, _, err := tb.Logs().ReadRange(ctx, tt.LogName(), sh.ShardID, 1, last)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, recs...)
	}
	return out
}

func TestItemsAndConditions(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "state", "", table.ViewNewAndOldImages)

	// The state function's conditional update (seed 002).
	update := func(id string, version int, value string) error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "state", Key: table.Item{"pk": S(id)},
			UpdateExpression: "SET #v = :v, #ver = :ver",
			WriteExpr: table.WriteExpr{
				ConditionExpression:       "attribute_not_exists(pk) OR #ver < :ver",
				ExpressionAttributeNames:  map[string]string{"#v": "Value", "#ver": "Version"},
				ExpressionAttributeValues: table.Item{":v": N(value), ":ver": N(fmt.Sprint(version))},
			},
		})
		return err
	}
	if err := update("t1", 0, "10.5"); err != nil {
		t.Fatal(err)
	}
	if err := update("t1", 0, "10.5"); !errors.Is(err, awserr.ErrConditionalCheckFailed) {
		t.Fatalf("duplicate: err = %v, want ConditionalCheckFailed", err)
	}
	if err := update("t1", 2, "7"); err != nil {
		t.Fatal(err)
	}
	if err := update("t1", 1, "99"); !errors.Is(err, awserr.ErrConditionalCheckFailed) {
		t.Fatalf("older version: err = %v", err)
	}
	it := get(t, tb, "state", table.Item{"pk": S("t1")})
	if it["Value"].Number() != "7" || it["Version"].Number() != "2" {
		t.Fatalf("item = %v", it)
	}
	ch := changes(t, tb, "state")
	if len(ch) != 2 || ch[0].EventName != "INSERT" || ch[1].EventName != "MODIFY" {
		t.Fatalf("changes = %+v", ch)
	}
	if ch[1].OldImage["Value"].Number() != "10.5" || ch[1].NewImage["Value"].Number() != "7" {
		t.Fatalf("images = %+v", ch[1])
	}

	// ReturnValuesOnConditionCheckFailure returns the item.
	_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "state", Item: table.Item{"pk": S("t1")},
		WriteExpr: table.WriteExpr{
			ConditionExpression:                 "attribute_not_exists(pk)",
			ReturnValuesOnConditionCheckFailure: "ALL_OLD",
		}})
	var ccf *table.ConditionalCheckFailedError
	if !errors.As(err, &ccf) || ccf.Item["Version"].Number() != "2" {
		t.Fatalf("err = %v (%+v)", err, ccf)
	}
	// A put that changes nothing writes no change record.
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "state", Item: it}); err != nil {
		t.Fatal(err)
	}
	if n := len(changes(t, tb, "state")); n != 2 {
		t.Fatalf("no-op put wrote a change: %d", n)
	}
	// Errors name the field.
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "state", Item: table.Item{"x": S("1")}}); !errors.Is(err, awserr.ErrValidation) {
		t.Fatalf("missing key: %v", err)
	}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "state", Item: table.Item{"pk": N("1")}}); err == nil || !errors.Is(err, awserr.ErrValidation) {
		t.Fatalf("key type: %v", err)
	}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "nope", Item: table.Item{"pk": S("1")}}); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("missing table: %v", err)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "state", Key: table.Item{"pk": S("t1")}, UpdateExpression: "SET pk = :x",
		WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":x": S("y")}}}); !errors.Is(err, awserr.ErrValidation) {
		t.Fatalf("key update: %v", err)
	}
	// Delete with ALL_OLD; then the item is gone.
	out, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "state", Key: table.Item{"pk": S("t1")}, ReturnValues: "ALL_OLD"})
	if err != nil || out.Attributes["Value"].Number() != "7" {
		t.Fatalf("delete: %v %v", out, err)
	}
	if it := get(t, tb, "state", table.Item{"pk": S("t1")}); it != nil {
		t.Fatalf("deleted item still there: %v", it)
	}
	ch = changes(t, tb, "state")
	if last := ch[len(ch)-1]; last.EventName != "REMOVE" || last.OldImage == nil || last.NewImage != nil {
		t.Fatalf("remove = %+v", last)
	}
}

func TestExactNumbers(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "agg", "", "")
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "agg", Key: table.Item{"pk": S("total")},
				UpdateExpression: "ADD #v :d", WriteExpr: table.WriteExpr{
					ExpressionAttributeNames:  map[string]string{"#v": "Value"},
					ExpressionAttributeValues: table.Item{":d": N("0.1")},
				},
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if v := get(t, tb, "agg", table.Item{"pk": S("total")})["Value"].Number(); v != "5.0" && v != "5" {
		t.Fatalf("50 concurrent ADD 0.1 = %s, want 5", v)
	}
}

func TestQueryScanPaging(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "events", "n", "")
	for p := 0; p < 3; p++ {
		for n := 0; n < 20; n++ {
			if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "events", Item: table.Item{"pk": S(fmt.Sprint("p", p)), "n": N(fmt.Sprint(n)), "odd": events.NewBooleanAttribute(n%2 == 1)}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Numbers sort numerically: 2 < 10.
	out, err := tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
		TableName:                 "events",
		ExpressionAttributeValues: table.Item{":p": S("p1"), ":a": N("2"), ":b": N("11")},
	}, KeyConditionExpression: "pk = :p AND n BETWEEN :a AND :b",
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Count != 10 || out.Items[0]["n"].Number() != "2" || out.Items[9]["n"].Number() != "11" {
		t.Fatalf("query = %d items, first %v", out.Count, out.Items)
	}
	back := false
	out, err = tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
		TableName:                 "events",
		Limit:                     3,
		ExpressionAttributeValues: table.Item{":p": S("p2")},
	}, KeyConditionExpression: "pk = :p", ScanIndexForward: &back})
	if err != nil || out.Count != 3 || out.Items[0]["n"].Number() != "19" || out.LastEvaluatedKey == nil {
		t.Fatalf("descending page: %+v %v", out, err)
	}
	out, err = tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
		TableName:                 "events",
		Limit:                     3,
		ExclusiveStartKey:         out.LastEvaluatedKey,
		ExpressionAttributeValues: table.Item{":p": S("p2")},
	}, KeyConditionExpression: "pk = :p", ScanIndexForward: &back})
	if err != nil || out.Items[0]["n"].Number() != "16" {
		t.Fatalf("second page: %+v %v", out, err)
	}
	// Filter counts after Limit, as DynamoDB.
	out, err = tb.Query(ctx, table.QueryInput{ReadInput: table.ReadInput{
		TableName:                 "events",
		FilterExpression:          "odd = :t",
		Limit:                     4,
		ExpressionAttributeValues: table.Item{":p": S("p0"), ":t": events.NewBooleanAttribute(true)},
	}, KeyConditionExpression: "pk = :p"})
	if err != nil || out.ScannedCount != 4 || out.Count != 2 {
		t.Fatalf("filtered: %+v %v", out, err)
	}
	// Scan in pages sees every item once.
	seen := map[string]bool{}
	var start table.Item
	for pages := 0; ; pages++ {
		out, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "events", Limit: 7, ExclusiveStartKey: start}})
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range out.Items {
			k := it["pk"].String() + "/" + it["n"].Number()
			if seen[k] {
				t.Fatalf("scan returned %s twice", k)
			}
			seen[k] = true
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
		if pages > 20 {
			t.Fatal("scan does not end")
		}
	}
	if len(seen) != 60 {
		t.Fatalf("scan saw %d items, want 60", len(seen))
	}
}

func TestTransactions(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	tb := rn.Tables
	createTable(t, tb, "agg", "", "")
	createTable(t, tb, "other", "", "")
	add := func(k, v string) table.TransactWriteItem {
		return table.TransactWriteItem{Update: &table.TransactUpdate{TableName: "agg", Key: table.Item{"pk": S(k)},
			UpdateExpression: "ADD #v :v", WriteExpr: table.WriteExpr{
				ExpressionAttributeNames:  map[string]string{"#v": "Value"},
				ExpressionAttributeValues: table.Item{":v": N(v)},
			}}}
	}
	value := func(k string) string { return get(t, tb, "agg", table.Item{"pk": S(k)})["Value"].Number() }

	items := []table.TransactWriteItem{add("a", "1.5"), add("b", "2"),
		{Put: &table.TransactPut{TableName: "other", Item: table.Item{"pk": S("x")}}}}
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: "tok-1"}); err != nil {
		t.Fatal(err)
	}
	// The same token again within 10 minutes: success, no effect.
	clock.Advance(9 * time.Minute)
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: "tok-1"}); err != nil {
		t.Fatal(err)
	}
	if value("a") != "1.5" || value("b") != "2" {
		t.Fatalf("replayed token applied again: a=%s b=%s", value("a"), value("b"))
	}
	// Same token, other parameters: mismatch.
	err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items[:1], ClientRequestToken: "tok-1"})
	if !errors.Is(err, awserr.ErrIdempotentParameterMismatch) {
		t.Fatalf("mismatch: %v", err)
	}
	// After the window the token is new again.
	clock.Advance(2 * time.Minute)
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items[:2], ClientRequestToken: "tok-1"}); err != nil {
		t.Fatal(err)
	}
	if value("a") != "3.0" && value("a") != "3" {
		t.Fatalf("after the window a = %s", value("a"))
	}

	// A failing condition cancels everything, reasons in order.
	items = []table.TransactWriteItem{add("a", "100"),
		{ConditionCheck: &table.ConditionCheck{TableName: "other", Key: table.Item{"pk": S("x")}, WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)"}}}}
	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items})
	var tce *table.TransactionCanceledError
	if !errors.As(err, &tce) || len(tce.Reasons) != 2 || tce.Reasons[0].Code != "None" || tce.Reasons[1].Code != "ConditionalCheckFailed" {
		t.Fatalf("cancel: %v %+v", err, tce)
	}
	if tce.Message() != "Transaction cancelled, please refer cancellation reasons for specific reasons [None, ConditionalCheckFailed]" {
		t.Fatalf("message = %q", tce.Message())
	}
	if v := value("a"); v != "3.0" && v != "3" {
		t.Fatalf("cancelled transaction applied: a = %s", v)
	}
	// Validation: two actions on one item; more than 100 actions.
	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{add("a", "1"), add("a", "2")}})
	if !errors.Is(err, awserr.ErrValidation) {
		t.Fatalf("two ops on one item: %v", err)
	}
	many := make([]table.TransactWriteItem, 101)
	for i := range many {
		many[i] = add(fmt.Sprint("k", i), "1")
	}
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: many}); !errors.Is(err, awserr.ErrValidation) {
		t.Fatalf("101 actions: %v", err)
	}
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: many[:100]}); err != nil {
		t.Fatalf("100 actions: %v", err)
	}
}

// TestTransactionInProgress: while a call with a token runs, a second call
// with the token is refused.
func TestTransactionInProgress(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "agg", "", "")
	var wg sync.WaitGroup
	var inProgress, ok int
	var mu sync.Mutex
	items := []table.TransactWriteItem{{Update: &table.TransactUpdate{TableName: "agg", Key: table.Item{"pk": S("a")},
		UpdateExpression: "ADD v :one", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":one": N("1")}}}}}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: "same"})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errors.Is(err, awserr.ErrTransactionInProgress):
				inProgress++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if v := get(t, tb, "agg", table.Item{"pk": S("a")})["v"].Number(); v != "1" {
		t.Fatalf("v = %s after 20 calls with one token, want 1", v)
	}
	if ok < 1 || ok+inProgress != 20 {
		t.Fatalf("ok %d, in progress %d", ok, inProgress)
	}
}

func TestRestartRebuildsAndRecovers(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	createTable(t, rn.Tables, "state", "", table.ViewNewAndOldImages)
	createTable(t, rn.Tables, "events", "n", "")
	for i := 0; i < 200; i++ {
		if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "state", Item: table.Item{"pk": S(fmt.Sprint("k", i)), "v": N(fmt.Sprint(i))}}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 50; i++ {
		if _, err := rn.Tables.DeleteItem(ctx, table.DeleteItemInput{TableName: "state", Key: table.Item{"pk": S(fmt.Sprint("k", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rn.Tables.PutItem(ctx, table.PutItemInput{TableName: "events", Item: table.Item{"pk": S("p"), "n": N("10")}}); err != nil {
		t.Fatal(err)
	}
	if err := rn.Tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{ClientRequestToken: "t1", TransactItems: []table.TransactWriteItem{
		{Update: &table.TransactUpdate{TableName: "state", Key: table.Item{"pk": S("k199")}, UpdateExpression: "SET v = :v", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": N("-1")}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir})
	d, err := rn.Tables.DescribeTable(ctx, "state")
	if err != nil || d.ItemCount != 150 {
		t.Fatalf("after restart: %+v %v", d, err)
	}
	if v := get(t, rn.Tables, "state", table.Item{"pk": S("k199")})["v"].Number(); v != "-1" {
		t.Fatalf("k199 = %s", v)
	}
	if it := get(t, rn.Tables, "state", table.Item{"pk": S("k10")}); it != nil {
		t.Fatalf("deleted item back: %v", it)
	}
	if it := get(t, rn.Tables, "events", table.Item{"pk": S("p"), "n": N("10.0")}); it == nil {
		t.Fatal("range item lost (10.0 is the same number as 10)")
	}
	// The token survived the restart.
	err = rn.Tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{ClientRequestToken: "t1", TransactItems: []table.TransactWriteItem{
		{Update: &table.TransactUpdate{TableName: "state", Key: table.Item{"pk": S("k199")}, UpdateExpression: "SET v = :v", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": N("-2")}}}},
	}})
	if !errors.Is(err, awserr.ErrIdempotentParameterMismatch) {
		t.Fatalf("token after restart: %v", err)
	}
}

func TestTTL(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	tb := rn.Tables
	createTable(t, tb, "sessions", "", table.ViewNewAndOldImages)
	now := clock.Now().Unix()
	put := func(k string, exp int64) {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "sessions", Item: table.Item{"pk": S(k), "expires": N(fmt.Sprint(exp))}}); err != nil {
			t.Fatal(err)
		}
	}
	put("old", now+60)
	put("new", now+3600)
	put("ancient", now-6*365*24*3600) // more than five years: not deleted
	if _, err := tb.UpdateTimeToLive(ctx, "sessions", table.TimeToLiveSpecification{AttributeName: "expires", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	// Expired but not swept: still readable, as in DynamoDB.
	if get(t, tb, "sessions", table.Item{"pk": S("old")}) == nil {
		t.Fatal("expired item vanished before the sweep")
	}
	n, err := tb.SweepExpired(ctx)
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if get(t, tb, "sessions", table.Item{"pk": S("old")}) != nil || get(t, tb, "sessions", table.Item{"pk": S("new")}) == nil || get(t, tb, "sessions", table.Item{"pk": S("ancient")}) == nil {
		t.Fatal("wrong items expired")
	}
	var ttlRemove *table.Change
	for _, c := range changes(t, tb, "sessions") {
		if c.EventName == "REMOVE" {
			ttlRemove = c
		}
	}
	if ttlRemove == nil || !ttlRemove.TTL {
		t.Fatalf("no service delete in the change stream: %+v", ttlRemove)
	}
	ev := table.EventRecord(&stream.Record{SequenceNumber: "1"}, ttlRemove, "us-east-1", "arn")
	if ev.UserIdentity == nil || ev.UserIdentity.Type != "Service" || ev.UserIdentity.PrincipalID != "dynamodb.amazonaws.com" {
		t.Fatalf("userIdentity = %+v", ev.UserIdentity)
	}
}

// TestStreamOnOff: a change belongs to the stream label it was written
// under; changes made while the stream is off belong to none; turning the
// stream on again gives a new label and ARN.
func TestStreamOnOff(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "sss", "", table.ViewKeysOnly)
	put := func(k string) {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "sss", Item: table.Item{"pk": S(k)}}); err != nil {
			t.Fatal(err)
		}
	}
	d1, _ := tb.DescribeTable(ctx, "sss")
	put("a")
	if _, err := tb.UpdateStream(ctx, "sss", table.StreamSpecification{StreamEnabled: true, StreamViewType: table.ViewNewImage}); !errors.Is(err, awserr.ErrValidation) {
		t.Fatalf("enable twice: %v", err)
	}
	d, err := tb.UpdateStream(ctx, "sss", table.StreamSpecification{StreamEnabled: false})
	if err != nil || d.StreamSpecification.StreamEnabled || d.StreamSpecification.StreamViewType != table.ViewKeysOnly {
		t.Fatalf("disable: %+v %v", d, err)
	}
	put("b")
	time.Sleep(2 * time.Millisecond) // a new label needs a new millisecond
	d3, err := tb.UpdateStream(ctx, "sss", table.StreamSpecification{StreamEnabled: true, StreamViewType: table.ViewNewImage})
	if err != nil || d3.LatestStreamArn == d1.LatestStreamArn {
		t.Fatalf("re-enable: %+v %v", d3, err)
	}
	put("c")
	labels := map[string]string{}
	for _, c := range changes(t, tb, "sss") {
		labels[c.Keys["pk"].String()] = c.Label
	}
	if labels["a"] != d1.LatestStreamLabel || labels["b"] != "" || labels["c"] != d3.LatestStreamLabel {
		t.Fatalf("labels = %v (first %s, second %s)", labels, d1.LatestStreamLabel, d3.LatestStreamLabel)
	}
}

// TestCommittedTransactionCompletesOnOpen: a transaction whose commit
// record is in RUNNEL_TXLOG but whose changes never reached the table's log
// (the process died in between) is completed when the tables open, before
// any request is served, and its token is remembered.
func TestCommittedTransactionCompletesOnOpen(t *testing.T) {
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	createTable(t, rn.Tables, "agg", "", "")
	// A transaction that set a.v = 7 committed, none of its changes written.
	publishLostCommit(t, rn, "agg", table.Item{"pk": S("a"), "v": N("7")}, time.Now())
	if it := get(t, rn.Tables, "agg", table.Item{"pk": S("a")}); it != nil {
		t.Fatalf("the change is not applied before the restart: %v", it)
	}
	rn.Crash()

	rn = testenv.Start(t, testenv.Options{Dir: dir})
	it := get(t, rn.Tables, "agg", table.Item{"pk": S("a")})
	if it == nil || it["v"].Number() != "7" {
		t.Fatalf("after open: %v, want the committed transaction applied", it)
	}
	if n := len(changes(t, rn.Tables, "agg")); n != 1 {
		t.Fatalf("%d changes in the log, want 1", n)
	}
	// Opening again does not apply it twice.
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	if n := len(changes(t, rn.Tables, "agg")); n != 1 {
		t.Fatalf("%d changes in the log after a second open, want 1", n)
	}
}
