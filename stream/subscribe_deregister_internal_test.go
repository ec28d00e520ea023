package stream

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// TestASubscriptionRacingADeregistrationDoesNotOutliveIt:
// DeregisterStreamConsumer ends the consumer's subscriptions
// (subscribe.go: "DeregisterStreamConsumer deletes the leases: the
// subscriptions end with ResourceNotFoundException"). A SubscribeToShard
// whose lease was taken just before the deregistration deleted the
// consumer's leases, but whose watch of it started after, never saw the
// deletion: it streamed to the deregistered consumer for its 5 minutes.
// Here the deregistration runs, whole, exactly between the lease's take
// and its watch (Service.hook): the subscription is refused.
func TestASubscriptionRacingADeregistrationDoesNotOutliveIt(t *testing.T) {
	var s *Service
	var arn string
	deregistered := false
	s = newHookedService(t, func(step string) {
		if step == "subscription lease taken" && !deregistered {
			deregistered = true
			if err := s.DeregisterStreamConsumer(context.Background(), ConsumerRef{ConsumerARN: arn}); err != nil {
				t.Errorf("DeregisterStreamConsumer: %v", err)
			}
		}
	})
	ctx := t.Context()
	if _, err := s.CreateStream(ctx, CreateStreamInput{StreamName: "s", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	c, err := s.RegisterStreamConsumer(ctx, "s", "c", nil)
	if err != nil {
		t.Fatal(err)
	}
	arn = c.ConsumerARN
	s.eng.Clock.(interface{ Advance(d time.Duration) }).Advance(ConsumerStatusDelay)
	sub, err := s.SubscribeToShard(ctx, arn, ShardID(0), StartingPosition{Type: TrimHorizon})
	if !deregistered {
		t.Fatal("the hook did not run")
	}
	if err == nil {
		sub.Close()
		t.Fatal("SubscribeToShard succeeded for a consumer deregistered while it took its lease; it would stream to it for 5 minutes")
	}
	if !errors.Is(err, awserr.ErrResourceInUse) && !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("SubscribeToShard = %v; want ResourceInUseException or ResourceNotFoundException", err)
	}
}
