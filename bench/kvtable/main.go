// Command kvtable measures one candidate design of issue 12: a table's
// items kept as a JetStream key-value bucket (a subject per item key),
// the engine embedded and on file storage, as runnel runs it.
//
//	go run ./bench/kvtable --items 2000000
//
// The phases are package phase's. Here a put is an async publish to the
// bucket's subject (up to the client's 4,000 in flight), a conditional
// update is a Get and an Update on the revision read (the server's
// expected-last-subject-sequence check), the reopen stops and starts the
// embedded engine, and the scan is one ordered consumer over the
// bucket's stream without acks (history 1: each item's latest image). The
// other candidate is bench/kvtable/pebble; the choice is in
// docs/design.md ("Tables: where the items live").
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/bench/kvtable/phase"
	"github.com/runnel-dev/runnel/engine"
)

func main() {
	phase.Main("kvtable", func(dir string) (phase.Store, error) {
		s := &store{ctx: context.Background(), dir: dir}
		return s, s.open()
	})
}

const bucket = "kvtable"

type store struct {
	ctx context.Context
	dir string
	e   *engine.Engine
	kv  jetstream.KeyValue
}

func (s *store) open() error {
	e, err := engine.Open(s.ctx, engine.Config{DataDir: s.dir, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return err
	}
	kv, err := e.EnsureBucket(s.ctx, jetstream.KeyValueConfig{Bucket: bucket, History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		e.Close()
		return err
	}
	s.e, s.kv = e, kv
	return nil
}

func (s *store) Put(key string, value []byte) error {
	_, err := s.e.JS.PublishAsync("$KV."+bucket+"."+key, value)
	for errors.Is(err, jetstream.ErrTooManyStalledMsgs) {
		// The server is behind: let the acks in flight come back.
		<-s.e.JS.PublishAsyncComplete()
		_, err = s.e.JS.PublishAsync("$KV."+bucket+"."+key, value)
	}
	return err
}

func (s *store) Flush() error {
	select {
	case <-s.e.JS.PublishAsyncComplete():
		return nil
	case <-time.After(5 * time.Minute):
		return errors.New("acks not complete after 5 minutes")
	}
}

func (s *store) Get(key string) error {
	_, err := s.kv.Get(s.ctx, key)
	return err
}

func (s *store) Update(key string, value []byte) error {
	for {
		en, err := s.kv.Get(s.ctx, key)
		if err != nil {
			return err
		}
		if _, err = s.kv.Update(s.ctx, key, value, en.Revision()); err == nil {
			return nil
		}
		// Another caller updated the key since the Get: read again.
		var apiErr *jetstream.APIError
		if !errors.Is(err, jetstream.ErrKeyExists) && !(errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence) {
			return err
		}
	}
}

func (s *store) Reopen() error {
	s.e.Close()
	return s.open()
}

func (s *store) Close() error {
	s.e.Close()
	return nil
}

func (s *store) Scan(n *atomic.Int64) error {
	info, err := s.e.JS.Stream(s.ctx, "KV_"+bucket)
	if err != nil {
		return err
	}
	want := int64(info.CachedInfo().State.Msgs)
	oc, err := s.e.JS.OrderedConsumer(s.ctx, "KV_"+bucket, jetstream.OrderedConsumerConfig{})
	if err != nil {
		return err
	}
	cc, err := oc.Consume(func(jetstream.Msg) { n.Add(1) })
	if err != nil {
		return err
	}
	defer cc.Stop()
	for start := time.Now(); n.Load() < want; time.Sleep(20 * time.Millisecond) {
		if time.Since(start) > 10*time.Minute {
			return fmt.Errorf("read %d of %d in 10 minutes", n.Load(), want)
		}
	}
	return nil
}
