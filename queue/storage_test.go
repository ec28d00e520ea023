package queue

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// TestStorageLayout checks what the stream holds (see the package doc):
// one body record per send call, one state record replaced on each
// change; once a call's messages are all gone, the body deleted and the
// state replaced by a tombstone with a TTL.
func TestStorageLayout(t *testing.T) {
	ctx := context.Background()
	// The engine alone: this package's internal tests can't import
	// testenv (runnel imports queue).
	eng, err := engine.Open(ctx, engine.Config{
		DataDir: t.TempDir(), Clock: clockwork.NewFakeClockAt(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s, err := New(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	url, err := s.CreateQueue(ctx, "q", nil)
	if err != nil {
		t.Fatal(err)
	}
	q, _ := s.queue(ctx, url)
	entries := []SendMessageBatchRequestEntry{{Id: "a", SendMessageInput: SendMessageInput{MessageBody: "a"}}, {Id: "b", SendMessageInput: SendMessageInput{MessageBody: "b"}}}
	if _, err := s.SendMessageBatch(ctx, url, entries); err != nil {
		t.Fatal(err)
	}
	msgs, err := s.ReceiveMessage(ctx, url, ReceiveMessageInput{MaxNumberOfMessages: 10})
	if err != nil || len(msgs) != 2 {
		t.Fatalf("receive = %d, %v", len(msgs), err)
	}
	rc, _ := decodeReceipt(msgs[0].ReceiptHandle)
	last := func(subject string) *jetstream.RawStreamMsg {
		t.Helper()
		m, err := q.js.GetLastMsgForSubject(ctx, subject)
		if err != nil {
			t.Fatalf("%s: %v", subject, err)
		}
		return m
	}
	info, _ := q.js.Info(ctx)
	if info.State.Msgs != 2 {
		t.Fatalf("stream holds %d messages after one send and one receive, want body + state", info.State.Msgs)
	}
	body := last(q.bodySubject(rc.n))
	if decoded, moved, err := decodeBody(body.Data); err != nil || moved || len(decoded) != 2 || decoded[1].payload.body != "b" {
		t.Fatalf("body record = %v, %v", decoded, err)
	}
	rec := &record{msgs: []*message{{}, {}}}
	if err := applyState(last(q.stateSubject(rc.n)).Data, rec); err != nil || rec.msgs[0].receiveCount != 1 || rec.msgs[1].nonce == 0 {
		t.Fatalf("state record = %+v, %v", rec.msgs[0], err)
	}
	if err := s.DeleteMessage(ctx, url, msgs[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	rec = &record{msgs: []*message{{}, {}}}
	if err := applyState(last(q.stateSubject(rc.n)).Data, rec); err != nil || rec.msgs[0].st != stDeleted || rec.msgs[1].st == stDeleted {
		t.Fatalf("state after one delete: %v", err)
	}
	if err := s.DeleteMessage(ctx, url, msgs[1].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	// The body is deleted (DeleteMsg: see queue.deleteBody), the state
	// replaced by a tombstone with a TTL.
	if m, err := q.js.GetLastMsgForSubject(ctx, q.bodySubject(rc.n)); err == nil {
		t.Fatalf("the body record is still there (headers %v) after its messages were deleted", m.Header)
	}
	if m := last(q.stateSubject(rc.n)); m.Header.Get(goneHeader) == "" || m.Header.Get(jetstream.MsgTTLHeader) == "" {
		t.Fatalf("the state record is not a tombstone with a TTL: %v", m.Header)
	}
	info, _ = q.js.Info(ctx)
	if info.State.Msgs != 1 {
		t.Fatalf("stream holds %d messages, want the state's tombstone", info.State.Msgs)
	}
}
