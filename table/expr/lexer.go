package expr

import "strings"

type tokKind int

const (
	tEOF    tokKind = iota
	tIdent          // attribute name, keyword or function name: [A-Za-z_][A-Za-z0-9_]*
	tName           // #placeholder
	tValue          // :placeholder
	tNumber         // digits, only valid as a list index
	tPunct          // ( ) [ ] , . = <> < <= > >= + -
	tBad            // a character the language does not have
)

type token struct {
	kind     tokKind
	text     string
	pos, end int
}

// isIdentStart: a name begins with a letter (DynamoDB refuses "_c" as a
// syntax error; such a name needs a #placeholder).
func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isIdentPart(c byte) bool { return isIdentStart(c) || c == '_' || c >= '0' && c <= '9' }

// lex splits an expression into tokens; it never fails (unknown characters
// become tBad tokens, reported by the parser as syntax errors). The last
// token is always tEOF.
func lex(s string) []token {
	var toks []token
	i := 0
	for i < len(s) {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
			continue
		case isIdentStart(c):
			for i < len(s) && isIdentPart(s[i]) {
				i++
			}
			toks = append(toks, token{tIdent, s[start:i], start, i})
		case c >= '0' && c <= '9':
			for i < len(s) && s[i] >= '0' && s[i] <= '9' {
				i++
			}
			toks = append(toks, token{tNumber, s[start:i], start, i})
		case c == '#' || c == ':':
			i++
			for i < len(s) && isIdentPart(s[i]) {
				i++
			}
			kind := tName
			if c == ':' {
				kind = tValue
			}
			if i == start+1 {
				kind = tBad
			}
			toks = append(toks, token{kind, s[start:i], start, i})
		case strings.HasPrefix(s[i:], "<>") || strings.HasPrefix(s[i:], "<=") || strings.HasPrefix(s[i:], ">="):
			i += 2
			toks = append(toks, token{tPunct, s[start:i], start, i})
		case strings.IndexByte("()[],.=<>+-", c) >= 0:
			i++
			toks = append(toks, token{tPunct, s[start:i], start, i})
		default:
			i++
			for i < len(s) && s[i] >= 0x80 && s[i] < 0xC0 { // keep a UTF-8 sequence whole
				i++
			}
			toks = append(toks, token{tBad, s[start:i], start, i})
		}
	}
	return append(toks, token{tEOF, "<EOF>", len(s), len(s)})
}
