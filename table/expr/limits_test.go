package expr

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// parsers are the five expressions' parse functions, by label.
var parsers = []struct {
	label string
	// wrap makes an expression around an attribute name.
	wrap  func(name string) string
	parse func(s string, c *Context) error
}{
	{"ConditionExpression", func(n string) string { return n + " = :v" }, func(s string, c *Context) error { _, err := ParseCondition(s, c); return err }},
	{"FilterExpression", func(n string) string { return n + " = :v" }, func(s string, c *Context) error { _, err := ParseFilter(s, c); return err }},
	{"KeyConditionExpression", func(n string) string { return n + " = :v" }, func(s string, c *Context) error { _, err := ParseKeyTerms(s, c); return err }},
	{"UpdateExpression", func(n string) string { return "SET " + n + " = :v" }, func(s string, c *Context) error { _, err := ParseUpdate(s, c); return err }},
	{"ProjectionExpression", func(n string) string { return n }, func(s string, c *Context) error { _, err := ParseProjection(s, c); return err }},
}

func oneValue() map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{":v": events.NewStringAttribute("x")}
}

// TestAnExpressionIsAtMost4096Bytes: every expression parameter is at
// most 4 KB (Constraints page, "Expression parameters"), counted on the
// text as sent: 4096 bytes parse, 4097 are refused with "Invalid
// <X>Expression: Expression size has exceeded the maximum allowed size;
// expression size: 4097" (DynamoDB's answer, quoted in PynamoDB #979 and
// ScyllaDB's test_limits.py). Before, any length was parsed (416 KB of
// nested parentheses took 3.2 s).
func TestAnExpressionIsAtMost4096Bytes(t *testing.T) {
	for _, p := range parsers {
		t.Run(p.label, func(t *testing.T) {
			fill := 4096 - len(p.wrap(""))
			ok := p.wrap(strings.Repeat("a", fill))
			if err := p.parse(ok, &Context{Values: oneValue()}); err != nil {
				t.Errorf("%d bytes: %v; want it parsed", len(ok), err)
			}
			long := p.wrap(strings.Repeat("b", fill+1))
			wantValidation(t, p.parse(long, &Context{Values: oneValue()}),
				"Invalid "+p.label+": Expression size has exceeded the maximum allowed size; expression size: 4097")
		})
	}
}

// TestAnExpressionHasAtMost300Operators: an expression holds at most 300
// operators (Constraints page; DynamoDB refuses the 301st with "Invalid
// ConditionExpression: The expression contains too many operators;
// operator count: 301", ScyllaDB issue #14473 and test_limits.py, and
// aws-sdk-js #3721 for a FilterExpression). Comparators, AND, OR, NOT,
// IN and BETWEEN (with its AND) count, and an update's + and -; not a
// SET's =, parentheses or function calls. Before, there was no limit.
func TestAnExpressionHasAtMost300Operators(t *testing.T) {
	vals := map[string]events.DynamoDBAttributeValue{":x": events.NewNumberAttribute("1"), ":y": events.NewNumberAttribute("2"), ":v": events.NewNumberAttribute("1")}
	nested := func(depth int) string { // ScyllaDB's: 2*depth+1 operators
		return "a<b " + strings.Repeat("or (a<b ", depth) + strings.Repeat(")", depth)
	}
	if _, err := ParseCondition(nested(149), &Context{}); err != nil {
		t.Errorf("299 operators: %v; want it parsed", err)
	}
	_, err := ParseCondition(nested(150), &Context{})
	wantValidation(t, err, "Invalid ConditionExpression: The expression contains too many operators; operator count: 301")
	_, err = ParseFilter("NOT "+strings.Repeat("NOT ", 300)+"a = :v", &Context{Values: vals})
	wantValidation(t, err, "Invalid FilterExpression: The expression contains too many operators; operator count: 301")

	between := strings.Repeat("a BETWEEN :x AND :y OR ", 149) + "a BETWEEN :x AND :y" // 150 + 149
	if _, err := ParseCondition(between, &Context{Values: vals}); err != nil {
		t.Errorf("150 BETWEENs and 149 ORs: %v; want it parsed (a BETWEEN's AND is part of it)", err)
	}

	sets := func(n int) string {
		var b strings.Builder
		b.WriteString("SET ")
		for i := range n {
			if i > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "a%d=:v+:v", i)
		}
		return b.String()
	}
	if _, err := ParseUpdate(sets(300), &Context{Values: vals}); err != nil {
		t.Errorf("300 SET actions with a + each: %v; want it parsed (a SET's = is no operator)", err)
	}
	_, err = ParseUpdate(sets(301), &Context{Values: vals})
	wantValidation(t, err, "Invalid UpdateExpression: The expression contains too many operators; operator count: 301")
}

// TestPlaceholdersAreAtMost255Bytes: an ExpressionAttributeNames or
// ExpressionAttributeValues placeholder is at most 255 bytes, its # or :
// included (Constraints page: "#name is five bytes"); a longer one is
// refused with "ExpressionAttributeNames contains invalid key: The
// expression attribute map contains a key that is too long; size of key:
// 256" (DynamoDB Local's messages), whatever the expression. Before, any
// length was taken.
func TestPlaceholdersAreAtMost255Bytes(t *testing.T) {
	for _, n := range []int{255, 256} {
		name, value := "#"+strings.Repeat("n", n-1), ":"+strings.Repeat("v", n-1)
		_, errN := ParseCondition(name+" = :v", &Context{Names: map[string]string{name: "a"}, Values: oneValue()})
		_, errV := ParseCondition("a = "+value, &Context{Values: map[string]events.DynamoDBAttributeValue{value: events.NewStringAttribute("x")}})
		if n == 255 {
			if errN != nil || errV != nil {
				t.Errorf("255-byte placeholders: %v, %v; want them taken", errN, errV)
			}
			continue
		}
		wantValidation(t, errN, "ExpressionAttributeNames contains invalid key: The expression attribute map contains a key that is too long; size of key: 256")
		wantValidation(t, errV, "ExpressionAttributeValues contains invalid key: The expression attribute map contains a key that is too long; size of key: 256")
	}
	// The check runs on a request whose expression is cached too.
	long := "#" + strings.Repeat("n", 300)
	for range 2 {
		_, err := ParseProjection("a", &Context{Names: map[string]string{long: "a"}})
		wantValidation(t, err, "ExpressionAttributeNames contains invalid key: The expression attribute map contains a key that is too long; size of key: 301")
	}
}

// TestSubstitutionsAreAtMost2MB: a request's ExpressionAttributeNames and
// ExpressionAttributeValues (placeholders and what they stand for, a
// value counted as in an item) are at most 2 MB together (Constraints
// page); past it, "Combined size of ExpressionAttributeNames and
// ExpressionAttributeValues exceeds max size" (DynamoDB Local's message).
// Before, a 16 MB request's values were all taken.
func TestSubstitutionsAreAtMost2MB(t *testing.T) {
	const mb = 1 << 20
	vals := func(second int) map[string]events.DynamoDBAttributeValue {
		return map[string]events.DynamoDBAttributeValue{
			":a": events.NewStringAttribute(strings.Repeat("a", mb)),
			":b": events.NewStringAttribute(strings.Repeat("b", second)),
		}
	}
	fits := 2*mb - mb - 4 // the two keys' 4 bytes
	if _, err := ParseCondition("a = :a AND b = :b", &Context{Values: vals(fits)}); err != nil {
		t.Errorf("2 MB of substitutions: %v; want them taken", err)
	}
	_, err := ParseCondition("a = :a AND b = :b", &Context{Values: vals(fits + 1)})
	wantValidation(t, err, "Combined size of ExpressionAttributeNames and ExpressionAttributeValues exceeds max size")
}

// TestEachParenthesisFindsItsCloserOnce: whether a '(' opens an operand
// ("(a) BETWEEN (b) AND (c)") depends on what follows its ')'. It used to
// be found by scanning ahead from every '(' (quadratic: 416 KB of nested
// parentheses took 3.2 s); the ')' of every '(' is now found in one pass
// (closers), with the same answers as the scan (checked here against it
// on nested, sequential and unbalanced parentheses).
func TestEachParenthesisFindsItsCloserOnce(t *testing.T) {
	scan := func(toks []token, at int) bool { // the old parenOperand
		depth := 0
		for i := at; i < len(toks); i++ {
			if toks[i].kind != tPunct {
				continue
			}
			switch toks[i].text {
			case "(":
				depth++
			case ")":
				if depth--; depth == 0 {
					n := toks[min(i+1, len(toks)-1)]
					return n.kind == tPunct && comparators[n.text] || n.kind == tIdent && (strings.EqualFold(n.text, "BETWEEN") || strings.EqualFold(n.text, "IN"))
				}
			}
		}
		return false
	}
	for _, s := range []string{
		"(a) BETWEEN (b) AND (c)",
		"((a)) = (b) AND ((c = d) OR (e) IN (f, g))",
		"(a = b) AND (c) < d",
		") (a) = b ((c)",
		"(((a) = b)",
		strings.Repeat("(", 500) + "a" + strings.Repeat(") = b", 500),
	} {
		p := &parser{toks: lex(s)}
		for i, tok := range p.toks {
			if tok.kind != tPunct || tok.text != "(" {
				continue
			}
			p.i = i
			if got, want := p.parenOperand(), scan(p.toks, i); got != want {
				t.Errorf("%q: the '(' at token %d opens an operand: %v; the scan says %v", s, i, got, want)
			}
		}
	}
}
