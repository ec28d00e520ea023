package queue

import "strconv"

// Number attributes: "A number can have up to 38 digits of precision,
// and it can be between 10^-128 and 10^+126. Leading and trailing zeroes
// are trimmed" (sqs-message-metadata, message attribute data types).
const (
	MaxNumberDigits   = 38
	MinNumberExponent = -128
	MaxNumberExponent = 126
)

// ValidNumber reports whether v is a value SQS takes for a Number
// attribute: a decimal number (an optional sign, digits with an optional
// point, an optional exponent e or E with an optional sign) of at most
// MaxNumberDigits significant digits (leading and trailing zeroes do not
// count), zero or of a magnitude from 10^MinNumberExponent to
// 10^MaxNumberExponent. NaN, Inf, Infinity and hexadecimal (0x1p4) are no
// numbers; before, strconv.ParseFloat decided, and took them, and
// 1e300. SNS applies the same rule to its Number attributes
// (sns/publish.go).
func ValidNumber(v string) bool {
	i := 0
	if i < len(v) && (v[i] == '+' || v[i] == '-') {
		i++
	}
	var digits []byte
	intLen := 0
	for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		digits = append(digits, v[i])
		intLen++
	}
	if i < len(v) && v[i] == '.' {
		for i++; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
			digits = append(digits, v[i])
		}
	}
	if len(digits) == 0 {
		return false
	}
	exp := 0
	if i < len(v) && (v[i] == 'e' || v[i] == 'E') {
		i++
		neg := false
		if i < len(v) && (v[i] == '+' || v[i] == '-') {
			neg = v[i] == '-'
			i++
		}
		start := i
		for ; i < len(v) && v[i] >= '0' && v[i] <= '9'; i++ {
		}
		if i == start {
			return false
		}
		e := v[start:i]
		for len(e) > 1 && e[0] == '0' {
			e = e[1:]
		}
		if len(e) > 6 { // far out of range, and no overflow of exp
			return allZero(digits)
		}
		exp, _ = strconv.Atoi(e)
		if neg {
			exp = -exp
		}
	}
	if i != len(v) {
		return false
	}
	first, last := -1, -1
	for k, d := range digits {
		if d != '0' {
			if first < 0 {
				first = k
			}
			last = k
		}
	}
	if first < 0 {
		return true // zero
	}
	if last-first+1 > MaxNumberDigits {
		return false
	}
	// magnitude: the value is d.ddd × 10^mag, d the first non-zero digit
	mag := intLen - 1 - first + exp
	if mag < MinNumberExponent || mag > MaxNumberExponent {
		return false
	}
	return mag < MaxNumberExponent || last == first && digits[first] == '1' // at most 10^126
}

func allZero(digits []byte) bool {
	for _, d := range digits {
		if d != '0' {
			return false
		}
	}
	return true
}
