package queue

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// pendingAck is a publish whose acknowledgement never comes (published
// while its stream had no leader).
type pendingAck struct{}

func (pendingAck) Ok() <-chan *jetstream.PubAck { return nil }
func (pendingAck) Err() <-chan error            { return nil }
func (pendingAck) Msg() *nats.Msg               { return nil }

// A state write that JetStream never acknowledges holds its caller
// ackWait (5 s), not the engine's 30 s publish timeout: after a node dies,
// receives and deletes go on within the failover budget.
func TestAStateWriteNeverAcknowledgedHoldsItsCallerAckWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		err := waitAcks(context.Background(), []jetstream.PubAckFuture{pendingAck{}})
		if err == nil {
			t.Fatal("waitAcks returned nil for a write never acknowledged")
		}
		if waited := time.Since(start); waited != ackWait {
			t.Fatalf("waited %v, want ackWait (%v)", waited, ackWait)
		}
	})
}

// A message's write that JetStream never answers (published while the
// queue's stream had no leader) holds its sender ackWait, then answers a
// retryable error, instead of the engine's 30 s publish timeout: after a
// kill, SendMessage to the queue goes on within the failover budget.
func TestAMessageWriteNeverAcknowledgedHoldsItsSenderAckWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err, late := awaitAck(context.Background(), pendingAck{})
		if err != nil || late == nil {
			t.Fatalf("awaitAck of a write never answered = (%v, %v), want (nil, the ackWait error)", err, late)
		}
		if waited := time.Since(start); waited != ackWait {
			t.Fatalf("waited %v, want ackWait (%v)", waited, ackWait)
		}
	})
}
