package expr

import (
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// Update is a parsed UpdateExpression.
//
// Grammar (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.UpdateExpressions.html):
//
//	update  = clause+                 each of SET, REMOVE, ADD, DELETE at most once, any order
//	SET     path = value [, ...]      value = operand | operand + operand | operand - operand
//	                                  operand = path | :value | if_not_exists(path, operand)
//	                                          | list_append(operand, operand)
//	REMOVE  path [, ...]
//	ADD     path :value [, ...]       :value a number or a set
//	DELETE  path :value [, ...]       :value a set
//
// Keywords are case-insensitive; function names are not. No two actions may
// name overlapping paths (a and a.b, or a[1] twice).
type Update struct {
	*updateTree // shared by the cached parses of the same expression
	vals        []events.DynamoDBAttributeValue
}

type updateTree struct {
	actions []action
	paths   []path   // action paths in source order
	top     []string // topNames(paths), for Paths
}

type actionKind int

const (
	actSet actionKind = iota
	actRemove
	actAdd
	actDelete
)

var clauseNames = map[string]actionKind{"SET": actSet, "REMOVE": actRemove, "ADD": actAdd, "DELETE": actDelete}

// action is one SET, REMOVE, ADD or DELETE action.
type action struct {
	kind actionKind
	path path
	set  *setValue // SET
	val  valRef    // ADD, DELETE
}

// setValue is the right side of a SET action: l, or l op r.
type setValue struct {
	l, r *updOperand
	op   string // "", "+" or "-"
}

// updOperand is a path, a :value, or a call of if_not_exists/list_append.
type updOperand struct {
	path path
	val  valRef
	fn   string
	args []*updOperand
}

// ParseUpdate parses an UpdateExpression (UpdateItem, TransactWriteItems
// Update), marking the placeholders it uses in c.
//
// Errors are *ValidationError prefixed "Invalid UpdateExpression: ": an
// empty expression, a syntax error, an undefined placeholder, a repeated
// clause (`The "SET" section can only be used once in an update
// expression;`), overlapping paths ("Two document paths overlap with each
// other; must remove or rewrite one of these paths; path one: [a], path
// two: [a, b]") or conflicting ones ("Two document paths conflict ..."), an
// unknown or misplaced function, and constant operands of the wrong type
// ("Incorrect operand type for operator or function; operator: ADD, operand
// type: STRING, typeSet: ALLOWED_FOR_ADD_OPERAND").
func ParseUpdate(s string, c *Context) (*Update, error) {
	if err := c.checkMaps(); err != nil {
		return nil, err
	}
	key := cacheKey{kind: kindUpdate, text: s}
	if e, vals := cacheLookup(key, c); e != nil {
		return &Update{updateTree: e.tree.(*updateTree), vals: vals}, nil
	}
	p, err := newParser(s, "UpdateExpression", c)
	if err != nil {
		return nil, err
	}
	p.deferring = true
	u := &updateTree{}
	seen := map[actionKind]bool{}
	for p.peek().kind != tEOF {
		t := p.peek()
		kind, ok := clauseNames[strings.ToUpper(t.text)]
		if t.kind != tIdent || !ok {
			return nil, p.syntaxErr()
		}
		if seen[kind] {
			if err := p.soft(rankSection, p.fail("The %q section can only be used once in an update expression;", strings.ToUpper(t.text))); err != nil {
				return nil, err
			}
		}
		seen[kind] = true
		p.next()
		actions, err := commaList(p, func() (action, error) { return p.updateAction(kind) })
		if err != nil {
			return nil, err
		}
		for _, a := range actions {
			u.actions = append(u.actions, a)
			u.paths = append(u.paths, a.path)
		}
	}
	if err := p.soft(rankOverlap, p.checkOverlap(u.paths)); err != nil {
		return nil, err
	}
	if err := p.firstDeferred(); err != nil {
		return nil, err
	}
	u.top = topNames(u.paths)
	cacheStore(key, p, u)
	return &Update{updateTree: u, vals: p.vals}, nil
}

// clauseWord reports whether the current token is SET, REMOVE, ADD or
// DELETE, which cannot name an attribute in an update expression
// ("set a=set" is a syntax error).
func (p *parser) clauseWord() bool {
	t := p.peek()
	_, ok := clauseNames[strings.ToUpper(t.text)]
	return t.kind == tIdent && ok
}

func (p *parser) updateAction(kind actionKind) (action, error) {
	if p.clauseWord() {
		return action{}, p.syntaxErr()
	}
	pa, err := p.path()
	if err != nil {
		return action{}, err
	}
	a := action{kind: kind, path: pa}
	switch kind {
	case actSet:
		if err := p.expectPunct("="); err != nil {
			return a, err
		}
		a.set, err = p.setValue()
		return a, err
	case actAdd, actDelete:
		if p.peek().kind != tValue {
			return a, p.syntaxErr()
		}
		r, _, err := p.value()
		if err != nil {
			return a, err
		}
		a.val = r
		label := p.label
		if err := p.rankedCheck(rankAddDelete, func(vs valList) error {
			t := r.at(vs).DataType()
			if kind == actAdd && t != events.DataTypeNumber && !isSet(t) {
				return failIn(label, "Incorrect operand type for operator or function; operator: ADD, operand type: %s, typeSet: ALLOWED_FOR_ADD_OPERAND", longTypeName(t))
			}
			if kind == actDelete && !isSet(t) {
				return failIn(label, "Incorrect operand type for operator or function; operator: DELETE, operand type: %s, typeSet: ALLOWED_FOR_DELETE_OPERAND", longTypeName(t))
			}
			return nil
		}); err != nil {
			return a, err
		}
	}
	return a, nil
}

func (p *parser) setValue() (*setValue, error) {
	var l *updOperand
	if p.isPunct("(") { // "SET a = ((b) + (:v))", "SET a = (b) + :v"
		in, err := parenthesized(p, p.setValue)
		if err != nil {
			return nil, err
		}
		if in.op != "" {
			return in, nil
		}
		l = in.l
	} else {
		var err error
		if l, err = p.updOperand(); err != nil {
			return nil, err
		}
	}
	var err error
	sv := &setValue{l: l}
	if p.isPunct("+") || p.isPunct("-") {
		sv.op = p.next().text
		if sv.r, err = p.updOperand(); err != nil {
			return nil, err
		}
		for _, o := range []*updOperand{sv.l, sv.r} {
			if r := o.val; r != 0 {
				label, op := p.label, sv.op
				if err := p.check(func(vs valList) error {
					if t := r.at(vs).DataType(); t != events.DataTypeNumber {
						return failIn(label, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s", op, TypeName(t))
					}
					return nil
				}); err != nil {
					return nil, err
				}
			}
		}
	}
	return sv, nil
}

func (p *parser) updOperand() (*updOperand, error) {
	t := p.peek()
	switch {
	case p.isPunct("("): // "SET a = (:v)"
		return parenthesized(p, p.updOperand)
	case t.kind == tValue:
		r, _, err := p.value()
		if err != nil {
			return nil, err
		}
		return &updOperand{val: r}, nil
	case p.isCall():
		return p.updFunction()
	case p.clauseWord():
		return nil, p.syntaxErr()
	case t.kind == tIdent || t.kind == tName:
		pa, err := p.path()
		if err != nil {
			return nil, err
		}
		return &updOperand{path: pa}, nil
	}
	return nil, p.syntaxErr()
}

func (p *parser) updFunction() (*updOperand, error) {
	name := p.peek().text
	var err error
	switch name {
	case "if_not_exists", "list_append":
	case "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains", "size":
		err = p.soft(rankFunction, p.fail("The function is not allowed in an update expression; function: %s", name))
	default:
		err = p.soft(rankFunction, p.fail("Invalid function name; function: %s", name))
	}
	if err != nil {
		return nil, err
	}
	p.next() // name
	args, err := parenList(p, p.updOperand)
	if err != nil {
		return nil, err
	}
	if name != "if_not_exists" && name != "list_append" { // refused above (deferred)
		return &updOperand{fn: name, args: args}, nil
	}
	if len(args) != 2 {
		if err := p.soft(rankOperands, p.fail("Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", name, len(args))); err != nil {
			return nil, err
		}
		return &updOperand{fn: name, args: args}, nil
	}
	if name == "if_not_exists" && args[0].path == nil {
		if err := p.soft(rankOperands, p.fail("Operator or function requires a document path; operator or function: if_not_exists")); err != nil {
			return nil, err
		}
	}
	if name == "list_append" {
		for _, a := range args {
			if r := a.val; r != 0 {
				label := p.label
				if err := p.check(func(vs valList) error {
					if t := r.at(vs).DataType(); t != events.DataTypeList {
						return failIn(label, "Incorrect operand type for operator or function; operator or function: list_append, operand type: %s", TypeName(t))
					}
					return nil
				}); err != nil {
					return nil, err
				}
			}
		}
	}
	return &updOperand{fn: name, args: args}, nil
}

// Paths returns the top-level attribute names the update writes or
// removes, each once, in source order ("a.b[1]" gives "a"). The caller uses
// it to refuse updates of key attributes ("Cannot update attribute pk.
// This attribute is part of the key"); UPDATED_OLD and UPDATED_NEW use
// [Update.Projection]. The slice is shared by every parse of the same
// expression: read it, do not modify it.
func (u *Update) Paths() []string { return u.top }

// Apply returns the item after the update; old is not modified (the new
// item shares unchanged values with it). A nil old is a missing item: the
// update creates the attributes it sets (the caller adds the key).
//
// All SET operands are read from old, so "SET a = b, b = a" swaps.
// REMOVE of a missing path does nothing (a missing or mistyped parent is
// "invalid for update"); REMOVE of several elements of one
// list removes the elements at their positions in old. ADD of a number to a
// missing attribute stores the number; ADD to a set is a union; DELETE from
// a set is a difference, and an emptied set is removed (DynamoDB has no
// empty sets). Number results are exact and canonical ("0.1" added ten
// times is "1").
//
// Errors (*ValidationError): "The provided expression refers to an
// attribute that does not exist in the item" (a SET operand path is
// missing), "An operand in the update expression has an incorrect data
// type" (arithmetic on non-numbers, list_append of non-lists, ADD or DELETE
// on an attribute of another type), "The document path provided in the
// update expression is invalid for update" (a parent of the path is
// missing or not a map/list), and the number range errors of [ParseNumber].
func (u *Update) Apply(old Item) (Item, error) {
	// Evaluate every SET value against old before any change.
	values := make([]events.DynamoDBAttributeValue, len(u.actions))
	for i, a := range u.actions {
		if a.kind != actSet {
			continue
		}
		v, err := a.set.eval(old, u.vals)
		if err != nil {
			return nil, err
		}
		values[i] = v
	}
	// One copy of the item's top level, changed in place by every action
	// (set and remove copy only the nested containers they change).
	item := make(Item, len(old)+len(u.actions))
	maps.Copy(item, old)
	// SET and then ADD/DELETE apply in path order, not source order: "SET
	// l[4] = :x, l[2] = :y" on a two-element list appends :y, then :x
	// (as DynamoDB does; paths never overlap).
	order := make([]int, len(u.actions))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmpPath(u.actions[i].path, u.actions[j].path) })
	var err error
	for _, i := range order {
		if a := u.actions[i]; a.kind == actSet {
			if item, err = set(item, a.path, values[i]); err != nil {
				return nil, err
			}
		}
	}
	var removes []path
	for _, a := range u.actions {
		if a.kind == actRemove {
			removes = append(removes, a.path)
		}
	}
	// Later list positions first, so earlier positions still name the old elements.
	slices.SortFunc(removes, func(a, b path) int { return cmpPath(b, a) })
	for _, pa := range removes {
		if !parentOK(item, pa) {
			return nil, validation(msgInvalidPath)
		}
		item = remove(item, pa)
	}
	for _, i := range order {
		switch a := u.actions[i]; a.kind {
		case actAdd:
			item, err = applyAdd(item, a.path, a.val.at(u.vals))
		case actDelete:
			item, err = applyDelete(item, a.path, a.val.at(u.vals))
		}
		if err != nil {
			return nil, err
		}
	}
	if item == nil {
		item = Item{}
	}
	return item, nil
}

func applyAdd(item Item, pa path, val events.DynamoDBAttributeValue) (Item, error) {
	cur, ok := lookup(item, pa)
	if !ok {
		v := val
		if v.DataType() == events.DataTypeNumber {
			n, err := CanonicalNumber(v.Number())
			if err != nil {
				return nil, err
			}
			v = events.NewNumberAttribute(n)
		}
		return set(item, pa, v)
	}
	switch {
	case cur.DataType() == events.DataTypeNumber && val.DataType() == events.DataTypeNumber:
		n, err := addNumbers(cur.Number(), val.Number(), false)
		if err != nil {
			return nil, err
		}
		return set(item, pa, events.NewNumberAttribute(n))
	case isSet(cur.DataType()) && cur.DataType() == val.DataType():
		elems := setElems(cur)
		for _, e := range setElems(val) {
			if !containsElem(elems, e) {
				elems = append(elems, e)
			}
		}
		return set(item, pa, makeSet(cur.DataType(), elems))
	}
	return nil, validation(msgIncorrectType)
}

func applyDelete(item Item, pa path, val events.DynamoDBAttributeValue) (Item, error) {
	cur, ok := lookup(item, pa)
	if !ok {
		if !parentOK(item, pa) {
			return nil, validation(msgInvalidPath)
		}
		return item, nil
	}
	if cur.DataType() != val.DataType() {
		return nil, validation(msgIncorrectType)
	}
	drop := setElems(val)
	var keep []events.DynamoDBAttributeValue
	for _, e := range setElems(cur) {
		if !containsElem(drop, e) {
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		return remove(item, pa), nil
	}
	return set(item, pa, makeSet(cur.DataType(), keep))
}

// lookup is get that accepts a nil item.
func lookup(item Item, pa path) (events.DynamoDBAttributeValue, bool) {
	if item == nil {
		return events.DynamoDBAttributeValue{}, false
	}
	return get(item, pa)
}

func (sv *setValue) eval(item Item, vs valList) (events.DynamoDBAttributeValue, error) {
	l, err := sv.l.eval(item, vs)
	if err != nil || sv.op == "" {
		return l, err
	}
	r, err := sv.r.eval(item, vs)
	if err != nil {
		return r, err
	}
	if l.DataType() != events.DataTypeNumber || r.DataType() != events.DataTypeNumber {
		return r, validation(msgIncorrectType)
	}
	n, err := addNumbers(l.Number(), r.Number(), sv.op == "-")
	if ve, ok := err.(*ValidationError); ok && ve.Message == msgTooManyDigits {
		// A sum or difference needing more than 38 digits (1e50 + 1):
		// DynamoDB words it as an overflow (ScyllaDB's test_number.py
		// test_update_expression_plus_imprecise, run against DynamoDB).
		err = validation(msgOverflow)
	}
	if err != nil {
		return r, err
	}
	return events.NewNumberAttribute(n), nil
}

func (o *updOperand) eval(item Item, vs valList) (events.DynamoDBAttributeValue, error) {
	switch {
	case o.val != 0:
		return o.val.at(vs), nil
	case o.fn == "if_not_exists":
		if v, ok := lookup(item, o.args[0].path); ok {
			return v, nil
		}
		return o.args[1].eval(item, vs)
	case o.fn == "list_append":
		a, err := o.args[0].eval(item, vs)
		if err != nil {
			return a, err
		}
		b, err := o.args[1].eval(item, vs)
		if err != nil {
			return b, err
		}
		if a.DataType() != events.DataTypeList || b.DataType() != events.DataTypeList {
			return a, validation(msgIncorrectType)
		}
		return events.NewListAttribute(slices.Concat(a.List(), b.List())), nil
	}
	v, ok := lookup(item, o.path)
	if !ok {
		return v, validation(msgMissingOperand)
	}
	return v, nil
}
