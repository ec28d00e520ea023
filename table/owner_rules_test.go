package table_test

import (
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestATableWriteAcknowledgedAfterTheLeaseEndedIsRetryable: a write whose
// log append is acknowledged after this process's lease on the tables
// stopped being valid may be missing from the index of a process that
// took the tables over meanwhile; it is answered with a retryable error,
// never a success. Here it is applied all the same (this process still
// holds the tables once its renewal goes through), and a transaction's
// changes are applied on every table, not only up to the first.
func TestATableWriteAcknowledgedAfterTheLeaseEndedIsRetryable(t *testing.T) {
	tb := testenv.Start(t, testenv.Options{}).Tables
	for _, name := range []string{"aaa", "bbb"} {
		if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: name,
			KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
			AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		}); err != nil {
			t.Fatal(err)
		}
	}
	table.SetHolding(tb, func() bool { return false })
	_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "aaa", Item: table.Item{"pk": S("late")}})
	if err == nil || !awserr.IsRetryable(err) {
		t.Fatalf("PutItem acknowledged after the lease ended: err = %v, want a retryable error", err)
	}
	err = tb.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{Put: &table.TransactPut{TableName: "aaa", Item: table.Item{"pk": S("tx")}}},
		{Put: &table.TransactPut{TableName: "bbb", Item: table.Item{"pk": S("tx")}}},
	}})
	if err == nil || !awserr.IsRetryable(err) {
		t.Fatalf("TransactWriteItems acknowledged after the lease ended: err = %v, want a retryable error", err)
	}
	table.SetHolding(tb, nil)
	for _, k := range []struct{ table, pk string }{{"aaa", "late"}, {"aaa", "tx"}, {"bbb", "tx"}} {
		out, err := tb.GetItem(ctx, table.GetItemInput{TableName: k.table, Key: table.Item{"pk": S(k.pk)}})
		if err != nil || out.Item == nil {
			t.Errorf("%s/%s after the late write: %v, %v; want the item (applied here)", k.table, k.pk, out, err)
		}
	}
}
