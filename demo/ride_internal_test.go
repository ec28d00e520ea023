package demo

import (
	"context"
	"errors"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// The producer rides through retryable errors (a JetStream leader
// election answers ServiceException for a few seconds) and stops at the
// first error that is not retryable.
func TestTheProducerRidesThroughRetryableErrorsOnly(t *testing.T) {
	calls := 0
	flaky := func(ctx context.Context, e []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
		calls++
		if calls <= 2 {
			return nil, awserr.New(awserr.ErrService, "shard info: context deadline exceeded")
		}
		return make([]stream.PutRecordsResultEntry, len(e)), nil
	}
	out, err := putRiding(context.Background(), Config{}, flaky, make([]stream.PutRecordsRequestEntry, 3))
	if err != nil || len(out) != 3 || calls != 3 {
		t.Fatalf("after two retryable failures: %d results, %v, %d calls; want 3 results on the third call", len(out), err, calls)
	}
	calls = 0
	bad := func(ctx context.Context, e []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
		calls++
		return nil, awserr.New(awserr.ErrValidation, "bad input")
	}
	if _, err := putRiding(context.Background(), Config{}, bad, nil); !errors.Is(err, awserr.ErrValidation) || calls != 1 {
		t.Fatalf("a non-retryable error: %v after %d calls; want it at once", err, calls)
	}
}
