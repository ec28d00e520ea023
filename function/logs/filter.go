package logs

import (
	"errors"
	"strings"
)

// Pattern is a CloudWatch Logs filter pattern for unstructured events
// (FilterAndPatternSyntax, "Match terms in unstructured log events"):
//
//   - ERROR Exception: every term must appear;
//   - ?ERROR ?Exception: one of the terms must;
//   - ERROR -timeout: a term prefixed with - must not;
//   - "processed item": a quoted phrase is one term (spaces and any
//     character in it); \" and \\ in it stand for " and \ (CDK's
//     FilterPattern quotes every term so: "say \"hi\"").
//
// Each ? starts a new OR group, and the plain and - terms after it, up to
// the next ?, belong to that group: ?"ERROR" "MainThread" ?"WARN"
// "Deadlock" (CDK's FilterPattern.anyTermGroup(["ERROR","MainThread"],
// ["WARN","Deadlock"])) is (ERROR and MainThread) or (WARN and Deadlock).
// Terms before the first ? are a group of their own. An event matches
// when one group matches: all its terms appear and none of its - terms.
// Matching is case-sensitive, on substrings. The empty pattern matches
// every event. JSON ({ $.x = 1 }), space-delimited ([a, b]) and regular
// expression (%...%) patterns are refused.
//
// (runnel used to put every ? term in one OR set and every plain term in
// one AND set, so the pattern above meant MainThread and Deadlock and
// (ERROR or WARN); and it cut a quoted phrase at a \".)
type Pattern struct {
	groups []termGroup
}

// termGroup is one OR alternative: terms that must all appear and terms
// that must not.
type termGroup struct {
	all, none []string
}

func (g termGroup) empty() bool { return len(g.all) == 0 && len(g.none) == 0 }

func (g termGroup) match(message string) bool {
	for _, t := range g.all {
		if !strings.Contains(message, t) {
			return false
		}
	}
	for _, t := range g.none {
		if strings.Contains(message, t) {
			return false
		}
	}
	return true
}

// ParsePattern parses a filter pattern: at most 1024 characters; a
// quoted phrase must be closed.
func ParsePattern(p string) (*Pattern, error) {
	p = strings.TrimSpace(p)
	if len(p) > 1024 {
		return nil, errors.New("filterPattern: at most 1024 characters")
	}
	if strings.HasPrefix(p, "{") || strings.HasPrefix(p, "[") || strings.HasPrefix(p, "%") {
		return nil, errors.New("filterPattern: JSON, space-delimited and regular expression patterns are not supported by runnel: use terms, ?terms, -terms and quoted phrases")
	}
	pat := &Pattern{}
	cur := termGroup{}
	for p != "" {
		p = strings.TrimLeft(p, " \t")
		if p == "" {
			break
		}
		kind := byte(0)
		if p[0] == '?' || p[0] == '-' {
			kind, p = p[0], p[1:]
		}
		var term string
		if strings.HasPrefix(p, `"`) {
			var ok bool
			if term, p, ok = quoted(p[1:]); !ok {
				return nil, errors.New(`filterPattern: a quoted phrase is not closed (")`)
			}
		} else {
			end := strings.IndexAny(p, " \t")
			if end < 0 {
				end = len(p)
			}
			term, p = p[:end], p[end:]
		}
		if kind == '?' {
			if !cur.empty() {
				pat.groups = append(pat.groups, cur)
			}
			cur = termGroup{}
		}
		if term == "" {
			continue
		}
		if kind == '-' {
			cur.none = append(cur.none, term)
		} else {
			cur.all = append(cur.all, term)
		}
	}
	if !cur.empty() {
		pat.groups = append(pat.groups, cur)
	}
	return pat, nil
}

// quoted reads a quoted phrase from s (just after its opening quote) up
// to its closing quote, \" and \\ standing for " and \ (a backslash
// before any other character is itself); it returns the phrase and the
// rest of s after the closing quote, or false when there is none.
func quoted(s string) (term, rest string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return b.String(), s[i+1:], true
		case c == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\'):
			b.WriteByte(s[i+1])
			i++
		default:
			b.WriteByte(c)
		}
	}
	return "", "", false
}

// Match reports whether message matches the pattern: one of its groups
// does (every message when there is none).
func (p *Pattern) Match(message string) bool {
	if len(p.groups) == 0 {
		return true
	}
	for _, g := range p.groups {
		if g.match(message) {
			return true
		}
	}
	return false
}
