package idempotency

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/jmespath-community/go-jmespath"
	"github.com/jonboulle/clockwork"
)

// DefaultExpiresAfter is how long a record counts when
// Config.ExpiresAfter is 0: one hour, Powertools' expires_after_seconds.
const DefaultExpiresAfter = time.Hour

// FunctionNameEnv is the environment variable of Config.FunctionName's
// default, set by Lambda in every execution environment.
const FunctionNameEnv = "AWS_LAMBDA_FUNCTION_NAME"

// Config configures Wrap and Do. The zero value hashes the whole payload,
// keeps records one hour and warns (instead of failing) on an empty key.
type Config struct {
	// EventKeyJMESPath selects the part of the payload (as JSON) that
	// identifies a request, e.g. "powertools_json(body).orderId" or
	// "[requestContext.requestId, queryStringParameters.id]". Default "":
	// the whole payload. Besides JMESPath's own functions it knows
	// Powertools' powertools_json(string), powertools_base64(string) and
	// powertools_base64_gzip(string). Ignored when KeyFunc is set.
	EventKeyJMESPath string
	// KeyFunc, when set, computes the key data from the payload as given to
	// Do or Wrap (the Go value, not its JSON), instead of
	// EventKeyJMESPath. Whatever it returns is turned into JSON and
	// hashed like a JMESPath result; one whose JSON is null, "", {} or
	// an array of nulls counts as no key (a struct whose fields are all
	// omitted is {}). KinesisKey is one.
	KeyFunc func(payload any) (any, error)
	// PayloadValidationJMESPath selects the part of the payload whose hash
	// is stored with the record and compared on a repeat: a repeat whose
	// hash differs fails with ErrValidationMismatch. Default "": no
	// validation.
	PayloadValidationJMESPath string
	// RaiseOnNoIdempotencyKey makes an empty key an error
	// (ErrNoIdempotencyKey). Default false: log a warning and run the
	// handler without persistence.
	RaiseOnNoIdempotencyKey bool
	// ExpiresAfter is how long a record counts, from the start of the call
	// (INPROGRESS) and again from the handler's success (COMPLETED).
	// Default DefaultExpiresAfter (1 h); seconds precision. A repeat after
	// that runs the handler again. For stream records keep it above the
	// stream's retention plus the retry horizon (see KinesisKey).
	ExpiresAfter time.Duration
	// FunctionName is the first part of the key. Default: the
	// AWS_LAMBDA_FUNCTION_NAME environment variable; else, in a runnel
	// in-process function (several functions share one process), the
	// function name of the invoked ARN in the context
	// (lambdacontext.FromContext); else "test-func", as Powertools.
	FunctionName string
	// Name is the handler's name, the key's second part. Default: the Go
	// name of the wrapped function (runtime.FuncForPC), e.g.
	// "main.handle". The trap: a closure's name ("main.main.func1")
	// changes when code around it moves, which orphans the stored records;
	// set Name for closures, which is what Do usually gets.
	Name string
	// Clock is where now comes from. Default the real clock; tests pass
	// clockwork.NewFakeClock().
	Clock clockwork.Clock
	// Logger receives the warnings (no key; retries). Default
	// slog.Default().
	Logger *slog.Logger
}

// Validate checks the config: both JMESPath expressions must compile and
// ExpiresAfter must not be negative. Errors wrap ErrInvalidConfig.
func (c Config) Validate() error {
	_, err := c.compile()
	return err
}

// compiled is a Config with defaults applied and expressions compiled.
type compiled struct {
	Config
	key, validation jmespath.JMESPath
}

func (c Config) compile() (*compiled, error) {
	if c.ExpiresAfter < 0 {
		return nil, fmt.Errorf("%w: ExpiresAfter %v is negative", ErrInvalidConfig, c.ExpiresAfter)
	}
	out := &compiled{Config: c}
	out.setDefaults()
	var err error
	if c.EventKeyJMESPath != "" && c.KeyFunc == nil {
		if out.key, err = compileJMESPath(c.EventKeyJMESPath); err != nil {
			return nil, fmt.Errorf("%w: EventKeyJMESPath %q: %v", ErrInvalidConfig, c.EventKeyJMESPath, err)
		}
	}
	if c.PayloadValidationJMESPath != "" {
		if out.validation, err = compileJMESPath(c.PayloadValidationJMESPath); err != nil {
			return nil, fmt.Errorf("%w: PayloadValidationJMESPath %q: %v", ErrInvalidConfig, c.PayloadValidationJMESPath, err)
		}
	}
	return out, nil
}

func (c *compiled) setDefaults() {
	if c.ExpiresAfter == 0 {
		c.ExpiresAfter = DefaultExpiresAfter
	}
	if c.Clock == nil {
		c.Clock = clockwork.NewRealClock()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}
