package awsapi

import (
	"bytes"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// sqsNS is the XML namespace of the SQS query protocol.
const sqsNS = "http://queue.amazonaws.com/doc/2012-11-05/"

// xmlMap is a map that the query protocol writes as flattened
// <Name/><Value/> entries (Attribute, MessageAttribute), sorted by name.
type xmlMap[V any] map[string]V

func (m xmlMap[V]) MarshalXML(e *xml.Encoder, start xml.StartElement) error {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		entry := struct {
			Name  string
			Value V
		}{k, m[k]}
		if err := e.EncodeElement(entry, start); err != nil {
			return err
		}
	}
	return nil
}

// msgAttr is a MessageAttributeValue on the wire (JSON: blobs in base64 by
// encoding/json; XML: BinaryValue in base64 by hand).
type msgAttr struct {
	StringValue      *string  `json:"StringValue,omitempty" xml:"StringValue,omitempty"`
	BinaryValue      []byte   `json:"BinaryValue,omitempty" xml:"-"`
	BinaryValueXML   string   `json:"-" xml:"BinaryValue,omitempty"`
	StringListValues []string `json:"StringListValues,omitempty" xml:"StringListValue,omitempty"`
	BinaryListValues [][]byte `json:"BinaryListValues,omitempty" xml:"-"`
	DataType         string   `json:"DataType" xml:"DataType"`
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

// qform reads the parameters of a query-protocol request.
type qform struct {
	v   url.Values
	err error
}

func (f *qform) get(k string) string { return f.v.Get(k) }

func (f *qform) has(k string) bool { _, ok := f.v[k]; return ok }

func (f *qform) intp(k string) *int {
	if !f.has(k) {
		return nil
	}
	n, err := strconv.Atoi(f.get(k))
	if err != nil && f.err == nil {
		f.err = awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %s for parameter %s is invalid. Reason: must be an integer.", f.get(k), k)
	}
	return &n
}

func (f *qform) int(k string) int {
	if p := f.intp(k); p != nil {
		return *p
	}
	return 0
}

// indexes returns the N of the parameters prefix.N[...] in order; the
// non-flattened form prefix.member.N is accepted too (then the returned
// prefix includes ".member").
func (f *qform) indexes(prefix string) (string, []int) {
	for _, p := range []string{prefix, prefix + ".member"} {
		seen := map[int]bool{}
		for k := range f.v {
			rest, ok := strings.CutPrefix(k, p+".")
			if !ok {
				continue
			}
			num, _, _ := strings.Cut(rest, ".")
			if n, err := strconv.Atoi(num); err == nil && n > 0 {
				seen[n] = true
			}
		}
		if len(seen) > 0 {
			ns := make([]int, 0, len(seen))
			for n := range seen {
				ns = append(ns, n)
			}
			sort.Ints(ns)
			return p, ns
		}
	}
	return prefix, nil
}

// list reads prefix.1, prefix.2, ...
func (f *qform) list(prefix string) []string {
	p, ns := f.indexes(prefix)
	var out []string
	for _, n := range ns {
		out = append(out, f.get(p+"."+strconv.Itoa(n)))
	}
	return out
}

// attrs reads prefix.N.Name / prefix.N.Value.
func (f *qform) attrs(prefix string) map[string]string {
	p, ns := f.indexes(prefix)
	if len(ns) == 0 {
		return nil
	}
	out := map[string]string{}
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		out[f.get(k+".Name")] = f.get(k + ".Value")
	}
	return out
}

// msgAttrs reads prefix.N.Name and prefix.N.Value.{DataType,StringValue,BinaryValue}.
func (f *qform) msgAttrs(prefix string) map[string]msgAttr {
	p, ns := f.indexes(prefix)
	if len(ns) == 0 {
		return nil
	}
	out := map[string]msgAttr{}
	for _, n := range ns {
		k := p + "." + strconv.Itoa(n)
		a := msgAttr{DataType: f.get(k + ".Value.DataType")}
		if f.has(k + ".Value.StringValue") {
			s := f.get(k + ".Value.StringValue")
			a.StringValue = &s
		}
		if f.has(k + ".Value.BinaryValue") {
			b, err := base64.StdEncoding.DecodeString(f.get(k + ".Value.BinaryValue"))
			if err != nil && f.err == nil {
				f.err = awserr.New(awserr.ErrSQSInvalidParameterValue, "%s.Value.BinaryValue is not base64: %v", k, err)
			}
			a.BinaryValue = b
		}
		a.StringListValues = f.list(k + ".Value.StringListValue")
		out[f.get(k+".Name")] = a
	}
	return out
}

// input decodes the request into in: the JSON body, or, for the query
// protocol, fromForm.
func (rq *request) input(in any, fromForm func(f *qform)) error {
	if rq.proto != protoSQSQuery {
		return rq.decode(in)
	}
	f := &qform{v: rq.form}
	fromForm(f)
	return f.err
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

// replySQS writes out as JSON, or as the query protocol's XML document
// <OpResponse><OpResult>out</OpResult><ResponseMetadata/></OpResponse>
// (no Result element when out is nil).
func (rq *request) replySQS(out any) {
	if rq.proto != protoSQSQuery {
		if out == nil {
			out = struct{}{}
		}
		rq.reply(out)
		return
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0"?>` + "\n")
	b.WriteString(`<` + rq.op + `Response xmlns="` + sqsNS + `">`)
	if out != nil {
		enc := xml.NewEncoder(&b)
		if err := enc.EncodeElement(out, xml.StartElement{Name: xml.Name{Local: rq.op + "Result"}}); err != nil {
			rq.fail(err)
			return
		}
		enc.Flush()
	}
	b.WriteString(`<ResponseMetadata><RequestId>` + rq.reqID + `</RequestId></ResponseMetadata></` + rq.op + `Response>`)
	rq.w.Header().Set("Content-Type", "text/xml")
	rq.w.Header().Set("x-amzn-RequestId", rq.reqID)
	rq.w.Write(b.Bytes())
}

func xmlEscape(b *bytes.Buffer, s string) { xml.EscapeText(b, []byte(s)) }

type batchErr struct {
	Id          string `json:"Id" xml:"Id"`
	SenderFault bool   `json:"SenderFault" xml:"SenderFault"`
	Code        string `json:"Code" xml:"Code"`
	Message     string `json:"Message,omitempty" xml:"Message,omitempty"`
}

func batchErrs(in []queue.BatchResultErrorEntry) []batchErr {
	out := make([]batchErr, 0, len(in))
	for _, e := range in {
		out = append(out, batchErr{Id: e.Id, SenderFault: e.SenderFault, Code: e.Code, Message: e.Message})
	}
	return out
}

type idEntry struct {
	Id string `json:"Id" xml:"Id"`
}

type batchOut struct {
	Successful []idEntry  `json:"Successful"`
	Failed     []batchErr `json:"Failed"`
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
	Id                     string `json:"Id,omitempty" xml:"Id,omitempty"`
	MessageId              string `json:"MessageId" xml:"MessageId"`
	MD5OfMessageBody       string `json:"MD5OfMessageBody" xml:"MD5OfMessageBody"`
	MD5OfMessageAttributes string `json:"MD5OfMessageAttributes,omitempty" xml:"MD5OfMessageAttributes,omitempty"`
	SequenceNumber         string `json:"SequenceNumber,omitempty" xml:"SequenceNumber,omitempty"`
}

type sendIn struct {
	Id                      string             `json:"Id"`
	QueueUrl                string             `json:"QueueUrl"`
	MessageBody             *string            `json:"MessageBody"`
	DelaySeconds            *int               `json:"DelaySeconds"`
	MessageAttributes       map[string]msgAttr `json:"MessageAttributes"`
	MessageSystemAttributes map[string]msgAttr `json:"MessageSystemAttributes"`
	MessageDeduplicationId  string             `json:"MessageDeduplicationId"`
	MessageGroupId          string             `json:"MessageGroupId"`
}

func (s *sendIn) fromForm(f *qform, p string) {
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
	return queue.SendMessageBatchRequestEntry{
		Id: s.Id, MessageBody: *s.MessageBody, DelaySeconds: s.DelaySeconds,
		MessageAttributes: toQueueAttrs(s.MessageAttributes), MessageSystemAttributes: toQueueAttrs(s.MessageSystemAttributes),
		MessageDeduplicationId: s.MessageDeduplicationId, MessageGroupId: s.MessageGroupId,
	}, nil
}

type messageOut struct {
	MessageId              string          `json:"MessageId" xml:"MessageId"`
	ReceiptHandle          string          `json:"ReceiptHandle" xml:"ReceiptHandle"`
	MD5OfBody              string          `json:"MD5OfBody" xml:"MD5OfBody"`
	Body                   string          `json:"Body" xml:"Body"`
	Attributes             xmlMap[string]  `json:"Attributes,omitempty" xml:"Attribute,omitempty"`
	MD5OfMessageAttributes string          `json:"MD5OfMessageAttributes,omitempty" xml:"MD5OfMessageAttributes,omitempty"`
	MessageAttributes      xmlMap[msgAttr] `json:"MessageAttributes,omitempty" xml:"MessageAttribute,omitempty"`
}

type moveTaskOut struct {
	TaskHandle                        string `json:"TaskHandle,omitempty" xml:"TaskHandle,omitempty"`
	Status                            string `json:"Status" xml:"Status"`
	SourceArn                         string `json:"SourceArn" xml:"SourceArn"`
	DestinationArn                    string `json:"DestinationArn,omitempty" xml:"DestinationArn,omitempty"`
	MaxNumberOfMessagesPerSecond      int    `json:"MaxNumberOfMessagesPerSecond,omitempty" xml:"MaxNumberOfMessagesPerSecond,omitempty"`
	ApproximateNumberOfMessagesMoved  int64  `json:"ApproximateNumberOfMessagesMoved" xml:"ApproximateNumberOfMessagesMoved"`
	ApproximateNumberOfMessagesToMove int64  `json:"ApproximateNumberOfMessagesToMove" xml:"ApproximateNumberOfMessagesToMove"`
	FailureReason                     string `json:"FailureReason,omitempty" xml:"FailureReason,omitempty"`
	StartedTimestamp                  int64  `json:"StartedTimestamp" xml:"StartedTimestamp"`
}

func requireURL(u string) error {
	if u == "" {
		return awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter QueueUrl.")
	}
	return nil
}

func (rq *request) sqs() {
	out, err := rq.sqsOp()
	if err != nil {
		rq.fail(err)
		return
	}
	rq.replySQS(out)
}

func (rq *request) sqsOp() (any, error) {
	ctx := rq.r.Context()
	svc := rq.h.rn.Queues
	switch rq.op {
	case "CreateQueue":
		var in struct {
			QueueName  string
			Attributes map[string]string
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueName, in.Attributes = f.get("QueueName"), f.attrs("Attribute")
		}); err != nil {
			return nil, err
		}
		if in.QueueName == "" {
			return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter QueueName.")
		}
		u, err := svc.CreateQueue(ctx, in.QueueName, in.Attributes)
		if err != nil {
			return nil, err
		}
		return struct{ QueueUrl string }{rq.queueURL(u)}, nil
	case "GetQueueUrl":
		var in struct{ QueueName string }
		if err := rq.input(&in, func(f *qform) { in.QueueName = f.get("QueueName") }); err != nil {
			return nil, err
		}
		u, err := svc.GetQueueURL(ctx, in.QueueName)
		if err != nil {
			return nil, err
		}
		return struct{ QueueUrl string }{rq.queueURL(u)}, nil
	case "ListQueues":
		var in struct {
			QueueNamePrefix string
			NextToken       string
			MaxResults      *int
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueNamePrefix, in.NextToken, in.MaxResults = f.get("QueueNamePrefix"), f.get("NextToken"), f.intp("MaxResults")
		}); err != nil {
			return nil, err
		}
		urls, err := svc.ListQueues(ctx, in.QueueNamePrefix)
		if err != nil {
			return nil, err
		}
		if in.NextToken != "" {
			b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
			if err != nil {
				return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Invalid NextToken value.")
			}
			i := sort.Search(len(urls), func(i int) bool { return urls[i][strings.LastIndexByte(urls[i], '/')+1:] > string(b) })
			urls = urls[i:]
		}
		var next string
		if in.MaxResults != nil {
			if *in.MaxResults < 1 || *in.MaxResults > 1000 {
				return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter MaxResults is invalid. Reason: MaxResults must be an integer between 1 and 1000.", *in.MaxResults)
			}
			if len(urls) > *in.MaxResults {
				urls = urls[:*in.MaxResults]
				last := urls[len(urls)-1]
				next = base64.RawURLEncoding.EncodeToString([]byte(last[strings.LastIndexByte(last, '/')+1:]))
			}
		}
		for i := range urls {
			urls[i] = rq.queueURL(urls[i])
		}
		return struct {
			QueueUrls []string `json:"QueueUrls,omitempty" xml:"QueueUrl"`
			NextToken string   `json:"NextToken,omitempty" xml:"NextToken,omitempty"`
		}{urls, next}, nil
	case "DeleteQueue", "PurgeQueue":
		var in struct{ QueueUrl string }
		if err := rq.input(&in, func(f *qform) { in.QueueUrl = f.get("QueueUrl") }); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		if rq.op == "DeleteQueue" {
			return nil, svc.DeleteQueue(ctx, in.QueueUrl)
		}
		return nil, svc.PurgeQueue(ctx, in.QueueUrl)
	case "GetQueueAttributes":
		var in struct {
			QueueUrl       string
			AttributeNames []string
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl, in.AttributeNames = f.get("QueueUrl"), f.list("AttributeName")
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		attrs, err := svc.GetQueueAttributes(ctx, in.QueueUrl, in.AttributeNames)
		if err != nil {
			return nil, err
		}
		return struct {
			Attributes xmlMap[string] `json:"Attributes,omitempty" xml:"Attribute,omitempty"`
		}{attrs}, nil
	case "SetQueueAttributes":
		var in struct {
			QueueUrl   string
			Attributes map[string]string
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl, in.Attributes = f.get("QueueUrl"), f.attrs("Attribute")
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		return nil, svc.SetQueueAttributes(ctx, in.QueueUrl, in.Attributes)
	case "SendMessage":
		var in sendIn
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl = f.get("QueueUrl")
			in.fromForm(f, "")
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		e, err := in.entry()
		if err != nil {
			return nil, err
		}
		o, err := svc.SendMessage(ctx, in.QueueUrl, queue.SendMessageInput{
			MessageBody: e.MessageBody, DelaySeconds: e.DelaySeconds, MessageAttributes: e.MessageAttributes,
			MessageSystemAttributes: e.MessageSystemAttributes, MessageDeduplicationId: e.MessageDeduplicationId, MessageGroupId: e.MessageGroupId,
		})
		if err != nil {
			return nil, err
		}
		return sendOut{MessageId: o.MessageId, MD5OfMessageBody: o.MD5OfMessageBody, MD5OfMessageAttributes: o.MD5OfMessageAttributes, SequenceNumber: o.SequenceNumber}, nil
	case "SendMessageBatch":
		var in struct {
			QueueUrl string
			Entries  []sendIn
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl = f.get("QueueUrl")
			p, ns := f.indexes("SendMessageBatchRequestEntry")
			for _, n := range ns {
				var s sendIn
				s.fromForm(f, p+"."+strconv.Itoa(n)+".")
				in.Entries = append(in.Entries, s)
			}
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		entries := make([]queue.SendMessageBatchRequestEntry, len(in.Entries))
		for i := range in.Entries {
			e, err := in.Entries[i].entry()
			if err != nil {
				return nil, err
			}
			entries[i] = e
		}
		o, err := svc.SendMessageBatch(ctx, in.QueueUrl, entries)
		if err != nil {
			return nil, err
		}
		ok := make([]sendOut, 0, len(o.Successful))
		for _, s := range o.Successful {
			ok = append(ok, sendOut{Id: s.Id, MessageId: s.MessageId, MD5OfMessageBody: s.MD5OfMessageBody, MD5OfMessageAttributes: s.MD5OfMessageAttributes, SequenceNumber: s.SequenceNumber})
		}
		return struct {
			Successful []sendOut  `json:"Successful" xml:"SendMessageBatchResultEntry"`
			Failed     []batchErr `json:"Failed" xml:"BatchResultErrorEntry"`
		}{ok, batchErrs(o.Failed)}, nil
	case "ReceiveMessage":
		var in struct {
			QueueUrl                    string
			AttributeNames              []string
			MessageSystemAttributeNames []string
			MessageAttributeNames       []string
			MaxNumberOfMessages         int
			VisibilityTimeout           *int
			WaitTimeSeconds             *int
			ReceiveRequestAttemptId     string
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl = f.get("QueueUrl")
			in.AttributeNames = f.list("AttributeName")
			in.MessageSystemAttributeNames = f.list("MessageSystemAttributeName")
			in.MessageAttributeNames = f.list("MessageAttributeName")
			in.MaxNumberOfMessages = f.int("MaxNumberOfMessages")
			in.VisibilityTimeout = f.intp("VisibilityTimeout")
			in.WaitTimeSeconds = f.intp("WaitTimeSeconds")
			in.ReceiveRequestAttemptId = f.get("ReceiveRequestAttemptId")
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		msgs, err := svc.ReceiveMessage(ctx, in.QueueUrl, queue.ReceiveMessageInput{
			MaxNumberOfMessages: in.MaxNumberOfMessages, VisibilityTimeout: in.VisibilityTimeout, WaitTimeSeconds: in.WaitTimeSeconds,
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
			Messages []messageOut `json:"Messages,omitempty" xml:"Message"`
		}{out}, nil
	case "DeleteMessage", "ChangeMessageVisibility":
		var in struct {
			QueueUrl          string
			ReceiptHandle     string
			VisibilityTimeout *int
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl, in.ReceiptHandle, in.VisibilityTimeout = f.get("QueueUrl"), f.get("ReceiptHandle"), f.intp("VisibilityTimeout")
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		if in.ReceiptHandle == "" {
			return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter ReceiptHandle.")
		}
		if rq.op == "DeleteMessage" {
			return nil, svc.DeleteMessage(ctx, in.QueueUrl, in.ReceiptHandle)
		}
		if in.VisibilityTimeout == nil {
			return nil, awserr.New(awserr.ErrMissingParameter, "The request must contain the parameter VisibilityTimeout.")
		}
		return nil, svc.ChangeMessageVisibility(ctx, in.QueueUrl, in.ReceiptHandle, *in.VisibilityTimeout)
	case "DeleteMessageBatch", "ChangeMessageVisibilityBatch":
		var in struct {
			QueueUrl string
			Entries  []struct {
				Id                string
				ReceiptHandle     string
				VisibilityTimeout int
			}
		}
		if err := rq.input(&in, func(f *qform) {
			in.QueueUrl = f.get("QueueUrl")
			p, ns := f.indexes(rq.op + "RequestEntry")
			for _, n := range ns {
				k := p + "." + strconv.Itoa(n) + "."
				in.Entries = append(in.Entries, struct {
					Id                string
					ReceiptHandle     string
					VisibilityTimeout int
				}{f.get(k + "Id"), f.get(k + "ReceiptHandle"), f.int(k + "VisibilityTimeout")})
			}
		}); err != nil {
			return nil, err
		}
		if err := requireURL(in.QueueUrl); err != nil {
			return nil, err
		}
		var o *queue.BatchOutput
		var err error
		if rq.op == "DeleteMessageBatch" {
			entries := make([]queue.DeleteMessageBatchRequestEntry, len(in.Entries))
			for i, e := range in.Entries {
				entries[i] = queue.DeleteMessageBatchRequestEntry{Id: e.Id, ReceiptHandle: e.ReceiptHandle}
			}
			o, err = svc.DeleteMessageBatch(ctx, in.QueueUrl, entries)
		} else {
			entries := make([]queue.ChangeMessageVisibilityBatchRequestEntry, len(in.Entries))
			for i, e := range in.Entries {
				entries[i] = queue.ChangeMessageVisibilityBatchRequestEntry{Id: e.Id, ReceiptHandle: e.ReceiptHandle, VisibilityTimeout: e.VisibilityTimeout}
			}
			o, err = svc.ChangeMessageVisibilityBatch(ctx, in.QueueUrl, entries)
		}
		if err != nil {
			return nil, err
		}
		return rq.batchResult(o, rq.op+"ResultEntry"), nil
	case "StartMessageMoveTask":
		var in struct {
			SourceArn                    string
			DestinationArn               string
			MaxNumberOfMessagesPerSecond int
		}
		if err := rq.input(&in, func(f *qform) {
			in.SourceArn, in.DestinationArn, in.MaxNumberOfMessagesPerSecond = f.get("SourceArn"), f.get("DestinationArn"), f.int("MaxNumberOfMessagesPerSecond")
		}); err != nil {
			return nil, err
		}
		h, err := svc.StartMessageMoveTask(ctx, in.SourceArn, in.DestinationArn, in.MaxNumberOfMessagesPerSecond)
		if err != nil {
			return nil, err
		}
		return struct{ TaskHandle string }{h}, nil
	case "ListMessageMoveTasks":
		var in struct {
			SourceArn  string
			MaxResults *int
		}
		if err := rq.input(&in, func(f *qform) {
			in.SourceArn, in.MaxResults = f.get("SourceArn"), f.intp("MaxResults")
		}); err != nil {
			return nil, err
		}
		max := 1
		if in.MaxResults != nil {
			max = *in.MaxResults
			if max < 1 || max > 10 {
				return nil, awserr.New(awserr.ErrSQSInvalidParameterValue, "Value %d for parameter MaxResults is invalid. Reason: must be between 1 and 10.", max)
			}
		}
		tasks, err := svc.ListMessageMoveTasks(ctx, in.SourceArn)
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
	case "CancelMessageMoveTask":
		var in struct{ TaskHandle string }
		if err := rq.input(&in, func(f *qform) { in.TaskHandle = f.get("TaskHandle") }); err != nil {
			return nil, err
		}
		n, err := svc.CancelMessageMoveTask(ctx, in.TaskHandle)
		if err != nil {
			return nil, err
		}
		return struct{ ApproximateNumberOfMessagesMoved int64 }{n}, nil
	}
	if rq.proto == protoSQSQuery {
		return nil, &apiError{status: 400, code: "InvalidAction", message: fmt.Sprintf("The action %s is not valid for this endpoint.", rq.op)}
	}
	return nil, &apiError{status: 400, code: "UnsupportedOperation", queryCode: "AWS.SimpleQueueService.UnsupportedOperation", message: fmt.Sprintf("SQS operation %s is not supported by runnel", rq.op)}
}
