package awserr

// The codes of IAM, STS and CloudWatch Logs. These APIs write a code as
// its Code with its Status (their Wire is the Spec's own).
var (
	// ErrNoSuchEntity: IAM's "not found" (a role, a policy attached to
	// it), HTTP 404.
	ErrNoSuchEntity = def(Spec{Code: "NoSuchEntity", Status: 404})
	// ErrEntityAlreadyExists: IAM's "already exists" (a role name,
	// compared without case), HTTP 409.
	ErrEntityAlreadyExists = def(Spec{Code: "EntityAlreadyExists", Status: 409})
	// ErrInvalidInput: an IAM or STS parameter is missing or out of its
	// range; the message names it.
	ErrInvalidInput = def(Spec{Code: "InvalidInput"})
	// ErrMalformedPolicyDocument: an IAM policy document is not a JSON
	// object.
	ErrMalformedPolicyDocument = def(Spec{Code: "MalformedPolicyDocument"})
	// ErrIAMLimitExceeded: too many policies attached to a role (IAM's
	// LimitExceeded, HTTP 409).
	ErrIAMLimitExceeded = def(Spec{Code: "LimitExceeded", Status: 409})
	// ErrInvalidParameter: a CloudWatch Logs parameter is missing, out of
	// its range, or names what runnel does not support (a JSON filter
	// pattern).
	ErrInvalidParameter = def(Spec{Code: "InvalidParameterException"})
	// ErrResourceAlreadyExists: CloudWatch Logs' "already exists" (a log
	// group or stream).
	ErrResourceAlreadyExists = def(Spec{Code: "ResourceAlreadyExistsException"})
)

// ErrDeleteConflict: an IAM role still has policies attached (or inline)
// and cannot be deleted, HTTP 409.
var ErrDeleteConflict = def(Spec{Code: "DeleteConflict", Status: 409})

// ErrValidationError: an IAM or STS request that its model refuses (a
// required member absent, a length, range or pattern not met), in AWS's
// wording: "1 validation error detected: Value 'a b' at 'roleName' failed
// to satisfy constraint: Member must satisfy regular expression pattern:
// [\w+=,.@-]+".
var ErrValidationError = def(Spec{Code: "ValidationError"})
