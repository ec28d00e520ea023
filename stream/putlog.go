package stream

import (
	"context"
	"errors"
	"strconv"
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
// Duplicates: LogDuplicateWindow for NewLog's streams): a second publish
// of a stored message is answered with the first one's sequence
// (PubAck.Duplicate).
//
// The trap: the window. A publish of the same id after the window has
// passed since the first was stored is stored again. resolveWithin
// stays well inside it.

// OutcomeUnknown is the ErrorCode of a PutLogRecords entry whose outcome
// is still unknown after ResolveWithin: it may or may not be stored.
// PutLogRecords only; other failures are "InternalFailure" (not stored).
const OutcomeUnknown = "OutcomeUnknown"

// ResolveWithin is how long PutLogRecords publishes a message whose
// outcome is unknown again, counted from its first publish, each attempt
// waiting logAckTimeout at most: inside LogDuplicateWindow, so that the
// last attempt is read within the window of the first one stored.
const ResolveWithin = 4 * time.Second

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

// ResolveLogRecords learns, later, the outcome of a PutLogRecords call
// with id and these entries (the same, in the same order, so that they
// make the same messages) whose entries not stored[i] were left
// OutcomeUnknown, the call made at since. For each message of those
// entries it first looks for the message's id in its shard, among the
// messages stored from a minute before since (at most maxResolveScan,
// newest first), and answers with the sequence found; a message not found
// is published again with its id, as PutLogRecords does (a copy still on
// its way, read within the duplicate window, is answered as a duplicate).
// A message whose search fails or is cut short (maxResolveScan) stays
// OutcomeUnknown and is not published: it might be stored twice. Nor is
// one published when mayPublish (if not nil) says no, asked after the
// search. A message of stored entries is neither looked for nor
// published: it
// may be older than the window, and publishing it again would store it
// again. Results: stored entries get a zero entry; the others as
// PutLogRecords'.
//
// The trap: a first publish that reaches JetStream after the look and
// after the window since the second (a message held that long in a
// client's reconnect buffer) is stored twice.
func (s *Service) ResolveLogRecords(ctx context.Context, streamName, id string, entries []PutRecordsRequestEntry, stored []bool, since time.Time, mayPublish func() bool) (*PutRecordsOutput, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return nil, err
	}
	all := make([]int, len(entries))
	for i := range all {
		all[i] = i
	}
	// PutLogRecords' ids: id.<attempt>.<message>; a log is never
	// resharded, so its one attempt is 0.
	chunks := h.chunks(entries, all, s.eng.Clock.Now().UnixMilli(), id+".0")
	out := &PutRecordsOutput{Records: make([]PutRecordsResultEntry, len(entries))}
	accept := s.acceptor(h, out)
	var left, unsure []*chunk
	for _, c := range chunks {
		if stored[c.entries[0]] {
			continue
		}
		seq, found, err := s.findMsgID(ctx, h, c.shard, c.id, since)
		switch {
		case err != nil:
			// Not looked for all the way: publishing it again could store
			// it twice, outside the window. Unknown still.
			c.unknown = "looking for it in the log: " + err.Error()
			unsure = append(unsure, c)
		case found:
			accept(c, &jetstream.PubAck{Sequence: seq, Duplicate: true})
		default:
			c.unknown = "not found in the log"
			left = append(left, c)
		}
	}
	if len(left) > 0 && mayPublish != nil && !mayPublish() {
		unsure, left = append(unsure, left...), nil
	}
	if len(left) > 0 {
		// Published again with their ids, as PutLogRecords does: a copy
		// on its way, read within the window, is a duplicate.
		s.resolve(ctx, s.eng.NextPublisherJS(), left, time.Now(), accept)
	}
	for _, c := range append(left, unsure...) {
		if c.unknown != "" {
			c.fail(out, OutcomeUnknown, c.unknown)
		}
	}
	for _, r := range out.Records {
		if r.ErrorCode != "" {
			out.FailedRecordCount++
		}
	}
	return out, nil
}

// maxResolveScan bounds how many stored messages of a shard
// ResolveLogRecords reads looking for one message id.
const maxResolveScan = 100_000

// findMsgID looks for the message with id msgID in shard sh, newest
// first, back to a minute before since (JetStream's clock may differ
// from this process's; for an embedded server it is the same clock). A
// search that reads maxResolveScan messages without getting there is an
// error: inconclusive.
func (s *Service) findMsgID(ctx context.Context, h *handle, sh int, msgID string, since time.Time) (seq uint64, found bool, err error) {
	first, last, _, err := s.msgBounds(ctx, h, sh)
	if err != nil {
		return 0, false, err
	}
	floor := since.Add(-time.Minute)
	for seq, n := last, 0; seq >= first && seq > 0; seq, n = seq-1, n+1 {
		if n == maxResolveScan {
			return 0, false, errors.New("more than " + strconv.Itoa(maxResolveScan) + " messages stored since the write")
		}
		m, err := s.msgAt(ctx, h, sh, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return 0, false, err
		}
		if m.Header.Get(jetstream.MsgIDHeader) == msgID {
			return seq, true, nil
		}
		if m.Time.Before(floor) {
			break
		}
	}
	return 0, false, nil
}

// resolve publishes the chunks whose outcome is unknown again, with
// their message ids, until JetStream answers each or ResolveWithin has
// passed since started (or ctx ends); accept takes an acknowledgement.
func (s *Service) resolve(ctx context.Context, js jetstream.JetStream, chunks []*chunk, started time.Time, accept func(*chunk, *jetstream.PubAck)) {
	within := ResolveWithin
	if w := time.Duration(s.resolveWithin.Load()); w > 0 {
		within = w
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
			wait := time.NewTimer(min(logAckTimeout, max(within-time.Since(started), 100*time.Millisecond)))
			select {
			case ack := <-f.Ok():
				s.acked(c, ack, accept)
			case err := <-f.Err():
				// Even an attempt JetStream refused leaves the outcome
				// unknown: an earlier one may have been stored. Only an
				// acknowledgement (a duplicate or not) settles it.
				c.unknown = err.Error()
			case <-wait.C:
				c.unknown = "no acknowledgement within " + logAckTimeout.String()
			case <-ctx.Done():
				c.unknown = ctx.Err().Error()
			}
			wait.Stop()
		}
	}
}

// LogDuplicateWindow is the duplicate window (jetstream.StreamConfig
// Duplicates) of NewLog's shards: how long JetStream remembers a message
// id. It must outlast ResolveWithin: a publish again is read right behind
// the first when JetStream stalled, a few seconds after it when the
// connection was lost and made again. Its cost is the server's memory,
// which grows with the messages stored within it: peak RSS of the table
// BenchmarkPutItem, 1.5 million single-change writes by 8 callers in
// about 27 s, was 500 MB without message ids, and with them 517 MB (a
// 1 s window), 576 MB (5 s), 718 MB (10 s) and 772 MB (JetStream's
// default, 2 minutes, which the run did not even fill), 2026-11-28.
const LogDuplicateWindow = 5 * time.Second

// logAckTimeout is how long PutLogRecords waits for an acknowledgement
// before it publishes the message again (AckTimeout for PutRecords): a
// publish that waited behind a stalled one is read after it, and is a
// duplicate of it, well within LogDuplicateWindow.
const logAckTimeout = time.Second

// setDuplicateWindow gives a log's shard stream LogDuplicateWindow, if
// it has another (a log created before 2026-11-28 has JetStream's
// default, 2 minutes, which costs memory; see above).
func (s *Service) setDuplicateWindow(ctx context.Context, js jetstream.Stream) {
	cfg := js.CachedInfo().Config
	if cfg.Duplicates == LogDuplicateWindow {
		return
	}
	cfg.Duplicates = LogDuplicateWindow
	if _, err := s.eng.JS.UpdateStream(ctx, cfg); err != nil {
		s.eng.Logger.Warn("log shard: set its duplicate window", "stream", cfg.Name, "err", err)
	}
}

// LoseAcks is fault injection for the tests of writers that must learn
// their outcomes (never set outside tests): while lost returns true, an
// acknowledgement JetStream sends is dropped as if lost on its way (nil:
// none); within, when positive, replaces ResolveWithin.
func (s *Service) LoseAcks(lost func() bool, within time.Duration) {
	if lost == nil {
		s.ackLost.Store(nil)
	} else {
		s.ackLost.Store(&lost)
	}
	s.resolveWithin.Store(int64(within))
}
