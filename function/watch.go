package function

import (
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// watch loads the stored function configurations, published versions and
// aliases (each bucket's initial values, applied before it returns; open
// bounds that wait) and then applies those of other processes sharing the
// JetStream store (a function, version or alias created, changed or
// deleted through another runnel node) until ctx ends, so that any
// process can invoke any function, version or alias as soon as the change
// reaches the watch. A function whose handler is not registered in this
// process is logged and left out. Before, the versions and aliases were
// read once at the start: one published or created (or an alias updated
// or deleted) through another node was ResourceNotFound here, or kept its
// old routing, until a restart.
func (s *Service) watch(open, ctx context.Context) error {
	for _, b := range []struct {
		kv    jetstream.KeyValue
		apply func(jetstream.KeyValueEntry)
	}{{s.kv, s.applyStored}, {s.vkv, s.applyVersion}, {s.akv, s.applyAlias}} {
		if err := watchBucket(open, ctx, b.kv, b.apply); err != nil {
			return err
		}
	}
	return nil
}

// watchBucket applies kv's initial values before it returns (open bounds
// that wait), then its changes in the background until ctx ends.
func watchBucket(open, ctx context.Context, kv jetstream.KeyValue, apply func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx)
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
			apply(e)
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
			apply(e)
		}
	}()
	return nil
}

// seen records that this process applied revision rev of key's entry
// (a function's name; "v:<function>.<version>" for a version,
// "a:<function>.<alias>" for an alias): the watch skips older entries (its
// own writes, and a change it applied through the watch already, arrive
// later).
func (s *Service) seen(key string, rev uint64) {
	for {
		old, loaded := s.revs.LoadOrStore(key, rev)
		if !loaded || old.(uint64) >= rev || s.revs.CompareAndSwap(key, old, rev) {
			return
		}
	}
}

// newer reports whether revision rev of key's entry is newer than what
// this process wrote or applied, and records it if so.
func (s *Service) newer(key string, rev uint64) bool {
	if old, ok := s.revs.Load(key); ok && rev <= old.(uint64) {
		return false
	}
	s.seen(key, rev)
	return true
}

func (s *Service) applyStored(e jetstream.KeyValueEntry) {
	name := e.Key()
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.newer(name, e.Revision()) {
		return // older than what this process wrote or applied
	}
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

// readThrough reads from the buckets what this process misses to resolve
// name at qualifier ("" or $LATEST: the function; a number: that
// version; else the alias and the versions it routes to) when another
// process stored it and the watch has not brought it yet, and reports
// whether it applied any entry.
func (s *Service) readThrough(name, qualifier string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.mu.RLock()
	_, known := s.fns[name]
	s.mu.RUnlock()
	applied := false
	if !known {
		e, err := s.kv.Get(ctx, name)
		if err != nil {
			return false
		}
		s.applyStored(e)
		applied = true
	}
	var versions []string
	switch {
	case qualifier == "" || qualifier == Latest:
		return applied
	case versionRE.MatchString(qualifier):
		versions = []string{qualifier}
	default:
		if e, err := s.akv.Get(ctx, name+"."+qualifier); err == nil {
			s.applyAlias(e)
			applied = true
		}
		s.mu.RLock()
		if a, ok := s.aliases[name][qualifier]; ok {
			versions = append(versions, a.FunctionVersion)
			for v := range a.RoutingConfig.weights() {
				versions = append(versions, v)
			}
		}
		s.mu.RUnlock()
	}
	for _, v := range versions {
		s.mu.RLock()
		_, ok := s.versions[name][v]
		s.mu.RUnlock()
		if ok || v == Latest {
			continue
		}
		if e, err := s.vkv.Get(ctx, name+"."+v); err == nil {
			s.applyVersion(e)
			applied = true
		}
	}
	return applied
}

// applyVersion applies an entry of the versions bucket (key
// "<function>.<version>"): a version published or deleted, by this
// process or another.
func (s *Service) applyVersion(e jetstream.KeyValueEntry) {
	name, v, ok := strings.Cut(e.Key(), ".")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.newer("v:"+e.Key(), e.Revision()) {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.versions[name], v)
		return
	}
	var c Config
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		s.eng.Logger.Warn("stored function version does not decode", "function", name, "version", v, "err", err)
		return
	}
	if old, ok := s.versions[name][v]; ok && old.cfg.RevisionId == c.RevisionId && old.cfg.FunctionArn == c.FunctionArn {
		return // the same version: keep its Function (and its counters)
	}
	if s.versions[name] == nil {
		s.versions[name] = map[string]*version{}
	}
	s.versions[name][v] = &version{cfg: c}
}

// applyAlias applies an entry of the aliases bucket (key
// "<function>.<alias>"): an alias created, updated or deleted, by this
// process or another.
func (s *Service) applyAlias(e jetstream.KeyValueEntry) {
	name, alias, ok := strings.Cut(e.Key(), ".")
	if !ok {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.newer("a:"+e.Key(), e.Revision()) {
		return
	}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.aliases[name], alias)
		return
	}
	var a Alias
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		s.eng.Logger.Warn("stored function alias does not decode", "function", name, "alias", alias, "err", err)
		return
	}
	if s.aliases[name] == nil {
		s.aliases[name] = map[string]*Alias{}
	}
	s.aliases[name][alias] = &a
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
