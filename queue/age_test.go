package queue_test

import (
	"testing"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

func TestApproximateAgeOfOldestMessage(t *testing.T) {
	e := newEnv(t)
	s, clock, ctx := e.svc, e.clock, e.ctx
	url, err := s.CreateQueue(ctx, "aged", nil)
	if err != nil {
		t.Fatal(err)
	}
	if age, _ := s.ApproximateAgeOfOldestMessage(ctx, url); age != 0 {
		t.Fatalf("empty queue: age %v", age)
	}
	s.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: "first"})
	clock.Advance(90 * time.Second)
	s.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: "second"})
	clock.Advance(10 * time.Second)
	if age, _ := s.ApproximateAgeOfOldestMessage(ctx, url); age != 100*time.Second {
		t.Fatalf("age %v, want 100s (the first message)", age)
	}
	one := 1
	ms, _ := s.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 1, WaitTimeSeconds: new(int), VisibilityTimeout: &one})
	s.DeleteMessage(ctx, url, ms[0].ReceiptHandle)
	if age, _ := s.ApproximateAgeOfOldestMessage(ctx, url); age != 10*time.Second {
		t.Fatalf("age after deleting the first %v, want 10s", age)
	}
}
