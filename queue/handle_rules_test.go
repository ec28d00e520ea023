package queue_test

import (
	"encoding/base64"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// alterHandle decodes a receipt handle, lets edit change its bytes and
// encodes it again. The layout (queue/handle.go): version byte, queue id,
// record number, position byte, 8-byte nonce.
func alterHandle(t *testing.T, h string, edit func(b []byte) []byte) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil {
		t.Fatalf("handle %q is not URL-safe base64: %v", h, err)
	}
	return base64.RawURLEncoding.EncodeToString(edit(b))
}

// TestReceiptHandleThatWasNotIssuedIsInvalid: SQS answers
// ReceiptHandleIsInvalid for a handle it did not issue (altered, cut,
// extended, or pointing at a message of the send that does not exist) or
// that belongs to another queue, and the message it resembles stays in
// flight: a forged handle neither deletes it nor changes its visibility.
func TestReceiptHandleThatWasNotIssuedIsInvalid(t *testing.T) {
	e := newEnv(t)
	url := e.create("handles", nil)
	other := e.create("other", nil)
	e.send(url, "a")
	m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(600)})
	if len(m) != 1 {
		t.Fatalf("received %d messages, want 1", len(m))
	}
	h := m[0].ReceiptHandle
	forged := map[string]string{
		"empty":           "",
		"not base64":      "!!" + h,
		"version 2":       alterHandle(t, h, func(b []byte) []byte { b[0] = 2; return b }),
		"only a version":  alterHandle(t, h, func(b []byte) []byte { return b[:1] }),
		"a byte too many": alterHandle(t, h, func(b []byte) []byte { return append(b, 0) }),
		"a byte too few":  alterHandle(t, h, func(b []byte) []byte { return b[:len(b)-1] }),
		// The send stored one message: position 1 is past its end.
		"position 1 of a one-message send": alterHandle(t, h, func(b []byte) []byte { b[len(b)-9] = 1; return b }),
	}
	for name, f := range forged {
		wantErr(t, e.svc.DeleteMessage(e.ctx, url, f), awserr.ErrReceiptHandleIsInvalid)
		wantErr(t, e.svc.ChangeMessageVisibility(e.ctx, url, f, 0), awserr.ErrReceiptHandleIsInvalid)
		if got := e.attrs(url)["ApproximateNumberOfMessagesNotVisible"]; got != "1" {
			t.Fatalf("after the %s handle: %s messages in flight, want 1", name, got)
		}
	}
	// The real handle on another queue: not that queue's.
	wantErr(t, e.svc.DeleteMessage(e.ctx, other, h), awserr.ErrReceiptHandleIsInvalid, "does not belong to queue other")
	wantErr(t, e.svc.ChangeMessageVisibility(e.ctx, other, h, 0), awserr.ErrReceiptHandleIsInvalid)
	if got := e.attrs(url)["ApproximateNumberOfMessagesNotVisible"]; got != "1" {
		t.Fatalf("after another queue's handle: %s in flight, want 1", got)
	}
	// The real handle still works.
	e.delete(url, h)
	if got := e.attrs(url)["ApproximateNumberOfMessagesNotVisible"]; got != "0" {
		t.Fatalf("after DeleteMessage: %s in flight, want 0", got)
	}
}
