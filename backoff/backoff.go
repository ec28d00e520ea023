// Package backoff is the retry policy of runnel's two-tier dead-letter
// standard: exponential backoff with full jitter, bounded by a number of
// attempts and an age, as described in "Async Lambda Function Retries with
// Backoff and Jitter" (Bite-Sized Serverless) and Marc Brooker's
// "Exponential Backoff And Jitter".
//
// The delay before retry attempt n (n = 1 for the first retry) is drawn
// uniformly from [BaseDelay, min(MaxDelay, BaseDelay·2^(n-1))]. Queue event
// source mappings apply it through the message's visibility timeout, so a
// retry waiting 12 hours holds no goroutine and blocks no other message.
//
// "Full jitter" here is seed 001's (Bite-Sized Serverless: "a value
// between 1 and the exponential value", random.uniform(base, timeout)),
// not Brooker's, which draws from [0, min(cap, base·2^n)]. The floor keeps
// every retry at least BaseDelay away. The trap: the first retry has no
// jitter at all (its range is [BaseDelay, BaseDelay]), so messages that
// fail together come back together once; the spread starts at the second
// retry, and each delay's mean is (BaseDelay + hi)/2, not hi/2.
package backoff

import (
	"errors"
	"math/rand/v2"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// Limits of a Policy, from SQS: a visibility timeout reaches at most 12
// hours and a message lives at most 14 days.
const (
	MaxDelay = 12 * time.Hour
	MaxAge   = 14 * 24 * time.Hour
)

// Policy says how long to wait before each retry and when to give up.
// The zero value is not valid; use Default or fill every field.
type Policy struct {
	// BaseDelaySeconds is the first retry's delay and the lower bound of
	// every delay. 1..43200. Default 1.
	BaseDelaySeconds int `json:"BaseDelaySeconds" yaml:"BaseDelaySeconds"`
	// MaxDelaySeconds caps the delay. BaseDelaySeconds..43200 (12 h, the
	// longest SQS visibility timeout). Default 43200.
	MaxDelaySeconds int `json:"MaxDelaySeconds" yaml:"MaxDelaySeconds"`
	// MaxAttempts is how many attempts in all (the first one included)
	// before the record is unrecoverable. 1..1000. Default 10.
	MaxAttempts int `json:"MaxAttempts" yaml:"MaxAttempts"`
	// MaximumAgeInSeconds: a record first seen longer ago than this is
	// unrecoverable, whatever its attempts. 60..1209600 (14 days, the
	// longest SQS retention). Default 86400 (24 h).
	MaximumAgeInSeconds int `json:"MaximumAgeInSeconds" yaml:"MaximumAgeInSeconds"`
}

// Default is 1 s doubling to 12 h, 10 attempts, 24 hours.
var Default = Policy{BaseDelaySeconds: 1, MaxDelaySeconds: 43200, MaxAttempts: 10, MaximumAgeInSeconds: 86400}

// WithDefaults fills zero fields from Default.
func (p Policy) WithDefaults() Policy {
	if p.BaseDelaySeconds == 0 {
		p.BaseDelaySeconds = Default.BaseDelaySeconds
	}
	if p.MaxDelaySeconds == 0 {
		p.MaxDelaySeconds = max(Default.MaxDelaySeconds, p.BaseDelaySeconds)
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = Default.MaxAttempts
	}
	if p.MaximumAgeInSeconds == 0 {
		p.MaximumAgeInSeconds = Default.MaximumAgeInSeconds
	}
	return p
}

// Validate checks the ranges (after WithDefaults) and names the field:
// InvalidParameterValueException: RetryPolicy.MaxDelaySeconds ...
func (p Policy) Validate(prefix string) error {
	check := func(field string, v, lo, hi int) error {
		if v < lo || v > hi {
			return awserr.OutOfRange(awserr.ErrInvalidParameterValue, prefix+field, v, lo, hi)
		}
		return nil
	}
	return errors.Join(
		check("BaseDelaySeconds", p.BaseDelaySeconds, 1, int(MaxDelay/time.Second)),
		check("MaxDelaySeconds", p.MaxDelaySeconds, p.BaseDelaySeconds, int(MaxDelay/time.Second)),
		check("MaxAttempts", p.MaxAttempts, 1, 1000),
		check("MaximumAgeInSeconds", p.MaximumAgeInSeconds, 60, int(MaxAge/time.Second)),
	)
}

// Delay returns the wait before retry attempt n (n >= 1 is the n-th retry,
// the (n+1)-th attempt), drawn with full jitter from r: uniform in
// [BaseDelay, min(MaxDelay, BaseDelay·2^(n-1))], in whole seconds as a
// visibility timeout takes them.
func (p Policy) Delay(n int, r *rand.Rand) time.Duration {
	base, ceil := int64(p.BaseDelaySeconds), int64(p.MaxDelaySeconds)
	hi := base
	for i := 1; i < n && hi < ceil; i++ {
		hi *= 2
	}
	hi = min(hi, ceil)
	return time.Duration(base+r.Int64N(hi-base+1)) * time.Second
}

// Exhausted reports whether a record on its attempt-th attempt (1-based),
// first seen at first, may not be tried again at now, and why:
// "MaxAttempts" or "MaximumAge".
func (p Policy) Exhausted(attempt int, first, now time.Time) (bool, string) {
	if attempt >= p.MaxAttempts {
		return true, "MaxAttempts"
	}
	if now.Sub(first) > time.Duration(p.MaximumAgeInSeconds)*time.Second {
		return true, "MaximumAge"
	}
	return false, ""
}
