package expr

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cockroachdb/apd/v3"
)

func TestParseNumber(t *testing.T) {
	tests := []struct{ in, canonical, err string }{
		{"0", "0", ""},
		{"-0", "0", ""},
		{"0.000", "0", ""},
		{"1.50", "1.5", ""},
		{"01", "1", ""},
		{"-12.340e2", "-1234", ""},
		{"1e2", "100", ""},
		{"+7", "7", ""},
		{"12345678901234567890123456789012345678", "12345678901234567890123456789012345678", ""},
		{"1234567890123456789012345678901234567800000", "1234567890123456789012345678901234567800000", ""}, // trailing zeros are not significant
		{"0.00012345678901234567890123456789012345678", "0.00012345678901234567890123456789012345678", ""},
		{"9.9999999999999999999999999999999999999E+125", "99999999999999999999999999999999999999" + strings.Repeat("0", 88), ""},
		{"-9.9999999999999999999999999999999999999E+125", "-99999999999999999999999999999999999999" + strings.Repeat("0", 88), ""},
		{"1E-130", "0." + strings.Repeat("0", 129) + "1", ""},
		{"123456789012345678901234567890123456789", "", msgTooManyDigits},
		{"-1.23456789012345678901234567890123456789", "", msgTooManyDigits},
		{"1e126", "", msgOverflow},
		{"-1e126", "", msgOverflow},
		{"1e-131", "", msgUnderflow},
		{"-1e-131", "", msgUnderflow},
		{"", "", "The parameter cannot be converted to a numeric value"},
		{"b", "", "The parameter cannot be converted to a numeric value: b"},
		{"NaN", "", "The parameter cannot be converted to a numeric value: NaN"},
		{"Infinity", "", "The parameter cannot be converted to a numeric value: Infinity"},
		{" 1", "", "The parameter cannot be converted to a numeric value:  1"},
		{"1,5", "", "The parameter cannot be converted to a numeric value: 1,5"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := CanonicalNumber(tt.in)
			if tt.err != "" {
				wantValidation(t, err, tt.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.canonical {
				t.Fatalf("CanonicalNumber = %s, want %s", got, tt.canonical)
			}
		})
	}
}

func TestCompareEqual(t *testing.T) {
	S, N, B := events.NewStringAttribute, events.NewNumberAttribute, events.NewBinaryAttribute
	tests := []struct {
		a, b  events.DynamoDBAttributeValue
		cmp   int
		ok    bool
		equal bool
	}{
		{S("a"), S("b"), -1, true, false},
		{S("b"), S("a"), 1, true, false},
		{S("Z"), S("a"), -1, true, false}, // byte order
		{S("é"), S("z"), 1, true, false},
		{N("10"), N("9"), 1, true, false}, // numeric, not lexical
		{N("-1"), N("0.5"), -1, true, false},
		{N("1.0"), N("1"), 0, true, true},
		{N("12345678901234567890123456789012345678"), N("12345678901234567890123456789012345677"), 1, true, false},
		{B([]byte{1, 2}), B([]byte{1, 3}), -1, true, false},
		{S("1"), N("1"), 0, false, false},
		{events.NewBooleanAttribute(true), events.NewBooleanAttribute(true), 0, false, true},
		{events.NewNullAttribute(), events.NewNullAttribute(), 0, false, true},
		{events.NewStringSetAttribute([]string{"a", "b"}), events.NewStringSetAttribute([]string{"b", "a"}), 0, false, true},
		{events.NewNumberSetAttribute([]string{"1", "2"}), events.NewNumberSetAttribute([]string{"2.0", "1"}), 0, false, true},
		{events.NewNumberSetAttribute([]string{"1", "2"}), events.NewNumberSetAttribute([]string{"1"}), 0, false, false},
		{events.NewBinarySetAttribute([][]byte{{1}}), events.NewBinarySetAttribute([][]byte{{1}}), 0, false, true},
		{events.NewListAttribute([]events.DynamoDBAttributeValue{N("1"), S("a")}), events.NewListAttribute([]events.DynamoDBAttributeValue{N("1.0"), S("a")}), 0, false, true},
		{events.NewListAttribute([]events.DynamoDBAttributeValue{N("1"), S("a")}), events.NewListAttribute([]events.DynamoDBAttributeValue{S("a"), N("1")}), 0, false, false},
		{events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": N("1")}), events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": N("1")}), 0, false, true},
		{events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": N("1")}), events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"y": N("1")}), 0, false, false},
	}
	for _, tt := range tests {
		c, ok := Compare(tt.a, tt.b)
		if ok != tt.ok || ok && sign(c) != tt.cmp {
			t.Errorf("Compare(%v, %v) = %d, %v; want %d, %v", tt.a, tt.b, c, ok, tt.cmp, tt.ok)
		}
		if e := Equal(tt.a, tt.b); e != tt.equal {
			t.Errorf("Equal(%v, %v) = %v", tt.a, tt.b, e)
		}
	}
}

func TestItemSize(t *testing.T) {
	tests := []struct {
		item string
		want int
	}{
		{`{}`, 0},
		{`{"ab": {"S": "héllo"}}`, 2 + 6},
		{`{"b": {"B": "AQID"}}`, 1 + 3},
		{`{"n": {"N": "12345"}}`, 1 + 3 + 1},
		{`{"n": {"N": "1000"}}`, 1 + 1 + 1}, // trailing zeros are not significant
		{`{"n": {"N": "0"}}`, 1 + 2},
		{`{"t": {"BOOL": true}, "z": {"NULL": true}}`, 2 + 2},
		{`{"ss": {"SS": ["ab", "c"]}}`, 2 + 3},
		{`{"l": {"L": []}}`, 1 + 3},
		{`{"l": {"L": [{"S": "ab"}]}}`, 1 + 3 + 1 + 2},
		{`{"m": {"M": {"k": {"S": "ab"}}}}`, 1 + 3 + 1 + 1 + 2},
	}
	for _, tt := range tests {
		if got := ItemSize(item(t, tt.item)); got != tt.want {
			t.Errorf("ItemSize(%s) = %d, want %d", tt.item, got, tt.want)
		}
	}
}

func sign(n int) int {
	switch {
	case n < 0:
		return -1
	case n > 0:
		return 1
	}
	return 0
}

// TestPlainIntegerShortcutAgreesWithTheDecimalParse: for the strings
// PlainInteger takes, the shortcuts of CanonicalNumber and numberSize
// give what the decimal parse gives, and PlainInteger refuses every form
// the parse would change or refuse.
func TestPlainIntegerShortcutAgreesWithTheDecimalParse(t *testing.T) {
	cases := []struct {
		s     string
		plain bool
	}{
		{"0", true}, {"7", true}, {"-7", true}, {"10", true}, {"1000", true}, {"-1200", true},
		{"12345678901234567890123456789012345678", true},   // 38 digits
		{"-99999999999999999999999999999999999999", true},  // 38 digits
		{"123456789012345678901234567890123456789", false}, // 39: too many
		{"-0", false}, {"007", false}, {"00", false}, {"+1", false}, {"1.0", false}, {"1e2", false},
		{"", false}, {"-", false}, {" 1", false}, {"1 ", false}, {"1a", false}, {"NaN", false},
	}
	for _, c := range cases {
		if got := PlainInteger(c.s); got != c.plain {
			t.Errorf("PlainInteger(%q) = %v, want %v", c.s, got, c.plain)
		}
		if !c.plain {
			continue
		}
		d, err := ParseNumber(c.s)
		if err != nil {
			t.Fatalf("ParseNumber(%q): %v", c.s, err)
		}
		if got := FormatNumber(d); got != c.s {
			t.Errorf("%q is canonical as %q", c.s, got)
		}
		if got, _ := CanonicalNumber(c.s); got != c.s {
			t.Errorf("CanonicalNumber(%q) = %q", c.s, got)
		}
		var r apd.Decimal
		r.Reduce(d)
		want := 2
		if !d.IsZero() {
			want = (int(r.NumDigits())+1)/2 + 1
		}
		if got := numberSize(c.s); got != want {
			t.Errorf("numberSize(%q) = %d, the decimal parse gives %d", c.s, got, want)
		}
	}
}

// TestCompareOfPlainIntegersAgreesWithTheDecimalParse: cmpNumbers'
// shortcut for two PlainInteger strings orders them as apd does.
func TestCompareOfPlainIntegersAgreesWithTheDecimalParse(t *testing.T) {
	nums := []string{"0", "1", "-1", "9", "10", "-10", "99", "100", "-99", "-100", "12345678901234567890123456789012345678",
		"-12345678901234567890123456789012345678", "12345678901234567890123456789012345677", "20", "19", "-19", "-20"}
	for _, a := range nums {
		for _, b := range nums {
			x, _, _ := apd.NewFromString(a)
			y, _, _ := apd.NewFromString(b)
			if got, ok := cmpNumbers(a, b); !ok || got != x.Cmp(y) {
				t.Errorf("cmpNumbers(%s, %s) = %d, %v; apd says %d", a, b, got, ok, x.Cmp(y))
			}
		}
	}
}

// TestAddOfPlainIntegersAgreesWithTheDecimalSum: addNumbers' int64
// shortcut gives the canonical sums and differences the decimal path
// gives, up to 18 characters a side and past them.
func TestAddOfPlainIntegersAgreesWithTheDecimalSum(t *testing.T) {
	nums := []string{"0", "1", "-1", "7", "-7", "10", "-10", "999999999999999999", "-99999999999999999", "1000000000000000000", "123456789012345678901234567890"}
	for _, a := range nums {
		for _, b := range nums {
			for _, neg := range []bool{false, true} {
				x, _, _ := apd.NewFromString(a)
				y, _, _ := apd.NewFromString(b)
				var z apd.Decimal
				if neg {
					exact.Sub(&z, x, y)
				} else {
					exact.Add(&z, x, y)
				}
				if got, err := addNumbers(a, b, neg); err != nil || got != FormatNumber(&z) {
					t.Errorf("addNumbers(%s, %s, %v) = %q, %v; want %s", a, b, neg, got, err, FormatNumber(&z))
				}
			}
		}
	}
}

// TestPlainDecimalAgreesWithTheFullParse: the shortcut for "digits.digits"
// gives the canonical text and size that the decimal parse gives, for
// every form it accepts, and refuses the forms it does not know.
func TestPlainDecimalAgreesWithTheFullParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	digits := func(n int, zeros bool) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
			if zeros && rng.IntN(3) == 0 {
				b[i] = '0'
			}
		}
		return string(b)
	}
	cases := []string{"0.0", "-0.0", "00.000", "1.0", "10.50", "-0.0125", "123.45", "0.1", "007.700", "-100.000",
		"1" + strings.Repeat("0", 20) + "." + strings.Repeat("9", 17)}
	for range 20000 {
		ip, fp := digits(1+rng.IntN(20), true), digits(1+rng.IntN(18), true)
		s := ip + "." + fp
		if rng.IntN(2) == 0 {
			s = "-" + s
		}
		cases = append(cases, s)
	}
	for _, s := range cases {
		canon, sig, ok := plainDecimal(s)
		if !ok {
			t.Fatalf("%q: not taken by the shortcut", s)
		}
		d, err := ParseNumber(s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if want := FormatNumber(d); canon != want {
			t.Fatalf("%q: canonical %q, the full parse says %q", s, canon, want)
		}
		var r apd.Decimal
		r.Reduce(d)
		want := int(r.NumDigits())
		if d.IsZero() {
			want = 0
		}
		if sig != want {
			t.Fatalf("%q: %d significant digits, the full parse says %d", s, sig, want)
		}
	}
	for _, s := range []string{"1", "1.", ".5", "-.5", "+1.5", "1.5e3", "1..5", "1.5.", " 1.5", "1.5 ", "-", "", "--1.5", "1,5",
		"1." + strings.Repeat("1", maxDigits)} {
		if _, _, ok := plainDecimal(s); ok {
			t.Errorf("%q: taken by the shortcut", s)
		}
	}
}
