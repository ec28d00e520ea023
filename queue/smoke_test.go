package queue_test

import (
	"context"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
)

func TestSmoke(t *testing.T) {
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	t0 := time.Now()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	t.Logf("start %v", time.Since(t0))
	s, err := queue.New(ctx, rn.Engine)
	if err != nil {
		t.Fatal(err)
	}
	url, err := s.CreateQueue(ctx, "q1", nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: "Test message."})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%+v", out)
	msgs, err := s.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{AttributeNames: []string{"All"}})
	if err != nil || len(msgs) != 1 {
		t.Fatal(err, msgs)
	}
	t.Logf("%+v", msgs[0])
	if err := s.DeleteMessage(ctx, url, msgs[0].ReceiptHandle); err != nil {
		t.Fatal(err)
	}
	a, err := s.GetQueueAttributes(ctx, url, []string{"All"})
	t.Logf("%v %v", a, err)
}
