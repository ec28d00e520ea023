package expr

import (
	"slices"

	"github.com/aws/aws-lambda-go/events"
)

// NameType is a top-level attribute and the type of the value an update
// gives it.
type NameType struct {
	Name string
	Type string // "S", "N", "L"... as TypeName gives it
}

// StaticTypes returns, in source order, the top-level attributes a SET or
// ADD action writes whole with a value whose type is known without the
// item: a :value, arithmetic (N), list_append (L), ADD's value. DynamoDB
// checks these against the secondary indexes' key types before it reads
// the item ("Type mismatch for Index Key").
func (u *Update) StaticTypes() []NameType {
	var out []NameType
	for _, a := range u.actions {
		if len(a.path) != 1 {
			continue
		}
		var t events.DynamoDBDataType
		switch {
		case a.kind == actAdd:
			t = a.val.at(u.vals).DataType()
		case a.kind != actSet:
			continue
		case a.set.op != "":
			t = events.DataTypeNumber
		case a.set.l.val != 0:
			t = a.set.l.val.at(u.vals).DataType()
		case a.set.l.fn == "list_append":
			t = events.DataTypeList
		default:
			continue
		}
		out = append(out, NameType{Name: a.path[0].name, Type: TypeName(t)})
	}
	return out
}

// NestedNames returns the top-level names of every path the update reads
// or writes that goes further ("a" for a.b or a[0]), each once, in source
// order: DynamoDB refuses them for a secondary index's key attributes.
func (u *Update) NestedNames() []string {
	var out []string
	add := func(p path) {
		if len(p) > 1 && !slices.Contains(out, p[0].name) {
			out = append(out, p[0].name)
		}
	}
	var walk func(o *updOperand)
	walk = func(o *updOperand) {
		if o == nil {
			return
		}
		add(o.path)
		for _, a := range o.args {
			walk(a)
		}
	}
	for _, a := range u.actions {
		add(a.path)
		if a.set != nil {
			walk(a.set.l)
			walk(a.set.r)
		}
	}
	return out
}

// Projection is the projection of the paths the update writes or removes:
// UPDATED_OLD and UPDATED_NEW return these paths of the old or new item,
// nested ones in their structure ("SET m.a = :v" gives {m: {a: ...}}).
func (u *Update) Projection() *Projection {
	pr := &Projection{paths: u.paths, root: &projNode{}}
	for _, pa := range u.paths {
		n := pr.root
		for _, e := range pa {
			n = n.child(e)
		}
		n.leaf = true
	}
	return pr
}
