package stream_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

func logEntries(data ...string) []stream.PutRecordsRequestEntry {
	out := make([]stream.PutRecordsRequestEntry, len(data))
	for i, d := range data {
		out[i] = stream.PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(d)}
	}
	return out
}

// TestALogWriteWhoseAcknowledgementIsLostIsStoredOnce: PutLogRecords
// publishes a message whose acknowledgement was lost again with the same
// message id, and JetStream answers with the first one's sequence: the
// call succeeds with the records' sequence numbers and the shard holds
// them once. Without the message id, the second publish stores them a
// second time.
func TestALogWriteWhoseAcknowledgementIsLostIsStoredOnce(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "log", 1)
	var lose atomic.Bool
	lose.Store(true)
	rn.Streams.LoseAcks(func() bool { return lose.Swap(false) }, 0)
	out, err := rn.Streams.PutLogRecords(t.Context(), "log", "call-1", logEntries("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	if out.FailedRecordCount != 0 {
		t.Fatalf("%d records failed: %+v", out.FailedRecordCount, out.Records)
	}
	recs := readShard(t, rn, "log", 0)
	if got := dataOf(recs); got != "a,b,c" {
		t.Fatalf("the shard holds %q, want the call's records once: a,b,c", got)
	}
	for i, r := range recs {
		if r.SequenceNumber != out.Records[i].SequenceNumber {
			t.Fatalf("record %d: answered %s, stored at %s", i, out.Records[i].SequenceNumber, r.SequenceNumber)
		}
	}
	// A second call with the same id, within the duplicate window, is
	// answered with the first one's sequence numbers and stores nothing.
	again, err := rn.Streams.PutLogRecords(t.Context(), "log", "call-1", logEntries("a", "b", "c"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range again.Records {
		if again.Records[i].SequenceNumber != out.Records[i].SequenceNumber {
			t.Fatalf("the same call again: record %d at %s, want %s", i, again.Records[i].SequenceNumber, out.Records[i].SequenceNumber)
		}
	}
	if n := countRecords(t, rn, "log"); n != 3 {
		t.Fatalf("the shard holds %d records after the call again, want 3", n)
	}
}

// TestALogWriteWithNoAnswerReportsItsOutcomeUnknown: when no
// acknowledgement comes within ResolveWithin, the entries carry ErrorCode
// OutcomeUnknown (not InternalFailure, which says "not stored"): here
// they were stored, once, whatever the number of attempts.
func TestALogWriteWithNoAnswerReportsItsOutcomeUnknown(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "log", 1)
	rn.Streams.LoseAcks(func() bool { return true }, 300*time.Millisecond)
	out, err := rn.Streams.PutLogRecords(t.Context(), "log", "call-2", logEntries("x", "y"))
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out.Records {
		if r.ErrorCode != stream.OutcomeUnknown {
			t.Fatalf("record %d: %+v, want ErrorCode %s", i, r, stream.OutcomeUnknown)
		}
	}
	rn.Streams.LoseAcks(nil, 0)
	if got := dataOf(readShard(t, rn, "log", 0)); got != "x,y" {
		t.Fatalf("the shard holds %q after several attempts, want x,y once", got)
	}
}
