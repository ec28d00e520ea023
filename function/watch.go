package function

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watch loads the stored function configurations (the watch's initial
// values, applied before it returns; open bounds that wait) and then
// applies those of other processes sharing the JetStream store (a
// function created, replaced or deleted through another runnel node)
// until ctx ends, so that any process can invoke any function as soon as
// the change reaches the watch. A function whose handler is not
// registered in this process is logged and left out.
func (s *Service) watch(open, ctx context.Context) error {
	w, err := s.kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	for initial := true; initial; {
		select {
		case e := <-w.Updates():
			if e == nil {
				initial = false // the end of the initial values
				break
			}
			s.applyStored(e)
		case <-open.Done():
			w.Stop()
			return open.Err()
		}
	}
	go func() {
		defer w.Stop()
		for {
			var e jetstream.KeyValueEntry
			select {
			case <-ctx.Done():
				return
			case e = <-w.Updates():
			}
			if e == nil {
				continue
			}
			s.applyStored(e)
		}
	}()
	return nil
}

// seen records that this process applied revision rev of name's
// configuration: the watch skips older entries (its own writes, and a
// change it applied through the watch already, arrive later).
func (s *Service) seen(name string, rev uint64) {
	for {
		old, loaded := s.revs.LoadOrStore(name, rev)
		if !loaded || old.(uint64) >= rev || s.revs.CompareAndSwap(name, old, rev) {
			return
		}
	}
}

func (s *Service) applyStored(e jetstream.KeyValueEntry) {
	name := e.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.revs.Load(name); ok && e.Revision() <= old.(uint64) {
		return // older than what this process wrote or applied
	}
	s.seen(name, e.Revision())
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.fns, name)
		return
	}
	var c Config
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		s.eng.Logger.Warn("stored function does not decode", "function", name, "err", err)
		return
	}
	inv, ok := s.reg.lookup(c.Handler)
	if !ok {
		s.eng.Logger.Info("stored function has no registered handler in this process", "function", c.FunctionName, "handler", c.Handler)
		delete(s.fns, name)
		return
	}
	s.fns[name] = s.build(c, inv)
}

// readThrough reads function name's configuration from the bucket when
// this process does not know it (another process created it, and the
// watch has not brought it yet), and reports whether it applied one.
func (s *Service) readThrough(name string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e, err := s.kv.Get(ctx, name)
	if err != nil {
		return false
	}
	s.applyStored(e)
	return true
}

// Close stops watching the stored configurations.
func (s *Service) Close() {
	if s.stop != nil {
		s.stop()
	}
	// The log lines the invocations queued are written before the engine
	// closes under them (a sink that writes in the background, as
	// function/logs.Store does, has Flush).
	if f, ok := s.sinks.get().(interface{ Flush(context.Context) }); ok {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		f.Flush(ctx)
		cancel()
	}
}
