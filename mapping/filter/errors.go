package filter

import (
	"fmt"

	"github.com/runnel-dev/runnel/awserr"
)

// ErrInvalidParameterValue is awserr.ErrInvalidParameterValue, matched by
// every error Compile returns, like Lambda's InvalidParameterValueException
// (HTTP 400) for a bad FilterCriteria.
var ErrInvalidParameterValue = awserr.ErrInvalidParameterValue

// Rule is a rule of FilterCriteria that a filter breaks, a sentinel error
// matched with errors.Is. Every error Compile returns wraps an
// *awserr.Error of code InvalidParameterValueException (so
// errors.Is(err, ErrInvalidParameterValue) and errors.As(err, &ae) with
// ae *awserr.Error both hold, and an API layer answers it as Lambda does,
// HTTP 400); every error about one filter's pattern also satisfies
// errors.Is(err, ErrInvalidPattern), plus the more specific sentinel naming
// the broken rule. The message has the shape
//
//	InvalidParameterValueException: FilterCriteria.Filters[0].Pattern: value of "data.temp" must be an array
//
// See https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html
// for the rules.
type Rule string

func (r Rule) Error() string { return string(r) }

// The rules.
const (
	// ErrTooManyFilters: FilterCriteria.Filters holds more than MaxFilters
	// (5) filters. The allowed range is 0..5.
	ErrTooManyFilters Rule = "too many filters"

	// ErrInvalidPattern is wrapped by every error about one filter's
	// Pattern string, whatever the rule it breaks.
	ErrInvalidPattern Rule = "invalid filter pattern"

	// ErrPatternTooLong: a Pattern string is longer than MaxPatternLength
	// (4096) bytes. Also wraps ErrInvalidPattern.
	ErrPatternTooLong Rule = "pattern too long"

	// ErrInvalidJSON: a Pattern string is not one valid JSON value. Also
	// wraps ErrInvalidPattern.
	ErrInvalidJSON Rule = "invalid JSON"

	// ErrNotArray: a pattern leaf (the value of a field that is not a nested
	// object) is not a JSON array of alternatives, e.g. {"data":{"temp":5}}
	// instead of {"data":{"temp":[5]}}. Also wraps ErrInvalidPattern.
	ErrNotArray Rule = "leaf value must be an array"

	// ErrUnknownOperator: an operator object names an operator Lambda does
	// not support, e.g. {"regex":"..."}. The supported ones are prefix,
	// suffix, equals-ignore-case, anything-but, numeric, exists and
	// wildcard. Also wraps ErrInvalidPattern.
	ErrUnknownOperator Rule = "unknown operator"

	// ErrInvalidOperand: an operator is given a value of the wrong shape,
	// e.g. {"prefix":5}, {"exists":"yes"}, {"numeric":[">"]} or a wildcard
	// with consecutive '*'. Also wraps ErrInvalidPattern.
	ErrInvalidOperand Rule = "invalid operator value"
)

// compileError is the concrete error Compile returns: the *awserr.Error
// an API layer writes (its message names the field and the rule) and the
// sentinels of the rule it breaks.
type compileError struct {
	err   *awserr.Error // InvalidParameterValueException: "<field>: <rule>"
	kinds []error       // sentinels it wraps, besides err
}

func (e *compileError) Error() string { return e.err.Error() }

// Unwrap exposes the *awserr.Error and the sentinels for errors.Is and
// errors.As.
func (e *compileError) Unwrap() []error {
	return append([]error{e.err}, e.kinds...)
}

// newCompileError returns the error for field breaking a rule, described
// by msg, wrapping kinds.
func newCompileError(field, msg string, kinds ...error) error {
	return &compileError{err: awserr.New(awserr.ErrInvalidParameterValue, "%s: %s", field, msg), kinds: kinds}
}

// patternError builds the error for filter i breaking rule kind.
func patternError(i int, kind error, format string, args ...any) error {
	return newCompileError(fmt.Sprintf("FilterCriteria.Filters[%d].Pattern", i), fmt.Sprintf(format, args...), ErrInvalidPattern, kind)
}
