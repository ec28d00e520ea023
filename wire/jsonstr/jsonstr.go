// Package jsonstr appends Go strings to a byte slice as JSON strings,
// byte for byte as encoding/json writes them, without reflection or an
// allocation when the slice has room.
//
// Two forms exist because encoding/json has two:
//   - Append is json.Marshal's: '<', '>' and '&' become \u003c, \u003e
//     and \u0026, so the output is safe inside HTML. Every AWS wire answer
//     runnel writes uses it, since the SDKs' own json.Marshal does.
//   - AppendNoHTML is a json.Encoder's after SetEscapeHTML(false): those
//     three bytes are written as they are. Data files (the flights demo's
//     JSON lines) use it.
//
// Both write '"' and '\\' escaped; \b, \f, \n, \r and \t in their short
// forms; any other byte below 0x20 as \u00XX; invalid UTF-8 as \ufffd, one
// per bad byte; and U+2028 and U+2029 as \u2028 and \u2029 (JSON allows
// them raw, JavaScript before ES2019 did not).
package jsonstr

import "unicode/utf8"

const hex = "0123456789abcdef"

// safeHTML[b] and safeRaw[b] report whether the ASCII byte b is written as
// it is by Append and AppendNoHTML.
var safeHTML, safeRaw [utf8.RuneSelf]bool

func init() {
	for b := 0x20; b < utf8.RuneSelf; b++ {
		safe := b != '"' && b != '\\'
		safeRaw[b] = safe
		safeHTML[b] = safe && b != '<' && b != '>' && b != '&'
	}
}

// Append appends s to dst as a quoted JSON string, as json.Marshal writes
// it (HTML characters escaped), and returns the extended slice.
func Append(dst []byte, s string) []byte { return appendString(dst, s, &safeHTML) }

// AppendNoHTML is Append without the HTML escapes: what a json.Encoder
// writes after SetEscapeHTML(false).
func AppendNoHTML(dst []byte, s string) []byte { return appendString(dst, s, &safeRaw) }

func appendString(dst []byte, s string, safe *[utf8.RuneSelf]bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if safe[b] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// Len is len(Append(nil, string(s))): the bytes s takes as a quoted JSON
// string, HTML characters escaped, counted without writing it.
func Len[T ~string | ~[]byte](s T) int {
	n := 2
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			switch {
			case safeHTML[b]:
				n++
			case b == '\\' || b == '"' || b == '\b' || b == '\f' || b == '\n' || b == '\r' || b == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		var r rune
		var size int
		switch v := any(s).(type) {
		case string:
			r, size = utf8.DecodeRuneInString(v[i:])
		case []byte:
			r, size = utf8.DecodeRune(v[i:])
		default:
			r, size = utf8.DecodeRuneInString(string(s[i:]))
		}
		switch {
		case r == utf8.RuneError && size == 1:
			n += 6
		case r == '\u2028' || r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
