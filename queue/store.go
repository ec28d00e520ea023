package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// Tombstone lifetimes (JetStream per-message TTLs, wall clock: they only
// bound how long a tombstone takes space). A FIFO tombstone carries the
// deduplication ids of its messages and must outlive the five-minute
// window by the engine clock; a standard one only has to replace the
// body and state records.
const (
	goneTTL     = time.Second
	fifoGoneTTL = DeduplicationInterval + time.Minute
)

func (q *queue) bodySubject(n uint64) string  { return q.subj + "m." + strconv.FormatUint(n, 10) }
func (q *queue) stateSubject(n uint64) string { return q.subj + "s." + strconv.FormatUint(n, 10) }

// flush publishes (asynchronously, under q.mu so the publishes of one
// subject reach JetStream in order) the state of every dirty record: a
// state record, or tombstones for a record whose messages are all gone.
// The caller waits for the futures outside the lock when its call must
// be durable.
func (q *queue) flush() ([]jetstream.PubAckFuture, error) {
	if len(q.dirty) == 0 {
		return nil, nil
	}
	js := q.svc.eng.JS
	futs := make([]jetstream.PubAckFuture, 0, len(q.dirty))
	var errs error
	pub := func(m *nats.Msg) {
		f, err := js.PublishMsgAsync(m)
		if err != nil {
			errs = errors.Join(errs, err)
			return
		}
		futs = append(futs, f)
	}
	for i, rec := range q.dirty {
		q.dirty[i] = nil
		rec.dirty = false
		if rec.purged || q.deleted {
			continue
		}
		if rec.live > 0 {
			pub(&nats.Msg{Subject: q.stateSubject(rec.n), Data: encodeState(make([]byte, 0, 8+40*len(rec.msgs)), rec)})
			rec.hasState = true
			continue
		}
		var marker *nats.Msg
		if q.fifo {
			entries := make([]goneEntry, 0, len(rec.msgs))
			for _, m := range rec.msgs {
				if m.dedup != "" && !rec.moved {
					entries = append(entries, goneEntry{idx: m.idx, id: m.id, group: m.group, dedup: m.dedup, sentAt: m.sentAt})
				}
			}
			marker = tombstone(q.bodySubject(rec.n), encodeGone(nil, entries), fifoGoneTTL)
		}
		futs = append(futs, q.deleteBody(rec, marker))
		if rec.hasState {
			pub(tombstone(q.stateSubject(rec.n), nil, goneTTL))
		}
	}
	q.dirty = q.dirty[:0]
	return futs, errs
}

// closedCh is the acked channel of records read back from the stream.
var closedCh = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// deleteBody deletes the body record n from the stream (JetStream
// DeleteMsg), then publishes marker (a FIFO record's tombstone carrying
// its deduplication ids; nil for a standard queue). The future completes
// when both are stored.
//
// The trap this avoids (nats-server v2.15.2; nats-io/nats-server#8505):
// a message removed because a newer one replaced it on its subject
// (MaxMsgsPerSubject 1) leaves no trace in the store's blocks. The body
// used to be removed so, by its tombstone, which then expired (its TTL).
// After a clean stop, a restart, new writes and an unclean stop (SIGKILL,
// a crash), the store was rebuilt from its blocks, the expired tombstone
// stayed gone, and the body came back: deleted messages were received
// again (TestDeletedMessagesStayDeletedAfterAnUncleanStop). DeleteMsg
// records its removal in the blocks.
//
// A crash between the two forgets a FIFO record's deduplication ids: a
// send of one of them within the five minutes is then taken (a
// duplicate, never a loss).
//
// The caller holds q.mu. A body whose sequence is not known (its publish
// not acknowledged: it cannot have been received) is removed by a
// tombstone as before.
func (q *queue) deleteBody(rec *record, marker *nats.Msg) jetstream.PubAckFuture {
	if rec.seq == 0 {
		if marker == nil {
			marker = tombstone(q.bodySubject(rec.n), nil, goneTTL)
		}
		f, err := q.svc.eng.JS.PublishMsgAsync(marker)
		if err != nil {
			f := &deleteFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: marker}
			f.err <- err
			return f
		}
		return f
	}
	seq := rec.seq
	f := &deleteFuture{ok: make(chan *jetstream.PubAck, 1), err: make(chan error, 1), msg: marker}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), ackWait)
		defer cancel()
		if err := q.js.DeleteMsg(ctx, seq); err != nil && !strings.Contains(err.Error(), "no message found") {
			f.err <- err
			return
		}
		if marker == nil {
			f.ok <- &jetstream.PubAck{Stream: q.stream, Sequence: seq}
			return
		}
		pf, err := q.svc.eng.JS.PublishMsgAsync(marker)
		if err != nil {
			f.err <- err
			return
		}
		select {
		case a := <-pf.Ok():
			f.ok <- a
		case err := <-pf.Err():
			f.err <- err
		}
	}()
	return f
}

// deleteFuture is deleteBody's jetstream.PubAckFuture.
type deleteFuture struct {
	ok  chan *jetstream.PubAck
	err chan error
	msg *nats.Msg
}

func (f *deleteFuture) Ok() <-chan *jetstream.PubAck { return f.ok }
func (f *deleteFuture) Err() <-chan error            { return f.err }
func (f *deleteFuture) Msg() *nats.Msg               { return f.msg }

func tombstone(subject string, data []byte, ttl time.Duration) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Header.Set(goneHeader, "1")
	m.Header.Set(jetstream.MsgTTLHeader, ttl.String())
	m.Data = data
	return m
}

// cleanup drops the futures of writes nobody waits for (state written as
// a side effect, such as tombstones of expired messages). Their loss in a
// crash is repaired at the next load, which recomputes expiry.
func (q *queue) cleanup([]jetstream.PubAckFuture) {}

// ackWait bounds a wait for JetStream's acknowledgement of a queue's
// state writes (a receive, a delete, a visibility change, a redrive), on
// the wall clock. After a node dies, a stream has no leader for a few
// seconds, and a write published then is acknowledged late or never (the
// engine's publish timeout, 30 s): the caller learns of it after ackWait
// instead. A receive then delivers with a warning; a delete or a
// visibility change answers a retryable error. The write may still land;
// if it does not and the process crashes, the message comes back early:
// a duplicate within at-least-once, never a loss.
const ackWait = 5 * time.Second

// waitAcks waits for JetStream to acknowledge futs, at most ackWait.
func waitAcks(ctx context.Context, futs []jetstream.PubAckFuture) error {
	if len(futs) == 0 {
		return nil
	}
	t := time.NewTimer(ackWait)
	defer t.Stop()
	var errs error
	for _, f := range futs {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			errs = errors.Join(errs, err)
		case <-t.C:
			return fmt.Errorf("no acknowledgement from JetStream within %v (a stream leader election?)", ackWait)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return errs
}

// wake wakes every receive waiting on the queue; each looks again and,
// finding nothing, waits anew on a fresh channel and timer.
func (q *queue) wake() {
	if q.waiters > 0 {
		close(q.notify)
		q.notify = make(chan struct{})
	}
	q.armed = 0
}

// load builds a queue's index from its stream: body records, then the
// state records that follow them, minus tombstones.
func (s *Service) load(ctx context.Context, ref string) (*queue, error) {
	meta, err := s.loadMeta(ctx, ref)
	if err != nil {
		return nil, err
	}
	q := &queue{
		svc: s, name: meta.Name, id: meta.ID, fifo: meta.FIFO, arn: s.ARN(meta.Name), stream: jsName(meta.ID), subj: "sqs." + meta.ID + ".",
		meta: *meta, cfg: parseConfig(meta.Attributes, meta.FIFO),
		records: map[uint64]*record{}, groups: map[string]*group{}, dedup: map[string]*dedupEntry{},
		notify: make(chan struct{}),
	}
	newHeaps(q)
	st, err := s.eng.JS.Stream(ctx, q.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		// CreateQueue stored the metadata and stopped before the stream.
		st, err = s.eng.CreateOrUpdateStream(ctx, s.streamConfig(meta))
	}
	if err != nil {
		return nil, awserr.New(awserr.ErrInternal, "open queue %s: %v", meta.Name, err)
	}
	q.js = st
	info, err := st.Info(ctx)
	if err != nil {
		return nil, awserr.New(awserr.ErrInternal, "open queue %s: %v", meta.Name, err)
	}
	q.nextN = info.State.LastSeq + 1
	now := s.eng.Clock.Now().UnixMilli()
	var gone []goneEntry
	var gonen []uint64
	if info.State.Msgs > 0 {
		if err := s.readStream(ctx, q, &gone, &gonen); err != nil {
			return nil, awserr.New(awserr.ErrInternal, "load queue %s: %v", meta.Name, err)
		}
	}
	// Index the live messages in send order. In-flight and delayed ones
	// first, so that a FIFO group with a message in flight is blocked
	// before its visible head is considered.
	ns := make([]uint64, 0, len(q.records))
	for n := range q.records {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var live []*message
	for _, n := range ns {
		rec := q.records[n]
		for _, m := range rec.msgs {
			// A move's copy keeps the original's deduplication id, but is no
			// send of this queue: remembering it (with the move's time as
			// its send time) dropped a new send of that id after a restart.
			if q.fifo && m.dedup != "" && !rec.moved {
				q.remember(m.group, m.dedup, m.id, q.sequenceNumber(n, m.idx), m.sentAt, nil, now)
			}
			if m.st == stDeleted {
				m.payload = nil
				continue
			}
			rec.live++
			q.cachePayload(m)
			if q.fifo {
				q.addToGroup(m)
			}
			live = append(live, m)
		}
		if rec.live == 0 {
			delete(q.records, n)
			q.markDirty(rec) // tombstone it
		}
	}
	if q.fifo {
		// The queue's delay is retroactive on a FIFO queue (redelay): a
		// message never received is delayed by the current setting, from
		// its send, whatever it was sent with.
		d := q.cfg.delay.Milliseconds()
		for _, m := range live {
			if m.receiveCount == 0 && !m.rec.moved {
				m.visibleAt = m.sentAt + d
			}
		}
	}
	for _, m := range live {
		if m.visibleAt > now {
			q.activate(m, now)
		}
	}
	for _, m := range live {
		if m.visibleAt <= now {
			q.activate(m, now)
		}
	}
	for i, e := range gone {
		if q.fifo {
			q.remember(e.group, e.dedup, e.id, q.sequenceNumber(gonen[i], e.idx), e.sentAt, nil, now)
		}
	}
	q.advance(now)
	futs, _ := q.flush()
	q.cleanup(futs)
	return q, nil
}

// readStream reads every message of the queue's stream in order.
func (s *Service) readStream(ctx context.Context, q *queue, gone *[]goneEntry, gonen *[]uint64) error {
	cons, err := q.js.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
	if err != nil {
		return err
	}
	for {
		batch, err := cons.Fetch(1024, jetstream.FetchMaxWait(2*time.Second))
		if err != nil {
			return err
		}
		got := 0
		for msg := range batch.Messages() {
			got++
			md, err := msg.Metadata()
			if err != nil {
				return err
			}
			s.loadMsg(q, msg.Subject(), md.Sequence.Stream, msg.Headers(), msg.Data(), gone, gonen)
			if md.NumPending == 0 {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			return err
		}
		if got == 0 {
			return nil // nothing left (TTLs may have removed the tail)
		}
	}
}

// loadMsg applies one stored message to the index being built.
func (s *Service) loadMsg(q *queue, subject string, seq uint64, h nats.Header, data []byte, gone *[]goneEntry, gonen *[]uint64) {
	rest := strings.TrimPrefix(subject, q.subj)
	kind, num, ok := strings.Cut(rest, ".")
	n, err := strconv.ParseUint(num, 10, 64)
	if !ok || err != nil {
		s.log.Warn("queue: unexpected subject in queue stream", "queue", q.name, "subject", subject)
		return
	}
	if h.Get(goneHeader) != "" {
		if kind == "m" {
			delete(q.records, n)
		}
		if kind == "m" || kind == "d" { // d: the ids a purge kept (purgeStream)
			entries, err := decodeGone(data)
			if err == nil {
				for _, e := range entries {
					*gone = append(*gone, e)
					*gonen = append(*gonen, n)
				}
			}
		}
		return
	}
	switch kind {
	case "m":
		msgs, moved, err := decodeBody(data)
		if err != nil {
			s.log.Error("queue: unreadable body record", "queue", q.name, "record", n, "err", err)
			return
		}
		rec := &record{n: n, seq: seq, msgs: msgs, acked: closedCh, moved: moved}
		for _, m := range msgs {
			m.rec = rec
			m.st = stPending
			m.md5Body = MD5OfBody(m.payload.body)
			m.md5Attrs = MD5OfMessageAttributes(m.payload.attrs)
		}
		q.records[n] = rec
	case "s":
		rec := q.records[n]
		if rec == nil {
			return // body expired (MaxAge) or purged
		}
		if err := applyState(data, rec); err != nil {
			s.log.Error("queue: unreadable state record", "queue", q.name, "record", n, "err", err)
			return
		}
		rec.hasState = true
	}
}

// fetchPayload reads back from JetStream the payload of a message that
// was evicted from the cache: by a direct get, and when that answers "not
// found", from the stream's leader (on a replicated stream a follower that
// has not applied the body yet may answer a direct get; see
// engine.LeaderMsg).
func (q *queue) fetchPayload(ctx context.Context, m *message) (*payload, error) {
	if q.svc.readFault != nil {
		if err := q.svc.readFault(); err != nil {
			return nil, err
		}
	}
	subj := q.bodySubject(m.rec.n)
	var raw *jetstream.RawStreamMsg
	var err error = jetstream.ErrMsgNotFound
	if q.svc.staleReads == nil || !q.svc.staleReads() {
		raw, err = q.js.GetLastMsgForSubject(ctx, subj)
	}
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		raw, err = q.svc.eng.LeaderLastMsg(ctx, q.stream, subj)
	}
	if err != nil {
		return nil, err
	}
	if raw.Header.Get(goneHeader) != "" {
		return nil, fmt.Errorf("record %d is gone", m.rec.n)
	}
	msgs, _, err := decodeBody(raw.Data)
	if err != nil {
		return nil, err
	}
	if int(m.idx) >= len(msgs) {
		return nil, errBadRecord
	}
	return msgs[m.idx].payload, nil
}

// sequenceNumber is the FIFO SequenceNumber of message idx of record n:
// 20 digits, increasing in send order within the queue.
func (q *queue) sequenceNumber(n uint64, idx uint8) string {
	return fmt.Sprintf("%020d", n*16+uint64(idx))
}
