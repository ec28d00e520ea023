package awserr

// The codes of session credentials (STS AssumeRole's, Options.Auth).
var (
	// ErrExpiredTokenException: session credentials past their
	// Expiration, in the JSON APIs' words (Kinesis, DynamoDB, CloudWatch
	// Logs, EventBridge), HTTP 400: "The security token included in the
	// request is expired".
	ErrExpiredTokenException = def(Spec{Code: "ExpiredTokenException", DynamoDB: coral("ExpiredTokenException")})
	// ErrExpiredToken: the same in the query services' words (SQS, SNS,
	// IAM, STS), HTTP 403.
	ErrExpiredToken = def(Spec{Code: "ExpiredToken", Status: 403})
	// ErrAccessDenied: STS's refusal of an AssumeRole it cannot grant (a
	// role that does not exist), HTTP 403.
	ErrAccessDenied = def(Spec{Code: "AccessDenied", Status: 403})
)
