package expr

// Attributes returns the top-level attribute names the condition's paths
// begin with, in the order they first appear (a Query refuses a filter
// on its key attributes).
func (c *Condition) Attributes() []string { return c.attributes(false) }

// NestedAttributes are the top-level attributes the condition reads into
// (a map lookup or a list index after the name), in order of appearance.
func (c *Condition) NestedAttributes() []string { return c.attributes(true) }

func (c *Condition) attributes(nested bool) []string {
	var out []string
	add := func(o *operand) {
		for o != nil && o.size != nil {
			o = o.size
		}
		if o == nil || len(o.path) == 0 || o.path[0].isIndex || nested && len(o.path) < 2 {
			return
		}
		for _, n := range out {
			if n == o.path[0].name {
				return
			}
		}
		out = append(out, o.path[0].name)
	}
	var walk func(cond)
	walk = func(n cond) {
		switch n := n.(type) {
		case andCond:
			walk(n.l)
			walk(n.r)
		case orCond:
			walk(n.l)
			walk(n.r)
		case notCond:
			walk(n.c)
		case cmpCond:
			add(n.l)
			add(n.r)
		case betweenCond:
			add(n.v)
			add(n.lo)
			add(n.hi)
		case inCond:
			add(n.v)
			for _, o := range n.list {
				add(o)
			}
		case funcCond:
			for _, o := range n.args {
				add(o)
			}
		}
	}
	walk(c.root)
	return out
}
