package awserr

// EventBridge's and EventBridge Scheduler's codes (packages eventbus and
// scheduler); their ResourceNotFoundException and ValidationException and
// ResourceAlreadyExistsException are ErrResourceNotFound, ErrValidation
// and ErrResourceAlreadyExists. Scheduler's REST protocol takes a
// code's Lambda status (ResourceNotFoundException: 404).
// https://docs.aws.amazon.com/eventbridge/latest/APIReference/CommonErrors.html
var (
	// ErrInvalidEventPattern: an EventPattern that is not valid ("Event
	// pattern is not valid. Reason: ...").
	ErrInvalidEventPattern = def(Spec{Code: "InvalidEventPatternException"})
	// ErrIllegalStatus: CancelReplay of a replay that is not STARTING or
	// RUNNING.
	ErrIllegalStatus = def(Spec{Code: "IllegalStatusException"})
	// ErrConflict: Scheduler's ConflictException (HTTP 409): a schedule or
	// group of that name exists already, or a group is being deleted.
	ErrConflict = def(Spec{Code: "ConflictException", Status: 409, Lambda: Wire{Status: 409}})
	// ErrServiceQuotaExceeded: Scheduler's quota error (HTTP 402).
	ErrServiceQuotaExceeded = def(Spec{Code: "ServiceQuotaExceededException", Status: 402, Lambda: Wire{Status: 402}})
)
