package recovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

// TestResolveRefusesWhatIsNotAFailureRecord: a retry envelope around
// something that is not a Kinesis event record, and an async invocation
// record without a requestPayload, are ErrUnknownFormat: Resolve does not
// invent an event to retry.
func TestResolveRefusesWhatIsNotAFailureRecord(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	notKinesis, _ := wire.WrapRetry([]byte(`{"eventSource":"aws:sqs","body":"x"}`), time.Unix(1, 0))
	for name, body := range map[string][]byte{
		"a retry envelope around an SQS message": notKinesis,
		"a retry envelope around text":           mustWrap(t, []byte("not json")),
		"an async record without requestPayload": []byte(`{"version":"1.0","requestContext":{"condition":"RetriesExhausted"}}`),
	} {
		if res, err := recovery.Resolve(ctx, rn.Streams, body); !errors.Is(err, recovery.ErrUnknownFormat) {
			t.Errorf("%s: Resolve = %+v, %v; want ErrUnknownFormat", name, res, err)
		}
	}
}

func mustWrap(t *testing.T, payload []byte) []byte {
	t.Helper()
	b, err := wire.WrapRetry(payload, time.Unix(1, 0))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startWithStream starts a runnel on a fake clock (2026-01-01) with the
// one-shard stream "s".
func startWithStream(t *testing.T) (*runnel.Runnel, *clockwork.FakeClock, *stream.StreamDescription) {
	t.Helper()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	d, err := rn.Streams.CreateStream(context.Background(), stream.CreateStreamInput{StreamName: "s", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	return rn, clock, d
}

// TestResolvePartlyPastRetentionReturnsWhatRemains: when the oldest
// records of a KinesisBatchInfo range have aged out, Resolve reports
// ErrPastRetention with the number missing (BatchSize less those still
// stored) and returns the records that remain, in shard order.
func TestResolvePartlyPastRetentionReturnsWhatRemains(t *testing.T) {
	rn, clock, d := startWithStream(t)
	ctx := context.Background()
	var seqs []string
	put := func(data string) {
		out, err := rn.Streams.PutRecord(ctx, "s", stream.PutRecordsRequestEntry{PartitionKey: "k", Data: []byte(data)})
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, out.SequenceNumber)
	}
	put("old1")
	put("old2")
	clock.Advance(23 * time.Hour)
	put("new1")
	put("new2")
	put("new3")
	pointer, _ := json.Marshal(wire.OnFailureRecord{RequestContext: wire.RequestContext{Condition: "RecordAgeExceeded"}, Version: "1.0",
		KinesisBatchInfo: &wire.KinesisBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: seqs[0], EndSequenceNumber: seqs[4], BatchSize: 5, StreamArn: d.StreamARN}})
	if res, err := recovery.Resolve(ctx, rn.Streams, pointer); err != nil || len(res.Records) != 5 || res.Missing != 0 {
		t.Fatalf("within retention: Resolve = %+v, %v", res, err)
	}
	clock.Advance(2 * time.Hour) // old1 and old2 are 25 h old, past the 24 h retention
	if n, err := rn.Streams.TrimExpired(ctx); err != nil || n != 2 {
		t.Fatalf("TrimExpired = %d, %v", n, err)
	}
	res, err := recovery.Resolve(ctx, rn.Streams, pointer)
	if !errors.Is(err, recovery.ErrPastRetention) || res == nil || res.Missing != 2 || len(res.Records) != 3 ||
		string(res.Records[0].Kinesis.Data) != "new1" || string(res.Records[2].Kinesis.Data) != "new3" || res.Condition != "RecordAgeExceeded" {
		t.Fatalf("Resolve = %+v, %v; want the 3 remaining records and 2 missing", res, err)
	}
}
