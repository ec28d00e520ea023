package expr

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// parser is the recursive-descent parser shared by every expression kind.
// label names the request parameter in messages ("ConditionExpression",
// "UpdateExpression", ...).
type parser struct {
	src   string
	label string
	toks  []token
	i     int
	ctx   *Context
}

func newParser(s, label string, c *Context) (*parser, error) {
	if c == nil {
		c = &Context{}
	}
	p := &parser{src: s, label: label, toks: lex(s), ctx: c}
	if p.toks[0].kind == tEOF {
		return nil, p.fail("The expression can not be empty;")
	}
	return p, nil
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
	return validation("Invalid %s: %s", p.label, fmt.Sprintf(format, args...))
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
	out = append(out, first)
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
	switch t.kind {
	case tIdent:
		p.next()
		return pathElem{name: t.text}, nil
	case tName:
		p.next()
		n, ok := p.ctx.name(t.text)
		if !ok {
			return pathElem{}, p.fail("An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		return pathElem{name: n}, nil
	}
	return pathElem{}, p.syntaxErr()
}

// value resolves a :placeholder token.
func (p *parser) value() (events.DynamoDBAttributeValue, string, error) {
	t := p.next()
	v, ok := p.ctx.value(t.text)
	if !ok {
		return v, t.text, p.fail("An expression attribute value used in expression is not defined; attribute value: %s", t.text)
	}
	return v, t.text, nil
}
