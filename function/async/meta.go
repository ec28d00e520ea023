package async

import (
	"strconv"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// Message attributes of an event in its function's internal queue.
const (
	attrRequestID     = "runnel.RequestId"     // String: the event's request id
	attrEnqueued      = "runnel.EnqueuedAt"    // Number: Unix ms of the Event invocation
	attrInvokeCount   = "runnel.InvokeCount"   // Number: attempts that ran
	attrThrottles     = "runnel.Throttles"     // Number: throttles (or missing function) in a row
	attrLastStatus    = "runnel.LastStatus"    // Number: HTTP status of the last attempt
	attrLastFuncError = "runnel.FunctionError" // String: "Unhandled" after a function error
	attrLastError     = "runnel.LastError"     // String: the last error object, JSON (when it fits)
	attrQualifier     = "runnel.Qualifier"     // String: the version or alias invoked ("" for $LATEST)
	attrExecuted      = "runnel.Executed"      // String: the version the last attempt ran (after one ran)
)

// meta is an event's state, carried in its message attributes.
type meta struct {
	requestID   string
	qualifier   string // the version or alias invoked; "" for $LATEST
	enqueued    time.Time
	invokeCount int
	throttles   int
	// the last attempt's outcome
	lastStatus    int
	lastFuncError string
	lastError     string // {"errorMessage":...,"errorType":...}
	// lastExecuted is the version the last attempt that ran executed
	// ("" if none ran): an EventAgeExceeded record names it.
	lastExecuted string
}

func str(s string) *string { return &s }

// attributes encodes m for a message whose body has bodyLen bytes. The
// last error is left out when it would not fit the message.
func (m meta) attributes(bodyLen int) map[string]queue.MessageAttributeValue {
	a := map[string]queue.MessageAttributeValue{
		attrRequestID:   {DataType: "String", StringValue: str(m.requestID)},
		attrEnqueued:    {DataType: "Number", StringValue: str(strconv.FormatInt(m.enqueued.UnixMilli(), 10))},
		attrInvokeCount: {DataType: "Number", StringValue: str(strconv.Itoa(m.invokeCount))},
	}
	if m.qualifier != "" {
		a[attrQualifier] = queue.MessageAttributeValue{DataType: "String", StringValue: str(m.qualifier)}
	}
	if m.lastExecuted != "" && m.lastExecuted != "$LATEST" { // the record's default
		a[attrExecuted] = queue.MessageAttributeValue{DataType: "String", StringValue: str(m.lastExecuted)}
	}
	if m.throttles > 0 {
		a[attrThrottles] = queue.MessageAttributeValue{DataType: "Number", StringValue: str(strconv.Itoa(m.throttles))}
	}
	if m.lastStatus > 0 {
		a[attrLastStatus] = queue.MessageAttributeValue{DataType: "Number", StringValue: str(strconv.Itoa(m.lastStatus))}
	}
	if m.lastFuncError != "" {
		a[attrLastFuncError] = queue.MessageAttributeValue{DataType: "String", StringValue: str(m.lastFuncError)}
	}
	if m.lastError != "" {
		size := bodyLen + len(attrLastError) + len("String") + len(m.lastError)
		for k, v := range a {
			size += len(k) + len(v.DataType) + len(*v.StringValue)
		}
		if size <= queue.MaxMaximumMessageSize {
			a[attrLastError] = queue.MessageAttributeValue{DataType: "String", StringValue: str(m.lastError)}
		}
	}
	return a
}

// parseMeta reads an event's state from a received message.
func parseMeta(msg *queue.Message) meta {
	get := func(k string) string {
		if v, ok := msg.MessageAttributes[k]; ok && v.StringValue != nil {
			return *v.StringValue
		}
		return ""
	}
	num := func(k string) int { n, _ := strconv.Atoi(get(k)); return n }
	m := meta{requestID: get(attrRequestID), invokeCount: num(attrInvokeCount), throttles: num(attrThrottles),
		lastStatus: num(attrLastStatus), lastFuncError: get(attrLastFuncError), lastError: get(attrLastError), qualifier: get(attrQualifier),
		lastExecuted: get(attrExecuted)}
	if ms, err := strconv.ParseInt(get(attrEnqueued), 10, 64); err == nil {
		m.enqueued = time.UnixMilli(ms)
	} else if ms, err := strconv.ParseInt(msg.Attributes[queue.MsgAttrSentTimestamp], 10, 64); err == nil {
		m.enqueued = time.UnixMilli(ms)
	}
	if m.requestID == "" {
		m.requestID = msg.MessageId
	}
	return m
}
