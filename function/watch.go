package function

import (
	"context"
	"encoding/json"
	"errors"
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
// reaches the watch. Each function or version change goes through the
// stored hook first (OnStored: awsapi builds there the pool of a process
// function from its stored code); a function whose handler is then not
// registered in this process is logged and left out. Before, the versions and aliases were
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
	s.applyStoredEntry(context.Background(), e, false)
}

// applyStoredEntry applies an entry of the functions bucket: when it is
// newer than what this process wrote or applied (or, with force, when it
// is the newest), it calls the stored hook (OnStored) outside s.mu, then
// rebuilds $LATEST with the handler registered under its Handler, unless
// a later entry was applied meanwhile. It returns the hook's error.
func (s *Service) applyStoredEntry(ctx context.Context, e jetstream.KeyValueEntry, force bool) error {
	name, rev := e.Key(), e.Revision()
	s.mu.Lock()
	if !s.newer(name, rev) && !(force && s.isCurrent(name, rev)) {
		s.mu.Unlock()
		s.awaitApplying(name)
		return nil // older than what this process wrote or applied
	}
	defer s.applying(name)()
	change := StoredChange{current: func() bool { return s.isCurrent(name, rev) }}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.fns, name)
		// As DeleteFunction: its reservation goes back to the pool.
		delete(s.lims, name)
		s.pool.resize(s.unreservedConcurrency(Config{}), false)
		s.mu.Unlock()
		change.Config, change.Deleted = Config{FunctionName: name}, true
		return s.callHook(ctx, change)
	}
	var c Config
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		s.mu.Unlock()
		s.eng.Logger.Warn("stored function does not decode", "function", name, "err", err)
		return nil
	}
	s.mu.Unlock()
	change.Config = c
	err := s.callHook(ctx, change)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isCurrent(name, rev) {
		return err // a later entry was applied while the hook ran
	}
	inv, ok := s.reg.lookup(c.Handler)
	if !ok {
		s.eng.Logger.Info("stored function has no registered handler in this process", "function", c.FunctionName, "handler", c.Handler)
		delete(s.fns, name)
		return err
	}
	s.fns[name] = s.build(c, inv)
	return err
}

// applying records, with s.mu held, that an entry of key is being applied
// (its hook may take a while: awsapi's builds a pool), and returns the
// function that records its end. A read-through of the same key waits
// for it (awaitApplying) instead of finding the function missing.
func (s *Service) applying(key string) (end func()) {
	ch := make(chan struct{})
	s.pending.Store(key, ch)
	return func() {
		s.pending.CompareAndDelete(key, ch)
		close(ch)
	}
}

// awaitApplying waits until no entry of key is being applied.
func (s *Service) awaitApplying(key string) {
	if ch, ok := s.pending.Load(key); ok {
		<-ch.(chan struct{})
	}
}

// isCurrent reports whether rev is the newest revision of key's entry this
// process wrote or applied.
func (s *Service) isCurrent(key string, rev uint64) bool {
	v, ok := s.revs.Load(key)
	return ok && v.(uint64) == rev
}

// StoredChange is a function's stored configuration ($LATEST's, or a
// published version's when Config.Version is set) that the service
// applies from its buckets: written by another process sharing the
// JetStream store, read at a Resync, or read through at a lookup.
type StoredChange struct {
	// Config is the stored configuration; when Deleted, only its
	// FunctionName (and Version) are set.
	Config Config
	// Deleted: the function (or version) was deleted.
	Deleted bool
	current func() bool
}

// Current reports whether the change is still the newest the service has
// applied or written for its function (or version): false once a later
// one (this process's own update, or another process's) has been.
func (c StoredChange) Current() bool { return c.current == nil || c.current() }

// StoredHook is called with each StoredChange before the service looks
// the configuration's Handler up in its registry, outside the service's
// lock, one change at a time per bucket. It may register (or replace) the
// handler of c.Config.Handler in the service's registry: the service then
// builds the function with it. Awsapi's hook builds (or rebuilds) there
// the pool of a process function from its stored code, so that a
// function created or changed through another node runs its own code on
// this one. An error is logged (the watch) or returned (Resync); the
// service then uses whatever handler is registered. The hook must not
// call the Service's methods that read functions (they may wait for it).
type StoredHook func(ctx context.Context, c StoredChange) error

// hookRef is an installed StoredHook (compared by pointer at removal).
type hookRef struct{ fn StoredHook }

// OnStored installs hook (replacing any other) and returns the function
// that removes it again (a no-op once another hook replaced it).
func (s *Service) OnStored(hook StoredHook) (remove func()) {
	ref := &hookRef{fn: hook}
	s.hook.Store(ref)
	return func() { s.hook.CompareAndSwap(ref, nil) }
}

func (s *Service) callHook(ctx context.Context, c StoredChange) error {
	ref := s.hook.Load()
	if ref == nil {
		return nil
	}
	err := ref.fn(ctx, c)
	if err != nil {
		s.eng.Logger.Warn("stored function: hook failed", "function", c.Config.FunctionName, "version", c.Config.Version, "err", err)
	}
	return err
}

// Resync applies again every stored function and published version, as
// the watch applies a change (the hook first, then the handler registered
// under its Handler), without writing anything: awsapi calls it when it
// installs its hook, to start the process functions stored before. The
// configurations (and RevisionIds) stay as stored. It returns the errors
// of the hook and of reading the buckets, joined.
func (s *Service) Resync(ctx context.Context) error {
	var errs []error
	for _, b := range []struct {
		kv    jetstream.KeyValue
		apply func(context.Context, jetstream.KeyValueEntry, bool) error
	}{{s.kv, s.applyStoredEntry}, {s.vkv, s.applyVersionEntry}} {
		keys, err := b.kv.Keys(ctx)
		if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
			errs = append(errs, err)
			continue
		}
		for _, k := range keys {
			e, err := b.kv.Get(ctx, k)
			if err != nil {
				if !errors.Is(err, jetstream.ErrKeyNotFound) {
					errs = append(errs, err)
				}
				continue
			}
			errs = append(errs, b.apply(ctx, e, true))
		}
	}
	return errors.Join(errs...)
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
	s.applyVersionEntry(context.Background(), e, false)
}

// applyVersionEntry is applyVersion, calling the stored hook (OnStored)
// outside s.mu first; force (Resync) applies the newest entry again and
// forgets the version's Function, built again at its next lookup.
func (s *Service) applyVersionEntry(ctx context.Context, e jetstream.KeyValueEntry, force bool) error {
	name, v, ok := strings.Cut(e.Key(), ".")
	if !ok {
		return nil
	}
	key, rev := "v:"+e.Key(), e.Revision()
	s.mu.Lock()
	if !s.newer(key, rev) && !(force && s.isCurrent(key, rev)) {
		s.mu.Unlock()
		s.awaitApplying(key)
		return nil
	}
	defer s.applying(key)()
	change := StoredChange{current: func() bool { return s.isCurrent(key, rev) }}
	if e.Operation() != jetstream.KeyValuePut {
		delete(s.versions[name], v)
		s.mu.Unlock()
		change.Config, change.Deleted = Config{FunctionName: name, Version: v}, true
		return s.callHook(ctx, change)
	}
	var c Config
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		s.mu.Unlock()
		s.eng.Logger.Warn("stored function version does not decode", "function", name, "version", v, "err", err)
		return nil
	}
	s.mu.Unlock()
	change.Config = c
	err := s.callHook(ctx, change)
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.isCurrent(key, rev) {
		return err
	}
	if old, ok := s.versions[name][v]; ok && !force && old.cfg.RevisionId == c.RevisionId && old.cfg.FunctionArn == c.FunctionArn {
		return err // the same version: keep its Function (and its counters)
	}
	if s.versions[name] == nil {
		s.versions[name] = map[string]*version{}
	}
	s.versions[name][v] = &version{cfg: c}
	return err
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
