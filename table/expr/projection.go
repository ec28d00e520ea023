package expr

import (
	"slices"

	"github.com/aws/aws-lambda-go/events"
)

// Projection is a parsed ProjectionExpression: a comma-separated list of
// document paths (a, b.c, d[2].e, #n).
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.ProjectionExpressions.html
type Projection struct {
	paths []path
	root  *projNode
}

// projNode is one level of the projection tree: a leaf (the whole value),
// or the map keys or list indexes to keep below it.
type projNode struct {
	leaf    bool
	names   map[string]*projNode
	indexes map[int]*projNode
}

// ParseProjection parses a ProjectionExpression (GetItem, BatchGetItem,
// Query, Scan, TransactGetItems), marking the placeholders it uses in c.
// Errors are *ValidationError prefixed "Invalid ProjectionExpression: ":
// empty, syntax, undefined name, and overlapping or conflicting paths ("a,
// a.b"; "a.b, a[1]").
func ParseProjection(s string, c *Context) (*Projection, error) {
	if err := c.checkMaps(); err != nil {
		return nil, err
	}
	key := cacheKey{kind: kindProjection, text: s}
	if e, _ := cacheLookup(key, c); e != nil {
		return e.tree.(*Projection), nil // immutable: shared
	}
	p, err := newParser(s, "ProjectionExpression", c)
	if err != nil {
		return nil, err
	}
	pr := &Projection{root: &projNode{}}
	if pr.paths, err = commaList(p, p.path); err != nil {
		return nil, err
	}
	if err := p.end(); err != nil {
		return nil, err
	}
	if err := p.checkOverlap(pr.paths); err != nil {
		return nil, err
	}
	for _, pa := range pr.paths {
		n := pr.root
		for _, e := range pa {
			n = n.child(e)
		}
		n.leaf = true
	}
	cacheStore(key, p, pr)
	return pr, nil
}

func (n *projNode) child(e pathElem) *projNode {
	if e.isIndex {
		if n.indexes == nil {
			n.indexes = map[int]*projNode{}
		}
		if n.indexes[e.index] == nil {
			n.indexes[e.index] = &projNode{}
		}
		return n.indexes[e.index]
	}
	if n.names == nil {
		n.names = map[string]*projNode{}
	}
	if n.names[e.name] == nil {
		n.names[e.name] = &projNode{}
	}
	return n.names[e.name]
}

// Names returns the top-level attribute names the projection reads, each
// once, in source order.
func (p *Projection) Names() []string { return topNames(p.paths) }

// NestedNames are the top-level names of the paths that go further
// ("a" for a.b or a[0]), in the expression's order.
func (p *Projection) NestedNames() []string {
	var out []string
	for _, pa := range p.paths {
		if len(pa) > 1 && !slices.Contains(out, pa[0].name) {
			out = append(out, pa[0].name)
		}
	}
	return out
}

// Apply returns a new item with only the projected paths. Nested paths
// keep their structure: "a.b" gives {a: {b: ...}}, "l[2], l[0]" gives
// {l: [l[0], l[2]]} (elements in list order, the list compacted). Missing
// paths are left out, and so is a map or list of which nothing was kept. A
// nil item gives nil.
func (p *Projection) Apply(item Item) Item {
	if item == nil {
		return nil
	}
	out := Item{}
	for name, n := range p.root.names {
		if v, ok := item[name]; ok {
			if pv, ok := n.project(v); ok {
				out[name] = pv
			}
		}
	}
	return out
}

func (n *projNode) project(v events.DynamoDBAttributeValue) (events.DynamoDBAttributeValue, bool) {
	switch {
	case n.leaf:
		return v, true
	case n.names != nil:
		if v.DataType() != events.DataTypeMap {
			return v, false
		}
		m := map[string]events.DynamoDBAttributeValue{}
		for name, c := range n.names {
			if cv, ok := v.Map()[name]; ok {
				if pv, ok := c.project(cv); ok {
					m[name] = pv
				}
			}
		}
		return events.NewMapAttribute(m), len(m) > 0
	default:
		if v.DataType() != events.DataTypeList {
			return v, false
		}
		var l []events.DynamoDBAttributeValue
		for i, e := range v.List() {
			if c := n.indexes[i]; c != nil {
				if pv, ok := c.project(e); ok {
					l = append(l, pv)
				}
			}
		}
		return events.NewListAttribute(l), len(l) > 0
	}
}
