package table_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// logMessages reads the table's change log and returns how many stored
// messages hold its records (a message is one JetStream publish to one
// shard; stream.MessageOf) and how many records there are.
func logMessages(t *testing.T, tb *table.Service, name string) (messages, records int) {
	t.Helper()
	type msgOf struct {
		shard string
		msg   uint64
	}
	seen := map[msgOf]bool{}
	recs := logRecords(t, tb, name)
	for _, r := range recs {
		msg, _ := stream.MessageOf(r.Seq)
		seen[msgOf{r.ShardID, msg}] = true
	}
	return len(seen), len(recs)
}

// TestBatchWriteItemIsOneLogWrite: the 25 requests of a BatchWriteItem
// on one table are written as one group, one stored message per shard of
// the table's log at most, not one publish per request.
func TestBatchWriteItemIsOneLogWrite(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "batch", "", table.ViewNewAndOldImages)
	var reqs []table.WriteRequest
	for i := range table.MaxBatchWrite {
		reqs = append(reqs, table.WriteRequest{PutRequest: &table.PutRequest{Item: table.Item{"pk": S(fmt.Sprint("k", i))}}})
	}
	out, err := tb.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{"batch": reqs}})
	if err != nil || len(out.UnprocessedItems) != 0 {
		t.Fatalf("err %v, unprocessed %v", err, out)
	}
	messages, records := logMessages(t, tb, "batch")
	if records != table.MaxBatchWrite || messages > table.DefaultShards {
		t.Fatalf("%d change records in %d stored messages, want %d in at most %d (one per shard)", records, messages, table.MaxBatchWrite, table.DefaultShards)
	}
}

// TestConcurrentPutItemsShareALogWrite: PutItems that arrive while a log
// write of their table runs wait for it, then are written together, in
// one PutRecords call (one stored message per shard at most), and each
// is answered only once its change is stored.
func TestConcurrentPutItemsShareALogWrite(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "group", "", table.ViewNewAndOldImages)
	queued, release := table.HoldLogWrite(t, tb, "group")
	const callers = 8
	var wg sync.WaitGroup
	done := make(chan int, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "group", Item: table.Item{"pk": S(fmt.Sprint("k", i))}}); err != nil {
				t.Error(err)
			}
			done <- i
		}()
	}
	testenv.Eventually(t, 20*time.Second, "8 puts queued", func() bool { return queued() == callers })
	select {
	case i := <-done:
		t.Fatalf("put %d answered before its change was written", i)
	default:
	}
	release()
	wg.Wait()
	messages, records := logMessages(t, tb, "group")
	if records != callers || messages > table.DefaultShards {
		t.Fatalf("%d change records in %d stored messages, want %d in at most %d (one write)", records, messages, callers, table.DefaultShards)
	}
}

// TestAWholeCallWaitingStartsASecondWriteOfTheLane: while a lane's log
// write runs, PutItems queue behind it; once a whole PutRecords call's
// worth of changes (MaxPutRecords) waits, a second write of the lane
// starts and writes them (and what queues behind them) without waiting
// for the first, so that a loaded lane is not held to one full call per
// log round trip. Fewer wait for the running write (the test above).
func TestAWholeCallWaitingStartsASecondWriteOfTheLane(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: "full", RunnelShards: 1,
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
	}); err != nil {
		t.Fatal(err)
	}
	_, release := table.HoldLogWrite(t, tb, "full") // the "running" write
	// Enough items that a whole call's worth can queue: a put waits for
	// its item's lock stripe (1,024) before it queues, so 2,000 items
	// queue on about 880 stripes at once, and 600 on only about 450.
	const callers = 2000
	var wg sync.WaitGroup
	var answered atomic.Int64
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "full", Item: table.Item{"pk": S(fmt.Sprint("k", i))}}); err != nil {
				t.Error(err)
			}
			answered.Add(1)
		}()
	}
	// Without the second write, no put is answered before release. (Puts
	// that queue after the second write drained the queue wait for it.)
	testenv.Eventually(t, 20*time.Second, "a whole call's puts answered while the lane's write runs", func() bool {
		return answered.Load() >= stream.MaxPutRecords
	})
	release()
	wg.Wait()
	if _, records := logMessages(t, tb, "full"); records != callers {
		t.Fatalf("%d change records, want %d", records, callers)
	}
}

// TestLanesAreShards: a change's group-commit lane is the shard of the
// table's log it is stored in (for 1, 4 and 7 shards), so that a lane's
// write is one stored message.
func TestLanesAreShards(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	for _, shards := range []int{1, 4, 7} {
		name := fmt.Sprint("lanes", shards)
		if _, err := tb.CreateTable(ctx, table.CreateTableInput{TableName: name, RunnelShards: shards,
			KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}},
			AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}},
		}); err != nil {
			t.Fatal(err)
		}
		for i := range 200 {
			if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: name, Item: table.Item{"pk": S(fmt.Sprint("k", i))}}); err != nil {
				t.Fatal(err)
			}
		}
		for _, r := range logRecords(t, tb, name) {
			c, err := table.DecodeChange(r.Data)
			if err != nil {
				t.Fatal(err)
			}
			if lane := table.LaneOf(t, tb, name, c.Keys); stream.ShardID(lane) != r.ShardID {
				t.Fatalf("%d shards: item %v in lane %d, stored in %s", shards, c.Keys["pk"], lane, r.ShardID)
			}
		}
	}
}

// TestLanesAreWrittenConcurrently: a write waits only for a write of its
// own lane; one of another lane is written meanwhile.
func TestLanesAreWrittenConcurrently(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	tb := rn.Tables
	createTable(t, tb, "lanes", "", "")
	a, b := table.Item{"pk": S("a")}, table.Item(nil)
	for i := 0; i < 1000 && b == nil; i++ {
		if c := (table.Item{"pk": S(fmt.Sprint("b", i))}); table.LaneOf(t, tb, "lanes", c) != table.LaneOf(t, tb, "lanes", a) {
			b = c
		}
	}
	if b == nil {
		t.Fatal("no item in another lane than a's: the table has one lane")
	}
	queued, release := table.HoldLogWrite(t, tb, "lanes", table.LaneOf(t, tb, "lanes", a))
	done := make(chan error, 1)
	go func() {
		_, err := tb.PutItem(ctx, table.PutItemInput{TableName: "lanes", Item: a})
		done <- err
	}()
	testenv.Eventually(t, 20*time.Second, "a's put queued", func() bool { return queued() == 1 })
	if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "lanes", Item: b}); err != nil {
		t.Fatal(err) // a put of another lane does not wait for a's lane
	}
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if get(t, tb, "lanes", a) == nil || get(t, tb, "lanes", b) == nil {
		t.Fatal("an item is missing")
	}
}
