package table_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// twoNodes starts a runnel whose embedded server listens and a second one
// connected to it; both serve (as two `runnel serve` nodes would), so the
// first holds the tables and the second forwards to it.
func twoNodes(t *testing.T) (a, b *runnel.Runnel) {
	t.Helper()
	a = testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b = testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	return a, b
}

func createCounters(t *testing.T, s *table.Service) {
	t.Helper()
	_, err := s.CreateTable(context.Background(), table.CreateTableInput{
		TableName:            "counters",
		KeySchema:            []table.KeySchemaElement{{AttributeName: "id", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "id", AttributeType: "S"}},
		StreamSpecification:  &table.StreamSpecification{StreamEnabled: true, StreamViewType: "NEW_AND_OLD_IMAGES"},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A condition checked through one process holds against a write made
// through another: both decide against the one index of the process that
// serves the tables. With an index per process (before the tables were
// served by one lease holder), the second process accepted the second
// attribute_not_exists put as well.
func TestAConditionHoldsAcrossProcesses(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	createCounters(t, b.Tables)
	put := func(s *table.Service, owner string) error {
		_, err := s.PutItem(ctx, table.PutItemInput{TableName: "counters",
			Item:      table.Item{"id": events.NewStringAttribute("lock"), "owner": events.NewStringAttribute(owner)},
			WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(id)"}})
		return err
	}
	if err := put(a.Tables, "a"); err != nil {
		t.Fatal(err)
	}
	if err := put(b.Tables, "b"); !errors.Is(err, awserr.ErrConditionalCheckFailed) {
		t.Fatalf("the second process's conditional put: %v, want ConditionalCheckFailedException", err)
	}
	got, err := b.Tables.GetItem(ctx, table.GetItemInput{TableName: "counters", Key: table.Item{"id": events.NewStringAttribute("lock")}, ConsistentRead: true})
	if err != nil {
		t.Fatal(err)
	}
	if o := got.Item["owner"].String(); o != "a" {
		t.Errorf("owner read through the second process = %q, want a", o)
	}
}

// Increments through both processes at once all count, and a transaction
// through one sees the other's writes: 2 × 50 ADDs make 100.
func TestUpdatesAndTransactionsThroughTwoProcessesAllCount(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	createCounters(t, a.Tables)
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for _, rn := range []*runnel.Runnel{a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				_, err := rn.Tables.UpdateItem(ctx, table.UpdateItemInput{TableName: "counters",
					Key:              table.Item{"id": events.NewStringAttribute("c")},
					UpdateExpression: "ADD n :one",
					WriteExpr:        table.WriteExpr{ExpressionAttributeValues: table.Item{":one": events.NewNumberAttribute("1")}}})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// A cancelled transaction keeps its reasons across the call.
	err := b.Tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{ConditionCheck: &table.ConditionCheck{TableName: "counters", Key: table.Item{"id": events.NewStringAttribute("c")},
			WriteExpr: table.WriteExpr{
				ConditionExpression:       "n = :n",
				ExpressionAttributeValues: table.Item{":n": events.NewNumberAttribute("99")},
			}}},
	}})
	var tc *table.TransactionCanceledError
	if !errors.As(err, &tc) || len(tc.Reasons) != 1 || tc.Reasons[0].Code != "ConditionalCheckFailed" {
		t.Fatalf("a transaction conditioned on n = 99: %v, want TransactionCanceledException [ConditionalCheckFailed]", err)
	}
	err = b.Tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: []table.TransactWriteItem{
		{ConditionCheck: &table.ConditionCheck{TableName: "counters", Key: table.Item{"id": events.NewStringAttribute("c")},
			WriteExpr: table.WriteExpr{
				ConditionExpression:       "n = :n",
				ExpressionAttributeValues: table.Item{":n": events.NewNumberAttribute("100")},
			}}},
		{Put: &table.TransactPut{TableName: "counters", Item: table.Item{"id": events.NewStringAttribute("done")}}},
	}})
	if err != nil {
		t.Fatalf("a transaction conditioned on n = 100, through the second process: %v", err)
	}
	got, err := a.Tables.GetItem(ctx, table.GetItemInput{TableName: "counters", Key: table.Item{"id": events.NewStringAttribute("done")}})
	if err != nil || got.Item == nil {
		t.Fatalf("the transaction's put, read through the first process: %+v, %v", got, err)
	}
}

// When the serving process stops, the other takes the tables over with
// every acknowledged write (it loads the index from the snapshot the
// first wrote when it stopped), and a
// table's change log is readable from either.
func TestAnotherProcessTakesTheTablesOverWithEveryWrite(t *testing.T) {
	a, b := twoNodes(t)
	ctx := context.Background()
	createCounters(t, a.Tables)
	for i := range 20 {
		if _, err := b.Tables.PutItem(ctx, table.PutItemInput{TableName: "counters",
			Item: table.Item{"id": events.NewStringAttribute(fmt.Sprint("k", i))}}); err != nil {
			t.Fatal(err)
		}
	}
	ta, err := a.Tables.Table("counters")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Tables.Table("counters")
	if err != nil {
		t.Fatal(err)
	}
	if ta.LogName() != tb.LogName() {
		t.Errorf("change logs %q and %q", ta.LogName(), tb.LogName())
	}
	// b's own engine holds no NATS server: a's stays up, its services stop.
	a.Tables.Close()
	out, err := b.Tables.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "counters"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 20 {
		t.Errorf("after the handover the table holds %d items, want 20", len(out.Items))
	}
	if from, replayed := table.OpenedFrom(t, b.Tables, "counters"); !from || replayed != 0 {
		t.Errorf("the new holder opened from a snapshot %v, replaying %d log records; want the one written at the handover, none", from, replayed)
	}
}
