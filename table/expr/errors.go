package expr

import "fmt"

// ValidationError is the error of every parse and validation failure in this
// package, and of the runtime failures of [Update.Apply]. Message is
// DynamoDB's own text for the case (for example "Invalid UpdateExpression:
// The expression can not be empty;"); the caller returns it as a
// ValidationException (HTTP 400, __type
// com.amazon.coral.validate#ValidationException). Test with errors.As.
type ValidationError struct{ Message string }

// Error returns Message unchanged.
func (e *ValidationError) Error() string { return e.Message }

func validation(format string, args ...any) error {
	return &ValidationError{Message: fmt.Sprintf(format, args...)}
}

// Messages of the runtime update failures, as DynamoDB words them.
const (
	msgIncorrectType  = "An operand in the update expression has an incorrect data type"
	msgInvalidPath    = "The document path provided in the update expression is invalid for update"
	msgMissingOperand = "The provided expression refers to an attribute that does not exist in the item"
)
