package expr

import (
	"slices"
	"strings"
)

// The order in which DynamoDB reports a condition's errors (a
// ConditionExpression, FilterExpression or KeyConditionExpression;
// dynalite's scan and query tests, recorded against AWS). A syntax error
// anywhere comes first; then, once the whole expression parses:
//
//  1. redundant parentheses;
//  2. an unknown function name (the first);
//  3. a function where it may not be (the first);
//  4. the first condition (comparison, BETWEEN, IN or function, from the
//     left) with any of these, the first of them in this order: an
//     undefined #name or :value (whichever comes first), an operand count,
//     two equal paths where they must be distinct, an operand type (a
//     document path required, BETWEEN's bounds).
//
// The parser defers each error (soft) with its rank and condition
// (parser.leaf) and reports this one at the end.

// conditionKind is the place in step 4 of an error of rank r.
func conditionKind(r int) int {
	switch r {
	case rankName, rankValue:
		return 0
	case rankOperands:
		return 1
	case rankDistinct:
		return 2
	}
	return 3
}

// firstConditionError is the deferred error DynamoDB reports first.
func (p *parser) firstConditionError() error {
	for _, r := range []int{rankUnknownFunction, rankMisusedFunction} {
		for _, d := range p.deferred {
			if d.rank == r {
				return d.err
			}
		}
	}
	var first *rankedErr
	for i, d := range p.deferred {
		if first == nil || d.leaf < first.leaf || d.leaf == first.leaf && conditionKind(d.rank) < conditionKind(first.rank) {
			first = &p.deferred[i]
		}
	}
	if first == nil {
		return nil
	}
	return first.err
}

// distinct defers the error of an operator or function whose two
// operands are the same path.
func (p *parser) distinct(op string, ops ...*operand) error {
	if len(ops) != 2 || ops[0].path == nil || !slices.Equal(ops[0].path, ops[1].path) {
		return nil
	}
	return p.soft(rankDistinct, p.fail("The first operand must be distinct from the remaining operands for this operator or function; operator: %s, first operand: %s", op, ops[0].path))
}

// parenOperand reports whether the '(' at the parser's position opens an
// operand rather than a condition: its ')' is followed by a comparator,
// BETWEEN or IN ("(a) BETWEEN (b) AND (c)"). The ')' of every '(' is
// found once, for the whole expression (closers), so nested parentheses
// cost linear time, not a scan to the ')' for each '('.
func (p *parser) parenOperand() bool {
	if p.closers == nil {
		p.closers = closers(p.toks)
	}
	i := p.closers[p.i]
	if i < 0 {
		return false
	}
	n := p.toks[min(i+1, len(p.toks)-1)]
	return n.kind == tPunct && comparators[n.text] || n.kind == tIdent && (strings.EqualFold(n.text, "BETWEEN") || strings.EqualFold(n.text, "IN"))
}

// closers maps the index of each '(' token to the index of its ')' (-1:
// none), other tokens to -1.
func closers(toks []token) []int {
	out := make([]int, len(toks))
	var open []int
	for i, t := range toks {
		out[i] = -1
		if t.kind != tPunct {
			continue
		}
		switch {
		case t.text == "(":
			open = append(open, i)
		case t.text == ")" && len(open) > 0:
			out[open[len(open)-1]] = i
			open = open[:len(open)-1]
		}
	}
	return out
}

// atComparison reports whether a comparator, BETWEEN or IN follows.
func (p *parser) atComparison() bool {
	t := p.peek()
	return t.kind == tPunct && comparators[t.text] || p.isKeyword("BETWEEN") || p.isKeyword("IN")
}
