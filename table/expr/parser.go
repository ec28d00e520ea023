package expr

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// parser is the recursive-descent parser shared by every expression kind.
// label names the request parameter in messages ("ConditionExpression",
// "UpdateExpression", ...).
//
// Besides the tree, a parse records what the tree depends on in the
// request: the #names it resolved (names), the :values it refers to (vals,
// which operands address by position through a valRef), and the checks
// that depend on those values' types or contents (checks). The cache (see
// cache.go) keeps the tree with these records and binds another request's
// values to it.
type parser struct {
	src   string
	label string
	toks  []token
	i     int
	ctx   *Context

	names    []nameBinding
	valNames []string // value placeholders, in order of first use
	vals     []events.DynamoDBAttributeValue
	checks   []check

	// deferring (an UpdateExpression) keeps the errors other than
	// syntax errors and reports, after the whole parse, the one
	// DynamoDB finds first (lowest rank; see the rank constants).
	deferring bool
	deferred  []rankedErr
	// conditionOrder: the deferred errors are a condition's, reported in
	// its order (firstConditionError); leaf counts its conditions.
	conditionOrder bool
	leaf           int
	// closers: the index of each '(' token's ')' (parenOperand), found
	// on first use.
	closers []int
}

type rankedErr struct {
	rank int
	err  error
	// leaf: the condition (parser.leaf) the error was found in.
	leaf int
}

// The order in which DynamoDB reports an UpdateExpression's errors once
// it parses (dynalite's suite, recorded against AWS): function names,
// repeated sections, undefined names, undefined values, overlapping and
// conflicting paths, ADD's and DELETE's operand types, operand counts,
// the other operand types.
const (
	rankFunction = iota + 1
	rankSection
	rankName
	rankValue
	rankOverlap
	rankAddDelete
	rankOperands
	rankTypes
	// a condition's own (condition_order.go)
	rankUnknownFunction
	rankMisusedFunction
	rankDistinct
)

// soft returns err, or, while deferring, records it and returns nil (the
// parse goes on).
func (p *parser) soft(rank int, err error) error {
	if !p.deferring || err == nil {
		return err
	}
	p.deferred = append(p.deferred, rankedErr{rank, err, p.leaf})
	return nil
}

// firstDeferred is the deferred error of the lowest rank (the first of
// those), or nil.
func (p *parser) firstDeferred() error {
	if p.conditionOrder {
		return p.firstConditionError()
	}
	var first *rankedErr
	for i, d := range p.deferred {
		if first == nil || d.rank < first.rank {
			first = &p.deferred[i]
		}
	}
	if first == nil {
		return nil
	}
	return first.err
}

// valRef refers to a :value of a parsed expression: 1 + its index in the
// bound values; 0 means "not a :value".
type valRef int

// at returns the bound value r refers to.
func (r valRef) at(vals []events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	return vals[r-1]
}

// check is a parse-time check that depends on the values (their types or
// contents); it returns the parse error, or nil.
type check func(vals []events.DynamoDBAttributeValue) error

// nameBinding is a #name placeholder and the attribute name it resolved to.
type nameBinding struct{ placeholder, name string }

func newParser(s, label string, c *Context) (*parser, error) {
	p, err := startParser(s, label, c)
	if err == nil && redundantParens(p.toks) {
		return nil, p.fail("The expression has redundant parentheses;")
	}
	return p, err
}

// startParser is newParser without the check of redundant parentheses,
// which a condition makes after its syntax (parseWhole).
func startParser(s, label string, c *Context) (*parser, error) {
	if c == nil {
		c = &Context{}
	}
	if len(s) > maxExpressionBytes {
		return nil, checkSize(s, label, nil, false)
	}
	p := &parser{src: s, label: label, toks: lex(s), ctx: c}
	if p.toks[0].kind == tEOF {
		return nil, p.fail("The expression can not be empty;")
	}
	if err := checkSize(s, label, p.toks, label == "UpdateExpression"); err != nil {
		return nil, err
	}
	return p, nil
}

// redundantParens reports a pair of parentheses directly around another
// ("((a = :v))"), which DynamoDB refuses; one pair around anything is
// fine.
//
// The parentheses of a function call (a '(' after a name that is not a
// keyword) group nothing: "f((a))" has none redundant.
func redundantParens(toks []token) bool {
	isPunct := func(i int, s string) bool {
		return i >= 0 && i < len(toks) && toks[i].kind == tPunct && toks[i].text == s
	}
	isCall := func(i int) bool { return i > 0 && toks[i-1].kind == tIdent && !isKeywordText(toks[i-1].text) }
	var open []int // positions of the unclosed '('
	closed := -1   // position of the '(' whose ')' was the last token seen
	for i := range toks {
		switch {
		case isPunct(i, "("):
			open = append(open, i)
		case isPunct(i, ")") && len(open) > 0:
			o := open[len(open)-1]
			open = open[:len(open)-1]
			if isCall(o) {
				break
			}
			if closed == o+1 && isPunct(i-1, ")") {
				return true
			}
			closed = o
			continue
		}
		closed = -1
	}
	return false
}

// isKeywordText reports whether s is one of a condition's keywords, which
// no name may be.
func isKeywordText(s string) bool {
	switch strings.ToUpper(s) {
	case "AND", "OR", "NOT", "BETWEEN", "IN":
		return true
	}
	return false
}

func (p *parser) peek() token        { return p.toks[p.i] }
func (p *parser) peekAt(n int) token { return p.toks[min(p.i+n, len(p.toks)-1)] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tEOF {
		p.i++
	}
	return t
}

// fail returns "Invalid <label>: <message>".
func (p *parser) fail(format string, args ...any) error {
	return failIn(p.label, format, args...)
}

func failIn(label, format string, args ...any) error {
	return validation("Invalid %s: %s", label, fmt.Sprintf(format, args...))
}

// check runs a value-dependent check now and records it for the cache.
func (p *parser) check(c check) error { return p.rankedCheck(rankTypes, c) }

// rankedCheck is check whose error, while deferring, has the given rank.
func (p *parser) rankedCheck(rank int, c check) error {
	p.checks = append(p.checks, c)
	return p.soft(rank, c(p.vals))
}

// syntaxErr reports the current token as DynamoDB does: `Syntax error;
// token: "x", near: "a x"` (near spans the previous token to this one).
func (p *parser) syntaxErr() error {
	t := p.peek()
	from := t.pos
	if p.i > 0 {
		from = p.toks[p.i-1].pos
	}
	return p.fail("Syntax error; token: %q, near: %q", t.text, strings.TrimSpace(p.src[from:t.end]))
}

func (p *parser) isPunct(s string) bool {
	t := p.peek()
	return t.kind == tPunct && t.text == s
}

func (p *parser) expectPunct(s string) error {
	if !p.isPunct(s) {
		return p.syntaxErr()
	}
	p.next()
	return nil
}

// isKeyword reports whether the current token is the keyword w (keywords
// are case-insensitive).
func (p *parser) isKeyword(w string) bool {
	t := p.peek()
	return t.kind == tIdent && strings.EqualFold(t.text, w)
}

// isCall reports whether the current token starts a function call.
func (p *parser) isCall() bool {
	return p.peek().kind == tIdent && p.peekAt(1).kind == tPunct && p.peekAt(1).text == "("
}

// commaList parses item (',' item)*: one item at least, as many as
// commas separate.
// parenthesized parses "(", item, ")".
func parenthesized[T any](p *parser, item func() (T, error)) (T, error) {
	var zero T
	if err := p.expectPunct("("); err != nil {
		return zero, err
	}
	x, err := item()
	if err != nil {
		return zero, err
	}
	if err := p.expectPunct(")"); err != nil {
		return zero, err
	}
	return x, nil
}

// parenList parses "(", a commaList of item, ")".
func parenList[T any](p *parser, item func() (T, error)) ([]T, error) {
	return parenthesized(p, func() ([]T, error) { return commaList(p, item) })
}

func commaList[T any](p *parser, item func() (T, error)) ([]T, error) {
	var out []T
	for {
		x, err := item()
		if err != nil {
			return nil, err
		}
		out = append(out, x)
		if !p.isPunct(",") {
			return out, nil
		}
		p.next()
	}
}

func (p *parser) end() error {
	if p.peek().kind != tEOF {
		return p.syntaxErr()
	}
	return nil
}

// path parses a document path: name ( '.' name | '[' index ']' )*, where a
// name is an identifier or a #placeholder.
func (p *parser) path() (path, error) {
	var out path
	first, err := p.pathName()
	if err != nil {
		return nil, err
	}
	return p.pathRest(append(out, first))
}

// pathRest parses the rest of a document path after its first elements:
// ( '.' name | '[' index ']' )*.
func (p *parser) pathRest(out path) (path, error) {
	for {
		switch {
		case p.isPunct("."):
			p.next()
			e, err := p.pathName()
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case p.isPunct("["):
			p.next()
			t := p.peek()
			if t.kind != tNumber {
				return nil, p.syntaxErr()
			}
			n, err := strconv.Atoi(t.text)
			if err != nil || n > 1<<31-1 {
				return nil, p.syntaxErr()
			}
			p.next()
			if err := p.expectPunct("]"); err != nil {
				return nil, err
			}
			out = append(out, pathElem{index: n, isIndex: true})
		default:
			return out, nil
		}
	}
}

func (p *parser) pathName() (pathElem, error) {
	t := p.peek()
	switch {
	case t.kind == tIdent && p.conditionOrder && isKeywordText(t.text):
		return pathElem{}, p.syntaxErr()
	case t.kind == tIdent:
		p.next()
		return pathElem{name: t.text}, nil
	case t.kind == tName:
		p.next()
		n, ok := p.ctx.name(t.text)
		if !ok {
			return pathElem{name: t.text}, p.soft(rankName, p.fail("An expression attribute name used in the document path is not defined; attribute name: %s", t.text))
		}
		if !slices.Contains(p.names, nameBinding{t.text, n}) {
			p.names = append(p.names, nameBinding{t.text, n})
		}
		return pathElem{name: n}, nil
	}
	return pathElem{}, p.syntaxErr()
}

// value resolves a :placeholder token.
func (p *parser) value() (valRef, string, error) {
	t := p.next()
	v, ok := p.ctx.value(t.text)
	if !ok {
		if err := p.soft(rankValue, p.fail("An expression attribute value used in expression is not defined; attribute value: %s", t.text)); err != nil {
			return 0, t.text, err
		}
		v = events.NewNullAttribute() // stands in until the deferred error is reported
	}
	if i := slices.Index(p.valNames, t.text); i >= 0 {
		return valRef(i + 1), t.text, nil
	}
	p.valNames = append(p.valNames, t.text)
	p.vals = append(p.vals, v)
	return valRef(len(p.vals)), t.text, nil
}
