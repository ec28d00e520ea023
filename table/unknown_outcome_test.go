package table_test

import (
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// lossyTable starts a runnel with the table name whose next log write's
// answer is lost each time lose is set (the write lands; its writer
// hears an error), and whose resolvers try only when a test wakes them
// (WaitResolved, ResolveOnce).
func lossyTable(t *testing.T, name, view string) (tb *table.Service, lose *atomic.Bool) {
	t.Helper()
	tb = testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, name, "", view)
	table.SetResolvePause(tb, time.Hour)
	lose = new(atomic.Bool)
	table.SetReplyLost(tb, func(string) error {
		if lose.Swap(false) {
			return errors.New("answer lost (test)")
		}
		return nil
	})
	return tb, lose
}

// isRetryable500 reports whether err is the retryable internal error
// (HTTP 500) a write of unknown outcome, or of an item it holds, answers.
func isRetryable500(err error) bool {
	var ae *awserr.Error
	return errors.As(err, &ae) && ae.Code == awserr.ErrService.Code
}

// TestAWriteWhoseAnswerIsLostHoldsItsItemUntilItsOutcomeIsLearned: a
// put whose log write landed but whose answer was lost is not guessed.
// Its caller hears a retryable error; until runnel learns the outcome
// (publishing the write again with its message ids, which JetStream
// answers with the first one's sequence), a second attribute_not_exists
// put of the item is refused, not decided on the index that lacks the
// first. Once learned, the first put is applied: the second fails its
// condition, and the log holds one INSERT. Before, the index stayed
// where it was, the second put passed, and the log held two INSERTs.
func TestAWriteWhoseAnswerIsLostHoldsItsItemUntilItsOutcomeIsLearned(t *testing.T) {
	tb, lose := lossyTable(t, "unsure", table.ViewNewAndOldImages)
	putNew := func(v string) error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "unsure", Item: table.Item{"pk": S("a"), "v": S(v)},
			WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)"}})
		return err
	}
	lose.Store(true)
	if err := putNew("first"); !isRetryable500(err) {
		t.Fatalf("the put whose answer was lost: %v, want a retryable internal error", err)
	}
	if err := putNew("second"); !isRetryable500(err) {
		t.Fatalf("a second attribute_not_exists put while the first's outcome is unknown: %v, want a retryable internal error", err)
	}
	// An item the lost write does not hold is written as usual.
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "unsure", Item: table.Item{"pk": S("b")}}); err != nil {
		t.Fatal(err)
	}
	if held := table.WaitResolved(tb); held != 0 {
		t.Fatalf("%d items still held after the resolvers ended", held)
	}
	var ccf *table.ConditionalCheckFailedError
	if err := putNew("second"); !errors.As(err, &ccf) {
		t.Fatalf("a second attribute_not_exists put once the first is learned: %v, want ConditionalCheckFailedException", err)
	}
	if v := get(t, tb, "unsure", table.Item{"pk": S("a")})["v"].String(); v != "first" {
		t.Fatalf("item a's v = %q, want the landed put's %q", v, "first")
	}
	inserts := 0
	for _, c := range changes(t, tb, "unsure") {
		if c.Keys["pk"].String() == "a" {
			if c.EventName != table.EventInsert {
				t.Fatalf("a change of a: %s", c.EventName)
			}
			inserts++
		}
	}
	if inserts != 1 {
		t.Fatalf("the log holds %d INSERTs of a, want 1", inserts)
	}
}

// TestAnUpdateWhoseAnswerIsLostIsNotOverwritten: an ADD whose answer was
// lost, then another once its outcome is learned, count 2: the second is
// computed from the image the first wrote. Before, it was computed from
// the image before the first and wrote 1 over the first's 1 (a lost
// update, with a MODIFY whose OldImage the log never held).
func TestAnUpdateWhoseAnswerIsLostIsNotOverwritten(t *testing.T) {
	tb, lose := lossyTable(t, "counter", table.ViewNewAndOldImages)
	add := func() error {
		_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "counter", Key: table.Item{"pk": S("c")},
			UpdateExpression: "ADD n :one", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":one": N("1")}}})
		return err
	}
	lose.Store(true)
	if err := add(); !isRetryable500(err) {
		t.Fatalf("the ADD whose answer was lost: %v, want a retryable internal error", err)
	}
	lose.Store(false)
	table.WaitResolved(tb)
	if err := add(); err != nil {
		t.Fatal(err)
	}
	if n := get(t, tb, "counter", table.Item{"pk": S("c")})["n"].Number(); n != "2" {
		t.Fatalf("n = %s after two ADDs of 1 (the first's answer lost), want 2", n)
	}
	cs := changes(t, tb, "counter")
	if len(cs) != 2 || cs[1].OldImage["n"].Number() != "1" {
		t.Fatalf("the log holds %d changes; want the INSERT and a MODIFY from n=1", len(cs))
	}
}

// TestABatchWriteOfAHeldItemReturnsItUnprocessed: while a write of
// unknown outcome holds an item, a BatchWriteItem returns the request of
// that item in UnprocessedItems and writes the others.
func TestABatchWriteOfAHeldItemReturnsItUnprocessed(t *testing.T) {
	tb, lose := lossyTable(t, "batch", "") // held until the test ends: nothing wakes the resolver
	lose.Store(true)
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "batch", Item: table.Item{"pk": S("held")}}); !isRetryable500(err) {
		t.Fatalf("the put whose answer was lost: %v", err)
	}
	lose.Store(false)
	out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"batch": {
		{PutRequest: &table.PutRequest{Item: table.Item{"pk": S("held"), "v": S("batch")}}},
		{PutRequest: &table.PutRequest{Item: table.Item{"pk": S("free")}}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	un := out.UnprocessedItems["batch"]
	if len(un) != 1 || un[0].PutRequest.Item["pk"].String() != "held" {
		t.Fatalf("unprocessed %v, want the request of the held item", un)
	}
	if get(t, tb, "batch", table.Item{"pk": S("free")}) == nil {
		t.Fatal("the request of the item not held was not written")
	}
}

// TestATransactionWhoseCommitAnswerIsLostHappensOnceAndKeepsItsToken: a
// TransactWriteItems whose commit record landed but whose answer was
// lost answers a retryable error; its items are held and its token is in
// progress (TransactionInProgressException) until runnel learns the
// commit, then its changes are written, once, and a retry with the token
// succeeds without writing them again. Before, the items stayed free and
// the index unchanged: a retry ran the transaction a second time, and
// the next open appended the first one's changes after it.
func TestATransactionWhoseCommitAnswerIsLostHappensOnceAndKeepsItsToken(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	var lose atomic.Bool
	table.SetCommitLost(tb, func() error {
		if lose.Load() {
			return errors.New("answer lost (test)")
		}
		return nil
	}, time.Hour, 50*time.Millisecond)
	in := table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("x", "1"), txAdd("y", "1")}, ClientRequestToken: "tok"}
	lose.Store(true)
	if err := tb.TransactWriteItems(ctx, in); !isRetryable500(err) {
		t.Fatalf("the transaction whose commit answer was lost: %v, want a retryable internal error", err)
	}
	if err := tb.TransactWriteItems(ctx, in); !errors.Is(err, awserr.ErrTransactionInProgress) {
		t.Fatalf("a retry with its token while the commit is unknown: %v, want TransactionInProgressException", err)
	}
	if _, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "txn", Key: table.Item{"pk": S("x")},
		UpdateExpression: "ADD v :v", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": N("10")}}}); !isRetryable500(err) {
		t.Fatalf("a write of an item the transaction holds: %v, want a retryable internal error", err)
	}
	lose.Store(false)
	if held := table.WaitResolved(tb); held != 0 {
		t.Fatalf("%d items still held", held)
	}
	if err := tb.TransactWriteItems(ctx, in); err != nil {
		t.Fatalf("a retry with the token once the commit is learned: %v", err)
	}
	if x, y := txValue(t, tb, "x"), txValue(t, tb, "y"); x != "1" || y != "1" {
		t.Fatalf("x=%s y=%s, want 1 and 1: the transaction once", x, y)
	}
	if n := len(changes(t, tb, "txn")); n != 2 {
		t.Fatalf("the log holds %d changes, want the transaction's 2", n)
	}
}

// TestAResolverLooksForTheLostMessageAndLeavesTheAcknowledgedOnes: a
// lane write of two messages whose first is acknowledged and whose
// second's acknowledgements are all lost applies the first's items at
// once and holds the second's. The resolver neither publishes the first
// again (its items are free meanwhile: a copy stored after the duplicate
// window would land after their later writes and undo them at the next
// open) nor the second, which it finds in the log by its message id. The
// log then holds each change once, and a write made meanwhile to an item
// of the first message stands.
func TestAResolverLooksForTheLostMessageAndLeavesTheAcknowledgedOnes(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "big",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		RunnelShards:         1, // one lane: the three items in one write of two messages
	}); err != nil {
		t.Fatal(err)
	}
	table.SetResolvePause(tb, time.Hour) // the resolver tries when woken
	var acks atomic.Int64
	var lose atomic.Bool
	tb.Logs().LoseAcks(func() bool { // every acknowledgement after the first, while lose
		return acks.Add(1) > 1 && lose.Load()
	}, 100*time.Millisecond)
	t.Cleanup(func() { tb.Logs().LoseAcks(nil, 0) })
	big := strings.Repeat("x", 390_000)
	item := func(pk, v string) table.Item { return table.Item{"pk": S(pk), "v": S(v), "blob": S(big)} }
	lose.Store(true)
	out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"big": {
		{PutRequest: &table.PutRequest{Item: item("a", "1")}},
		{PutRequest: &table.PutRequest{Item: item("b", "1")}},
		{PutRequest: &table.PutRequest{Item: item("c", "1")}},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.UnprocessedItems["big"]); n != 1 {
		t.Fatalf("%d requests unprocessed, want the one of the message whose acknowledgement was lost", n)
	}
	lose.Store(false)
	held := out.UnprocessedItems["big"][0].PutRequest.Item["pk"].String()
	var free string
	for _, pk := range []string{"a", "b", "c"} {
		if pk != held {
			free = pk
			break
		}
	}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "big", Item: item(free, "2")}); err != nil {
		t.Fatalf("a write of %s, whose message was acknowledged: %v", free, err)
	}
	before := acks.Load()
	if n := table.WaitResolved(tb); n != 0 {
		t.Fatalf("%d items still held", n)
	}
	if n := acks.Load() - before; n != 0 {
		t.Fatalf("the resolver published %d messages again; the lost one is in the log and the other was acknowledged", n)
	}
	if v := get(t, tb, "big", table.Item{"pk": S(free)})["v"].String(); v != "2" {
		t.Fatalf("%s's v = %s after the resolver, want the later write's 2", free, v)
	}
	if get(t, tb, "big", table.Item{"pk": S(held)}) == nil {
		t.Fatalf("%s, whose message landed, is missing", held)
	}
	if n := len(changes(t, tb, "big")); n != 4 {
		t.Fatalf("the log holds %d changes, want 4: three INSERTs and one MODIFY", n)
	}
}

// TestAHeldItemStaysHeldWhileTheLeaseLapses: a resolver that finds this
// process unable to act as the tables' holder (its lease's renewals
// lapsing, mayAct false) keeps the items held and tries again, rather
// than release them unlearned: a lease can be valid again without the
// tables being dropped, and a second attribute_not_exists put must not
// then be decided on the index that lacks the first.
func TestAHeldItemStaysHeldWhileTheLeaseLapses(t *testing.T) {
	tb, lose := lossyTable(t, "lapse", "")
	putNew := func() error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "lapse", Item: table.Item{"pk": S("a")},
			WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)"}})
		return err
	}
	lose.Store(true)
	if err := putNew(); !isRetryable500(err) {
		t.Fatalf("the put whose answer was lost: %v", err)
	}
	var holding atomic.Bool
	table.SetHolding(tb, holding.Load)
	table.ResolveOnce(t, tb) // the lease lapsed: the resolver may not act
	holding.Store(true)
	if err := putNew(); !isRetryable500(err) {
		t.Fatalf("a second attribute_not_exists put after the lease lapsed and came back: %v, want a retryable internal error (the item still held)", err)
	}
	table.WaitResolved(tb)
	var ccf *table.ConditionalCheckFailedError
	if err := putNew(); !errors.As(err, &ccf) {
		t.Fatalf("once learned: %v, want ConditionalCheckFailedException", err)
	}
}

// TestATransactionWhoseOtherTableIsDeletedStillHoldsAndAppliesItsItems: a
// transaction over two tables whose commit answer was lost, one of them
// deleted before runnel learns the commit, still has its commit learned
// and its changes to the remaining table applied before their items are
// released: an attribute_not_exists put of such an item then fails.
// Before, the deleted table made the resolver let go of every item
// unlearned; the put passed, and the next open appended the committed
// change after it (a lost update).
func TestATransactionWhoseOtherTableIsDeletedStillHoldsAndAppliesItsItems(t *testing.T) {
	tb := startTx(t, testenv.Options{})
	createTable(t, tb, "other", "", "")
	var lose atomic.Bool
	table.SetCommitLost(tb, func() error {
		if lose.Load() {
			return errors.New("answer lost (test)")
		}
		return nil
	}, time.Hour, 50*time.Millisecond)
	in := table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{txAdd("x", "1"),
		{Put: &table.TransactPut{TableName: "other", Item: table.Item{"pk": S("o")}}}}, ClientRequestToken: "tok2"}
	lose.Store(true)
	if err := tb.TransactWriteItems(ctx, in); !isRetryable500(err) {
		t.Fatalf("the transaction whose commit answer was lost: %v", err)
	}
	lose.Store(false)
	if _, err := tb.DeleteTable(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	if held := table.WaitResolved(tb); held != 0 {
		t.Fatalf("%d items still held", held)
	}
	_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "txn", Item: table.Item{"pk": S("x"), "v": N("100")},
		WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(pk)"}})
	var ccf *table.ConditionalCheckFailedError
	if !errors.As(err, &ccf) {
		t.Fatalf("an attribute_not_exists put of x, which the committed transaction wrote: %v, want ConditionalCheckFailedException", err)
	}
	if v := txValue(t, tb, "x"); v != "1" {
		t.Fatalf("x's v = %s, want the transaction's 1", v)
	}
}

// Before, one write whose answer was lost stopped the table's index
// snapshots until its next open, even after its outcome was learned: the
// open after a crash then replayed the whole log. Now only while a
// resolver runs.
func TestSnapshotsResumeOnceALostAnswerIsLearned(t *testing.T) {
	testenv.NeedsEmbedded(t, "a crash and reopen of the one process serving the tables")
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	tb := rn.Tables
	createTable(t, tb, "learned", "", table.ViewNewAndOldImages)
	table.SetResolvePause(tb, time.Hour)
	var lose atomic.Bool
	table.SetReplyLost(tb, func(string) error {
		if lose.Swap(false) {
			return errors.New("answer lost (test)")
		}
		return nil
	})
	put := func(k string) error {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "learned", Item: table.Item{"pk": S(k)}})
		return err
	}
	lose.Store(true)
	if err := put("a"); !isRetryable500(err) {
		t.Fatalf("the put whose answer was lost: %v", err)
	}
	if held := table.WaitResolved(tb); held != 0 {
		t.Fatalf("%d items still held", held)
	}
	if err := put("b"); err != nil {
		t.Fatal(err)
	}
	table.WriteIndexSnapshots(t, tb)
	rn.Crash()
	rn = testenv.Start(t, testenv.Options{Dir: dir})
	if from, replayed := table.OpenedFrom(t, rn.Tables, "learned"); !from || replayed != 0 {
		t.Fatalf("opened from a snapshot: %v, replaying %d log records; want the snapshot written after the outcome was learned", from, replayed)
	}
	for _, k := range []string{"a", "b"} {
		out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: "learned", Key: table.Item{"pk": S(k)}, ConsistentRead: true})
		if err != nil || out.Item == nil {
			t.Fatalf("item %s after the reopen: %v %v", k, out, err)
		}
	}
}
