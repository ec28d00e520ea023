package awsapi

// SQS's shapes on the wire, shared by its operations: message attributes,
// batch results, the queue URLs the endpoint hands out. Each has json
// tags for the JSON protocol and xml tags for the query protocol.

import (
	"encoding/base64"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// msgAttr is a MessageAttributeValue on the wire (JSON: blobs in base64 by
// encoding/json; XML: BinaryValue in base64 by hand).
type msgAttr struct {
	StringValue      *string  `json:",omitempty" xml:",omitempty"`
	BinaryValue      []byte   `json:",omitempty" xml:"-"`
	BinaryValueXML   string   `json:"-" xml:"BinaryValue,omitempty"`
	StringListValues []string `json:",omitempty" xml:"StringListValue,omitempty"`
	BinaryListValues [][]byte `json:",omitempty" xml:"-"`
	DataType         string
}

func toQueueAttrs(in map[string]msgAttr) map[string]queue.MessageAttributeValue {
	if in == nil {
		return nil
	}
	out := make(map[string]queue.MessageAttributeValue, len(in))
	for k, v := range in {
		out[k] = queue.MessageAttributeValue{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue,
			StringListValues: v.StringListValues, BinaryListValues: v.BinaryListValues}
	}
	return out
}

func fromQueueAttrs(in map[string]queue.MessageAttributeValue) xmlMap[msgAttr] {
	if len(in) == 0 {
		return nil
	}
	out := make(xmlMap[msgAttr], len(in))
	for k, v := range in {
		a := msgAttr{DataType: v.DataType, StringValue: v.StringValue, BinaryValue: v.BinaryValue}
		if v.BinaryValue != nil {
			a.BinaryValueXML = base64.StdEncoding.EncodeToString(v.BinaryValue)
		}
		out[k] = a
	}
	return out
}

// queueURL rewrites a runnel queue URL to point at the endpoint the
// client used: <scheme>://<Host>/<account>/<name>.
func (rq *request) queueURL(u string) string {
	name := u[strings.LastIndexByte(u, '/')+1:]
	host := rq.r.Host
	if host == "" {
		host = "sqs." + rq.h.opts.Region + ".localhost:4566"
	}
	return rq.scheme + "://" + host + "/" + rq.h.opts.AccountID + "/" + name
}

type batchErr struct {
	Id          string
	SenderFault bool
	Code        string
	Message     string `json:",omitempty" xml:",omitempty"`
}

func batchErrs(in []queue.BatchResultErrorEntry) []batchErr {
	out := make([]batchErr, 0, len(in))
	for _, e := range in {
		out = append(out, batchErr{Id: e.Id, SenderFault: e.SenderFault, Code: e.Code, Message: e.Message})
	}
	return out
}

type idEntry struct {
	Id string
}

type batchOut struct {
	Successful []idEntry
	Failed     []batchErr
}

func (rq *request) batchResult(o *queue.BatchOutput, okName string) any {
	ok := make([]idEntry, 0, len(o.Successful))
	for _, e := range o.Successful {
		ok = append(ok, idEntry{e.Id})
	}
	if rq.proto != protoSQSQuery {
		return batchOut{Successful: ok, Failed: batchErrs(o.Failed)}
	}
	// The query protocol names list members by the entry type.
	x := batchXML{Failed: batchErrs(o.Failed)}
	if okName == "DeleteMessageBatchResultEntry" {
		x.Deleted = ok
	} else {
		x.Changed = ok
	}
	return x
}

type batchXML struct {
	Deleted []idEntry  `xml:"DeleteMessageBatchResultEntry"`
	Changed []idEntry  `xml:"ChangeMessageVisibilityBatchResultEntry"`
	Failed  []batchErr `xml:"BatchResultErrorEntry"`
}

type sendOut struct {
	Id                           string `json:",omitempty" xml:",omitempty"`
	MessageId, MD5OfMessageBody  string
	MD5OfMessageAttributes       string `json:",omitempty" xml:",omitempty"`
	MD5OfMessageSystemAttributes string `json:",omitempty" xml:",omitempty"`
	SequenceNumber               string `json:",omitempty" xml:",omitempty"`
}

type sendIn struct {
	Id, QueueUrl                               string
	MessageBody                                *string
	DelaySeconds                               *int
	MessageAttributes, MessageSystemAttributes map[string]msgAttr
	MessageDeduplicationId, MessageGroupId     string
}

func (s *sendIn) readEntry(f *qform, p string) {
	s.Id = f.get(p + "Id")
	if f.has(p + "MessageBody") {
		b := f.get(p + "MessageBody")
		s.MessageBody = &b
	}
	s.DelaySeconds = f.intp(p + "DelaySeconds")
	s.MessageAttributes = f.msgAttrs(p + "MessageAttribute")
	s.MessageSystemAttributes = f.msgAttrs(p + "MessageSystemAttribute")
	s.MessageDeduplicationId = f.get(p + "MessageDeduplicationId")
	s.MessageGroupId = f.get(p + "MessageGroupId")
}

func (s *sendIn) entry() (queue.SendMessageBatchRequestEntry, error) {
	if s.MessageBody == nil {
		return queue.SendMessageBatchRequestEntry{}, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter MessageBody.")
	}
	return queue.SendMessageBatchRequestEntry{Id: s.Id, SendMessageInput: queue.SendMessageInput{
		MessageBody: *s.MessageBody, DelaySeconds: s.DelaySeconds,
		MessageAttributes: toQueueAttrs(s.MessageAttributes), MessageSystemAttributes: toQueueAttrs(s.MessageSystemAttributes),
		MessageDeduplicationId: s.MessageDeduplicationId, MessageGroupId: s.MessageGroupId,
	}}, nil
}

type messageOut struct {
	MessageId, ReceiptHandle, MD5OfBody, Body string
	Attributes                                xmlMap[string]  `json:",omitempty" xml:"Attribute,omitempty"`
	MD5OfMessageAttributes                    string          `json:",omitempty" xml:",omitempty"`
	MessageAttributes                         xmlMap[msgAttr] `json:",omitempty" xml:"MessageAttribute,omitempty"`
}

type moveTaskOut struct {
	TaskHandle                                                          string `json:",omitempty" xml:",omitempty"`
	Status, SourceArn                                                   string
	DestinationArn                                                      string `json:",omitempty" xml:",omitempty"`
	MaxNumberOfMessagesPerSecond                                        int    `json:",omitempty" xml:",omitempty"`
	ApproximateNumberOfMessagesMoved, ApproximateNumberOfMessagesToMove int64
	FailureReason                                                       string `json:",omitempty" xml:",omitempty"`
	StartedTimestamp                                                    int64
}

func requireURL(u string) error {
	if u == "" {
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter QueueUrl.")
	}
	return nil
}
