package logs

import (
	"errors"
	"strings"
)

// Pattern is a CloudWatch Logs filter pattern for unstructured events:
// terms that must all appear (ERROR Exception), terms of which one must
// (?ERROR ?Exception), terms that must not (-DEBUG), and quoted phrases
// ("processed item"); matching is case-sensitive, on substrings. The empty
// pattern matches every event. JSON ({ $.x = 1 }), space-delimited
// ([a, b]) and regular expression (%...%) patterns are refused.
type Pattern struct {
	all, any, none []string
}

// ParsePattern parses a filter pattern.
func ParsePattern(p string) (*Pattern, error) {
	p = strings.TrimSpace(p)
	if len(p) > 1024 {
		return nil, errors.New("filterPattern: at most 1024 characters")
	}
	if strings.HasPrefix(p, "{") || strings.HasPrefix(p, "[") || strings.HasPrefix(p, "%") {
		return nil, errors.New("filterPattern: JSON, space-delimited and regular expression patterns are not supported by runnel: use terms, ?terms, -terms and quoted phrases")
	}
	pat := &Pattern{}
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
			end := strings.IndexByte(p[1:], '"')
			if end < 0 {
				return nil, errors.New(`filterPattern: a quoted phrase is not closed (")`)
			}
			term, p = p[1:1+end], p[2+end:]
		} else {
			end := strings.IndexAny(p, " \t")
			if end < 0 {
				end = len(p)
			}
			term, p = p[:end], p[end:]
		}
		if term == "" {
			continue
		}
		switch kind {
		case '?':
			pat.any = append(pat.any, term)
		case '-':
			pat.none = append(pat.none, term)
		default:
			pat.all = append(pat.all, term)
		}
	}
	return pat, nil
}

// Match reports whether message matches the pattern.
func (p *Pattern) Match(message string) bool {
	for _, t := range p.all {
		if !strings.Contains(message, t) {
			return false
		}
	}
	for _, t := range p.none {
		if strings.Contains(message, t) {
			return false
		}
	}
	if len(p.any) == 0 {
		return true
	}
	for _, t := range p.any {
		if strings.Contains(message, t) {
			return true
		}
	}
	return false
}
