package flights

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"unicode/utf16"
	"unicode/utf8"
)

// AppendJSON appends f as one compact JSON object to dst and returns the
// extended slice:
//
//	{"date":"2001/01/01 00:47","delay":66,"distance":1750,"origin":"DTW","destination":"LAS"}
//
// The date is f.Date formatted as "YYYY/MM/DD HH:MM" (wall clock, read as
// UTC), truncated to the minute. Strings are escaped as JSON requires
// (invalid UTF-8 becomes U+FFFD). ParseJSON gives back the same Flight for
// whole-minute dates in years 0000-9999 and valid UTF-8 strings, which
// covers every row of the data set. The output is byte-for-byte the format
// of vega-datasets' flights-20k.json. It does not allocate when dst has
// room (about 90 bytes per record).
func (f *Flight) AppendJSON(dst []byte) []byte {
	return f.appendJSON(dst, false)
}

// AppendJSONPoison is AppendJSON with the demo's poison marker added as the
// last member: {...,"destination":"LAS","poison":true}. ParseJSON reports it.
func (f *Flight) AppendJSONPoison(dst []byte) []byte {
	return f.appendJSON(dst, true)
}

func (f *Flight) appendJSON(dst []byte, poison bool) []byte {
	dst = append(dst, `{"date":"`...)
	dst = appendDate(dst, f.Date)
	dst = append(dst, `","delay":`...)
	dst = strconv.AppendInt(dst, f.Delay, 10)
	dst = append(dst, `,"distance":`...)
	dst = strconv.AppendInt(dst, f.Distance, 10)
	dst = append(dst, `,"origin":`...)
	dst = appendString(dst, f.Origin)
	dst = append(dst, `,"destination":`...)
	dst = appendString(dst, f.Destination)
	if poison {
		return append(dst, `,"poison":true}`...)
	}
	return append(dst, '}')
}

const (
	microsPerMinute = 60_000_000
	minutesPerDay   = 24 * 60
)

// appendDate appends micros as "YYYY/MM/DD HH:MM".
func appendDate(dst []byte, micros int64) []byte {
	minutes := floorDiv(micros, microsPerMinute)
	days := floorDiv(minutes, minutesPerDay)
	mod := minutes - days*minutesPerDay
	y, m, d := civilFromDays(days)
	if y >= 0 && y <= 9999 {
		dst = append(dst, byte('0'+y/1000), byte('0'+y/100%10), byte('0'+y/10%10), byte('0'+y%10))
	} else {
		dst = strconv.AppendInt(dst, y, 10)
	}
	h, mi := mod/60, mod%60
	return append(dst, '/', byte('0'+m/10), byte('0'+m%10), '/', byte('0'+d/10), byte('0'+d%10),
		' ', byte('0'+h/10), byte('0'+h%10), ':', byte('0'+mi/10), byte('0'+mi%10))
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// civilFromDays converts days since 1970-01-01 to a proleptic Gregorian
// date (H. Hinnant's algorithm).
func civilFromDays(z int64) (y, m, d int64) {
	z += 719468
	era := floorDiv(z, 146097)
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civilFromDays.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := floorDiv(y, 400)
	yoe := y - era*400
	mp := m - 3
	if m <= 2 {
		mp = m + 9
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a quoted JSON string.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
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
		if r == '\u2028' || r == '\u2029' { // as encoding/json: safe in JavaScript
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// ErrSyntax is wrapped by every error ParseJSON returns.
var ErrSyntax = errors.New("flights: bad flight JSON")

// maxDepth bounds the nesting of unknown members ParseJSON skips.
const maxDepth = 64

// ParseJSON decodes one flight object as written by AppendJSON or found in
// flights-20k.json. Members may come in any order, with any JSON
// whitespace; unknown members are skipped; for repeated members the last one
// wins. All five fields must be present: "date" as a "YYYY/MM/DD HH:MM"
// string (a valid calendar date and time, read as UTC), "delay" and
// "distance" as JSON integers that fit an int64 (no fraction or exponent),
// "origin" and "destination" as strings. The optional "poison" member
// (true, false or null) is returned as poison. Member names are matched
// exactly (unlike encoding/json, which ignores case).
//
// Unknown members may nest up to 64 levels.
//
// Errors wrap ErrSyntax. ParseJSON does not keep b, is safe for concurrent
// use, and does not allocate for records with three-letter upper-case
// airport codes (the strings are shared).
func ParseJSON(b []byte) (f Flight, poison bool, err error) {
	p := parser{b: b}
	f, poison, err = p.flight()
	if err != nil {
		return Flight{}, false, err
	}
	return f, poison, nil
}

type parser struct {
	b   []byte
	i   int
	buf []byte // scratch for unescaping
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: offset %d: %s", ErrSyntax, p.i, fmt.Sprintf(format, args...))
}

func (p *parser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *parser) expect(c byte) error {
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return nil
	}
	if p.i >= len(p.b) {
		return p.errorf("unexpected end, want %q", c)
	}
	return p.errorf("unexpected %q, want %q", p.b[p.i], c)
}

const (
	seenDate = 1 << iota
	seenDelay
	seenDistance
	seenOrigin
	seenDestination
	seenAll = seenDate | seenDelay | seenDistance | seenOrigin | seenDestination
)

func (p *parser) flight() (f Flight, poison bool, err error) {
	if err = p.expect('{'); err != nil {
		return
	}
	seen := 0
	p.ws()
	if p.i < len(p.b) && p.b[p.i] == '}' {
		p.i++
	} else {
		for {
			p.ws()
			var key []byte
			if key, err = p.str(); err != nil {
				return
			}
			if err = p.expect(':'); err != nil {
				return
			}
			p.ws()
			switch string(key) {
			case "date":
				var s []byte
				if s, err = p.str(); err != nil {
					return
				}
				if f.Date, err = parseDate(s); err != nil {
					err = p.errorf("date %q: %v", s, err)
					return
				}
				seen |= seenDate
			case "delay":
				if f.Delay, err = p.int(); err != nil {
					return
				}
				seen |= seenDelay
			case "distance":
				if f.Distance, err = p.int(); err != nil {
					return
				}
				seen |= seenDistance
			case "origin":
				var s []byte
				if s, err = p.str(); err != nil {
					return
				}
				f.Origin = intern(s)
				seen |= seenOrigin
			case "destination":
				var s []byte
				if s, err = p.str(); err != nil {
					return
				}
				f.Destination = intern(s)
				seen |= seenDestination
			case "poison":
				if poison, err = p.boolOrNull(); err != nil {
					return
				}
			default:
				if err = p.skip(0); err != nil {
					return
				}
			}
			p.ws()
			if p.i >= len(p.b) {
				err = p.errorf("unexpected end in object")
				return
			}
			c := p.b[p.i]
			p.i++
			if c == '}' {
				break
			}
			if c != ',' {
				p.i--
				err = p.errorf("unexpected %q in object", c)
				return
			}
		}
	}
	p.ws()
	if p.i != len(p.b) {
		err = p.errorf("trailing data after object")
		return
	}
	if seen != seenAll {
		for bit, name := range []string{"date", "delay", "distance", "origin", "destination"} {
			if seen&(1<<bit) == 0 {
				err = p.errorf("missing %q", name)
				return
			}
		}
	}
	return f, poison, nil
}

// str parses a JSON string at p.i. The result aliases p.b when the string
// holds no escape and is valid UTF-8, else p.buf; it is only valid until the
// next call.
func (p *parser) str() ([]byte, error) {
	if p.i >= len(p.b) || p.b[p.i] != '"' {
		return nil, p.errorf("want string")
	}
	p.i++
	start, i := p.i, p.i
	for i < len(p.b) && plain[p.b[i]] {
		i++
	}
	p.i = i
	if i < len(p.b) && p.b[i] == '"' {
		p.i++
		return p.b[start:i], nil
	}
	return p.strSlow(start)
}

// plain marks the bytes a JSON string holds as themselves: not '"', '\\',
// a control character or part of a multi-byte UTF-8 sequence.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// strSlow finishes a string that needs unescaping or UTF-8 repair, decoding
// as encoding/json does (invalid UTF-8 and lone surrogates become U+FFFD).
func (p *parser) strSlow(start int) ([]byte, error) {
	buf := append(p.buf[:0], p.b[start:p.i]...)
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			p.i++
			p.buf = buf
			return buf, nil
		case c < 0x20:
			return nil, p.errorf("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(p.b[p.i:])
			if r == utf8.RuneError && size == 1 {
				buf = utf8.AppendRune(buf, utf8.RuneError)
			} else {
				buf = append(buf, p.b[p.i:p.i+size]...)
			}
			p.i += size
		case c != '\\':
			buf = append(buf, c)
			p.i++
		default:
			p.i++
			if p.i >= len(p.b) {
				return nil, p.errorf("unterminated string")
			}
			e := p.b[p.i]
			p.i++
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := p.hex4()
				if !ok {
					return nil, p.errorf("bad \\u escape")
				}
				if utf16.IsSurrogate(r) {
					// As encoding/json: a valid pair is one rune, anything
					// else is U+FFFD and the next escape is left alone.
					r2 := rune(-1)
					if p.i+6 <= len(p.b) && p.b[p.i] == '\\' && p.b[p.i+1] == 'u' {
						save := p.i
						p.i += 2
						if x, ok := p.hex4(); ok {
							r2 = x
						}
						p.i = save
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						r = dec
						p.i += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return nil, p.errorf("bad escape \\%c", e)
			}
		}
	}
	return nil, p.errorf("unterminated string")
}

func (p *parser) hex4() (rune, bool) {
	if p.i+4 > len(p.b) {
		return 0, false
	}
	var r rune
	for _, c := range p.b[p.i : p.i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}

// int parses a JSON number at p.i that must be an integer fitting an int64.
func (p *parser) int() (int64, error) {
	i := p.i
	neg := i < len(p.b) && p.b[i] == '-'
	if neg {
		i++
	}
	if i >= len(p.b) || p.b[i] < '0' || p.b[i] > '9' {
		return 0, p.errorf("want integer")
	}
	var u uint64
	digits := 0
	if p.b[i] == '0' {
		i++
	} else {
		for ; i < len(p.b) && p.b[i] >= '0' && p.b[i] <= '9'; i++ {
			u = u*10 + uint64(p.b[i]-'0')
			digits++
			if digits > 19 { // > 19 digits without a leading zero: > MaxInt64
				return 0, p.errorf("integer overflows int64")
			}
		}
	}
	if i < len(p.b) && (p.b[i] == '.' || p.b[i] == 'e' || p.b[i] == 'E') {
		return 0, p.errorf("want integer, not a fraction or exponent")
	}
	p.i = i
	if neg {
		if u > 1<<63 {
			return 0, p.errorf("integer overflows int64")
		}
		return int64(-u), nil // -(1<<63) wraps to MinInt64
	}
	if u > math.MaxInt64 {
		return 0, p.errorf("integer overflows int64")
	}
	return int64(u), nil
}

func (p *parser) literal(lit string) bool {
	if len(p.b)-p.i >= len(lit) && string(p.b[p.i:p.i+len(lit)]) == lit {
		p.i += len(lit)
		return true
	}
	return false
}

func (p *parser) boolOrNull() (bool, error) {
	switch {
	case p.literal("true"):
		return true, nil
	case p.literal("false"), p.literal("null"):
		return false, nil
	}
	return false, p.errorf("want true, false or null")
}

// skip parses and discards any JSON value at p.i.
func (p *parser) skip(depth int) error {
	if p.i >= len(p.b) {
		return p.errorf("unexpected end, want value")
	}
	switch c := p.b[p.i]; {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{' || c == '[':
		if depth >= maxDepth {
			return p.errorf("nesting deeper than %d", maxDepth)
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		p.i++
		p.ws()
		if p.i < len(p.b) && p.b[p.i] == end {
			p.i++
			return nil
		}
		for {
			p.ws()
			if c == '{' {
				if _, err := p.str(); err != nil {
					return err
				}
				if err := p.expect(':'); err != nil {
					return err
				}
				p.ws()
			}
			if err := p.skip(depth + 1); err != nil {
				return err
			}
			p.ws()
			if p.i >= len(p.b) {
				return p.errorf("unexpected end")
			}
			switch p.b[p.i] {
			case ',':
				p.i++
			case end:
				p.i++
				return nil
			default:
				return p.errorf("unexpected %q", p.b[p.i])
			}
		}
	case c == 't' || c == 'f' || c == 'n':
		if p.literal("true") || p.literal("false") || p.literal("null") {
			return nil
		}
		return p.errorf("bad literal")
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return p.errorf("unexpected %q, want value", p.b[p.i])
}

// number parses any JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *parser) number() error {
	b, i := p.b, p.i
	digits := func() bool {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > s
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return p.errorf("bad number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return p.errorf("bad number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return p.errorf("bad number")
		}
	}
	p.i = i
	return nil
}

// parseDate parses "YYYY/MM/DD HH:MM" into microseconds since the epoch.
func parseDate(s []byte) (int64, error) {
	if len(s) != 16 || s[4] != '/' || s[7] != '/' || s[10] != ' ' || s[13] != ':' {
		return 0, errors.New(`want "YYYY/MM/DD HH:MM"`)
	}
	var bad byte
	num := func(s []byte) int64 {
		var n int64
		for _, c := range s {
			d := c - '0'
			bad |= d / 10 // non-zero unless 0 <= d <= 9 (byte arithmetic wraps)
			n = n*10 + int64(d)
		}
		return n
	}
	y, m, d, h, mi := num(s[0:4]), num(s[5:7]), num(s[8:10]), num(s[11:13]), num(s[14:16])
	if bad != 0 {
		return 0, errors.New(`want "YYYY/MM/DD HH:MM"`)
	}
	if m < 1 || m > 12 || d < 1 || d > daysIn(y, m) || h > 23 || mi > 59 {
		return 0, errors.New("date or time out of range")
	}
	return ((daysFromCivil(y, m, d)*minutesPerDay + h*60 + mi) * microsPerMinute), nil
}

func daysIn(y, m int64) int64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// codes holds one string per three-letter upper-case code seen, so that
// parsing airport codes does not allocate. Slots are filled at most once,
// atomically, so ParseJSON stays safe for concurrent use.
var codes [26 * 26 * 26]atomic.Pointer[string]

// intern returns s as a string, shared for three-letter upper-case codes.
func intern(s []byte) string {
	if len(s) == 3 {
		a, b, c := s[0]-'A', s[1]-'A', s[2]-'A' // wrap around below 'A'
		if a < 26 && b < 26 && c < 26 {
			slot := &codes[(int(a)*26+int(b))*26+int(c)]
			if p := slot.Load(); p != nil {
				return *p
			}
			str := string(s)
			if !slot.CompareAndSwap(nil, &str) {
				return *slot.Load()
			}
			return str
		}
	}
	return string(s)
}
