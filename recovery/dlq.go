package recovery

// The operator's dead-letter queue tools: list, inspect, redrive, purge and
// archive. They work through the queue API only (queue.Service), so they
// keep SQS semantics and run against any runnel.
//
// # Reading without consuming
//
// SQS has no "peek": reading a message means receiving it. Inspect
// receives messages with a short visibility
// timeout and sets their visibility back to 0 at once, as the AWS
// console's "poll for messages" does. This increments each message's
// ApproximateReceiveCount (the counts Inspect reports are the ones before
// its own receive) and hides the messages from other consumers for the
// few milliseconds the scan takes. On a queue that itself has a
// RedrivePolicy, a message whose count reaches maxReceiveCount moves on to
// the next dead-letter queue at a later receive: Inspect says so in
// Inspection.Warning.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/wire"
)

// KindLegacyDLQ is a message a function's DeadLetterConfig stored: the
// original event as body, RequestID/ErrorCode/ErrorMessage attributes.
// KindUnknown is any other body.
const (
	KindLegacyDLQ = "legacy-dlq"
	KindUnknown   = "unknown"
)

// peekVisibility is the visibility timeout (s) of a scan's receives: long
// enough for a scan of a few thousand messages, short enough that a crash
// mid-scan hides them only briefly.
const peekVisibility = 60

// QueueSummary is one queue as ListQueues shows it.
type QueueSummary struct {
	Name string
	URL  string
	ARN  string
	// IsDLQ: a dead-letter queue, as ListOptions.DeadLetterFor classifies
	// it when given; else named in some queue's RedrivePolicy, or
	// "dlq"/"dead" in the name (LooksLikeDLQ).
	IsDLQ bool
	// DeadLetterFor says why it is a dead-letter queue (from
	// ListOptions.DeadLetterFor: "on-failure destination of mapping <uuid>",
	// "DeadLetterConfig of function f", "RedrivePolicy target of queue q",
	// ...); empty without it.
	DeadLetterFor []string `json:",omitempty"`
	// Sources are the queues whose RedrivePolicy names this one (where
	// redrive moves its messages back).
	Sources []string `json:",omitempty"`
	// RedriveTarget is this queue's own dead-letter queue, if any.
	RedriveTarget string `json:",omitempty"`
	Visible       int
	InFlight      int
	Delayed       int
	// OldestSent and OldestAgeSeconds are of the oldest message in the
	// queue, visible, in flight or delayed (CloudWatch's
	// ApproximateAgeOfOldestMessage), when asked for (ListOptions.Age).
	OldestSent       *time.Time `json:",omitempty"`
	OldestAgeSeconds float64    `json:",omitempty"`
}

// ListOptions tune ListQueues.
type ListOptions struct {
	// DLQOnly lists only dead-letter queues.
	DLQOnly bool
	// Age gives the age of the oldest message of each listed dead-letter
	// queue, read from the queue's index: nothing is received, so no
	// receive count moves (queue.Service.ApproximateAgeOfOldestMessage).
	Age bool
	// Now is the time ages are measured at; zero means time.Now().
	Now time.Time
	// DeadLetterFor, when not nil, classifies the dead-letter queues: a
	// queue is one when it has reasons here (queue name -> why), as
	// `runnel status` and the web page classify them
	// (observe.QueueState.DeadLetterFor: RedrivePolicy targets of queues
	// and SNS subscriptions, mappings' on-failure destinations, functions'
	// asynchronous OnFailure destinations and DeadLetterConfig queues,
	// rules' and schedules' dead-letter queues, runnel's asynchronous
	// dead-letter store, names matching observe.DefaultDeadLetterPattern).
	// nil: RedrivePolicy targets and LooksLikeDLQ names only, which miss
	// the destinations that only runnel's stored configuration names.
	DeadLetterFor map[string][]string
}

// LooksLikeDLQ reports whether a queue name says it is a dead-letter queue
// ("dlq" or "dead" in it, any case): ListQueues' classification without
// ListOptions.DeadLetterFor.
func LooksLikeDLQ(name string) bool {
	n := strings.ToLower(name)
	return strings.Contains(n, "dlq") || strings.Contains(n, "dead")
}

// ListQueues lists queues with their depth, marking dead-letter queues:
// those ListOptions.DeadLetterFor names when given; else those named in
// some queue's RedrivePolicy and those whose name contains "dlq" or
// "dead".
func ListQueues(ctx context.Context, queues *queue.Service, o ListOptions) ([]QueueSummary, error) {
	urls, err := queues.ListQueues(ctx, "")
	if err != nil {
		return nil, err
	}
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	var all []QueueSummary
	sources := map[string][]string{}
	for _, u := range urls {
		attrs, err := queues.GetQueueAttributes(ctx, u, []string{queue.AttrAll})
		if err != nil {
			if errors.Is(err, awserr.ErrQueueDoesNotExist) {
				continue
			}
			return nil, err
		}
		name, _ := queue.NameFromARN(attrs[queue.AttrQueueArn])
		s := QueueSummary{Name: name, URL: u, ARN: attrs[queue.AttrQueueArn],
			Visible:  atoi(attrs[queue.AttrApproximateNumberOfMessages]),
			InFlight: atoi(attrs[queue.AttrApproximateNumberOfMessagesNotVisible]),
			Delayed:  atoi(attrs[queue.AttrApproximateNumberOfMessagesDelayed]),
		}
		if p := attrs[queue.AttrRedrivePolicy]; p != "" {
			if rp, err := queue.ParseRedrivePolicy(p); err == nil {
				if t, ok := queue.NameFromARN(rp.DeadLetterTargetArn); ok {
					s.RedriveTarget = t
					sources[t] = append(sources[t], name)
				}
			}
		}
		all = append(all, s)
	}
	var out []QueueSummary
	for _, s := range all {
		s.Sources = sources[s.Name]
		sort.Strings(s.Sources)
		if o.DeadLetterFor != nil {
			s.DeadLetterFor = o.DeadLetterFor[s.Name]
			s.IsDLQ = len(s.DeadLetterFor) > 0 || len(s.Sources) > 0
		} else {
			s.IsDLQ = len(s.Sources) > 0 || LooksLikeDLQ(s.Name)
		}
		if o.DLQOnly && !s.IsDLQ {
			continue
		}
		if o.Age && s.IsDLQ && s.Visible+s.InFlight+s.Delayed > 0 {
			// Read from the queue's index, not received: a receive would
			// count toward a RedrivePolicy's maxReceiveCount on a
			// dead-letter queue that has one of its own.
			age, err := queues.ApproximateAgeOfOldestMessage(ctx, s.URL)
			if err != nil {
				return nil, err
			}
			t := now.Add(-age)
			s.OldestSent = &t
			s.OldestAgeSeconds = age.Seconds()
		}
		out = append(out, s)
	}
	return out, nil
}

// MessageView is one dead-letter message as Inspect shows it: what it is,
// why it failed and its attempt history.
type MessageView struct {
	MessageId     string
	SentTimestamp time.Time
	// ReceiveCount is ApproximateReceiveCount before Inspect's own receive.
	ReceiveCount int
	// DeadLetterQueueSourceArn is the queue a RedrivePolicy moved it from.
	DeadLetterQueueSourceArn string `json:",omitempty"`
	// Kind is one of the Kind* constants.
	Kind string
	// Condition is why it was discarded (RetryAttemptsExhausted,
	// RecordAgeExceeded, RetriesExhausted, EventAgeExceeded, ...).
	Condition string `json:",omitempty"`
	// ErrorType and ErrorMessage are the last error, when the record says.
	ErrorType    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
	// TopicArn is an SNS notification's topic (its MessageId is RequestID).
	TopicArn string `json:",omitempty"`
	// RequestID and FunctionArn are of the last invocation.
	RequestID   string `json:",omitempty"`
	FunctionArn string `json:",omitempty"`
	// InvokeCount is the record's approximateInvokeCount.
	InvokeCount int `json:",omitempty"`
	// Attempt and InitialTimestamp come from a retry envelope.
	Attempt          int        `json:",omitempty"`
	InitialTimestamp *time.Time `json:",omitempty"`
	// The range a KinesisBatchInfo pointer names.
	StreamArn           string `json:",omitempty"`
	ShardID             string `json:",omitempty"`
	StartSequenceNumber string `json:",omitempty"`
	EndSequenceNumber   string `json:",omitempty"`
	BatchSize           int    `json:",omitempty"`
	// Body is the message body.
	Body string
	// Attributes and MessageAttributes as received (with Inspect's own
	// receive counted in ApproximateReceiveCount).
	Attributes        map[string]string                      `json:",omitempty"`
	MessageAttributes map[string]queue.MessageAttributeValue `json:",omitempty"`
}

// Classify describes a dead-letter message from its body and attributes,
// without reading the stream.
func Classify(m queue.Message) MessageView {
	v := MessageView{MessageId: m.MessageId, Body: m.Body, Attributes: m.Attributes, MessageAttributes: m.MessageAttributes,
		DeadLetterQueueSourceArn: m.Attributes[queue.MsgAttrDeadLetterQueueSourceArn], Kind: KindUnknown}
	if ms, err := strconv.ParseInt(m.Attributes[queue.MsgAttrSentTimestamp], 10, 64); err == nil {
		v.SentTimestamp = time.UnixMilli(ms).UTC()
	}
	v.ReceiveCount = atoi(m.Attributes[queue.MsgAttrApproximateReceiveCount])
	body := []byte(m.Body)
	if env, ok := wire.UnwrapRetry(body); ok {
		v.Kind, v.Condition, v.Attempt = KindInserted, "Inserted", env.Metadata.Attempt
		t := time.Unix(env.Metadata.InitialTimestamp, 0).UTC()
		v.InitialTimestamp = &t
		return v
	}
	var f wire.OnFailureRecord
	if err := json.Unmarshal(body, &f); err == nil && f.BatchInfo() != nil {
		bi := f.BatchInfo()
		v.Kind, v.Condition = KindStreamBatch, f.RequestContext.Condition
		if f.KinesisBatchInfo == nil {
			v.Kind = KindDDBStreamBatch
		}
		v.ErrorType = f.ResponseContext.FunctionError
		v.RequestID, v.FunctionArn, v.InvokeCount = f.RequestContext.RequestID, f.RequestContext.FunctionArn, f.RequestContext.ApproximateInvokeCount
		v.StreamArn, v.ShardID, v.StartSequenceNumber, v.EndSequenceNumber, v.BatchSize = bi.StreamArn, bi.ShardID, bi.StartSequenceNumber, bi.EndSequenceNumber, bi.BatchSize
		return v
	}
	if env, ok := wire.UnwrapSNS(body); ok {
		v.Kind, v.RequestID, v.TopicArn = KindSNS, env.MessageId, env.TopicArn
		return v
	}
	var a wire.InvocationRecord
	if err := json.Unmarshal(body, &a); err == nil && len(a.RequestPayload) > 0 {
		v.Kind, v.Condition = KindAsync, a.RequestContext.Condition
		v.RequestID, v.FunctionArn, v.InvokeCount = a.RequestContext.RequestID, a.RequestContext.FunctionArn, a.RequestContext.ApproximateInvokeCount
		v.ErrorType = a.ResponseContext.FunctionError
		var rp wire.ErrorPayload
		if json.Unmarshal(a.ResponsePayload, &rp) == nil {
			if rp.ErrorType != "" {
				v.ErrorType = rp.ErrorType
			}
			v.ErrorMessage = rp.ErrorMessage
		}
		return v
	}
	if ec, ok := m.MessageAttributes[wire.AttrErrorCode]; ok && ec.StringValue != nil {
		v.Kind, v.ErrorType = KindLegacyDLQ, *ec.StringValue
		if em, ok := m.MessageAttributes[wire.AttrErrorMessage]; ok && em.StringValue != nil {
			v.ErrorMessage = *em.StringValue
		}
		if id, ok := m.MessageAttributes[wire.AttrRequestID]; ok && id.StringValue != nil {
			v.RequestID = *id.StringValue
		}
	}
	return v
}

// InspectOptions tune Inspect.
type InspectOptions struct {
	// Limit is how many messages the page shows (default 10).
	Limit int
	// Scan is how many messages at most are looked at for the breakdown
	// (default 1000; at least Limit).
	Scan int
	// Now is the time ages are measured at; zero means time.Now().
	Now time.Time
	// DeadLetterFor, when not nil, classifies the dead-letter queues: a
	// queue is one when it has reasons here (queue name -> why), as
	// `runnel status` and the web page classify them
	// (observe.QueueState.DeadLetterFor: RedrivePolicy targets of queues
	// and SNS subscriptions, mappings' on-failure destinations, functions'
	// asynchronous OnFailure destinations and DeadLetterConfig queues,
	// rules' and schedules' dead-letter queues, runnel's asynchronous
	// dead-letter store, names matching observe.DefaultDeadLetterPattern).
	// nil: RedrivePolicy targets and LooksLikeDLQ names only, which miss
	// the destinations that only runnel's stored configuration names.
	DeadLetterFor map[string][]string
}

// Inspection is what Inspect found.
type Inspection struct {
	Queue    string
	URL      string
	ARN      string
	Visible  int
	InFlight int
	Delayed  int
	// Sources are the queues that dead-letter into this one.
	Sources []string `json:",omitempty"`
	// Scanned is how many visible messages were looked at; the breakdowns
	// count them (all visible messages when Scanned == Visible).
	Scanned          int
	OldestSent       *time.Time `json:",omitempty"`
	OldestAgeSeconds float64    `json:",omitempty"`
	ByKind           map[string]int
	ByCondition      map[string]int
	ByErrorType      map[string]int
	// Messages is the first page, oldest first.
	Messages []MessageView
	// Warning says when looking could move messages on (see the package doc).
	Warning string `json:",omitempty"`
}

// Inspect looks at a dead-letter queue without consuming it: counts, the
// age of the oldest message, breakdowns by kind, condition and error type,
// and a page of messages with their attempt history. See the package doc
// for what reading does to receive counts.
func Inspect(ctx context.Context, queues *queue.Service, name string, o InspectOptions) (*Inspection, error) {
	name = queueName(name)
	if o.Limit <= 0 {
		o.Limit = 10
	}
	if o.Scan <= 0 {
		o.Scan = 1000
	}
	o.Scan = max(o.Scan, o.Limit)
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	url, err := queues.GetQueueURL(ctx, name)
	if err != nil {
		return nil, err
	}
	attrs, err := queues.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
	if err != nil {
		return nil, err
	}
	in := &Inspection{Queue: name, URL: url, ARN: attrs[queue.AttrQueueArn],
		Visible:  atoi(attrs[queue.AttrApproximateNumberOfMessages]),
		InFlight: atoi(attrs[queue.AttrApproximateNumberOfMessagesNotVisible]),
		Delayed:  atoi(attrs[queue.AttrApproximateNumberOfMessagesDelayed]),
		ByKind:   map[string]int{}, ByCondition: map[string]int{}, ByErrorType: map[string]int{},
	}
	if all, err := ListQueues(ctx, queues, ListOptions{}); err == nil {
		for _, q := range all {
			if q.Name == name {
				in.Sources = q.Sources
			}
		}
	}
	if p := attrs[queue.AttrRedrivePolicy]; p != "" {
		in.Warning = "this queue has its own RedrivePolicy (" + p + "): each look counts as a receive, and a message at maxReceiveCount moves on at its next receive"
	}
	views, err := peek(ctx, queues, url, o.Scan)
	if err != nil {
		return nil, err
	}
	in.Scanned = len(views)
	for i, v := range views {
		if i == 0 || v.SentTimestamp.Before(*in.OldestSent) {
			t := v.SentTimestamp
			in.OldestSent = &t
		}
		in.ByKind[v.Kind]++
		in.ByCondition[orNone(v.Condition)]++
		in.ByErrorType[orNone(v.ErrorType)]++
		if i < o.Limit {
			in.Messages = append(in.Messages, v)
		}
	}
	if in.OldestSent != nil {
		in.OldestAgeSeconds = o.Now.Sub(*in.OldestSent).Seconds()
	}
	return in, nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// peek receives up to n visible messages and makes them visible again,
// returning them classified, oldest first.
func peek(ctx context.Context, queues *queue.Service, url string, n int) ([]MessageView, error) {
	var handles []string
	defer func() { release(queues, url, handles) }()
	var views []MessageView
	seen := map[string]bool{}
	for len(views) < n {
		ms, err := receive(ctx, queues, url, min(queue.MaxBatchEntries, n-len(views)), peekVisibility)
		if err != nil {
			return views, err
		}
		if len(ms) == 0 {
			break
		}
		for _, m := range ms {
			handles = append(handles, m.ReceiptHandle)
			if seen[m.MessageId] {
				continue
			}
			seen[m.MessageId] = true
			v := Classify(m)
			v.ReceiveCount = max(v.ReceiveCount-1, 0)
			views = append(views, v)
		}
	}
	sort.SliceStable(views, func(i, j int) bool { return views[i].SentTimestamp.Before(views[j].SentTimestamp) })
	return views, nil
}

func receive(ctx context.Context, queues *queue.Service, url string, n, visibility int) ([]queue.Message, error) {
	wait := 0
	return queues.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{
		MaxNumberOfMessages: n, VisibilityTimeout: &visibility, WaitTimeSeconds: &wait,
		MessageSystemAttributeNames: []string{queue.AttrAll}, MessageAttributeNames: []string{queue.AttrAll},
	})
}

// release makes received messages visible again, even when ctx ended.
func release(queues *queue.Service, url string, handles []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for len(handles) > 0 {
		n := min(len(handles), queue.MaxBatchEntries)
		var entries []queue.ChangeMessageVisibilityBatchRequestEntry
		for i, h := range handles[:n] {
			entries = append(entries, queue.ChangeMessageVisibilityBatchRequestEntry{Id: strconv.Itoa(i), ReceiptHandle: h, VisibilityTimeout: 0})
		}
		queues.ChangeMessageVisibilityBatch(ctx, url, entries)
		handles = handles[n:]
	}
}

// RedriveOptions tune Redrive.
type RedriveOptions struct {
	// To is the destination queue (name, URL or ARN); empty means each
	// message back to the queue it was dead-lettered from.
	To string
	// Rate is MaxNumberOfMessagesPerSecond (1..500; 0 means 500).
	Rate int
	// Poll is how often the task's progress is read (default 100 ms).
	Poll time.Duration
	// Progress, if set, is called with the messages moved so far and the
	// number to move.
	Progress func(moved, total int64)
}

// RedriveResult is a finished move task.
type RedriveResult struct {
	Queue string
	To    string // "" for each message's source
	queue.MessageMoveTask
}

// Redrive moves the messages of a dead-letter queue back to their source
// queues, or to opts.To, through a message move task
// (StartMessageMoveTask) at the rate limit, and waits for the task to end.
// A cancelled ctx cancels the task (moved messages stay moved). A task
// that ends FAILED is an error, with the result.
func Redrive(ctx context.Context, queues *queue.Service, name string, o RedriveOptions) (*RedriveResult, error) {
	name = queueName(name)
	if _, err := queues.GetQueueURL(ctx, name); err != nil {
		return nil, err
	}
	srcARN := queues.ARN(name)
	dstARN := ""
	if o.To != "" {
		dn := queueName(o.To)
		if _, err := queues.GetQueueURL(ctx, dn); err != nil {
			return nil, fmt.Errorf("destination %s: %w", o.To, err)
		}
		dstARN = queues.ARN(dn)
	}
	handle, err := queues.StartMessageMoveTask(ctx, srcARN, dstARN, o.Rate)
	if err != nil {
		return nil, err
	}
	if o.Poll <= 0 {
		o.Poll = 100 * time.Millisecond
	}
	res := &RedriveResult{Queue: name, To: queueNameOrEmpty(o.To)}
	tick := time.NewTicker(o.Poll)
	defer tick.Stop()
	var last queue.MessageMoveTask
	for {
		tasks, err := queues.ListMessageMoveTasks(ctx, srcARN)
		if err != nil && ctx.Err() == nil {
			return nil, err
		}
		if err == nil {
			// Most recent first; only one task runs per source, so ours is
			// the first. Its handle is cleared when it ends, so a task that
			// ended is ours if it started when ours did.
			t, ok := ourTask(tasks, handle, last)
			if !ok {
				return nil, fmt.Errorf("redrive of %s: the message move task %s is no longer listed by ListMessageMoveTasks (a newer task replaced it in the list of 10?); see runnel dlq inspect %s", name, handle, name)
			}
			last = t
			if o.Progress != nil {
				o.Progress(t.ApproximateNumberOfMessagesMoved, t.ApproximateNumberOfMessagesToMove)
			}
			switch t.Status {
			case queue.MoveTaskCompleted, queue.MoveTaskCancelled:
				res.MessageMoveTask = t
				return res, nil
			case queue.MoveTaskFailed:
				res.MessageMoveTask = t
				return res, fmt.Errorf("redrive of %s failed after %d messages: %s", name, t.ApproximateNumberOfMessagesMoved, t.FailureReason)
			}
		}
		select {
		case <-ctx.Done():
			cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			res.MessageMoveTask = last
			if moved, err := queues.CancelMessageMoveTask(cctx, handle); err == nil {
				res.Status, res.ApproximateNumberOfMessagesMoved = queue.MoveTaskCancelled, moved
			} else if tasks, lerr := queues.ListMessageMoveTasks(cctx, srcARN); lerr == nil {
				// Not running any more: it ended between the last look and
				// the cancel (CancelMessageMoveTask refuses a task that is
				// not running); report how it ended, not 0 moved.
				if t, ok := ourTask(tasks, handle, last); ok {
					res.MessageMoveTask = t
				}
			}
			return res, ctx.Err()
		case <-tick.C:
		}
	}
}

// ourTask finds the task of handle among a source's tasks: the one
// carrying the handle while it runs, or, once it ended (its handle
// cleared), the one that started when last did (last's zero value: the
// most recent).
func ourTask(tasks []queue.MessageMoveTask, handle string, last queue.MessageMoveTask) (queue.MessageMoveTask, bool) {
	for _, t := range tasks {
		if t.TaskHandle == handle {
			return t, true
		}
	}
	for _, t := range tasks {
		if t.TaskHandle == "" && (last.StartedTimestamp == 0 || t.StartedTimestamp == last.StartedTimestamp) {
			return t, true
		}
	}
	return queue.MessageMoveTask{}, false
}

// PurgeResult says what Purge removed.
type PurgeResult struct {
	Queue string
	// Messages is how many the queue held just before (visible, in flight
	// and delayed).
	Messages int
}

// Purge deletes every message of a queue (PurgeQueue).
func Purge(ctx context.Context, queues *queue.Service, name string) (*PurgeResult, error) {
	name = queueName(name)
	url, err := queues.GetQueueURL(ctx, name)
	if err != nil {
		return nil, err
	}
	attrs, err := queues.GetQueueAttributes(ctx, url, []string{queue.AttrApproximateNumberOfMessages,
		queue.AttrApproximateNumberOfMessagesNotVisible, queue.AttrApproximateNumberOfMessagesDelayed})
	if err != nil {
		return nil, err
	}
	n := atoi(attrs[queue.AttrApproximateNumberOfMessages]) + atoi(attrs[queue.AttrApproximateNumberOfMessagesNotVisible]) +
		atoi(attrs[queue.AttrApproximateNumberOfMessagesDelayed])
	if err := queues.PurgeQueue(ctx, url); err != nil {
		return nil, err
	}
	return &PurgeResult{Queue: name, Messages: n}, nil
}
