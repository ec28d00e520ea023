package target

// The deliveries of EventBridge Scheduler schedules (Delivery.ScheduleArn
// set): each attempt has its own execution id and attempt number in the
// payload, an SQS FIFO target needs content-based deduplication, and a
// failure is named with the target service's own error code
// (configuring-schedule-dlq.html, managing-schedule-context-attributes.html,
// API_SqsParameters). A rule's delivery is unchanged by all of this.

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// CodeSchedulerInternal is a schedule's dead-letter ERROR_CODE when the
// failure is runnel's own (not an error the target service returned).
const CodeSchedulerInternal = "AWS.Scheduler.InternalServerError"

// The context attributes of a schedule's Input
// (managing-schedule-context-attributes.html).
const (
	AttrScheduleArn   = "<aws.scheduler.schedule-arn>"
	AttrScheduledTime = "<aws.scheduler.scheduled-time>"
	AttrExecutionID   = "<aws.scheduler.execution-id>"
	AttrAttemptNumber = "<aws.scheduler.attempt-number>"
)

// SchedulePayload is a schedule's Input with its context attributes
// replaced: the schedule's ARN, the occurrence (RFC 3339, UTC, seconds),
// the attempt's execution id and its number (1 for the first attempt).
func SchedulePayload(input, scheduleArn string, scheduled time.Time, executionID string, attempt int) string {
	return strings.NewReplacer(AttrScheduleArn, scheduleArn,
		AttrScheduledTime, scheduled.UTC().Format(time.RFC3339),
		AttrExecutionID, executionID,
		AttrAttemptNumber, strconv.Itoa(attempt)).Replace(input)
}

// AttemptExecutionID is the execution id of attempt n (1, 2, ...) of the
// occurrence whose id is occurrenceID: the occurrence id itself for the
// first attempt, else a name-based UUID of it and n, so that a retry has
// its own id and an attempt made again after a crash has the same one.
// AWS: execution-id is "The unique ID that EventBridge Scheduler assigns
// for each attempted invocation of a target".
func AttemptExecutionID(occurrenceID string, n int) string {
	if n <= 1 {
		return occurrenceID
	}
	return uuid.NewSHA1(uuid.NameSpaceURL, []byte(occurrenceID+"#attempt-"+strconv.Itoa(n))).String()
}

// ExecutionIDOf is the execution id of d's last attempt (its ID when it
// was never attempted).
func (d *Delivery) ExecutionIDOf() string {
	if d.ExecutionID != "" {
		return d.ExecutionID
	}
	return d.ID
}

// prepareScheduleAttempt sets the execution id and, from Template, the
// payload of the attempt about to be made (number d.Attempts+1). Before,
// the payload was built once when the occurrence fired: every retry said
// attempt 1, with the first attempt's execution id.
func (d *Delivery) prepareScheduleAttempt() {
	n := d.Attempts + 1
	d.ExecutionID = AttemptExecutionID(d.ID, n)
	if d.Template != "" {
		d.Payload = SchedulePayload(d.Template, d.ScheduleArn, time.UnixMilli(d.ScheduledTime), d.ExecutionID, n)
	}
}

// fifoDeduplicationID is the MessageDeduplicationId of d sent to an SQS
// FIFO queue. A rule's delivery: its ID (eventbus chose it). A schedule's:
// API_SqsParameters says "If you specify an Amazon SQS FIFO queue as a
// target, the queue must have content-based deduplication enabled"; a
// queue without it gets no id, so SQS refuses the message
// (InvalidParameterValue, a client error: not retried, dead-lettered).
// Before, the execution id was sent to any FIFO queue, and a queue without
// content-based deduplication received every occurrence. A queue with it
// gets the occurrence's id (its first attempt's execution id, the same for
// every retry): a retry is stored once, and two occurrences with the same
// body are both stored, where SQS's content-based deduplication would drop
// the second within its 5 minutes (runnel loses nothing AWS delivers).
func (s *Service) fifoDeduplicationID(ctx context.Context, d *Delivery) (string, error) {
	if d.ScheduleArn == "" {
		return d.ID, nil
	}
	attrs, err := s.queues.GetQueueAttributes(ctx, d.TargetArn, []string{queue.AttrContentBasedDeduplication})
	if err != nil {
		return "", err
	}
	if attrs[queue.AttrContentBasedDeduplication] != "true" {
		return "", nil
	}
	return d.ID, nil
}

// classifySchedule names a schedule's failed attempt: ERROR_CODE is the
// target service's own code (AWS's example:
// "AWS.SimpleQueueService.NonExistentQueue"), ERROR_MESSAGE its message,
// and CodeSchedulerInternal a failure of runnel's own. Retried: what a
// retry of the same call may cure (awserr.IsRetryable: throttling, a
// service's internal error), a timeout and runnel's own failures; a client
// error (a missing target, a refused message) is not. Before, a schedule's
// failure carried EventBridge rules' codes (NO_RESOURCE, THROTTLING,
// SDK_CLIENT_ERROR, TIMEOUT) and every client error but a missing target
// was retried.
func classifySchedule(ctx context.Context, err error) (code, msg string, retry bool) {
	if ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return CodeSchedulerInternal, err.Error(), true
	}
	var ae *awserr.Error
	if !errors.As(err, &ae) {
		return CodeSchedulerInternal, err.Error(), true
	}
	msg = ae.Message
	if msg == "" {
		msg = ae.Code
	}
	return ae.Code, msg, awserr.IsRetryable(err)
}

// attemptFault, set by tests (SetAttemptFault), fails a schedule's
// attempt with its error before the target is called.
var attemptFault atomic.Pointer[func(*Delivery) error]
