package awsapi

// SQS: message move tasks (dead-letter queue redrive) over package queue.
// ListMessageMoveTasks returns the most recent task first.

import (
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

type startMessageMoveTaskInput struct {
	SourceArn      string
	DestinationArn string
	// MaxNumberOfMessagesPerSecond: 1..500 when given; absent (nil) means
	// the system's rate (500 here). A given 0 is out of range.
	MaxNumberOfMessagesPerSecond *int
}

func (in *startMessageMoveTaskInput) readForm(f *qform) {
	in.SourceArn, in.DestinationArn, in.MaxNumberOfMessagesPerSecond = f.get("SourceArn"), f.get("DestinationArn"), f.intp("MaxNumberOfMessagesPerSecond")
}

func sqsStartMessageMoveTask(rq *request, in *startMessageMoveTaskInput) (any, error) {
	rate := 0 // absent: queue.MaxMoveTaskRate
	if p := in.MaxNumberOfMessagesPerSecond; p != nil {
		if *p == 0 {
			return nil, awserr.OutOfRange(awserr.ErrSQSInvalidParameterValue, "MaxNumberOfMessagesPerSecond", 0, 1, queue.MaxMoveTaskRate)
		}
		rate = *p
	}
	h, err := rq.h.rn.Queues.StartMessageMoveTask(rq.ctx, in.SourceArn, in.DestinationArn, rate)
	if err != nil {
		return nil, err
	}
	return struct{ TaskHandle string }{h}, nil
}

type listMessageMoveTasksInput struct {
	SourceArn  string
	MaxResults *int
}

func (in *listMessageMoveTasksInput) readForm(f *qform) {
	in.SourceArn, in.MaxResults = f.get("SourceArn"), f.intp("MaxResults")
}

func sqsListMessageMoveTasks(rq *request, in *listMessageMoveTasksInput) (any, error) {
	max := 1
	if in.MaxResults != nil {
		max = *in.MaxResults
		if max < 1 || max > 10 {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 10.", max)
		}
	}
	tasks, err := rq.h.rn.Queues.ListMessageMoveTasks(rq.ctx, in.SourceArn)
	if err != nil {
		return nil, err
	}
	if len(tasks) > max {
		tasks = tasks[:max]
	}
	res := make([]moveTaskOut, 0, len(tasks))
	for _, t := range tasks {
		res = append(res, moveTaskOut{
			TaskHandle: t.TaskHandle, Status: t.Status, SourceArn: t.SourceArn, DestinationArn: t.DestinationArn,
			MaxNumberOfMessagesPerSecond: t.MaxNumberOfMessagesPerSecond, ApproximateNumberOfMessagesMoved: t.ApproximateNumberOfMessagesMoved,
			ApproximateNumberOfMessagesToMove: t.ApproximateNumberOfMessagesToMove, FailureReason: t.FailureReason, StartedTimestamp: t.StartedTimestamp,
		})
	}
	return struct {
		Results []moveTaskOut `json:"Results" xml:"ListMessageMoveTasksResultEntry"`
	}{res}, nil
}

type cancelMessageMoveTaskInput struct{ TaskHandle string }

func (in *cancelMessageMoveTaskInput) readForm(f *qform) { in.TaskHandle = f.get("TaskHandle") }

func sqsCancelMessageMoveTask(rq *request, in *cancelMessageMoveTaskInput) (any, error) {
	n, err := rq.h.rn.Queues.CancelMessageMoveTask(rq.ctx, in.TaskHandle)
	if err != nil {
		return nil, err
	}
	return struct{ ApproximateNumberOfMessagesMoved int64 }{n}, nil
}
