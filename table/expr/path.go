package expr

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// pathElem is one step of a document path: a map key (name) or a list index.
type pathElem struct {
	name    string
	index   int
	isIndex bool
}

// path is a document path such as a.b[2].c, with #placeholders resolved.
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.Attributes.html
type path []pathElem

// String renders the path as DynamoDB does in messages: "[a, [2], c]".
func (p path) String() string {
	parts := make([]string, len(p))
	for i, e := range p {
		if e.isIndex {
			parts[i] = "[" + strconv.Itoa(e.index) + "]"
		} else {
			parts[i] = e.name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// cmpPath orders paths element by element (indexes numerically, an index
// before a name); a prefix sorts first.
func cmpPath(a, b path) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		switch {
		case x.isIndex && y.isIndex:
			if x.index != y.index {
				return x.index - y.index
			}
		case x.isIndex != y.isIndex:
			if x.isIndex {
				return -1
			}
			return 1
		case x.name != y.name:
			return strings.Compare(x.name, y.name)
		}
	}
	return len(a) - len(b)
}

// topNames returns the top-level attribute names of paths, each once, in
// source order ("a.b[1]" gives "a").
func topNames(paths []path) []string {
	var out []string
	for _, pa := range paths {
		if !slices.Contains(out, pa[0].name) {
			out = append(out, pa[0].name)
		}
	}
	return out
}

// checkOverlap refuses two paths of which one is a prefix of the other
// ("overlap") or that use the same step once as a map key and once as a
// list index ("conflict"), with DynamoDB's messages. DynamoDB looks for
// an overlap among all the pairs before it looks for a conflict.
func (p *parser) checkOverlap(paths []path) error {
	for _, conflicts := range []bool{false, true} {
		for j := range paths {
			for i := range j {
				a, b := paths[i], paths[j]
				k := 0
				for ; k < len(a) && k < len(b); k++ {
					if a[k].isIndex != b[k].isIndex {
						if conflicts {
							return p.fail("Two document paths conflict with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", a, b)
						}
						break
					}
					if a[k] != b[k] {
						break
					}
				}
				if !conflicts && (k == len(a) || k == len(b)) {
					return p.fail("Two document paths overlap with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", a, b)
				}
			}
		}
	}
	return nil
}

// get resolves p in item; ok is false when any step is missing or of the
// wrong type.
func get(item Item, p path) (events.DynamoDBAttributeValue, bool) {
	v, ok := item[p[0].name]
	if !ok {
		return v, false
	}
	for _, e := range p[1:] {
		if e.isIndex {
			if v.DataType() != events.DataTypeList || e.index >= len(v.List()) {
				return events.DynamoDBAttributeValue{}, false
			}
			v = v.List()[e.index]
		} else {
			if v.DataType() != events.DataTypeMap {
				return events.DynamoDBAttributeValue{}, false
			}
			if v, ok = v.Map()[e.name]; !ok {
				return v, false
			}
		}
	}
	return v, true
}

// set returns item, which the caller owns, with p set to nv, copying only
// the nested containers along p. A list index past the end appends. Every step but the last must
// exist with the right type, else "The document path provided in the update
// expression is invalid for update".
func set(item Item, p path, nv events.DynamoDBAttributeValue) (Item, error) {
	// item is the copy Update.Apply owns: its top level is changed in
	// place; nested containers, shared with the old item, are copied.
	out := item
	if len(p) == 1 {
		out[p[0].name] = nv
		return out, nil
	}
	child, ok := item[p[0].name]
	if !ok {
		return nil, validation(msgInvalidPath)
	}
	v, err := setIn(child, p[1:], nv)
	if err != nil {
		return nil, err
	}
	out[p[0].name] = v
	return out, nil
}

func setIn(v events.DynamoDBAttributeValue, p path, nv events.DynamoDBAttributeValue) (events.DynamoDBAttributeValue, error) {
	e := p[0]
	if e.isIndex {
		if v.DataType() != events.DataTypeList {
			return v, validation(msgInvalidPath)
		}
		l := slices.Clone(v.List())
		if len(p) == 1 {
			if e.index >= len(l) {
				l = append(l, nv)
			} else {
				l[e.index] = nv
			}
			return events.NewListAttribute(l), nil
		}
		if e.index >= len(l) {
			return v, validation(msgInvalidPath)
		}
		c, err := setIn(l[e.index], p[1:], nv)
		if err != nil {
			return v, err
		}
		l[e.index] = c
		return events.NewListAttribute(l), nil
	}
	if v.DataType() != events.DataTypeMap {
		return v, validation(msgInvalidPath)
	}
	m := maps.Clone(v.Map())
	if m == nil {
		m = map[string]events.DynamoDBAttributeValue{}
	}
	if len(p) == 1 {
		m[e.name] = nv
		return events.NewMapAttribute(m), nil
	}
	child, ok := m[e.name]
	if !ok {
		return v, validation(msgInvalidPath)
	}
	c, err := setIn(child, p[1:], nv)
	if err != nil {
		return v, err
	}
	m[e.name] = c
	return events.NewMapAttribute(m), nil
}

// parentOK reports whether p's parent exists in item as the container its
// last step needs (a map for a name, a list for an index). REMOVE and
// DELETE of a path whose parent is missing or of another type are
// refused as "The document path provided in the update expression is
// invalid for update", as SET's are; a missing last step is not.
func parentOK(item Item, p path) bool {
	if len(p) == 1 {
		return true
	}
	parent, ok := get(item, p[:len(p)-1])
	if !ok {
		return false
	}
	if p[len(p)-1].isIndex {
		return parent.DataType() == events.DataTypeList
	}
	return parent.DataType() == events.DataTypeMap
}

// remove returns item (owned by Update.Apply) without p; a missing path (or a step of
// the wrong type) leaves the item as it is. Removing a list element shifts
// the later ones down.
func remove(item Item, p path) Item {
	if _, ok := get(item, p); !ok {
		return item
	}
	out := item // owned by Update.Apply, as in set
	if len(p) == 1 {
		delete(out, p[0].name)
		return out
	}
	out[p[0].name] = removeIn(item[p[0].name], p[1:])
	return out
}

// removeIn removes p (known to exist) from the container v.
func removeIn(v events.DynamoDBAttributeValue, p path) events.DynamoDBAttributeValue {
	e := p[0]
	if e.isIndex {
		l := slices.Clone(v.List())
		if len(p) == 1 {
			return events.NewListAttribute(slices.Delete(l, e.index, e.index+1))
		}
		l[e.index] = removeIn(l[e.index], p[1:])
		return events.NewListAttribute(l)
	}
	m := maps.Clone(v.Map())
	if len(p) == 1 {
		delete(m, e.name)
	} else {
		m[e.name] = removeIn(m[e.name], p[1:])
	}
	return events.NewMapAttribute(m)
}
