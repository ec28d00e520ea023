package awsapi

// SQS: messages over package queue. Receives wait up to WaitTimeSeconds
// (long polling); visibility timeouts and delays run on the engine clock.

import (
	"strconv"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

type sendMessageInput struct{ sendIn }

func (in *sendMessageInput) check() error { return requireURL(in.QueueUrl) }

func (in *sendMessageInput) readForm(f *qform) {
	in.QueueUrl = f.get("QueueUrl")
	in.readEntry(f, "")
}

func sqsSendMessage(rq *request, in *sendMessageInput) (any, error) {
	e, err := in.entry()
	if err != nil {
		return nil, err
	}
	o, err := rq.h.rn.Queues.SendMessage(rq.ctx, in.QueueUrl, e.SendMessageInput)
	if err != nil {
		return nil, err
	}
	return sendOut{MessageId: o.MessageId, MD5OfMessageBody: o.MD5OfMessageBody, MD5OfMessageAttributes: o.MD5OfMessageAttributes,
		MD5OfMessageSystemAttributes: o.MD5OfMessageSystemAttributes, SequenceNumber: o.SequenceNumber}, nil
}

type sendMessageBatchInput struct {
	queueInput
	Entries []sendIn
}

func (in *sendMessageBatchInput) readForm(f *qform) {
	in.QueueUrl = f.get("QueueUrl")
	p, ns := f.indexes("SendMessageBatchRequestEntry")
	for _, n := range ns {
		var s sendIn
		s.readEntry(f, p+"."+strconv.Itoa(n)+".")
		in.Entries = append(in.Entries, s)
	}
}

func sqsSendMessageBatch(rq *request, in *sendMessageBatchInput) (any, error) {
	entries := make([]queue.SendMessageBatchRequestEntry, len(in.Entries))
	for i := range in.Entries {
		e, err := in.Entries[i].entry()
		if err != nil {
			return nil, err
		}
		entries[i] = e
	}
	o, err := rq.h.rn.Queues.SendMessageBatch(rq.ctx, in.QueueUrl, entries)
	if err != nil {
		return nil, err
	}
	ok := make([]sendOut, 0, len(o.Successful))
	for _, s := range o.Successful {
		ok = append(ok, sendOut{Id: s.Id, MessageId: s.MessageId, MD5OfMessageBody: s.MD5OfMessageBody, MD5OfMessageAttributes: s.MD5OfMessageAttributes,
			MD5OfMessageSystemAttributes: s.MD5OfMessageSystemAttributes, SequenceNumber: s.SequenceNumber})
	}
	return struct {
		Successful []sendOut  `json:"Successful" xml:"SendMessageBatchResultEntry"`
		Failed     []batchErr `json:"Failed" xml:"BatchResultErrorEntry"`
	}{ok, batchErrs(o.Failed)}, nil
}

type receiveMessageInput struct {
	queueInput
	AttributeNames              []string
	MessageSystemAttributeNames []string
	MessageAttributeNames       []string
	// MaxNumberOfMessages: 1..10 when given; absent (nil) means 1. A
	// given 0 is InvalidParameterValue (before, it was taken as absent).
	MaxNumberOfMessages     *int
	VisibilityTimeout       *int
	WaitTimeSeconds         *int
	ReceiveRequestAttemptId string
}

func (in *receiveMessageInput) readForm(f *qform) {
	in.QueueUrl = f.get("QueueUrl")
	in.AttributeNames = f.list("AttributeName")
	in.MessageSystemAttributeNames = f.list("MessageSystemAttributeName")
	in.MessageAttributeNames = f.list("MessageAttributeName")
	in.MaxNumberOfMessages = f.intp("MaxNumberOfMessages")
	in.VisibilityTimeout = f.intp("VisibilityTimeout")
	in.WaitTimeSeconds = f.intp("WaitTimeSeconds")
	in.ReceiveRequestAttemptId = f.get("ReceiveRequestAttemptId")
}

func sqsReceiveMessage(rq *request, in *receiveMessageInput) (any, error) {
	max := 0 // queue's default: 1
	if p := in.MaxNumberOfMessages; p != nil {
		// queue.ReceiveMessageInput takes 0 for "not given" (Go callers'
		// zero value), so a given 0 is refused here, as SQS does.
		if *p == 0 {
			return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value 0 for parameter MaxNumberOfMessages is invalid. Reason: Must be between 1 and %d, if provided.", queue.MaxBatchEntries)
		}
		max = *p
	}
	msgs, err := rq.h.rn.Queues.ReceiveMessage(rq.ctx, in.QueueUrl, queue.ReceiveMessageInput{
		MaxNumberOfMessages: max, VisibilityTimeout: in.VisibilityTimeout, WaitTimeSeconds: in.WaitTimeSeconds,
		AttributeNames: in.AttributeNames, MessageSystemAttributeNames: in.MessageSystemAttributeNames,
		MessageAttributeNames: in.MessageAttributeNames, ReceiveRequestAttemptId: in.ReceiveRequestAttemptId,
	})
	if err != nil {
		return nil, err
	}
	out := make([]messageOut, 0, len(msgs))
	for _, m := range msgs {
		mo := messageOut{MessageId: m.MessageId, ReceiptHandle: m.ReceiptHandle, MD5OfBody: m.MD5OfBody, Body: m.Body,
			MessageAttributes: fromQueueAttrs(m.MessageAttributes)}
		if len(m.Attributes) > 0 {
			mo.Attributes = m.Attributes
		}
		if len(mo.MessageAttributes) > 0 {
			mo.MD5OfMessageAttributes = m.MD5OfMessageAttributes
		}
		out = append(out, mo)
	}
	return struct {
		Messages []messageOut `json:",omitempty" xml:"Message"`
	}{out}, nil
}

// receiptInput is DeleteMessage's and ChangeMessageVisibility's input.
type receiptInput struct {
	queueInput
	ReceiptHandle     string
	VisibilityTimeout *int
}

func (in *receiptInput) readForm(f *qform) {
	in.QueueUrl, in.ReceiptHandle, in.VisibilityTimeout = f.get("QueueUrl"), f.get("ReceiptHandle"), f.intp("VisibilityTimeout")
}

// check requires the queue URL and the receipt handle.
func (in *receiptInput) check() error {
	if err := requireURL(in.QueueUrl); err != nil {
		return err
	}
	if in.ReceiptHandle == "" {
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter ReceiptHandle.")
	}
	return nil
}

func sqsDeleteMessage(rq *request, in *receiptInput) (any, error) {
	return nil, rq.h.rn.Queues.DeleteMessage(rq.ctx, in.QueueUrl, in.ReceiptHandle)
}

func sqsChangeMessageVisibility(rq *request, in *receiptInput) (any, error) {
	if in.VisibilityTimeout == nil {
		return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter VisibilityTimeout.")
	}
	return nil, rq.h.rn.Queues.ChangeMessageVisibility(rq.ctx, in.QueueUrl, in.ReceiptHandle, *in.VisibilityTimeout)
}

// receiptBatch is the input of DeleteMessageBatch and
// ChangeMessageVisibilityBatch.
type receiptBatch struct {
	queueInput
	Entries []struct {
		Id                string
		ReceiptHandle     string
		VisibilityTimeout int
	}
}

// readBatch reads the form's entries <op>RequestEntry.N.
func (in *receiptBatch) readBatch(f *qform, op string) {
	in.QueueUrl = f.get("QueueUrl")
	p, ns := f.indexes(op + "RequestEntry")
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n) + "."
		in.Entries = append(in.Entries, struct {
			Id                string
			ReceiptHandle     string
			VisibilityTimeout int
		}{f.get(k + "Id"), f.get(k + "ReceiptHandle"), f.int(k + "VisibilityTimeout")})
	}
}

type deleteMessageBatchInput struct{ receiptBatch }

func (in *deleteMessageBatchInput) readForm(f *qform) { in.readBatch(f, "DeleteMessageBatch") }

func sqsDeleteMessageBatch(rq *request, in *deleteMessageBatchInput) (any, error) {
	entries := make([]queue.DeleteMessageBatchRequestEntry, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = queue.DeleteMessageBatchRequestEntry{Id: e.Id, ReceiptHandle: e.ReceiptHandle}
	}
	o, err := rq.h.rn.Queues.DeleteMessageBatch(rq.ctx, in.QueueUrl, entries)
	if err != nil {
		return nil, err
	}
	return rq.batchResult(o, "DeleteMessageBatchResultEntry"), nil
}

type changeMessageVisibilityBatchInput struct{ receiptBatch }

func (in *changeMessageVisibilityBatchInput) readForm(f *qform) {
	in.readBatch(f, "ChangeMessageVisibilityBatch")
}

func sqsChangeMessageVisibilityBatch(rq *request, in *changeMessageVisibilityBatchInput) (any, error) {
	entries := make([]queue.ChangeMessageVisibilityBatchRequestEntry, len(in.Entries))
	for i, e := range in.Entries {
		entries[i] = queue.ChangeMessageVisibilityBatchRequestEntry{Id: e.Id, ReceiptHandle: e.ReceiptHandle, VisibilityTimeout: e.VisibilityTimeout}
	}
	o, err := rq.h.rn.Queues.ChangeMessageVisibilityBatch(rq.ctx, in.QueueUrl, entries)
	if err != nil {
		return nil, err
	}
	return rq.batchResult(o, "ChangeMessageVisibilityBatchResultEntry"), nil
}
