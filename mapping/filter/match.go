package filter

import (
	"encoding/json"
	"errors"
	"net/netip"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// node is a compiled pattern object: every field must match (AND).
type node struct {
	fields []field
	// ors are the $or groups (EventBridge): each needs one of its
	// alternatives to match.
	ors      [][]*node
	absentOK bool // matches when the object is missing (every leaf has exists:false)
	// dots: field names join with "." (EventBridge, Lambda; see paths.go).
	dots bool
}

// field is one key of a pattern object: either a nested object or a leaf.
type field struct {
	key   string
	child *node
	leaf  *leaf
}

// leaf is a compiled array of alternatives (OR).
type leaf struct {
	alts        []alt
	existsTrue  bool
	existsFalse bool
	// nonEmpty: exists:true needs a value other than null and "" (SNS's
	// filter policies, CompileSNSFilterPolicy).
	nonEmpty bool
}

// CompileSNSFilterPolicy is CompileFilterPolicy with SNS's exists:true:
// "Use "exists": true to match incoming messages that include the
// specified property. The key must have a non-null and non-empty value"
// (SNS's attribute-key-matching.html), so a key whose value is null or ""
// (or an array of only such values) does not match it. EventBridge's and
// Lambda's exists:true (Compile, CompileEventPattern) match any leaf
// value, null and "" included, and are left so.
func CompileSNSFilterPolicy(src string) (*Matcher, error) {
	m, err := CompileFilterPolicy(src)
	if err != nil {
		return nil, err
	}
	for _, f := range m.filters {
		f.root.requireNonEmpty()
	}
	return m, nil
}

// requireNonEmpty marks every exists:true leaf under n as SNS's.
func (n *node) requireNonEmpty() {
	for i := range n.fields {
		if fd := &n.fields[i]; fd.leaf != nil {
			fd.leaf.nonEmpty = true
		} else if fd.child != nil {
			fd.child.requireNonEmpty()
		}
	}
	for _, or := range n.ors {
		for _, alt := range or {
			alt.requireNonEmpty()
		}
	}
}

type opKind uint8

const (
	opString opKind = iota
	opNumber
	opBool
	opNull
	opPrefix
	opPrefixFold
	opSuffix
	opSuffixFold
	opEqualsFold
	opWildcard
	opNumeric
	opExists
	opAnythingBut
	opCIDR
)

// alt is one alternative of a leaf.
type alt struct {
	op   opKind
	b    bool     // opBool value, opExists value
	str  string   // opString, prefix/suffix/equals-ignore-case operand
	num  float64  // opNumber
	segs []string // opWildcard segments
	// opNumeric: lo (<|<=) x (<|<=) hi (x == lo when lo == hi), for an
	// x in the service's numeric domain: |x| <= numMax with at most
	// numScale digits after the decimal point (numScale < 0: any).
	lo, hi         float64
	loIncl, hiIncl bool
	numMax         float64
	numScale       int
	not            []alt // opAnythingBut: matches when none of these match
	cidr           netip.Prefix
}

// Match reports whether event passes the criteria: true if m has no
// filters, else true if any filter matches. event is the record as a JSON
// object, with values as encoding/json decodes them into any
// (map[string]any, []any, string, float64, bool, nil); json.Number and Go
// integer types are accepted as numbers too.
//
// A top-level value of type json.RawMessage (typically the Kinesis data or
// SQS body) is decoded with encoding/json at most once per call, and only
// if a filter references its key; if it is not valid JSON, the filters that
// reference that key do not match, as Lambda drops such records for data
// patterns. It is decoded exactly as MatchKinesis decodes record data.
func (m *Matcher) Match(event map[string]any) bool {
	if m.Empty() {
		return true
	}
	var raw rawCache
	for _, f := range m.filters {
		if f.matchEvent(event, &raw) {
			return true
		}
	}
	return false
}

// rawCache holds the decoded top-level json.RawMessage values of one Match
// call.
type rawCache struct {
	keys []string
	vals []any
	oks  []bool
}

func (c *rawCache) get(key string, raw json.RawMessage) (any, bool) {
	for i, k := range c.keys {
		if k == key {
			return c.vals[i], c.oks[i]
		}
	}
	v, ok := decodeJSON(raw)
	c.keys = append(c.keys, key)
	c.vals = append(c.vals, v)
	c.oks = append(c.oks, ok)
	return v, ok
}

func (f *compiled) matchEvent(event map[string]any, raw *rawCache) bool {
	if !f.root.matchOrs(event, scope{}) {
		return false
	}
	for i := range f.root.fields {
		fd := &f.root.fields[i]
		v, present := lookup(event, fd.key, f.root.dots && fd.child != nil)
		if r, isRaw := v.(json.RawMessage); isRaw {
			var ok bool
			if v, ok = raw.get(fd.key, r); !ok {
				return false
			}
		}
		if !fd.match(v, present, scope{}) {
			return false
		}
	}
	return true
}

// MatchKinesis reports whether a Kinesis record passes the criteria, with
// the pattern's top-level keys bound to data (the record data), partitionKey
// and sequenceNumber; other top-level keys (approximateArrivalTimestamp,
// kinesisSchemaVersion, encryptionType...) are treated as absent here: use
// Match with a full event to filter on them.
//
// It returns true at once when m has no filters. data is decoded with
// encoding/json only if some filter references "data", at most once per
// call, and only after the filters that do not reference it have failed; so
// a Matcher without data patterns never parses (or allocates for) data. If
// data is not valid JSON, the filters that reference "data" do not match
// (Lambda drops the record for them); the others are still evaluated.
func (m *Matcher) MatchKinesis(partitionKey, sequenceNumber string, data []byte) bool {
	if m.Empty() {
		return true
	}
	for _, f := range m.filters {
		if !f.refsData && f.matchKinesis(partitionKey, sequenceNumber, nil) {
			return true
		}
	}
	if !m.refsData {
		return false
	}
	v, ok := decodeJSON(data)
	if !ok {
		return false
	}
	for _, f := range m.filters {
		if f.refsData && f.matchKinesis(partitionKey, sequenceNumber, v) {
			return true
		}
	}
	return false
}

func (f *compiled) matchKinesis(partitionKey, sequenceNumber string, data any) bool {
	for i := range f.root.fields {
		fd := &f.root.fields[i]
		var ok bool
		switch fd.key {
		case "data":
			ok = fd.match(data, true, scope{})
		case "partitionKey":
			ok = fd.matchString(partitionKey)
		case "sequenceNumber":
			ok = fd.matchString(sequenceNumber)
		default:
			ok = fd.match(nil, false, scope{})
		}
		if !ok {
			return false
		}
	}
	return true
}

// match matches the field's pattern against v (present says whether the
// key exists at all) in scope sc.
func (fd *field) match(v any, present bool, sc scope) bool {
	if fd.child != nil {
		if !present {
			return fd.child.matchMissing(sc.down(fd.key))
		}
		return fd.child.match(v, sc.down(fd.key))
	}
	return fd.leaf.match(v, present, sc, fd.key)
}

// matchString is match for a present string value, without boxing it.
func (fd *field) matchString(s string) bool {
	if fd.child != nil {
		return fd.child.absentOK // a string has no sub-fields
	}
	l := fd.leaf
	if l.existsTrue && (!l.nonEmpty || s != "") {
		return true
	}
	for i := range l.alts {
		if l.alts[i].matchString(s) {
			return true
		}
	}
	return false
}

// match matches an object pattern against a present value in scope sc.
// An array matches if one of its object elements matches the whole
// pattern, except that exists:false looks at every element (scope); a
// value without sub-fields (a scalar, an empty array) behaves as a
// missing object.
func (n *node) match(v any, sc scope) bool {
	switch x := v.(type) {
	case map[string]any:
		for i := range n.fields {
			fd := &n.fields[i]
			cv, ok := lookup(x, fd.key, n.dots && fd.child != nil)
			if !fd.match(cv, ok, sc) {
				return false
			}
		}
		return n.matchOrs(x, sc)
	case []any:
		inner := sc
		if inner.arr == nil {
			inner = scope{arr: x, dots: n.dots}
		}
		containers := false
		for _, e := range x {
			switch e.(type) {
			case map[string]any, []any:
				containers = true
				if n.match(e, inner) {
					return true
				}
			}
		}
		if containers {
			return false
		}
	}
	return n.matchMissing(sc)
}

// match matches a leaf, the value of key, against v in scope sc; present
// says whether the key exists. exists:false needs no leaf value here nor,
// inside an array, in any other element.
func (l *leaf) match(v any, present bool, sc scope, key string) bool {
	if !present {
		return l.existsFalse && !sc.has(key)
	}
	if l.existsTrue || l.existsFalse {
		has := hasLeafValue(v)
		if (l.existsTrue && has && (!l.nonEmpty || hasNonEmptyLeafValue(v))) || (l.existsFalse && !has && !sc.has(key)) {
			return true
		}
	}
	for i := range l.alts {
		if l.alts[i].matchValue(v) {
			return true
		}
	}
	return false
}

// hasLeafValue reports whether v is, or is an array holding, a leaf value
// (anything but an object). EventBridge's exists only sees leaves.
func hasLeafValue(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return false
	case []any:
		for _, e := range x {
			if hasLeafValue(e) {
				return true
			}
		}
		return false
	}
	return true
}

// hasNonEmptyLeafValue reports whether v is, or is an array holding, a
// leaf value other than null and "" (SNS's exists:true).
func hasNonEmptyLeafValue(v any) bool {
	switch x := v.(type) {
	case nil, map[string]any:
		return false
	case string:
		return x != ""
	case []any:
		for _, e := range x {
			if hasNonEmptyLeafValue(e) {
				return true
			}
		}
		return false
	}
	return true
}

// matchValue matches one alternative against a present value; an array
// matches if any element does, an object never matches a leaf.
func (a *alt) matchValue(v any) bool {
	switch x := v.(type) {
	case string:
		return a.matchString(x)
	case nil:
		return a.op == opNull || (a.op == opAnythingBut && !anyMatch(a.not, v))
	case bool:
		return (a.op == opBool && a.b == x) || (a.op == opAnythingBut && !anyMatch(a.not, v))
	case []any:
		for _, e := range x {
			if a.matchValue(e) {
				return true
			}
		}
		return false
	case map[string]any:
		return false
	}
	if f, ok := toFloat(v); ok {
		if a.op == opNumeric && !a.inNumericDomain(v, f) {
			return false
		}
		return a.matchNumber(f)
	}
	return false
}

func anyMatch(alts []alt, v any) bool {
	for i := range alts {
		if alts[i].matchValue(v) {
			return true
		}
	}
	return false
}

func (a *alt) matchString(s string) bool {
	switch a.op {
	case opString:
		return s == a.str
	case opPrefix:
		return strings.HasPrefix(s, a.str)
	case opSuffix:
		return strings.HasSuffix(s, a.str)
	case opPrefixFold:
		return hasPrefixFold(s, a.str)
	case opSuffixFold:
		return hasSuffixFold(s, a.str)
	case opEqualsFold:
		return strings.EqualFold(s, a.str)
	case opWildcard:
		return matchWildcard(a.segs, s)
	case opCIDR:
		ip, err := netip.ParseAddr(s)
		return err == nil && a.cidr.Contains(ip.Unmap())
	case opAnythingBut:
		for i := range a.not {
			if a.not[i].matchString(s) {
				return false
			}
		}
		return true
	}
	return false
}

func (a *alt) matchNumber(f float64) bool {
	switch a.op {
	case opNumber:
		return f == a.num
	case opNumeric:
		return (f > a.lo || a.loIncl && f == a.lo) && (f < a.hi || a.hiIncl && f == a.hi)
	case opAnythingBut:
		for i := range a.not {
			if a.not[i].matchNumber(f) {
				return false
			}
		}
		return true
	}
	return false
}

func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case json.Number:
		// A valid JSON number out of float64's range is ±Inf (ErrRange),
		// as the numbers of decoded record data compare.
		f, err := strconv.ParseFloat(string(x), 64)
		return f, err == nil || errors.Is(err, strconv.ErrRange)
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case int16:
		return float64(x), true
	case int8:
		return float64(x), true
	case uint:
		return float64(x), true
	case uint64:
		return float64(x), true
	case uint32:
		return float64(x), true
	case uint16:
		return float64(x), true
	case uint8:
		return float64(x), true
	}
	return 0, false
}

// matchWildcard reports whether s matches segs, the literal pieces of a
// wildcard pattern between its '*'s.
func matchWildcard(segs []string, s string) bool {
	if len(segs) == 1 {
		return s == segs[0]
	}
	first, last := segs[0], segs[len(segs)-1]
	if len(s) < len(first)+len(last) || !strings.HasPrefix(s, first) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[len(first) : len(s)-len(last)]
	for _, seg := range segs[1 : len(segs)-1] {
		i := strings.Index(s, seg)
		if i < 0 {
			return false
		}
		s = s[i+len(seg):]
	}
	return true
}

// hasPrefixFold is strings.HasPrefix under Unicode simple case folding.
func hasPrefixFold(s, prefix string) bool { return hasEndFold(s, prefix, false) }

// hasSuffixFold is strings.HasSuffix under Unicode simple case folding.
func hasSuffixFold(s, suffix string) bool { return hasEndFold(s, suffix, true) }

// hasEndFold reports whether s starts with end (ends with it when last),
// under Unicode simple case folding, comparing rune by rune from that end.
func hasEndFold(s, end string, last bool) bool {
	decode := utf8.DecodeRuneInString
	if last {
		decode = utf8.DecodeLastRuneInString
	}
	for end != "" {
		if s == "" {
			return false
		}
		er, en := decode(end)
		sr, sn := decode(s)
		if !equalFoldRune(er, sr) {
			return false
		}
		if last {
			end, s = end[:len(end)-en], s[:len(s)-sn]
		} else {
			end, s = end[en:], s[sn:]
		}
	}
	return true
}

func equalFoldRune(a, b rune) bool {
	if a == b {
		return true
	}
	if a < utf8.RuneSelf && b < utf8.RuneSelf {
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		return a == b
	}
	for r := unicode.SimpleFold(a); r != a; r = unicode.SimpleFold(r) {
		if r == b {
			return true
		}
	}
	return false
}
