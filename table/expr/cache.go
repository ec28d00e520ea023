package expr

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
)

// The parse cache. Services send the same few expressions over and over
// with different values, so the Parse functions keep each successful
// parse, keyed by the expression kind and text, as a tree whose operands
// refer to the :values by position (valRef), together with what the parse
// depended on in the request:
//
//   - the #name placeholders it resolved and the names they resolved to
//     (a request whose placeholders resolve otherwise parses to another
//     tree: up to maxVariants such trees are kept per text);
//   - the :value placeholders it used;
//   - the parse-time checks on those values (operand types, attribute_type
//     names, BETWEEN bounds), in parse order.
//
// A later call with the same text and names binds its own values to the
// tree: it looks each placeholder up, runs the checks, and marks the names
// and values used in its Context exactly as a parse would. Since the text
// and names are the same, a full parse would follow the same path and
// could only fail on a missing value or a failed check; in that case (and
// on any miss) the call parses in full, so every error is the one a full
// parse gives, and errors are never cached.
//
// The cache holds at most maxCacheEntries trees and is emptied when full.

const (
	maxCacheEntries = 4096
	maxVariants     = 8
)

type exprKind uint8

const (
	kindCondition exprKind = iota
	kindFilter
	kindUpdate
	kindKeyCondition
	kindProjection
)

type cacheKey struct {
	kind exprKind
	text string
}

// cacheEntry is one cached parse; it is immutable once stored.
type cacheEntry struct {
	names  []nameBinding
	values []string // placeholder of each valRef, by position
	checks []check
	tree   any // cond, *updateTree, []keyCond or *Projection
}

var (
	cacheMu    sync.RWMutex
	cacheMap   = map[cacheKey][]*cacheEntry{}
	cacheCount int

	// cacheDisabled turns the cache off (for benchmarks of the full parse).
	cacheDisabled atomic.Bool
)

// cacheLookup returns the cached parse of key for the names in c with c's
// values bound to it, marking its names and values used in c; nil when the
// expression must be parsed in full.
func cacheLookup(key cacheKey, c *Context) (*cacheEntry, []events.DynamoDBAttributeValue) {
	if cacheDisabled.Load() {
		return nil, nil
	}
	cacheMu.RLock()
	variants := cacheMap[key]
	cacheMu.RUnlock()
	for _, e := range variants {
		if !e.namesMatch(c) {
			continue
		}
		vals, ok := e.bind(c)
		if !ok {
			return nil, nil
		}
		return e, vals
	}
	return nil, nil
}

func (e *cacheEntry) namesMatch(c *Context) bool {
	if len(e.names) == 0 {
		return true
	}
	if c == nil {
		return false
	}
	for _, b := range e.names {
		if n, ok := c.Names[b.placeholder]; !ok || n != b.name {
			return false
		}
	}
	return true
}

// bind looks up the entry's values in c and runs its checks; if all pass
// it marks the names and values used in c.
func (e *cacheEntry) bind(c *Context) ([]events.DynamoDBAttributeValue, bool) {
	var vals []events.DynamoDBAttributeValue
	if len(e.values) > 0 {
		if c == nil {
			return nil, false
		}
		vals = make([]events.DynamoDBAttributeValue, len(e.values))
		for i, ph := range e.values {
			v, ok := c.Values[ph]
			if !ok {
				return nil, false
			}
			vals[i] = v
		}
	}
	for _, ch := range e.checks {
		if ch(vals) != nil {
			return nil, false
		}
	}
	if c != nil {
		for _, b := range e.names {
			c.markName(b.placeholder)
		}
		for _, ph := range e.values {
			c.markValue(ph)
		}
	}
	return vals, true
}

// cacheStore keeps the successful parse p of key, whose result is tree.
func cacheStore(key cacheKey, p *parser, tree any) {
	if cacheDisabled.Load() {
		return
	}
	e := &cacheEntry{names: p.names, values: p.valNames, checks: p.checks, tree: tree}
	cacheMu.Lock()
	defer cacheMu.Unlock()
	if cacheCount >= maxCacheEntries {
		clear(cacheMap)
		cacheCount = 0
	}
	old := cacheMap[key]
	// A new slice: readers may hold the old one.
	variants := make([]*cacheEntry, 0, min(len(old)+1, maxVariants))
	variants = append(variants, e)
	for _, o := range old {
		if len(variants) == maxVariants || slices.Equal(o.names, e.names) {
			cacheCount--
			continue
		}
		variants = append(variants, o)
	}
	cacheMap[key] = variants
	cacheCount++
}

// resetCache empties the cache (tests).
func resetCache() {
	cacheMu.Lock()
	clear(cacheMap)
	cacheCount = 0
	cacheMu.Unlock()
}
