package engine

import (
	"context"
	"errors"
	"time"
)

// AskEvery is how long one JetStream API request waits for its answer
// before AskAgain sends it again.
const AskEvery = 2 * time.Second

// AskWithin is how long AskAgain keeps asking when its caller's context
// has no earlier deadline: a leader election after a node's death takes
// 5 to 15 s here (3 nodes on 2 cores).
const AskWithin = 30 * time.Second

// AskAgain calls ask with a context ending AskEvery from now, and again
// while it fails with that deadline, until ctx ends or AskWithin has
// passed; it returns the last answer. Why: a JetStream API request sent
// while its stream has no leader (its leader's node was just killed) is
// never answered, not even once a new leader is elected, so the caller
// waited out the whole API timeout (30 s in a cluster) for an answer the
// new leader would have given within a second of being asked. Use it for
// requests that are safe to repeat (reads: STREAM.INFO, a message get).
func AskAgain[T any](ctx context.Context, ask func(context.Context) (T, error)) (T, error) {
	return askEvery(ctx, AskEvery, ask)
}

// ChangeAgain is AskAgain for a change that is safe to send again (a
// stream's create-or-update, an update to one configuration): each
// request waits up to ChangeEvery, as a change is a proposal the
// stream's peers must accept, slower than a read on a loaded machine. A
// change whose answer was lost may have been applied; sending it again
// applies the same configuration.
func ChangeAgain[T any](ctx context.Context, change func(context.Context) (T, error)) (T, error) {
	return askEvery(ctx, ChangeEvery, change)
}

// ChangeEvery is how long one change request of ChangeAgain waits.
const ChangeEvery = 10 * time.Second

func askEvery[T any](ctx context.Context, every time.Duration, ask func(context.Context) (T, error)) (T, error) {
	deadline := time.Now().Add(AskWithin)
	for {
		c, cancel := context.WithTimeout(ctx, every)
		v, err := ask(c)
		cancel()
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil || time.Now().After(deadline) {
			return v, err
		}
	}
}
