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
// Lambda log group, a group keeps its events until it is deleted.
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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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
	known map[string]bool // groups and streams known to be recorded
}

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
	s := &Store{e: e, stream: st, log: log, known: map[string]bool{}}
	if err := e.Buckets(ctx, map[string]*jetstream.KeyValue{GroupsBucket: &s.groups, StreamsBucket: &s.streams}); err != nil {
		return nil, err
	}
	return s, nil
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

// ensure records the key in kv once (its creation time, now).
func (s *Store) ensure(ctx context.Context, kv jetstream.KeyValue, key, name string) error {
	s.mu.Lock()
	known := s.known[kv.Bucket()+"/"+key]
	s.mu.Unlock()
	if known {
		return nil
	}
	b, _ := json.Marshal(created{Name: name, CreationTime: s.e.Clock.Now().UnixMilli()})
	if _, err := kv.Create(ctx, key, b); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return err
	}
	s.mu.Lock()
	s.known[kv.Bucket()+"/"+key] = true
	s.mu.Unlock()
	return nil
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
		msg.Header.Set(headerTimestamp, strconv.FormatInt(s.e.Clock.Now().UnixMilli(), 10))
		msg.Data = []byte(m)
		if _, err := s.e.JS.PublishMsg(ctx, msg); err != nil {
			return fmt.Errorf("logs: put to %s %s: %w", group, stream, err)
		}
	}
	return nil
}

// PutLogEvent appends one event (process.LogSink); a failure is logged
// with the event, which is then lost to the log only.
func (s *Store) PutLogEvent(group, stream, message string) {
	if err := s.Put(context.Background(), group, stream, message); err != nil {
		s.log.Error("log event not stored", "err", err, "group", group, "stream", stream, "message", message)
	}
}

// Groups returns the groups whose names begin with prefix, by name.
func (s *Store) Groups(ctx context.Context, prefix string) ([]Group, error) {
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
	_, err := s.groups.Get(ctx, token(group))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return false, nil
	}
	return err == nil, err
}

// Streams returns the streams of group whose names begin with prefix, by
// name, with their first and last events' times.
func (s *Store) Streams(ctx context.Context, group, prefix string) ([]Stream, error) {
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

// Read calls fn with the events of group (of its stream when stream is
// not empty) from position from on, in order, until fn returns false or
// there are no more.
func (s *Store) Read(ctx context.Context, group, stream string, from uint64, fn func(Event) bool) error {
	filter := subjectPrefix + token(group) + ".*"
	if stream != "" {
		filter = subjectPrefix + token(group) + "." + token(stream)
	}
	if from == 0 {
		from = 1
	}
	for seq := from; ; {
		m, err := s.stream.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(filter))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("logs: read %s: %w", group, err)
		}
		name := stream
		if name == "" {
			name = untoken(m.Subject[strings.LastIndexByte(m.Subject, '.')+1:])
		}
		ev := Event{Stream: name, Timestamp: timestamp(m), IngestionTime: m.Time.UnixMilli(), Message: string(m.Data), Seq: m.Sequence}
		if !fn(ev) {
			return nil
		}
		seq = m.Sequence + 1
	}
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
	s.mu.Lock()
	for k := range s.known {
		if strings.Contains(k, "/"+g) {
			delete(s.known, k)
		}
	}
	s.mu.Unlock()
	return true, nil
}
