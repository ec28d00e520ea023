// Package logs stores functions' logs as CloudWatch Logs models them: log
// groups (/aws/lambda/<function>) holding log streams (one per execution
// environment) of events (a timestamp and a message, one line).
//
// Events live in one JetStream stream, RUNNEL_LOGS, on the subject
// logs.<group>.<stream> (names in unpadded base64url, so any name makes
// one token); the event's timestamp is in the header Runnel-Timestamp
// (Unix ms, the engine clock), its ingestion time is the message's. The
// groups and streams, with their creation times, are in the KV buckets
// runnel_log_groups and runnel_log_streams. Nothing expires: like a
// Lambda log group, a group keeps its events until it is deleted. Each
// process remembers the groups and streams it has recorded, and forgets a
// group and its streams when it is deleted by any process (a watch of
// runnel_log_groups): its next event creates them again.
package logs

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/runnel-dev/runnel/engine"
)

const (
	// StreamName is the JetStream stream holding every log event.
	StreamName = "RUNNEL_LOGS"
	// GroupsBucket and StreamsBucket are the KV buckets of the groups and
	// of the log streams.
	GroupsBucket  = "runnel_log_groups"
	StreamsBucket = "runnel_log_streams"

	headerTimestamp = "Runnel-Timestamp"
	subjectPrefix   = "logs."
)

// Store is the log store of one runnel instance. Safe for concurrent use.
type Store struct {
	e       *engine.Engine
	stream  jetstream.Stream
	groups  jetstream.KeyValue
	streams jetstream.KeyValue
	log     *slog.Logger

	mu    sync.Mutex
	known map[string]bool // groups and streams known to be recorded (knownKey)
	wg    sync.WaitGroup  // the watch of the groups (forget)

	// queue holds the events of PutLogEvent for the writer goroutine;
	// queuedN counts the events PutLogEvent took, settledN those written,
	// failed or dropped (so a read waits only for the events before it).
	queue    chan queued
	queuedN  atomic.Int64
	settledN atomic.Int64
	dropped  atomic.Int64
	gate     chan struct{} // tests: the writer waits for it before each write (nil: none)
}

// queued is an event of PutLogEvent waiting for the writer.
type queued struct {
	group, stream, message string
	ts                     int64 // Unix ms, the engine clock at PutLogEvent
}

// queueSize bounds the events waiting for the writer (PutLogEvent).
const queueSize = 16384

// settleWait bounds how long a read of the store waits for the events
// queued before it to be written.
const settleWait = 5 * time.Second

// Open opens (creating them if needed) the stream and buckets of the logs.
func Open(ctx context.Context, e *engine.Engine, log *slog.Logger) (*Store, error) {
	if log == nil {
		log = e.Logger
	}
	st, err := e.EnsureStream(ctx, jetstream.StreamConfig{
		Name: StreamName, Subjects: []string{subjectPrefix + ">"},
		Storage: jetstream.FileStorage, Replicas: e.Replicas(), AllowDirect: true,
	})
	if err != nil {
		return nil, fmt.Errorf("logs: open stream %s: %w", StreamName, err)
	}
	s := &Store{e: e, stream: st, log: log, known: map[string]bool{}, queue: make(chan queued, queueSize)}
	if err := e.Buckets(ctx, map[string]*jetstream.KeyValue{GroupsBucket: &s.groups, StreamsBucket: &s.streams}); err != nil {
		return nil, err
	}
	// Until the engine's connection closes (which ends the watch).
	if err := engine.Watch(context.WithoutCancel(ctx), &s.wg, s.groups, s.forget, jetstream.UpdatesOnly()); err != nil {
		return nil, fmt.Errorf("logs: watch %s: %w", GroupsBucket, err)
	}
	go s.write()
	return s, nil
}

// write stores the events of PutLogEvent in order, one at a time, for
// the life of the process.
func (s *Store) write() {
	for q := range s.queue {
		if s.gate != nil {
			<-s.gate
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := s.put(ctx, q.group, q.stream, q.ts, q.message); err != nil {
			s.log.Error("log event not stored", "err", err, "group", q.group, "stream", q.stream, "message", q.message)
		}
		cancel()
		s.settledN.Add(1)
	}
}

// Flush waits until every event PutLogEvent took so far is written (or
// failed, or dropped), or until ctx ends: at close, before the engine
// closes under the writer.
func (s *Store) Flush(ctx context.Context) {
	target := s.queuedN.Load()
	for s.settledN.Load() < target && ctx.Err() == nil {
		time.Sleep(5 * time.Millisecond)
	}
}

// settle waits until the events PutLogEvent took before it are written,
// at most settleWait, so that a read in this process sees them
// (CloudWatch Logs itself is only eventually consistent); events taken
// after it started are not waited for.
func (s *Store) settle(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, settleWait)
	defer cancel()
	s.Flush(ctx)
}

func token(name string) string { return base64.RawURLEncoding.EncodeToString([]byte(name)) }

func untoken(t string) string {
	b, err := base64.RawURLEncoding.DecodeString(t)
	if err != nil {
		return t
	}
	return string(b)
}

// Group is a log group.
type Group struct {
	Name string
	// CreationTime is in Unix milliseconds.
	CreationTime int64
}

// Stream is a log stream, with the times of its first and last events.
type Stream struct {
	Name                                    string
	CreationTime                            int64
	FirstEventTimestamp, LastEventTimestamp int64
	LastIngestionTime                       int64
}

// Event is one log event.
type Event struct {
	Stream string
	// Timestamp and IngestionTime are in Unix milliseconds.
	Timestamp, IngestionTime int64
	Message                  string
	// Seq is the event's position in the store: later events have larger
	// ones.
	Seq uint64
}

type created struct {
	Name         string
	CreationTime int64
}

// knownKey is the key of known for key of kv.
func knownKey(kv jetstream.KeyValue, key string) string { return kv.Bucket() + "/" + key }

// ensure records the key in kv once (its creation time, now).
func (s *Store) ensure(ctx context.Context, kv jetstream.KeyValue, key, name string) error {
	s.mu.Lock()
	known := s.known[knownKey(kv, key)]
	s.mu.Unlock()
	if known {
		return nil
	}
	b, _ := json.Marshal(created{Name: name, CreationTime: s.e.Clock.Now().UnixMilli()})
	if _, err := kv.Create(ctx, key, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	s.mu.Lock()
	s.known[knownKey(kv, key)] = true
	s.mu.Unlock()
	return nil
}

// forget drops from known the group of a deleted entry of the groups
// bucket, and its streams, whichever process deleted it: the next event
// this process writes to the group creates it again (and the stream), as
// Lambda does when an environment starts after its log group was
// deleted. (Before, only the deleting process forgot: functions running
// on another node kept writing events under a group that no longer
// existed, which no call listed or read.)
func (s *Store) forget(e jetstream.KeyValueEntry) {
	if e.Operation() == jetstream.KeyValuePut {
		return
	}
	s.forgetGroup(e.Key())
}

// forgetGroup drops group g (its token) and its streams from known.
func (s *Store) forgetGroup(g string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.known, knownKey(s.groups, g))
	prefix := knownKey(s.streams, g+".")
	for k := range s.known {
		if strings.HasPrefix(k, prefix) {
			delete(s.known, k)
		}
	}
}

// CreateGroup creates a log group; false if it existed.
func (s *Store) CreateGroup(ctx context.Context, group string) (bool, error) {
	b, _ := json.Marshal(created{Name: group, CreationTime: s.e.Clock.Now().UnixMilli()})
	if _, err := s.groups.Create(ctx, token(group), b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// Put appends messages to the stream of group (both created if needed),
// stamped now by the engine clock, in order.
func (s *Store) Put(ctx context.Context, group, stream string, messages ...string) error {
	return s.put(ctx, group, stream, 0, messages...)
}

// put is Put with the events' timestamp ts (Unix ms; 0: now).
func (s *Store) put(ctx context.Context, group, stream string, ts int64, messages ...string) error {
	g, st := token(group), token(stream)
	if err := s.ensure(ctx, s.groups, g, group); err != nil {
		return fmt.Errorf("logs: group %s: %w", group, err)
	}
	if err := s.ensure(ctx, s.streams, g+"."+st, stream); err != nil {
		return fmt.Errorf("logs: stream %s: %w", stream, err)
	}
	subj := subjectPrefix + g + "." + st
	for _, m := range messages {
		msg := nats.NewMsg(subj)
		at := ts
		if at == 0 {
			at = s.e.Clock.Now().UnixMilli()
		}
		msg.Header.Set(headerTimestamp, strconv.FormatInt(at, 10))
		msg.Data = []byte(m)
		if _, err := s.e.JS.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("logs: put to %s %s: %w", group, stream, err)
		}
	}
	return nil
}

// PutLogEvent appends one event (function.LogSink), stamped now, without
// waiting for the store: a writer goroutine stores the events in order.
// An invocation that wrote its START, END and REPORT lines synchronously
// waited up to 30 s for each while the logs' stream had no leader (a node
// killed: the survivors' batches stalled until it came back). A failed
// write is logged with the event, which is then lost to the log only; an
// event that finds the queue full (queueSize, the store unreachable for a
// long time) is dropped, counted (Dropped) and logged the same way.
func (s *Store) PutLogEvent(group, stream, message string) {
	s.queuedN.Add(1)
	select {
	case s.queue <- queued{group: group, stream: stream, message: message, ts: s.e.Clock.Now().UnixMilli()}:
	default:
		s.settledN.Add(1)
		s.dropped.Add(1)
		s.log.Error("log event dropped: the log store is behind", "queued", queueSize, "group", group, "stream", stream, "message", message)
	}
}

// Dropped counts the events PutLogEvent dropped because its queue was
// full.
func (s *Store) Dropped() int64 { return s.dropped.Load() }

// Groups returns the groups whose names begin with prefix, by name.
func (s *Store) Groups(ctx context.Context, prefix string) ([]Group, error) {
	s.settle(ctx)
	keys, err := s.groups.ListKeys(ctx)
	if err != nil {
		return nil, err
	}
	var out []Group
	for k := range keys.Keys() {
		var c created
		if e, err := s.groups.Get(ctx, k); err == nil && json.Unmarshal(e.Value(), &c) == nil && strings.HasPrefix(c.Name, prefix) {
			out = append(out, Group(c))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// GroupExists reports whether group exists.
func (s *Store) GroupExists(ctx context.Context, group string) (bool, error) {
	s.settle(ctx)
	_, err := s.groups.Get(ctx, token(group))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// StreamExists reports whether stream of group exists.
func (s *Store) StreamExists(ctx context.Context, group, stream string) (bool, error) {
	s.settle(ctx)
	_, err := s.streams.Get(ctx, token(group)+"."+token(stream))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Streams returns the streams of group whose names begin with prefix, by
// name, with their first and last events' times.
func (s *Store) Streams(ctx context.Context, group, prefix string) ([]Stream, error) {
	s.settle(ctx)
	g := token(group)
	keys, err := s.streams.ListKeysFiltered(ctx, g+".*")
	if err != nil {
		return nil, err
	}
	var out []Stream
	for k := range keys.Keys() {
		var c created
		e, err := s.streams.Get(ctx, k)
		if err != nil || json.Unmarshal(e.Value(), &c) != nil || !strings.HasPrefix(c.Name, prefix) {
			continue
		}
		st := Stream{Name: c.Name, CreationTime: c.CreationTime}
		subj := subjectPrefix + k
		if first, err := s.stream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subj)); err == nil {
			st.FirstEventTimestamp = timestamp(first)
		}
		if last, err := s.stream.GetLastMsgForSubject(ctx, subj); err == nil {
			st.LastEventTimestamp, st.LastIngestionTime = timestamp(last), last.Time.UnixMilli()
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func timestamp(m *jetstream.RawStreamMsg) int64 {
	if ts, err := strconv.ParseInt(m.Header.Get(headerTimestamp), 10, 64); err == nil {
		return ts
	}
	return m.Time.UnixMilli()
}

// readBatch is the most events, and readBatchBytes the most bytes, one
// batched direct get of Read and ReadBack returns.
const (
	readBatch      = 1000
	readBatchBytes = 1 << 20
)

// filter is the subject of group's events (of its stream when stream is
// not empty).
func filter(group, stream string) string {
	if stream != "" {
		return subjectPrefix + token(group) + "." + token(stream)
	}
	return subjectPrefix + token(group) + ".*"
}

// event is m as an Event (of stream, or of the stream its subject names
// when stream is empty).
func event(m *jetstream.RawStreamMsg, stream string) Event {
	if stream == "" {
		stream = untoken(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
	}
	return Event{Stream: stream, Timestamp: timestamp(m), IngestionTime: m.Time.UnixMilli(), Message: string(m.Data), Seq: m.Sequence}
}

// scan calls fn with the messages on subject filter at positions from
// (at least 1) up to before (0: no bound), in order, until fn returns
// false or there are no more. It reads them in batched direct gets
// (readBatch messages, readBatchBytes bytes): one round trip per batch
// rather than one per event, as Read used to do (20,000 events took
// 360 ms).
func (s *Store) scan(ctx context.Context, filter string, from, before uint64, fn func(*jetstream.RawStreamMsg) bool) error {
	for seq := max(from, 1); before == 0 || seq < before; {
		msgs, err := jetstreamext.GetBatch(ctx, s.e.JS, StreamName, readBatch,
			jetstreamext.GetBatchSeq(seq), jetstreamext.GetBatchSubject(filter), jetstreamext.GetBatchMaxBytes(readBatchBytes))
		if err != nil {
			return err
		}
		got := 0
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				break
			}
			if err != nil {
				return err
			}
			if before != 0 && m.Sequence >= before {
				return nil
			}
			got++
			if !fn(m) {
				return nil
			}
			seq = m.Sequence + 1
		}
		if got == 0 {
			return nil
		}
	}
	return nil
}

// Read calls fn with the events of group (of its stream when stream is
// not empty) from position from on, in order, until fn returns false or
// there are no more.
func (s *Store) Read(ctx context.Context, group, stream string, from uint64, fn func(Event) bool) error {
	s.settle(ctx)
	err := s.scan(ctx, filter(group, stream), from, 0, func(m *jetstream.RawStreamMsg) bool { return fn(event(m, stream)) })
	if err != nil {
		return fmt.Errorf("logs: read %s: %w", group, err)
	}
	return nil
}

// ReadBack returns, in order, the last n events of stream of group before
// position before (0: the end) that keep accepts. It reads back from the
// end in growing spans of positions, so that the newest events of a long
// stream cost what they are, not the whole history (GetLogEvents
// without startFromHead).
func (s *Store) ReadBack(ctx context.Context, group, stream string, before uint64, n int, keep func(Event) bool) ([]Event, error) {
	s.settle(ctx)
	f := filter(group, stream)
	if before == 0 {
		last, err := s.stream.GetLastMsgForSubject(ctx, f)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("logs: read %s: %w", group, err)
		}
		before = last.Sequence + 1
	}
	var out []Event
	span := uint64(max(n, 16)) * 2
	for hi := before; hi > 1 && len(out) < n; span *= 4 {
		lo := uint64(1)
		if hi > span {
			lo = hi - span
		}
		var got []Event
		err := s.scan(ctx, f, lo, hi, func(m *jetstream.RawStreamMsg) bool {
			if ev := event(m, stream); keep(ev) {
				got = append(got, ev)
			}
			return true
		})
		if err != nil {
			return nil, fmt.Errorf("logs: read %s: %w", group, err)
		}
		out = append(got, out...)
		hi = lo
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, nil
}

// DeleteGroup deletes a group, its streams and their events; false if it
// did not exist.
func (s *Store) DeleteGroup(ctx context.Context, group string) (bool, error) {
	ok, err := s.GroupExists(ctx, group)
	if err != nil || !ok {
		return false, err
	}
	g := token(group)
	if err := s.stream.Purge(ctx, jetstream.WithPurgeSubject(subjectPrefix+g+".>")); err != nil {
		return false, err
	}
	if keys, err := s.streams.ListKeysFiltered(ctx, g+".*"); err == nil {
		for k := range keys.Keys() {
			s.streams.Delete(ctx, k)
		}
	}
	if err := s.groups.Delete(ctx, g); err != nil {
		return false, err
	}
	s.forgetGroup(g) // at once here; other processes by their watch (forget)
	return true, nil
}
