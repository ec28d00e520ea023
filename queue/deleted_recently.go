package queue

// A deleted queue's name is refused for a minute (QueueDeletedRecently):
// DeleteQueue writes a marker per name in the bucket deletedBucket, on the
// engine clock, so the rule holds across restarts and on every process
// sharing the engine; CreateQueue reads it (EnsureQueue does not).

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// deletedBucket holds a deletedMarker per deleted queue name.
const deletedBucket = "runnel_queues_deleted"

// DeletedQueueWait is how long after DeleteQueue a CreateQueue of the same
// name is refused with QueueDeletedRecently (API_DeleteQueue: "you must
// wait at least 60 seconds before creating a queue with the same name").
const DeletedQueueWait = 60 * time.Second

// deletedMarker is when a queue name was last deleted (Unix ms, engine
// clock).
type deletedMarker struct {
	At int64 `json:"at"`
}

// checkDeletedRecently returns QueueDeletedRecently if DeleteQueue deleted
// a queue named name less than DeletedQueueWait ago.
func (s *Service) checkDeletedRecently(ctx context.Context, name string) error {
	e, err := s.deleted.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil
	}
	if err != nil {
		return awserr.New(awserr.ErrInternal, "create queue %s: %v", name, err)
	}
	var m deletedMarker
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil // not a marker this version wrote: no wait to enforce
	}
	if wait := time.UnixMilli(m.At).Add(DeletedQueueWait).Sub(s.eng.Clock.Now()); wait > 0 {
		return awserr.New(awserr.ErrQueueDeletedRecently, "You must wait 60 seconds after deleting a queue before you can create another queue with the same name: %s was deleted %s ago (%s left).",
			name, (DeletedQueueWait - wait).Round(time.Millisecond), wait.Round(time.Millisecond))
	}
	return nil
}
