package awserr_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
)

func TestSentinelsMatchByCode(t *testing.T) {
	err := fmt.Errorf("create: %w", awserr.New(awserr.ErrResourceNotFound, "stream %s not found", "s"))
	if !errors.Is(err, awserr.ErrResourceNotFound) || errors.Is(err, awserr.ErrResourceInUse) {
		t.Errorf("errors.Is by code failed for %v", err)
	}
	// Two codes that differ only by "Exception" are two sentinels.
	if errors.Is(awserr.New(awserr.ErrSQSInvalidParameterValue, "x"), awserr.ErrInvalidParameterValue) {
		t.Error("SQS's InvalidParameterValue matched Lambda's InvalidParameterValueException")
	}
}

func TestTable(t *testing.T) {
	specs := awserr.Specs()
	for i, s := range specs {
		if i > 0 && specs[i-1].Code >= s.Code {
			t.Errorf("Specs not sorted at %s", s.Code)
		}
		if got := awserr.Lookup(s.Code); got == nil || got.Status != s.Status {
			t.Errorf("Lookup(%s) = %+v", s.Code, got)
		}
		if s.Status >= 500 && !s.Retryable {
			t.Errorf("%s: a server fault that is not retryable", s.Code)
		}
	}
	if awserr.Lookup("NoSuchCode") != nil || (&awserr.Error{Code: "NoSuchCode"}).Spec() != nil {
		t.Error("an unknown code has an entry")
	}
	s := awserr.ErrResourceNotFound.Spec()
	if shape, status := s.In(s.Lambda); shape != "ResourceNotFoundException" || status != 404 {
		t.Errorf("ResourceNotFound in Lambda: %s %d", shape, status)
	}
	if shape, status := s.In(s.Kinesis); shape != "ResourceNotFoundException" || status != 400 {
		t.Errorf("ResourceNotFound in Kinesis: %s %d", shape, status)
	}
}

func TestIsRetryable(t *testing.T) {
	for _, tt := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"an internal failure of the engine", awserr.New(awserr.ErrService, "store: timeout"), true},
		{"a PutRecords entry JetStream failed to store", awserr.New(awserr.ErrInternalFailure, "x"), true},
		{"SQS's internal error, wrapped", fmt.Errorf("send: %w", awserr.New(awserr.ErrInternal, "x")), true},
		{"a throttle", awserr.New(awserr.ErrTooManyRequests, "x"), true},
		{"a purge within 60 seconds", awserr.ErrPurgeQueueInProgress, true},
		{"a transaction still running", awserr.ErrTransactionInProgress, true},
		{"a bad parameter", awserr.OutOfRange(awserr.ErrInvalidParameterValue, "BatchSize", 0, 1, 10000), false},
		{"a missing resource", awserr.ErrResourceNotFound, false},
		{"a per-call limit", awserr.ErrLimitExceeded, false},
		{"an expired iterator", awserr.ErrExpiredIterator, false},
		{"a failed condition", awserr.ErrConditionalCheckFailed, false},
		{"a code without an entry", &awserr.Error{Code: "NoSuchCode"}, false},
		{"a plain error (the engine's)", errors.New("nats: timeout"), true},
		{"the caller's context ending", fmt.Errorf("read: %w", context.Canceled), false},
		{"the caller's deadline", context.DeadlineExceeded, false},
	} {
		if got := awserr.IsRetryable(tt.err); got != tt.want {
			t.Errorf("%s: IsRetryable(%v) = %v, want %v", tt.name, tt.err, got, tt.want)
		}
	}
}
