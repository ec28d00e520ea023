package queue

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// FIFO deduplication: a send whose MessageDeduplicationId was sent
// within DeduplicationInterval (5 minutes, engine clock) is acknowledged
// but not stored again. "Amazon SQS continues tracking the deduplication
// ID even after the message has been received and deleted"
// (FIFO-queues-exactly-once-processing). The holder of the queues keeps
// the ids in memory (queue.dedup); the stream keeps them for a restart
// or a hand-over, in three places that the load reads back:
//
//	sqs.<id>.m.<n>  a body record (its messages' ids), or the tombstone
//	                that replaced it (the ids of its deleted messages)
//	sqs.<id>.d.<n>  the ids PurgeQueue kept: a purge empties the stream
//	                but the last five minutes' ids must survive it
//
// A move's copies (a dead-letter redrive, a move task) are not sends of
// the queue: their ids are never remembered.

// dedupEntry remembers a FIFO deduplication id for five minutes.
type dedupEntry struct {
	key    string // dedupKey(group, dedup) under the scope of when it was set
	group  string
	dedup  string
	id     string
	seq    string
	sentAt int64
	rec    *record // the record storing the first send; nil if loaded
}

// dedupKey is the key of a deduplication id in queue.dedup: the id alone
// (DeduplicationScope queue), or the group and the id (messageGroup).
func (q *queue) dedupKey(group, dedup string) string {
	if q.cfg.groupScope {
		return strconv.Itoa(len(group)) + ":" + group + dedup
	}
	return dedup
}

// remember records a deduplication id sent at sentAt, unless its five
// minutes are over.
func (q *queue) remember(group, dedup, id, seq string, sentAt int64, rec *record, now int64) {
	if sentAt+DeduplicationInterval.Milliseconds() <= now {
		return
	}
	key := q.dedupKey(group, dedup)
	if e := q.dedup[key]; e != nil && e.sentAt >= sentAt {
		return
	}
	e := &dedupEntry{key: key, group: group, dedup: dedup, id: id, seq: seq, sentAt: sentAt, rec: rec}
	q.dedup[key] = e
	q.dedupFIFO = append(q.dedupFIFO, e)
}

// pruneDedup forgets deduplication ids older than five minutes. Entries
// are pruned in the order they were remembered; lookups check the age
// themselves.
func (q *queue) pruneDedup(now int64) {
	w := DeduplicationInterval.Milliseconds()
	i := 0
	for i < len(q.dedupFIFO) && q.dedupFIFO[i].sentAt+w <= now {
		e := q.dedupFIFO[i]
		if q.dedup[e.key] == e {
			delete(q.dedup, e.key)
		}
		q.dedupFIFO[i] = nil
		i++
	}
	q.dedupFIFO = q.dedupFIFO[i:]
}

// rekeyDedup keys the remembered ids anew after DeduplicationScope was
// set (SetQueueAttributes; a set to the same scope changes nothing). Before, the keys kept the old scope's
// form and a lookup used the new one: after a change either way, a
// resend in the same group with the same id, a duplicate under both
// scopes, was stored and delivered again. From messageGroup to queue,
// ids that were distinct in two groups become one key: the later send
// is kept. What the stream keeps carries the group and the id apart, so
// a load keys them by the scope it reads (durable across a restart).
// Under q.mu.
func (q *queue) rekeyDedup() {
	old := q.dedup
	q.dedup = make(map[string]*dedupEntry, len(old))
	for _, e := range old {
		e.key = q.dedupKey(e.group, e.dedup)
		if cur := q.dedup[e.key]; cur == nil || cur.sentAt < e.sentAt {
			q.dedup[e.key] = e
		}
	}
	// An entry no longer in the map (replaced before, or just now) gets
	// a key that can't be any id's, so pruneDedup leaves the map alone.
	for _, e := range q.dedupFIFO {
		if q.dedup[e.key] != e {
			e.key = "\x00"
		}
	}
}

func (q *queue) dedupSubject(n uint64) string { return q.subj + "d." + strconv.FormatUint(n, 10) }

// purgeStream empties the queue's stream for PurgeQueue. On a FIFO queue
// the deduplication ids of the last five minutes survive it: they are
// first written as tombstones on d.<n> (n: the record of the first send,
// so that a resend answers its SequenceNumber), and the purge removes
// only what came before them (JetStream purge up to a sequence). Before,
// the whole stream was purged, the tombstones carrying the ids with it:
// the holder still dropped a resend, but after a restart or a hand-over
// the id was forgotten and a resend within the five minutes was stored
// and delivered. A failure leaves the stream as it was (the purge is not
// done, and its error is retryable). Under q.mu.
func (q *queue) purgeStream(ctx context.Context, now int64) error {
	if !q.fifo {
		return q.js.Purge(ctx)
	}
	q.pruneDedup(now)
	byN := map[uint64][]goneEntry{}
	var order []uint64
	for _, e := range q.dedupFIFO {
		if q.dedup[e.key] != e || e.sentAt+DeduplicationInterval.Milliseconds() <= now {
			continue
		}
		v, err := strconv.ParseUint(e.seq, 10, 64)
		if err != nil {
			continue
		}
		n := v / 16
		if _, ok := byN[n]; !ok {
			order = append(order, n)
		}
		byN[n] = append(byN[n], goneEntry{idx: uint8(v % 16), id: e.id, group: e.group, dedup: e.dedup, sentAt: e.sentAt})
	}
	if len(order) == 0 {
		return q.js.Purge(ctx)
	}
	futs := make([]jetstream.PubAckFuture, 0, len(order))
	for _, n := range order {
		f, err := q.svc.eng.JS.PublishMsgAsync(tombstone(q.dedupSubject(n), encodeGone(nil, byN[n]), fifoGoneTTL))
		if err != nil {
			return err
		}
		futs = append(futs, f)
	}
	t := time.NewTimer(ackWait)
	defer t.Stop()
	first := uint64(0)
	for _, f := range futs {
		select {
		case a := <-f.Ok():
			if first == 0 || a.Sequence < first {
				first = a.Sequence
			}
		case err := <-f.Err():
			return err
		case <-t.C:
			return fmt.Errorf("no acknowledgement from JetStream within %v (a stream leader election?)", ackWait)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return q.js.Purge(ctx, jetstream.WithPurgeSequence(first))
}
