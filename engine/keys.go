package engine

import (
	"context"
	"slices"
	"strings"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// nameKeys is a key-value bucket whose keys are AWS resource names. A
// name that is not a NATS key (a stream or table name may begin or end
// with '.', or hold "..", which Kinesis and DynamoDB allow) is stored
// with each '.' as "=2E" (one token), and handed back as it was given:
// every method takes names and gives names. Keys, ListKeys and
// ListKeysFiltered list names; Get, GetRevision, History, Watch,
// WatchAll and WatchFiltered hand out entries whose Key() is the name.
// No AWS name the buckets hold has a '=', so a key with "=2E" is always
// an escaped one, and every other key is stored unchanged.
//
// A filter (Watch, WatchFiltered, ListKeysFiltered) is a NATS subject
// pattern over names ('.' separates tokens, "*" is one token, ">" one or
// more, at the end), whose tokens may be empty as a name's may: ".ab.>"
// selects ".ab.x". A wildcard matches non-empty tokens only, so "a.>"
// selects neither "a." nor "a..b", and "*" not ".a"; ">" alone selects
// every name (see keyFilters).
//
// Before (to 2026-11-28) only the methods taking one key escaped it: the
// watchers and listers handed out the escaped key ("default/tick=2E" for
// "default/tick."), so a service's in-memory copy of a bucket held such
// a resource twice, and a filter built from such a name was refused
// ("nats: invalid key").
//
// On a replicated bucket (replicas > 1) Get reads from the stream's
// leader (leaderGet): a read through one node of what was written
// through another sees the write.
type nameKeys struct {
	jetstream.KeyValue
	leader *Engine // nil: a direct get
	bucket string
}

const escapedDot = "=2E"

// escapeKey is the bucket key of name.
func escapeKey(name string) string {
	if name != "" && (name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..")) {
		return strings.ReplaceAll(name, ".", escapedDot)
	}
	return name
}

// unescapeKey is the name of a bucket key.
func unescapeKey(key string) string { return strings.ReplaceAll(key, escapedDot, ".") }

func (kv nameKeys) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if kv.leader != nil {
		return nameOf(kv.leader.leaderGet(ctx, kv.bucket, escapeKey(key)))
	}
	return nameOf(kv.KeyValue.Get(ctx, escapeKey(key)))
}

func (kv nameKeys) GetRevision(ctx context.Context, key string, revision uint64) (jetstream.KeyValueEntry, error) {
	return nameOf(kv.KeyValue.GetRevision(ctx, escapeKey(key), revision))
}

func (kv nameKeys) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return kv.KeyValue.Put(ctx, escapeKey(key), value)
}

func (kv nameKeys) PutString(ctx context.Context, key string, value string) (uint64, error) {
	return kv.KeyValue.PutString(ctx, escapeKey(key), value)
}

func (kv nameKeys) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return kv.KeyValue.Create(ctx, escapeKey(key), value, opts...)
}

func (kv nameKeys) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	return kv.KeyValue.Update(ctx, escapeKey(key), value, revision)
}

func (kv nameKeys) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return kv.KeyValue.Delete(ctx, escapeKey(key), opts...)
}

func (kv nameKeys) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return kv.KeyValue.Purge(ctx, escapeKey(key), opts...)
}

func (kv nameKeys) History(ctx context.Context, key string, opts ...jetstream.WatchOpt) ([]jetstream.KeyValueEntry, error) {
	es, err := kv.KeyValue.History(ctx, escapeKey(key), opts...)
	for i, e := range es {
		es[i] = named(e)
	}
	return es, err
}

func (kv nameKeys) Keys(ctx context.Context, opts ...jetstream.WatchOpt) ([]string, error) {
	keys, err := kv.KeyValue.Keys(ctx, opts...)
	for i, k := range keys {
		keys[i] = unescapeKey(k)
	}
	slices.Sort(keys) // by name, as KeyValue.Keys sorts keys
	return keys, err
}

// Watch follows the keys that keys (a filter over names) selects; the
// entries carry names.
func (kv nameKeys) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	return kv.WatchFiltered(ctx, []string{keys}, opts...)
}

// WatchAll follows every key; the entries carry names.
func (kv nameKeys) WatchAll(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w, err := kv.KeyValue.WatchAll(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return newNameWatcher(ctx, w, nil), nil
}

// WatchFiltered follows the keys that any of keys (filters over names)
// selects; none: every key. The entries carry names.
func (kv nameKeys) WatchFiltered(ctx context.Context, keys []string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	if len(keys) == 0 {
		return kv.WatchAll(ctx, opts...)
	}
	server, match := keyFilters(keys)
	w, err := kv.KeyValue.WatchFiltered(ctx, server, opts...)
	if err != nil {
		return nil, err
	}
	return newNameWatcher(ctx, w, match), nil
}

// ListKeys lists the names of every key.
func (kv nameKeys) ListKeys(ctx context.Context, opts ...jetstream.WatchOpt) (jetstream.KeyLister, error) {
	l, err := kv.KeyValue.ListKeys(ctx, opts...)
	if err != nil {
		return nil, err
	}
	return newNameLister(ctx, l, nil), nil
}

// ListKeysFiltered lists the names that any of filters selects; none:
// every name.
func (kv nameKeys) ListKeysFiltered(ctx context.Context, filters ...string) (jetstream.KeyLister, error) {
	if len(filters) == 0 {
		return kv.ListKeys(ctx)
	}
	server, match := keyFilters(filters)
	l, err := kv.KeyValue.ListKeysFiltered(ctx, server...)
	if err != nil {
		return nil, err
	}
	return newNameLister(ctx, l, match), nil
}

// keyFilters turns filters over names into the filters sent to the
// bucket, and match, which tells whether a name the bucket sent is one
// the filters select (nil: all are). A filter without wildcards is a
// name, sent as its key. ">" selects every key. Another pattern whose
// tokens are all non-empty is a NATS filter as it is: the names it
// selects have no empty token, so are stored unescaped, and of the
// escaped keys (each a single token) it selects none, but for "*", which
// is matched here. A pattern with an empty token (".ab.>", "a..*")
// selects names with an empty token only, every one stored escaped as a
// single token: it is sent as "*" and matched here. "*" takes the place
// of every other single-token filter (NATS refuses overlapping ones).
func keyFilters(filters []string) (server []string, match func(name string) bool) {
	star := false
	for _, f := range filters {
		switch {
		case f == ">":
			return []string{">"}, nil
		case f == "*" || wildcard(f) && !validTokens(f):
			star = true
		default:
			if k := escapeKey(f); !slices.Contains(server, k) {
				server = append(server, k)
			}
		}
	}
	if !star {
		return server, nil
	}
	server = slices.DeleteFunc(server, func(k string) bool { return !strings.Contains(k, ".") })
	return append(server, "*"), func(name string) bool {
		for _, f := range filters {
			if nameMatches(name, f) {
				return true
			}
		}
		return false
	}
}

// wildcard reports whether filter has a "*" or ">" token.
func wildcard(filter string) bool {
	for t := range strings.SplitSeq(filter, ".") {
		if t == "*" || t == ">" {
			return true
		}
	}
	return false
}

// validTokens reports whether every token of s is non-empty.
func validTokens(s string) bool {
	return s != "" && s[0] != '.' && s[len(s)-1] != '.' && !strings.Contains(s, "..")
}

// nameMatches reports whether filter selects name, token by token: "*"
// is one non-empty token, ">" (last) one or more non-empty ones, any
// other token itself; ">" alone selects every name.
func nameMatches(name, filter string) bool {
	if filter == ">" {
		return true
	}
	n, f := strings.Split(name, "."), strings.Split(filter, ".")
	for i, ft := range f {
		switch {
		case ft == ">" && i == len(f)-1:
			if len(n) <= i {
				return false
			}
			for _, t := range n[i:] {
				if t == "" {
					return false
				}
			}
			return true
		case i >= len(n):
			return false
		case ft == "*":
			if n[i] == "" {
				return false
			}
		case ft != n[i]:
			return false
		}
	}
	return len(n) == len(f)
}

// namedEntry is a bucket entry whose Key is the name, not the key.
type namedEntry struct {
	jetstream.KeyValueEntry
	name string
}

func (e namedEntry) Key() string { return e.name }

// named is e carrying its name (e itself when the key is the name; nil
// for nil).
func named(e jetstream.KeyValueEntry) jetstream.KeyValueEntry {
	if e == nil {
		return nil
	}
	if n := unescapeKey(e.Key()); n != e.Key() {
		return namedEntry{KeyValueEntry: e, name: n}
	}
	return e
}

// nameOf is named for the results of a get.
func nameOf(e jetstream.KeyValueEntry, err error) (jetstream.KeyValueEntry, error) {
	return named(e), err
}

// nameWatcher hands on a bucket watcher's entries carrying names, those
// match selects (nil: all), and the nil that ends the initial values. Its
// channel closes when the inner one does, on Stop, or when ctx ends.
type nameWatcher struct {
	inner     jetstream.KeyWatcher
	out       chan jetstream.KeyValueEntry
	stop      chan struct{}
	once      sync.Once
	stopInner func() error // inner.Stop, once
}

func newNameWatcher(ctx context.Context, inner jetstream.KeyWatcher, match func(string) bool) *nameWatcher {
	w := &nameWatcher{inner: inner, out: make(chan jetstream.KeyValueEntry, 64), stop: make(chan struct{}), stopInner: sync.OnceValue(inner.Stop)}
	go func() {
		defer func() {
			close(w.out)
			w.stopInner()
			// The inner watcher blocks on a full channel: let it end.
			for range w.inner.Updates() {
			}
		}()
		for {
			var e jetstream.KeyValueEntry
			var ok bool
			select {
			case e, ok = <-w.inner.Updates():
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
			if !ok {
				return
			}
			if e != nil {
				if e = named(e); match != nil && !match(e.Key()) {
					continue
				}
			}
			select {
			case w.out <- e:
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return w
}

func (w *nameWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.out }

func (w *nameWatcher) Stop() error {
	w.once.Do(func() { close(w.stop) })
	return w.stopInner()
}

// nameLister hands on a bucket lister's keys as names, those match
// selects (nil: all).
type nameLister struct {
	inner     jetstream.KeyLister
	out       chan string
	stop      chan struct{}
	once      sync.Once
	stopInner func() error // inner.Stop, once
}

func newNameLister(ctx context.Context, inner jetstream.KeyLister, match func(string) bool) *nameLister {
	l := &nameLister{inner: inner, out: make(chan string, 64), stop: make(chan struct{}), stopInner: sync.OnceValue(inner.Stop)}
	go func() {
		defer func() {
			close(l.out)
			l.stopInner()
			for range l.inner.Keys() {
			}
		}()
		for k := range l.inner.Keys() {
			if k = unescapeKey(k); match != nil && !match(k) {
				continue
			}
			select {
			case l.out <- k:
			case <-l.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	return l
}

func (l *nameLister) Keys() <-chan string { return l.out }

func (l *nameLister) Stop() error {
	l.once.Do(func() { close(l.stop) })
	return l.stopInner()
}
