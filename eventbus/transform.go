package eventbus

// What a target receives: the event, Input, InputPath or InputTransformer
// (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-transform-target-input.html).

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// path is a parsed JSONPath of the subset EventBridge uses: $ then .name,
// ['name'], [index] and the wildcards .* and [*] ("Supported syntax
// includes: dot notation, ... array indices, wildcards (*)",
// eb-transform-target-input.html). A path with a wildcard selects a JSON
// array of every match, in document order, as JSONPath does; before, [*]
// was refused and .* read a key named "*" (always "").
type path []any // string keys, int indexes, wildcard

// wildcard is the step * : every member of an object or element of an
// array.
type wildcard struct{}

func parsePath(p string) (path, error) {
	if !strings.HasPrefix(p, "$") {
		return nil, fmt.Errorf("must start with $")
	}
	var out path
	rest := p[1:]
	for rest != "" {
		switch {
		case strings.HasPrefix(rest, "[*]"):
			out, rest = append(out, wildcard{}), rest[3:]
		case strings.HasPrefix(rest, ".*") && (len(rest) == 2 || rest[2] == '.' || rest[2] == '['):
			out, rest = append(out, wildcard{}), rest[2:]
		case strings.HasPrefix(rest, "['"):
			end := strings.Index(rest, "']")
			if end < 0 {
				return nil, fmt.Errorf("unclosed ['")
			}
			out, rest = append(out, rest[2:end]), rest[end+2:]
		case rest[0] == '[':
			end := strings.IndexByte(rest, ']')
			n, err := strconv.Atoi(rest[1:max(end, 1)])
			if end < 0 || err != nil || n < 0 {
				return nil, fmt.Errorf("bad index at %q", rest)
			}
			out, rest = append(out, n), rest[end+1:]
		case rest[0] == '.':
			rest = rest[1:]
			end := strings.IndexAny(rest, ".[")
			if end < 0 {
				end = len(rest)
			}
			if end == 0 {
				return nil, fmt.Errorf("empty name at %q", p)
			}
			out, rest = append(out, rest[:end]), rest[end:]
		default:
			return nil, fmt.Errorf("unexpected %q", rest)
		}
	}
	return out, nil
}

// at returns the JSON text at p in the JSON document raw, as it is there
// (the order of an object's keys kept), and whether there is one. With a
// wildcard it is the JSON array of every match (there is one, maybe
// empty).
func (p path) at(raw []byte) (json.RawMessage, bool) {
	vs := []json.RawMessage{raw}
	many := slices.ContainsFunc(p, func(step any) bool { _, w := step.(wildcard); return w })
	for _, step := range p {
		var next []json.RawMessage
		for _, v := range vs {
			switch k := step.(type) {
			case string:
				var m map[string]json.RawMessage
				if json.Unmarshal(v, &m) == nil {
					if c, ok := m[k]; ok {
						next = append(next, c)
					}
				}
			case int:
				var a []json.RawMessage
				if json.Unmarshal(v, &a) == nil && k < len(a) {
					next = append(next, a[k])
				}
			case wildcard:
				next = append(next, members(v)...)
			}
		}
		vs = next
	}
	if many {
		if vs == nil {
			vs = []json.RawMessage{}
		}
		b, _ := marshal(vs)
		return b, true
	}
	if len(vs) == 0 {
		return nil, false
	}
	return vs[0], true
}

// members returns the elements of a JSON array, or the member values of
// a JSON object in document order; nothing for other values.
func members(v json.RawMessage) []json.RawMessage {
	var a []json.RawMessage
	if json.Unmarshal(v, &a) == nil {
		return a
	}
	d := json.NewDecoder(bytes.NewReader(v))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil
	}
	var out []json.RawMessage
	for d.More() {
		if _, err := d.Token(); err != nil { // the key
			return out
		}
		var m json.RawMessage
		if d.Decode(&m) != nil {
			return out
		}
		out = append(out, m)
	}
	return out
}

// lookup returns the JSON text at a JSONPath of the event.
func lookup(raw []byte, p string) (json.RawMessage, bool) {
	pp, err := parsePath(p)
	if err != nil {
		return nil, false
	}
	return pp.at(raw)
}

// value is the JSON text v as a template value: a string's text, or the
// JSON itself.
func value(v json.RawMessage) any {
	var s string
	if len(v) > 0 && v[0] == '"' && json.Unmarshal(v, &s) == nil {
		return s
	}
	return v
}

// payload is what target t receives of an event.
func payload(t *Target, event map[string]any, raw []byte, r *Rule, ingested time.Time) string {
	switch {
	case t.Input != "":
		return t.Input
	case t.InputPath != "":
		v, _ := lookup(raw, t.InputPath)
		return string(v)
	case t.InputTransformer != nil:
		return transform(t.InputTransformer, event, raw, r, ingested)
	}
	return string(raw)
}

// transform fills an InputTemplate: a <name> inside a JSON string of the
// template gets the value's text (a string without its quotes), anywhere
// else its JSON; a path the event lacks gives "" (an empty text).
func transform(it *InputTransformer, event map[string]any, raw []byte, r *Rule, ingested time.Time) string {
	vals := map[string]any{
		"aws.events.rule-arn":             r.Arn,
		"aws.events.rule-name":            r.Name,
		"aws.events.event.ingestion-time": ingested.UTC().Format(time.RFC3339),
		"aws.events.event.json":           json.RawMessage(raw),
		"aws.events.event":                eventWithoutDetail(event),
	}
	for k, p := range it.InputPathsMap {
		vals[k] = ""
		if v, ok := lookup(raw, p); ok {
			vals[k] = value(v)
		}
	}
	var b strings.Builder
	tpl := it.InputTemplate
	inString := false
	for i := 0; i < len(tpl); i++ {
		c := tpl[i]
		switch {
		case c == '\\' && inString && i+1 < len(tpl):
			b.WriteByte(c)
			i++
			b.WriteByte(tpl[i])
			continue
		case c == '"':
			inString = !inString
		case c == '<':
			if end := strings.IndexByte(tpl[i:], '>'); end > 0 {
				if v, ok := vals[tpl[i+1:i+end]]; ok {
					b.WriteString(render(v, inString))
					i += end
					continue
				}
			}
		}
		b.WriteByte(c)
	}
	return b.String()
}

// render writes a value into a template: its JSON, or inside a string its
// text; neither HTML-escaped (see marshal).
func render(v any, inString bool) string {
	if s, ok := v.(string); ok && inString {
		q, _ := marshal(s)
		return string(q[1 : len(q)-1])
	}
	if raw, ok := v.(json.RawMessage); ok {
		return string(raw)
	}
	b, _ := marshal(v)
	if inString {
		q, _ := marshal(string(b))
		return string(q[1 : len(q)-1])
	}
	return string(b)
}

// eventWithoutDetail is <aws.events.event>: the event's metadata, without
// detail, detail-type spelled detailType (observed).
func eventWithoutDetail(event map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range event {
		switch k {
		case "detail":
		case "detail-type":
			out["detailType"] = v
		default:
			out[k] = v
		}
	}
	return out
}
