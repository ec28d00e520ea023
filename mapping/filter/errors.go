package filter

import (
	"errors"
	"fmt"
)

// Sentinel errors returned (wrapped) by Compile. Every error Compile returns
// satisfies errors.Is(err, ErrInvalidParameterValue); every error about one
// filter's pattern also satisfies errors.Is(err, ErrInvalidPattern), plus the
// more specific sentinel naming the broken rule. The message has the shape
//
//	InvalidParameterValueException: FilterCriteria.Filters[0].Pattern: value of "data.temp" must be an array
//
// See https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html
// for the rules.
var (
	// ErrInvalidParameterValue is wrapped by every error Compile returns,
	// like Lambda's InvalidParameterValueException (HTTP 400) for a bad
	// FilterCriteria. Its text is exactly "InvalidParameterValueException",
	// and Compile's errors also report errors.Is == true for any other
	// sentinel error whose text is exactly that (such as runnel's
	// awserr.ErrInvalidParameterValue), so API layers can map them to 400
	// without importing this package's sentinels.
	ErrInvalidParameterValue = errors.New("InvalidParameterValueException")

	// ErrTooManyFilters: FilterCriteria.Filters holds more than MaxFilters
	// (5) filters. The allowed range is 0..5.
	ErrTooManyFilters = errors.New("too many filters")

	// ErrInvalidPattern is wrapped by every error about one filter's
	// Pattern string, whatever the rule it breaks.
	ErrInvalidPattern = errors.New("invalid filter pattern")

	// ErrPatternTooLong: a Pattern string is longer than MaxPatternLength
	// (4096) bytes. Also wraps ErrInvalidPattern.
	ErrPatternTooLong = errors.New("pattern too long")

	// ErrInvalidJSON: a Pattern string is not one valid JSON value. Also
	// wraps ErrInvalidPattern.
	ErrInvalidJSON = errors.New("invalid JSON")

	// ErrNotArray: a pattern leaf (the value of a field that is not a nested
	// object) is not a JSON array of alternatives, e.g. {"data":{"temp":5}}
	// instead of {"data":{"temp":[5]}}. Also wraps ErrInvalidPattern.
	ErrNotArray = errors.New("leaf value must be an array")

	// ErrUnknownOperator: an operator object names an operator Lambda does
	// not support, e.g. {"regex":"..."}. The supported ones are prefix,
	// suffix, equals-ignore-case, anything-but, numeric, exists and
	// wildcard. Also wraps ErrInvalidPattern.
	ErrUnknownOperator = errors.New("unknown operator")

	// ErrInvalidOperand: an operator is given a value of the wrong shape,
	// e.g. {"prefix":5}, {"exists":"yes"}, {"numeric":[">"]} or a wildcard
	// with consecutive '*'. Also wraps ErrInvalidPattern.
	ErrInvalidOperand = errors.New("invalid operator value")
)

// compileError is the concrete error Compile returns.
type compileError struct {
	field string  // "FilterCriteria.Filters[0].Pattern"
	msg   string  // human text naming the path and rule
	kinds []error // sentinels it wraps, besides ErrInvalidParameterValue
}

func (e *compileError) Error() string {
	return ErrInvalidParameterValue.Error() + ": " + e.field + ": " + e.msg
}

// Unwrap exposes the sentinels for errors.Is.
func (e *compileError) Unwrap() []error {
	return append([]error{ErrInvalidParameterValue}, e.kinds...)
}

// Is makes errors.Is(err, x) true for any sentinel x whose text is exactly
// "InvalidParameterValueException" (for example another package's sentinel
// for the same AWS exception).
func (e *compileError) Is(target error) bool {
	return target != nil && target.Error() == ErrInvalidParameterValue.Error()
}

// patternError builds the error for filter i breaking rule kind.
func patternError(i int, kind error, format string, args ...any) error {
	return &compileError{
		field: fmt.Sprintf("FilterCriteria.Filters[%d].Pattern", i),
		msg:   fmt.Sprintf(format, args...),
		kinds: []error{ErrInvalidPattern, kind},
	}
}
