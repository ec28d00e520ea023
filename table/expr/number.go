package expr

import (
	"strconv"
	"strings"

	"github.com/cockroachdb/apd/v3"
)

// DynamoDB's number limits
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html#HowItWorks.DataTypes.Number):
// up to 38 significant digits, positive magnitudes from 1E-130 to
// 9.9999999999999999999999999999999999999E+125, the same negative, and zero.
const (
	maxDigits      = 38
	maxAdjExponent = 125  // 9.99...E+125
	minAdjExponent = -130 // 1E-130

	msgTooManyDigits = "Attempting to store more than 38 significant digits in a Number"
	msgOverflow      = "Number overflow. Attempting to store a number with magnitude larger than supported range"
	msgUnderflow     = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
)

// exact is the context of number arithmetic: wide enough that the sum or
// difference of two valid numbers (at most 38 digits, exponents from -130
// to 125) is exact, so the result is checked against DynamoDB's limits
// instead of being rounded to 38 digits silently.
var exact = apd.Context{
	Precision:   400,
	MaxExponent: apd.MaxExponent,
	MinExponent: apd.MinExponent,
	Traps:       apd.DefaultTraps,
}

// ParseNumber parses a DynamoDB number (the "N" string of an attribute value,
// or one element of an "NS") and checks DynamoDB's rules. Accepted forms are
// decimal with an optional sign, fraction and exponent ("12", "-1.5",
// "1e5", "0.000"); NaN, infinities and surrounding spaces are not numbers.
//
// Errors (*ValidationError), as DynamoDB words them:
//   - "The parameter cannot be converted to a numeric value" (empty) or
//     "The parameter cannot be converted to a numeric value: abc";
//   - "Attempting to store more than 38 significant digits in a Number"
//     (leading and trailing zeros do not count);
//   - "Number overflow. Attempting to store a number with magnitude larger
//     than supported range" (above 9.9999999999999999999999999999999999999E+125);
//   - "Number underflow. Attempting to store a number with magnitude smaller
//     than supported range" (non-zero and below 1E-130).
//
// Rules: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/HowItWorks.NamingRulesDataTypes.html#HowItWorks.DataTypes.Number
func ParseNumber(s string) (*apd.Decimal, error) {
	if s == "" {
		return nil, validation("The parameter cannot be converted to a numeric value")
	}
	d, _, err := apd.NewFromString(s)
	if err != nil || d.Form != apd.Finite || strings.ContainsAny(s, " \t\r\n") {
		return nil, validation("The parameter cannot be converted to a numeric value: %s", s)
	}
	if err := checkRange(d); err != nil {
		return nil, err
	}
	return d, nil
}

// checkRange applies the digit and magnitude rules to a finite decimal.
func checkRange(d *apd.Decimal) error {
	if d.IsZero() {
		return nil
	}
	var r apd.Decimal
	r.Reduce(d)
	digits := r.NumDigits()
	adj := int64(r.Exponent) + digits - 1
	switch {
	case adj > maxAdjExponent:
		return validation(msgOverflow)
	case adj < minAdjExponent:
		return validation(msgUnderflow)
	case digits > maxDigits:
		return validation(msgTooManyDigits)
	}
	return nil
}

// FormatNumber renders a number the way DynamoDB returns it: plain decimal
// notation without exponent, trailing fractional zeros and a negative zero
// ("1.50" -> "1.5", "1e2" -> "100", "-0" -> "0").
func FormatNumber(d *apd.Decimal) string {
	if d.IsZero() {
		return "0"
	}
	var r apd.Decimal
	r.Reduce(d)
	return r.Text('f')
}

// CanonicalNumber parses s with ParseNumber and returns FormatNumber of it:
// the form DynamoDB stores and returns ("01.50" -> "1.5").
func CanonicalNumber(s string) (string, error) {
	if PlainInteger(s) {
		return s, nil
	}
	if c, _, ok := plainDecimal(s); ok {
		return c, nil
	}
	d, err := ParseNumber(s)
	if err != nil {
		return "", err
	}
	return FormatNumber(d), nil
}

// addNumbers returns a+b (or a-b with neg) exactly, in canonical form, or the
// DynamoDB error when the result leaves the range or needs more than 38
// digits (it is never rounded).
func addNumbers(a, b string, neg bool) (string, error) {
	if len(a) <= 18 && len(b) <= 18 && PlainInteger(a) && PlainInteger(b) {
		// Both of at most 18 characters (below 10^18 in magnitude): their
		// sum or difference fits an int64, and 38 digits.
		x, _ := strconv.ParseInt(a, 10, 64)
		y, _ := strconv.ParseInt(b, 10, 64)
		if neg {
			y = -y
		}
		return strconv.FormatInt(x+y, 10), nil
	}
	x, err := ParseNumber(a)
	if err != nil {
		return "", err
	}
	y, err := ParseNumber(b)
	if err != nil {
		return "", err
	}
	var z apd.Decimal
	if neg {
		_, err = exact.Sub(&z, x, y)
	} else {
		_, err = exact.Add(&z, x, y)
	}
	if err != nil {
		return "", validation(msgOverflow)
	}
	if err := checkRange(&z); err != nil {
		return "", err
	}
	return FormatNumber(&z), nil
}

// cmpNumbers compares two number strings numerically; ok is false when
// either is not a valid number.
func cmpNumbers(a, b string) (int, bool) {
	if PlainInteger(a) && PlainInteger(b) {
		return cmpPlainIntegers(a, b), true
	}
	x, _, err1 := apd.NewFromString(a)
	y, _, err2 := apd.NewFromString(b)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return x.Cmp(y), true
}

// cmpPlainIntegers compares two PlainInteger strings: by sign, then by
// their number of digits (no leading zeros), then digit by digit.
func cmpPlainIntegers(a, b string) int {
	na, nb := a[0] == '-', b[0] == '-'
	switch {
	case na && !nb:
		return -1
	case !na && nb:
		return 1
	case na: // both negative: the larger magnitude is the smaller
		return cmpPlainIntegers(b[1:], a[1:])
	}
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

// PlainInteger reports whether s is an integer written as FormatNumber
// writes it: an optional '-', then 1 to 38 digits, the first not 0
// unless it is the only one and unsigned ("0", "12", "-7"; not "007",
// "-0", "+1", "1.0", "1e2"). Such a string is a valid DynamoDB number
// (38 digits at most, magnitude below 1E+38) and already canonical, so
// its checks and its size need no decimal parse: the write path's
// shortcut (most numbers written are such integers).
func PlainInteger(s string) bool {
	digits := s
	if len(s) > 0 && s[0] == '-' {
		digits = s[1:]
	}
	if len(digits) == 0 || len(digits) > maxDigits || (digits[0] == '0' && len(s) != 1) {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	return true
}

// plainDecimal is the shortcut for a number written as digits, a point and
// digits ("-12.50", "0.0125"), with at most maxDigits digits in all: such
// a number is always in DynamoDB's range, so it needs no decimal parse.
// It returns the number's canonical text (as FormatNumber: "-12.5",
// "0.0125"; "0.00" is "0") and its count of significant digits (the
// digits without the leading and trailing zeros; 0 for a zero). ok is
// false for any other form (exponents, a missing digit on either side of
// the point, signs other than a leading '-', spaces), which goes to the
// full parse.
func plainDecimal(s string) (canon string, sig int, ok bool) {
	body := s
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		body = s[1:]
	}
	dot := strings.IndexByte(body, '.')
	if dot <= 0 || dot == len(body)-1 || len(body)-1 > maxDigits {
		return "", 0, false
	}
	rawIP, rawFP := body[:dot], body[dot+1:]
	for i := 0; i < len(body); i++ {
		if c := body[i]; (c < '0' || c > '9') && i != dot {
			return "", 0, false
		}
	}
	ip := strings.TrimLeft(rawIP, "0")
	fp := strings.TrimRight(rawFP, "0")
	if ip == "" && fp == "" {
		return "0", 0, true
	}
	sig = len(strings.TrimRight(ip, "0"))
	switch {
	case fp != "" && ip != "":
		sig = len(ip) + len(fp)
	case fp != "":
		sig = len(strings.TrimLeft(fp, "0"))
	}
	if fp == rawFP && (ip == rawIP || (ip == "" && rawIP == "0")) {
		return s, sig, true // already canonical: no copy
	}
	if ip == "" {
		ip = "0"
	}
	canon = ip
	if fp != "" {
		canon = ip + "." + fp
	}
	if neg {
		canon = "-" + canon
	}
	return canon, sig, true
}
