package table_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestACommittedTransactionIsReadWholeOrNotAtAll: a committed transaction
// over two tables whose change to bbb has an outcome not known yet (the
// log's answer lost; its resolver paused) is not seen half applied:
// TransactGetItems of its items is cancelled with TransactionConflict at
// bbb ("ensuring you see either all changes from a completed transaction
// or none at all", transaction-apis.html), and a retry with its
// ClientRequestToken is TransactionInProgressException until every
// change is applied; then TransactGetItems sees both and the retry
// succeeds without applying again. It used to read aaa.v=new with
// bbb.v=old, and the retry answered success while GetItem still read
// bbb.v=old.
func TestACommittedTransactionIsReadWholeOrNotAtAll(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "aaa", "", "")
	createTable(t, tb, "bbb", "", "")
	for _, n := range []string{"aaa", "bbb"} {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: n, Item: table.Item{"pk": S("k"), "v": S("old")}}); err != nil {
			t.Fatal(err)
		}
	}
	table.SetResolvePause(tb, time.Hour)
	var lose atomic.Bool
	table.SetReplyLost(tb, func(name string) error {
		if name == "bbb" && lose.Swap(false) {
			return errors.New("answer lost (test)")
		}
		return nil
	})
	in := table.TransactWriteItemsInput{ClientRequestToken: "tok-partial", TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "aaa", Item: table.Item{"pk": S("k"), "v": S("new")}}},
		{Update: &table.TransactUpdate{TableName: "bbb", Key: table.Item{"pk": S("k")}, UpdateExpression: "SET v = :v",
			WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":v": S("new")}}}},
	}}
	lose.Store(true)
	if err := tb.TransactWriteItems(ctx, in); !errors.Is(err, awserr.ErrService) {
		t.Fatalf("TransactWriteItems with bbb's answer lost: %v, want a retryable error", err)
	}
	if v := get(t, tb, "aaa", table.Item{"pk": S("k")})["v"].String(); v != "new" {
		t.Fatalf("aaa.v = %s: the committed change that landed is not applied", v)
	}
	both := table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{tget("aaa", "k"), tget("bbb", "k")}}
	_, err := tb.TransactGetItems(ctx, both)
	var tc *table.TransactionCanceledError
	if !errors.As(err, &tc) || tc.Reasons[0].Code != "None" || tc.Reasons[1].Code != "TransactionConflict" {
		t.Fatalf("TransactGetItems while bbb's change is pending: %v, want cancelled, reasons None, TransactionConflict", err)
	}
	if err := tb.TransactWriteItems(ctx, in); !errors.Is(err, awserr.ErrTransactionInProgress) {
		t.Fatalf("a retry with the token while bbb's change is pending: %v, want TransactionInProgressException", err)
	}
	if left := table.WaitResolved(tb); left != 0 {
		t.Fatalf("%d items still held after the resolvers ran", left)
	}
	out, err := tb.TransactGetItems(ctx, both)
	if err != nil {
		t.Fatalf("TransactGetItems once applied: %v", err)
	}
	if a, b := out.Responses[0].Item["v"].String(), out.Responses[1].Item["v"].String(); a != "new" || b != "new" {
		t.Fatalf("once applied: aaa.v=%s bbb.v=%s, want new, new", a, b)
	}
	if err := tb.TransactWriteItems(ctx, in); err != nil {
		t.Fatalf("a retry with the token once applied: %v, want success", err)
	}
	if n := len(changes(t, tb, "bbb")); n != 2 {
		t.Fatalf("bbb's log holds %d changes, want 2 (the put, the transaction's once)", n)
	}
}

// TestACommittedTransactionIsReadWholeOrNotAtAll, when the commit's own
// answer was lost too: the resolver that learns the commit applies aaa's
// change, bbb's answer is lost again; the token stays in progress and
// TransactGetItems is cancelled until bbb's change is applied. It used to
// end the token (success to a retry) as soon as the commit was learned.
func TestACommittedTransactionIsReadWholeOrNotAtAllAfterItsCommitWasResolved(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	createTable(t, tb, "aaa", "", "")
	createTable(t, tb, "bbb", "", "")
	var loseCommit, loseB atomic.Bool
	table.SetCommitLost(tb, func() error {
		if loseCommit.Load() {
			return errors.New("commit answer lost (test)")
		}
		return nil
	}, time.Hour, 50*time.Millisecond)
	table.SetReplyLost(tb, func(name string) error {
		if name == "bbb" && loseB.Swap(false) {
			return errors.New("answer lost (test)")
		}
		return nil
	})
	in := table.TransactWriteItemsInput{ClientRequestToken: "tok-commit", TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "aaa", Item: table.Item{"pk": S("k"), "v": S("new")}}},
		{Put: &table.TransactPut{TableName: "bbb", Item: table.Item{"pk": S("k"), "v": S("new")}}},
	}}
	loseCommit.Store(true)
	if err := tb.TransactWriteItems(ctx, in); !errors.Is(err, awserr.ErrService) {
		t.Fatalf("TransactWriteItems with the commit's answer lost: %v, want a retryable error", err)
	}
	loseCommit.Store(false)
	loseB.Store(true)
	table.ResolveOnce(t, tb) // the commit's resolver: aaa applied, bbb's answer lost
	if v := get(t, tb, "aaa", table.Item{"pk": S("k")})["v"].String(); v != "new" {
		t.Fatalf("aaa.v = %s after the commit was resolved, want new", v)
	}
	if err := tb.TransactWriteItems(ctx, in); !errors.Is(err, awserr.ErrTransactionInProgress) {
		t.Fatalf("a retry with the token while bbb's change is pending: %v, want TransactionInProgressException", err)
	}
	_, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{tget("aaa", "k"), tget("bbb", "k")}})
	var tc *table.TransactionCanceledError
	if !errors.As(err, &tc) || tc.Reasons[1].Code != "TransactionConflict" {
		t.Fatalf("TransactGetItems while bbb's change is pending: %v, want TransactionConflict at bbb", err)
	}
	if left := table.WaitResolved(tb); left != 0 {
		t.Fatalf("%d items still held after the resolvers ran", left)
	}
	if err := tb.TransactWriteItems(ctx, in); err != nil {
		t.Fatalf("a retry with the token once applied: %v, want success", err)
	}
	if v := get(t, tb, "bbb", table.Item{"pk": S("k")})["v"].String(); v != "new" {
		t.Fatalf("bbb.v = %s once applied, want new", v)
	}
}
