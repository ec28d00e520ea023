package filter

// Field paths as Event Ruler sees them (EventBridge event patterns and
// Lambda's FilterCriteria): it flattens both the pattern and the event
// into field names joined with "." ("when EventBridge compiles event
// patterns for use, it uses dot (.) as the joining character",
// eb-event-patterns.html, "Considerations when creating event
// patterns"), and through arrays: detail.items.b exists as soon as one
// element of detail.items has a b.
//
// So, for those two services (not SNS filter policies):
//
//   - a pattern key holding dots is the nested path it names:
//     {"detail":{"state.status":["running"]}} is
//     {"detail":{"state":{"status":["running"]}}} (splitDotted);
//   - an event key holding dots is found by either spelling: the event
//     {"detail":{"state.status":"running"}} matches both patterns above
//     (lookup). The trap: a pattern can no longer tell {"a.b":1} from
//     {"a":{"b":1}}, as in EventBridge;
//   - exists:false on a path matches only when no element of any array
//     along the path has a leaf value there (scope): {"items":{"b":
//     [{"exists":false}]}} does not match {"items":[{"b":1},{"c":2}]}.

import (
	"slices"
	"sort"
	"strings"
)

// splitDotted returns obj with each key holding dots ("a.b.c") rewritten
// as the nested objects it names, merged with the object's other keys
// ({"a.b":[1],"a":{"c":[2]}} becomes {"a":{"b":[1],"c":[2]}}; for a path
// given twice, the dotted spelling wins). A key with an empty segment
// ("a..b", ".a") or whose prefix is a leaf of the same object
// ({"a":[1],"a.b":[2]}) is kept as it is. obj is returned unchanged when
// no key holds a dot.
func splitDotted(obj map[string]any) map[string]any {
	var dotted []string
	for k := range obj {
		if k != "$or" && strings.Contains(k, ".") {
			dotted = append(dotted, k)
		}
	}
	if len(dotted) == 0 {
		return obj
	}
	sort.Strings(dotted)
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		if k == "$or" || !strings.Contains(k, ".") {
			out[k] = v
		}
	}
	for _, k := range dotted {
		segs := strings.Split(k, ".")
		if slices.Contains(segs, "") {
			out[k] = obj[k]
			continue
		}
		cur, ok := out, true
		for _, s := range segs[:len(segs)-1] {
			v, present := cur[s]
			if !present {
				m := map[string]any{}
				cur[s], cur = m, m
				continue
			}
			next, isMap := v.(map[string]any)
			if !isMap {
				ok = false
				break
			}
			cur = next
		}
		if !ok {
			out[k] = obj[k]
			continue
		}
		last := segs[len(segs)-1]
		cur[last] = mergePattern(cur[last], obj[k])
	}
	return out
}

// mergePattern merges the pattern value b into a: two objects merge key
// by key, anything else is b.
func mergePattern(a, b any) any {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if !aok || !bok {
		return b
	}
	for k, v := range bm {
		am[k] = mergePattern(am[k], v)
	}
	return am
}

// lookup returns the value of key k of the event object x for a pattern
// object (not a leaf) at k. With dots, the keys of x spelled "k.rest" are
// children of k too: they are returned merged into a copy of k's object
// ({"a":{"b":1},"a.c":2} gives {"b":1,"c":2} for "a"). When k holds a
// leaf or an array, the dotted keys are ignored.
func lookup(x map[string]any, k string, dots bool) (any, bool) {
	v, ok := x[k]
	if !dots {
		return v, ok
	}
	var virt map[string]any
	for key, val := range x {
		if len(key) <= len(k)+1 || key[len(k)] != '.' || key[:len(k)] != k {
			continue
		}
		if virt == nil {
			base, isMap := v.(map[string]any)
			if ok && !isMap {
				return v, ok
			}
			virt = make(map[string]any, len(base)+1)
			for bk, bv := range base {
				virt[bk] = bv
			}
		}
		virt[key[len(k)+1:]] = val
	}
	if virt != nil {
		return virt, true
	}
	return v, ok
}

// scope is where an object being matched sits: arr is the outermost array
// on the way to it (nil outside arrays) and rel the keys from arr's
// elements down to it. exists:false looks at all of arr, as Event
// Ruler's flattened event does.
type scope struct {
	arr  []any
	rel  []string
	dots bool
}

// down is the scope of the object at key under the current one.
func (sc scope) down(key string) scope {
	if sc.arr != nil {
		sc.rel = append(sc.rel[:len(sc.rel):len(sc.rel)], key)
	}
	return sc
}

// has reports whether some element of the enclosing array has a leaf
// value at key under the current object's path (false outside arrays).
func (sc scope) has(key string) bool {
	if sc.arr == nil {
		return false
	}
	return hasLeafAt(sc.arr, append(sc.rel[:len(sc.rel):len(sc.rel)], key), sc.dots)
}

// hasLeafAt reports whether v has a leaf value at path, through arrays at
// any level.
func hasLeafAt(v any, path []string, dots bool) bool {
	if len(path) == 0 {
		return hasLeafValue(v)
	}
	switch x := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			cv, ok := x[path[0]]
			return ok && hasLeafValue(cv)
		}
		cv, ok := lookup(x, path[0], dots)
		return ok && hasLeafAt(cv, path[1:], dots)
	case []any:
		for _, e := range x {
			if hasLeafAt(e, path, dots) {
				return true
			}
		}
	}
	return false
}

// matchMissing reports whether n matches a missing object (or a value
// without sub-fields) in scope sc: every field is exists:false and, inside
// an array, no element has a leaf value there.
func (n *node) matchMissing(sc scope) bool {
	if !n.absentOK {
		return false
	}
	if sc.arr == nil {
		return true
	}
	for i := range n.fields {
		fd := &n.fields[i]
		if fd.child != nil {
			if !fd.child.matchMissing(sc.down(fd.key)) {
				return false
			}
		} else if sc.has(fd.key) {
			return false
		}
	}
	for _, alts := range n.ors {
		ok := false
		for _, a := range alts {
			if a.matchMissing(sc) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}
