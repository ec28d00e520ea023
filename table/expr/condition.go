package expr

import (
	"bytes"
	"encoding/base64"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// maxInOperands is the most values IN accepts.
const maxInOperands = 100

// Condition is a parsed ConditionExpression or FilterExpression.
//
// Grammar (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Expressions.OperatorsAndFunctions.html):
//
//	condition  = operand comparator operand      (= <> < <= > >=)
//	           | operand BETWEEN operand AND operand
//	           | operand IN ( operand, ... )      (1 to 100 operands)
//	           | function                         (attribute_exists, attribute_not_exists,
//	                                               attribute_type, begins_with, contains)
//	           | condition AND condition | condition OR condition | NOT condition
//	           | ( condition )
//	operand    = path | :value | size(path)
//
// Precedence, highest first: comparators, IN, BETWEEN, functions,
// parentheses, NOT, AND, OR. Keywords are case-insensitive; function names
// are not.
//
// size() is the length of a string in characters (Unicode code points), of
// a binary in bytes, and the element count of a set, list or map; it has no
// value for other types (the comparison is then false). contains() accepts
// a string (substring), a binary (byte substring), a set (an element of the
// set's type) or a list (an element equal to the operand).
type Condition struct {
	root cond // shared by the cached parses of the same expression
	vals []events.DynamoDBAttributeValue
}

// ParseCondition parses a ConditionExpression (PutItem, UpdateItem,
// DeleteItem, TransactWriteItems), marking the placeholders it uses in c.
//
// Errors are *ValidationError with DynamoDB's text, prefixed "Invalid
// ConditionExpression: ": an empty expression ("The expression can not be
// empty;"), a syntax error (`Syntax error; token: "x", near: "a x"`), an
// undefined placeholder ("An expression attribute name used in the
// document path is not defined; attribute name: #x", "An expression
// attribute value used in expression is not defined; attribute value:
// :x"), an unknown function ("Invalid function name; function: f"), a
// function in the wrong place ("The function is not allowed to be used this
// way in an expression; function: size"), a wrong operand count or type, or
// a BETWEEN whose constant bounds are reversed or of different types.
func ParseCondition(s string, c *Context) (*Condition, error) {
	return parseCondition(s, "ConditionExpression", c)
}

// ParseFilter parses a FilterExpression (Query, Scan): the same language
// as [ParseCondition], with "Invalid FilterExpression: " in messages.
func ParseFilter(s string, c *Context) (*Condition, error) {
	return parseCondition(s, "FilterExpression", c)
}

func parseCondition(s, label string, c *Context) (*Condition, error) {
	kind := kindCondition
	if label == "FilterExpression" {
		kind = kindFilter
	}
	if err := c.checkMaps(); err != nil {
		return nil, err
	}
	key := cacheKey{kind: kind, text: s}
	if e, vals := cacheLookup(key, c); e != nil {
		return &Condition{root: e.tree.(cond), vals: vals}, nil
	}
	p, root, err := parseWhole(s, label, c)
	if err != nil {
		return nil, err
	}
	cacheStore(key, p, root)
	return &Condition{root: root, vals: p.vals}, nil
}

// parseWhole parses s as one condition that must take the whole text.
func parseWhole(s, label string, c *Context) (*parser, cond, error) {
	p, err := startParser(s, label, c)
	if err != nil {
		return nil, nil, err
	}
	p.deferring, p.conditionOrder = true, true
	root, err := p.condition()
	if err == nil {
		err = p.end()
	}
	if err != nil {
		return nil, nil, err // a syntax error
	}
	if redundantParens(p.toks) {
		return nil, nil, p.fail("The expression has redundant parentheses;")
	}
	if err := p.firstDeferred(); err != nil {
		return nil, nil, err
	}
	return p, root, nil
}

// Eval evaluates the condition against item; a nil item means "no item"
// (every path is missing, so attribute_not_exists(x) is true). Following
// DynamoDB, a comparison whose operands are missing or of different types
// is false (and <> is true), a function given the wrong type is false, and
// nothing is an error at evaluation; the error result is always nil and is
// kept for future checks.
func (c *Condition) Eval(item Item) (bool, error) {
	return c.root.eval(item, c.vals), nil
}

// cond is one node of a condition tree.
// vals are the bound :values the operands refer to.
type cond interface {
	eval(it Item, vals []events.DynamoDBAttributeValue) bool
}

type andCond struct{ l, r cond }
type orCond struct{ l, r cond }
type notCond struct{ c cond }

// cmpCond is a comparison; op is one of = <> < <= > >=.
type cmpCond struct {
	op   string
	l, r *operand
}

type betweenCond struct{ v, lo, hi *operand }

type inCond struct {
	v    *operand
	list []*operand
}

// funcCond is a boolean function call.
type funcCond struct {
	name string
	args []*operand
}

type valList = []events.DynamoDBAttributeValue

func (c andCond) eval(it Item, vs valList) bool { return c.l.eval(it, vs) && c.r.eval(it, vs) }
func (c orCond) eval(it Item, vs valList) bool  { return c.l.eval(it, vs) || c.r.eval(it, vs) }
func (c notCond) eval(it Item, vs valList) bool { return !c.c.eval(it, vs) }

func (c cmpCond) eval(it Item, vs valList) bool {
	a, okA := c.l.eval(it, vs)
	b, okB := c.r.eval(it, vs)
	if c.op == "<>" {
		return !okA || !okB || !Equal(a, b)
	}
	if !okA || !okB {
		return false
	}
	if c.op == "=" {
		return Equal(a, b)
	}
	n, ok := Compare(a, b)
	return ok && holds(c.op, n)
}

// holds reports whether a comparison whose [Compare] result is n
// satisfies op: one of =, <, <=, > and >=.
func holds(op string, n int) bool {
	switch op {
	case "=":
		return n == 0
	case "<":
		return n < 0
	case "<=":
		return n <= 0
	case ">":
		return n > 0
	default:
		return n >= 0
	}
}

func (c betweenCond) eval(it Item, vs valList) bool {
	v, ok1 := c.v.eval(it, vs)
	lo, ok2 := c.lo.eval(it, vs)
	hi, ok3 := c.hi.eval(it, vs)
	if !ok1 || !ok2 || !ok3 {
		return false
	}
	a, okA := Compare(v, lo)
	b, okB := Compare(v, hi)
	return okA && okB && a >= 0 && b <= 0
}

func (c inCond) eval(it Item, vs valList) bool {
	v, ok := c.v.eval(it, vs)
	if !ok {
		return false
	}
	for _, o := range c.list {
		if w, ok := o.eval(it, vs); ok && Equal(v, w) {
			return true
		}
	}
	return false
}

func (c funcCond) eval(it Item, vs valList) bool {
	a, okA := c.args[0].eval(it, vs)
	switch c.name {
	case "attribute_exists":
		return okA
	case "attribute_not_exists":
		return !okA
	}
	b, okB := c.args[1].eval(it, vs)
	if !okA || !okB {
		return false
	}
	switch c.name {
	case "attribute_type":
		return b.DataType() == events.DataTypeString && TypeName(a.DataType()) == b.String()
	case "begins_with":
		return beginsWith(a, b)
	default: // contains
		switch a.DataType() {
		case events.DataTypeString:
			return b.DataType() == events.DataTypeString && strings.Contains(a.String(), b.String())
		case events.DataTypeBinary:
			return b.DataType() == events.DataTypeBinary && bytes.Contains(a.Binary(), b.Binary())
		case events.DataTypeStringSet, events.DataTypeNumberSet, events.DataTypeBinarySet:
			return b.DataType() == elemType(a.DataType()) && containsElem(setElems(a), b)
		case events.DataTypeList:
			return containsElem(a.List(), b)
		}
		return false
	}
}

// operand is a path, a :value or size(operand).
type operand struct {
	path  path     // set for a path
	val   valRef   // set for a :value
	size  *operand // set for size(...)
	token string   // the source text of a :value or function name, for messages
}

func (o *operand) eval(it Item, vs valList) (events.DynamoDBAttributeValue, bool) {
	switch {
	case o.val != 0:
		return o.val.at(vs), true
	case o.size != nil:
		v, ok := o.size.eval(it, vs)
		if !ok {
			return v, false
		}
		var n int
		switch v.DataType() {
		case events.DataTypeString:
			n = utf8.RuneCountInString(v.String())
		case events.DataTypeBinary:
			n = len(v.Binary())
		case events.DataTypeStringSet:
			n = len(v.StringSet())
		case events.DataTypeNumberSet:
			n = len(v.NumberSet())
		case events.DataTypeBinarySet:
			n = len(v.BinarySet())
		case events.DataTypeList:
			n = len(v.List())
		case events.DataTypeMap:
			n = len(v.Map())
		default:
			return v, false
		}
		return events.NewNumberAttribute(strconv.Itoa(n)), true
	}
	if it == nil {
		return events.DynamoDBAttributeValue{}, false
	}
	return get(it, o.path)
}

// condition = and (OR and)*
func (p *parser) condition() (cond, error) {
	return p.leftAssoc("OR", p.andCondition, func(l, r cond) cond { return orCond{l, r} })
}

// and = not (AND not)*
func (p *parser) andCondition() (cond, error) {
	return p.leftAssoc("AND", p.notCondition, func(l, r cond) cond { return andCond{l, r} })
}

// leftAssoc parses operand (keyword operand)*, joining the operands from
// the left: a OR b OR c is (a OR b) OR c.
func (p *parser) leftAssoc(keyword string, operand func() (cond, error), join func(l, r cond) cond) (cond, error) {
	l, err := operand()
	if err != nil {
		return nil, err
	}
	for p.isKeyword(keyword) {
		p.next()
		r, err := operand()
		if err != nil {
			return nil, err
		}
		l = join(l, r)
	}
	return l, nil
}

// not = NOT not | primary
func (p *parser) notCondition() (cond, error) {
	if p.isKeyword("NOT") {
		p.next()
		c, err := p.notCondition()
		if err != nil {
			return nil, err
		}
		return notCond{c}, nil
	}
	return p.primary()
}

var boolFuncs = map[string]int{ // name -> operand count
	"attribute_exists":     1,
	"attribute_not_exists": 1,
	"attribute_type":       2,
	"begins_with":          2,
	"contains":             2,
}

var comparators = map[string]bool{"=": true, "<>": true, "<": true, "<=": true, ">": true, ">=": true}

func (p *parser) primary() (cond, error) {
	if p.isPunct("(") && !p.parenOperand() {
		return parenthesized(p, p.condition)
	}
	p.leaf++
	var l *operand
	if p.isCall() {
		if n, ok := boolFuncs[p.peek().text]; ok {
			f, err := p.boolFunction(n)
			if err != nil {
				return nil, err
			}
			if !p.atComparison() {
				return f, nil
			}
			if err := p.soft(rankMisusedFunction, p.fail("The function is not allowed to be used this way in an expression; function: %s", f.name)); err != nil {
				return nil, err
			}
			l = &operand{token: f.name} // stands in: the error is reported
		}
	}
	if l == nil {
		var err error
		if l, err = p.operand(); err != nil {
			return nil, err
		}
	}
	t := p.peek()
	switch {
	case t.kind == tPunct && comparators[t.text]:
		p.next()
		r, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err := p.distinct(t.text, l, r); err != nil {
			return nil, err
		}
		if t.text != "=" && t.text != "<>" {
			if err := p.checkScalar(t.text, l, r); err != nil {
				return nil, err
			}
		}
		return cmpCond{t.text, l, r}, nil
	case p.isKeyword("BETWEEN"):
		p.next()
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if !p.isKeyword("AND") {
			return nil, p.syntaxErr()
		}
		p.next()
		hi, err := p.operand()
		if err != nil {
			return nil, err
		}
		if err := p.checkScalar("BETWEEN", l, lo, hi); err != nil {
			return nil, err
		}
		if err := p.checkBounds(lo, hi); err != nil {
			return nil, err
		}
		return betweenCond{l, lo, hi}, nil
	case p.isKeyword("IN"):
		p.next()
		list, err := parenList(p, p.operand)
		if err != nil {
			return nil, err
		}
		if len(list) > maxInOperands {
			return nil, p.fail("Too many operands for the operator or function; operator or function: IN, number of operands: %d", len(list))
		}
		return inCond{l, list}, nil
	}
	if l.path == nil && l.val == 0 && l.size == nil {
		return funcCond{name: l.token}, nil // a function whose error is deferred
	}
	if l.size == nil {
		return nil, p.syntaxErr()
	}
	// size() alone is no condition; a syntax error after it comes first
	if err := p.soft(rankMisusedFunction, p.fail("The function is not allowed to be used this way in an expression; function: size")); err != nil {
		return nil, err
	}
	return funcCond{name: "size", args: []*operand{l.size}}, nil
}

// operand = path | :value | size(operand)
func (p *parser) operand() (*operand, error) {
	t := p.peek()
	switch {
	case t.kind == tValue:
		v, name, err := p.value()
		if err != nil {
			return nil, err
		}
		return &operand{val: v, token: name}, nil
	case t.kind == tPunct && t.text == "(" && p.conditionOrder:
		o, err := parenthesized(p, p.operand)
		if err != nil {
			return nil, err
		}
		if o.path != nil && (p.isPunct(".") || p.isPunct("[")) {
			// a path's head in parentheses: "(a.b).c"
			rest, err := p.pathRest(append(path(nil), o.path...))
			return &operand{path: rest}, err
		}
		return o, nil
	case p.isCall():
		if t.text != "size" {
			if err := p.misusedFunction(t.text); err != nil {
				return nil, err
			}
			if _, err := p.args(); err != nil {
				return nil, err
			}
			return &operand{token: t.text}, nil // stands in: the error is reported
		}
		args, err := p.args()
		if err != nil {
			return nil, err
		}
		if len(args) != 1 {
			if err := p.soft(rankOperands, p.fail("Incorrect number of operands for operator or function; operator or function: size, number of operands: %d", len(args))); err != nil {
				return nil, err
			}
			return &operand{token: "size"}, nil
		}
		if args[0].size != nil {
			if err := p.soft(rankTypes, p.fail("Incorrect operand type for operator or function; operator or function: size, operand type: N")); err != nil {
				return nil, err
			}
		}
		if a := args[0]; a.val != 0 {
			label := p.label
			if err := p.check(func(vs valList) error {
				switch t := a.val.at(vs).DataType(); t {
				case events.DataTypeNumber, events.DataTypeBoolean, events.DataTypeNull:
					return failIn(label, "Incorrect operand type for operator or function; operator or function: size, operand type: %s", TypeName(t))
				}
				return nil
			}); err != nil {
				return nil, err
			}
		}
		return &operand{size: args[0], token: "size"}, nil
	case t.kind == tIdent || t.kind == tName:
		pa, err := p.path()
		if err != nil {
			return nil, err
		}
		return &operand{path: pa}, nil
	}
	return nil, p.syntaxErr()
}

// misusedFunction is the error for a known function in an operand place,
// or for an unknown function.
// (deferred while the parser defers).
func (p *parser) misusedFunction(name string) error {
	switch name {
	case "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with", "contains", "size",
		"if_not_exists", "list_append":
		return p.soft(rankMisusedFunction, p.fail("The function is not allowed to be used this way in an expression; function: %s", name))
	}
	return p.soft(rankUnknownFunction, p.fail("Invalid function name; function: %s", name))
}

// args parses name( operand, ... ) and returns the operands.
func (p *parser) args() ([]*operand, error) {
	p.next() // name
	return parenList(p, p.operand)
}

// boolFunction parses one of boolFuncs and checks its operands.
func (p *parser) boolFunction(want int) (funcCond, error) {
	name := p.peek().text
	args, err := p.args()
	if err != nil {
		return funcCond{}, err
	}
	if len(args) != want {
		err := p.soft(rankOperands, p.fail("Incorrect number of operands for operator or function; operator or function: %s, number of operands: %d", name, len(args)))
		return funcCond{name: name, args: args}, err
	}
	if err := p.distinct(name, args...); err != nil {
		return funcCond{}, err
	}
	if args[0].path == nil && name != "contains" && name != "begins_with" {
		if err := p.soft(rankTypes, p.fail("Operator or function requires a document path; operator or function: %s", name)); err != nil {
			return funcCond{}, err
		}
	}
	label := p.label
	for i, a := range args {
		switch {
		case name == "attribute_type" && i == 1 && a.size != nil, name == "begins_with" && a.size != nil:
			err := p.soft(rankTypes, p.fail("Incorrect operand type for operator or function; operator or function: %s, operand type: N", name))
			return funcCond{name: name, args: args}, err
		case name == "attribute_type" && i == 1 && a.path != nil:
			err := p.soft(rankTypes, p.fail("Incorrect operand type for operator or function; operator or function: %s, operand type: {NS,SS,L,BS,N,M,B,BOOL,NULL,S}", name))
			return funcCond{name: name, args: args}, err
		}
	}
	switch name {
	case "attribute_type":
		if r := args[1].val; r != 0 {
			if err := p.check(func(vs valList) error {
				v := r.at(vs)
				if v.DataType() != events.DataTypeString {
					return failIn(label, "Incorrect operand type for operator or function; operator or function: attribute_type, operand type: %s", TypeName(v.DataType()))
				}
				switch v.String() {
				case "S", "N", "B", "BOOL", "NULL", "SS", "NS", "BS", "L", "M":
				default:
					return failIn(label, "Invalid attribute type name found; type: %s, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}", v.String())
				}
				return nil
			}); err != nil {
				return funcCond{}, err
			}
		}
	case "begins_with":
		for _, a := range args {
			if r := a.val; r != 0 {
				if err := p.check(func(vs valList) error {
					if t := r.at(vs).DataType(); t != events.DataTypeString && t != events.DataTypeBinary {
						return failIn(label, "Incorrect operand type for operator or function; operator or function: begins_with, operand type: %s", TypeName(t))
					}
					return nil
				}); err != nil {
					return funcCond{}, err
				}
			}
		}
	}
	return funcCond{name: name, args: args}, nil
}

// checkScalar refuses constant operands of an ordering operator that are
// not S, N or B.
func (p *parser) checkScalar(op string, ops ...*operand) error {
	var refs []valRef
	for _, o := range ops {
		if o.val != 0 {
			refs = append(refs, o.val)
		}
	}
	if len(refs) == 0 {
		return nil
	}
	label := p.label
	return p.check(func(vs valList) error {
		for _, r := range refs {
			switch t := r.at(vs).DataType(); t {
			case events.DataTypeString, events.DataTypeNumber, events.DataTypeBinary:
			default:
				return failIn(label, "Incorrect operand type for operator or function; operator or function: %s, operand type: %s", op, TypeName(t))
			}
		}
		return nil
	})
}

// checkBounds refuses constant BETWEEN bounds of different types or in the
// wrong order.
func (p *parser) checkBounds(lo, hi *operand) error {
	if lo.val == 0 || hi.val == 0 {
		return nil
	}
	label, lr, hr := p.label, lo.val, hi.val
	return p.check(func(vs valList) error {
		l, h := lr.at(vs), hr.at(vs)
		n, ok := Compare(l, h)
		if !ok {
			return failIn(label, "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", render(l), render(h))
		}
		if n > 0 {
			return failIn(label, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: %s, upper bound operand: AttributeValue: %s", render(l), render(h))
		}
		return nil
	})
}

// render prints a scalar as DynamoDB does in messages: {S:a}, {N:1}.
func render(v events.DynamoDBAttributeValue) string {
	switch v.DataType() {
	case events.DataTypeString:
		return "{S:" + v.String() + "}"
	case events.DataTypeNumber:
		return "{N:" + v.Number() + "}"
	case events.DataTypeBinary:
		return "{B:" + base64.StdEncoding.EncodeToString(v.Binary()) + "}"
	}
	return "{" + TypeName(v.DataType()) + "}"
}
