package table_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

func tget(name, pk string) table.TransactGetItem {
	return table.TransactGetItem{Get: &table.TransactGet{TableName: name, Key: table.Item{"pk": S(pk)}}}
}

func TestTransactGetItems(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "aaa", "", "")
	createTable(t, tb, "bbb", "", "")
	for _, name := range []string{"aaa", "bbb"} {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: name, Item: table.Item{"pk": S("k"), "v": S(name), "w": S("w")}}); err != nil {
			t.Fatal(err)
		}
	}
	g := tget("bbb", "k")
	g.Get.ProjectionExpression = "#v"
	g.Get.ExpressionAttributeNames = map[string]string{"#v": "v"}
	out, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{ReturnConsumedCapacity: "TOTAL", TransactItems: []table.TransactGetItem{tget("aaa", "k"), tget("aaa", "none"), g}})
	if err != nil {
		t.Fatal(err)
	}
	r := out.Responses
	if len(r) != 3 || r[0].Item["w"].String() != "w" || r[1].Item != nil || len(r[2].Item) != 1 || r[2].Item["v"].String() != "bbb" {
		t.Fatalf("responses %+v", r)
	}
	// Transactional reads cost twice a strongly consistent read.
	if c := out.ConsumedCapacity; len(c) != 2 || c[0].TableName != "aaa" || c[0].CapacityUnits != 4 || c[1].CapacityUnits != 2 {
		t.Fatalf("capacity %+v", c)
	}

	many := make([]table.TransactGetItem, 101)
	for i := range many {
		many[i] = tget("aaa", fmt.Sprint(i))
	}
	if _, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: many[:100]}); err != nil {
		t.Fatalf("100 gets: %v", err)
	}
	refused := []struct {
		name  string
		items []table.TransactGetItem
		code  *awserr.Error
		msg   string
	}{
		{"101", many, awserr.ErrValidation, "Value '101' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to 100"},
		{"none", nil, awserr.ErrValidation, "Value '0' at 'transactItems'"},
		{"one item twice", []table.TransactGetItem{tget("aaa", "k"), tget("bbb", "k"), tget("aaa", "k")}, awserr.ErrValidation, "Transaction request cannot include multiple operations on one item"},
		{"no Get", []table.TransactGetItem{tget("aaa", "k"), {}}, awserr.ErrValidation, "Value null at 'transactItems.2.member.get'"},
		{"missing table", []table.TransactGetItem{tget("nope", "k")}, awserr.ErrResourceNotFound, "nope"},
	}
	for _, c := range refused {
		_, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: c.items})
		wantError(t, err, c.code, c.msg)
	}

	// 11 items of 390 KB are more than 4 MB: every reason ValidationError.
	var big []table.TransactGetItem
	for i := range 11 {
		putItem(t, tb, "bbb", table.Item{"pk": S(fmt.Sprint("big", i)), "v": S(strings.Repeat("x", 390*1024))})
		big = append(big, tget("bbb", fmt.Sprint("big", i)))
	}
	if _, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: big[:10]}); err != nil {
		t.Fatalf("3.9 MB: %v", err)
	}
	_, err = tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: big})
	var tce *table.TransactionCanceledError
	if !errors.As(err, &tce) || len(tce.Reasons) != 11 || tce.Reasons[0].Code != "ValidationError" || !strings.Contains(tce.Reasons[0].Message, "4 MB") {
		t.Fatalf("4.3 MB: %v", err)
	}
}

// wantConflict fails unless err cancels a transaction with
// TransactionConflict at the indexes in conflict and None elsewhere.
func wantConflict(t *testing.T, err error, n int, conflict ...int) {
	t.Helper()
	var tce *table.TransactionCanceledError
	if !errors.As(err, &tce) || len(tce.Reasons) != n {
		t.Fatalf("got %v, want a cancellation of %d actions", err, n)
	}
	want := make([]string, n)
	for i := range want {
		want[i] = "None"
	}
	for _, i := range conflict {
		want[i] = "TransactionConflict"
	}
	for i, r := range tce.Reasons {
		if r.Code != want[i] || (r.Code == "TransactionConflict") != (r.Message == "Transaction is ongoing for the item") {
			t.Fatalf("reasons %+v, want codes %v", tce.Reasons, want)
		}
	}
}

// TestTransactionConflict: while a TransactWriteItems holds an item, a
// single write of it fails with TransactionConflictException, and another
// transaction (write or read) with it is cancelled with TransactionConflict
// at once instead of waiting; a plain GetItem reads it. Once released,
// everything goes through.
func TestTransactionConflict(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "aaa", "", "")
	k := table.Item{"pk": S("held")}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "aaa", Item: table.Item{"pk": S("held"), "n": N("1")}}); err != nil {
		t.Fatal(err)
	}
	release := table.HoldItems(t, tb, "aaa", k)

	// The single writes answer at once: they do not wait for the lock the
	// transaction holds.
	var err error
	for _, write := range []func() error{
		func() error {
			_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "aaa", Item: table.Item{"pk": S("held")}})
			return err
		},
		func() error {
			_, err := tb.UpdateItem(ctx, table.UpdateItemInput{TableName: "aaa", Key: k, UpdateExpression: "SET n = :n", WriteExpr: table.WriteExpr{ExpressionAttributeValues: table.Item{":n": N("2")}}})
			return err
		},
		func() error {
			_, err := tb.DeleteItem(ctx, table.DeleteItemInput{TableName: "aaa", Key: k})
			return err
		},
	} {
		done := make(chan error, 1)
		go func() { done <- write() }()
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatal("a single write waited for the transaction")
		}
		wantError(t, err, awserr.ErrTransactionConflict, "Transaction is ongoing for the item")
	}
	if !awserr.IsRetryable(err) {
		t.Fatal("TransactionConflictException not retryable")
	}
	if it := get(t, tb, "aaa", k); it["n"].Number() != "1" {
		t.Fatalf("GetItem during the transaction: %v", it)
	}

	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "aaa", Item: table.Item{"pk": S("other")}}},
		{Delete: &table.TransactDelete{TableName: "aaa", Key: k}},
	}})
	wantConflict(t, err, 2, 1)
	if get(t, tb, "aaa", table.Item{"pk": S("other")}) != nil {
		t.Fatal("a cancelled transaction wrote")
	}
	_, err = tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{tget("aaa", "held"), tget("aaa", "other")}})
	wantConflict(t, err, 2, 0)

	release()
	if _, err := tb.TransactGetItems(ctx, table.TransactGetItemsInput{TransactItems: []table.TransactGetItem{tget("aaa", "held")}}); err != nil {
		t.Fatal(err)
	}
	if err := tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Delete: &table.TransactDelete{TableName: "aaa", Key: k}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "aaa", Item: k}); err != nil {
		t.Fatal(err)
	}
}
