package stream

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Writes whose outcome the writer must know.
//
// A publish whose acknowledgement does not come (a timeout, a connection
// lost under it) may or may not have been stored. For a Kinesis producer
// that is at-least-once: it puts again, and a duplicate is the price. A
// table's writer cannot pay it: it decides conditions on its index, and
// an index that misses a change the log holds accepts a second
// attribute_not_exists put (two INSERTs in the change stream) or
// overwrites the landed change with one computed from the image before
// it (a lost update). So a table's log is written with PutLogRecords,
// which learns the outcome: every message carries a JetStream message id
// (Nats-Msg-Id), and one whose outcome is unknown is published again
// with the same id until JetStream answers. JetStream stores a message
// id once within the stream's duplicate window (jetstream.StreamConfig
// Duplicates, 2 minutes unless set): a second publish of a stored
// message is answered with the first one's sequence (PubAck.Duplicate).
//
// The trap: the window. A publish of the same id after the window has
// passed since the first was stored is stored again. resolveWithin
// stays well inside it.

// OutcomeUnknown is the ErrorCode of a PutLogRecords entry whose outcome
// is still unknown after ResolveWithin: it may or may not be stored.
// PutLogRecords only; other failures are "InternalFailure" (not stored).
const OutcomeUnknown = "OutcomeUnknown"

// ResolveWithin is how long PutLogRecords publishes a message whose
// outcome is unknown again, counted from its first publish: half of
// JetStream's default duplicate window (2 minutes), so that the last
// attempt, however late JetStream reads it, is still within the window.
const ResolveWithin = time.Minute

// PutLogRecords is PutRecords for runnel's own logs (NewLog), whose
// writer must know each entry's outcome (see above). id names the call:
// unique for as long as the log's duplicate window, across processes
// and restarts (a nuid); a call with the id of a stored one within the
// window is answered with that call's sequence numbers and stores
// nothing. An entry with a SequenceNumber is stored, once; one with
// ErrorCode "InternalFailure" is not; one with ErrorCode OutcomeUnknown
// may be, after ResolveWithin of attempts (JetStream unreachable): the
// caller may call again with the same id, which, within the window,
// stores it at most once.
func (s *Service) PutLogRecords(ctx context.Context, streamName, id string, entries []PutRecordsRequestEntry) (*PutRecordsOutput, error) {
	return s.putRecords(ctx, streamName, entries, id)
}

// resolve publishes the chunks whose outcome is unknown again, with
// their message ids, until JetStream answers each or ResolveWithin has
// passed since started (or ctx ends); accept takes an acknowledgement.
func (s *Service) resolve(ctx context.Context, js jetstream.JetStream, chunks []*chunk, started time.Time, accept func(*chunk, *jetstream.PubAck)) {
	within := ResolveWithin
	if s.resolveWithin > 0 {
		within = s.resolveWithin
	}
	pause := 50 * time.Millisecond
	for {
		var left []*chunk
		for _, c := range chunks {
			if c.unknown != "" {
				left = append(left, c)
			}
		}
		if len(left) == 0 || time.Since(started) >= within || ctx.Err() != nil {
			return
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return
		}
		pause = min(2*pause, 2*time.Second)
		for _, c := range left {
			f, err := js.PublishMsgAsync(c.msg)
			if err != nil {
				c.unknown = err.Error()
				continue
			}
			wait := time.NewTimer(min(AckTimeout, max(within-time.Since(started), 100*time.Millisecond)))
			select {
			case ack := <-f.Ok():
				s.acked(c, ack, accept)
			case err := <-f.Err():
				// Even an attempt JetStream refused leaves the outcome
				// unknown: an earlier one may have been stored. Only an
				// acknowledgement (a duplicate or not) settles it.
				c.unknown = err.Error()
			case <-wait.C:
				c.unknown = "no acknowledgement within " + AckTimeout.String()
			case <-ctx.Done():
				c.unknown = ctx.Err().Error()
			}
			wait.Stop()
		}
	}
}
