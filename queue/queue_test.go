package queue_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

func TestCreateQueue(t *testing.T) {
	e := newEnv(t)
	url := e.create("orders", map[string]string{"VisibilityTimeout": "60"})
	if want := "http://sqs.us-east-1.localhost:4566/000000000000/orders"; url != want {
		t.Fatalf("url = %s, want %s", url, want)
	}
	tests := []struct {
		rule  string
		name  string
		attrs map[string]string
		err   error
	}{
		{"same name and same attributes returns the existing queue", "orders", map[string]string{"VisibilityTimeout": "60"}, nil},
		{"same name and no attributes returns the existing queue", "orders", nil, nil},
		{"same name and a different attribute is QueueNameExists", "orders", map[string]string{"VisibilityTimeout": "61"}, awserr.ErrQueueNameExists},
		{"same name as a FIFO queue is QueueNameExists", "orders", map[string]string{"DelaySeconds": "5"}, awserr.ErrQueueNameExists},
		{"FifoQueue needs a .fifo name", "plain", map[string]string{"FifoQueue": "true"}, awserr.ErrSQSInvalidParameterValue},
		{"a .fifo name needs FifoQueue", "x.fifo", nil, awserr.ErrSQSInvalidParameterValue},
		{"names are at most 80 characters", strings.Repeat("a", 81), nil, awserr.ErrSQSInvalidParameterValue},
		{"names are alphanumerics, - and _", "a b", nil, awserr.ErrSQSInvalidParameterValue},
		{"FIFO attributes are refused on standard queues", "std", map[string]string{"ContentBasedDeduplication": "true"}, awserr.ErrInvalidAttributeName},
		{"an unknown attribute is InvalidAttributeName", "std", map[string]string{"Color": "red"}, awserr.ErrInvalidAttributeName},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			got, err := e.svc.CreateQueue(e.ctx, tt.name, tt.attrs)
			if tt.err == nil {
				if err != nil || got != url {
					t.Fatalf("CreateQueue = %q, %v; want %q", got, err, url)
				}
				return
			}
			wantErr(t, err, tt.err)
		})
	}
	t.Run("GetQueueURL, ListQueues and DeleteQueue", func(t *testing.T) {
		e.create("orders-dlq", nil)
		e.create("jobs.fifo", map[string]string{"FifoQueue": "true"})
		if u, err := e.svc.GetQueueURL(e.ctx, "orders"); err != nil || u != url {
			t.Fatalf("GetQueueURL = %q, %v", u, err)
		}
		list, _ := e.svc.ListQueues(e.ctx, "orders")
		if len(list) != 2 || !strings.HasSuffix(list[0], "/orders") || !strings.HasSuffix(list[1], "/orders-dlq") {
			t.Fatalf("ListQueues(orders) = %v", list)
		}
		if all, _ := e.svc.ListQueues(e.ctx, ""); len(all) != 3 {
			t.Fatalf("ListQueues() = %v", all)
		}
		// a plain name and an ARN work wherever a URL does
		for _, ref := range []string{"orders", e.svc.ARN("orders"), url} {
			if _, err := e.svc.GetQueueAttributes(e.ctx, ref, nil); err != nil {
				t.Fatalf("GetQueueAttributes(%s): %v", ref, err)
			}
		}
		if err := e.svc.DeleteQueue(e.ctx, "orders-dlq"); err != nil {
			t.Fatal(err)
		}
		_, err := e.svc.GetQueueURL(e.ctx, "orders-dlq")
		wantErr(t, err, awserr.ErrQueueDoesNotExist)
		_, err = e.svc.SendMessage(e.ctx, "orders-dlq", queue.SendMessageInput{MessageBody: "x"})
		wantErr(t, err, awserr.ErrQueueDoesNotExist)
		_, err = e.svc.GetQueueURL(e.ctx, "nope")
		wantErr(t, err, awserr.ErrQueueDoesNotExist)
	})
}

func TestQueueAttributes(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	e.create("dlq", nil)
	e.create("dlq.fifo", map[string]string{"FifoQueue": "true"})
	t.Run("defaults", func(t *testing.T) {
		a := e.attrs(url)
		want := map[string]string{
			"VisibilityTimeout": "30", "DelaySeconds": "0", "MessageRetentionPeriod": "345600",
			"MaximumMessageSize": "262144", "ReceiveMessageWaitTimeSeconds": "0",
			"QueueArn": "arn:aws:sqs:us-east-1:000000000000:q", "CreatedTimestamp": strconv.FormatInt(epoch.Unix(), 10),
			"ApproximateNumberOfMessages": "0", "ApproximateNumberOfMessagesNotVisible": "0", "ApproximateNumberOfMessagesDelayed": "0",
		}
		for k, v := range want {
			if a[k] != v {
				t.Errorf("%s = %q, want %q", k, a[k], v)
			}
		}
		if _, ok := a["FifoQueue"]; ok {
			t.Errorf("a standard queue reports FifoQueue")
		}
		if _, ok := a["RedrivePolicy"]; ok {
			t.Errorf("RedrivePolicy reported while unset")
		}
	})
	t.Run("selected names only, unknown name refused", func(t *testing.T) {
		a, err := e.svc.GetQueueAttributes(e.ctx, url, []string{"VisibilityTimeout"})
		if err != nil || len(a) != 1 || a["VisibilityTimeout"] != "30" {
			t.Fatalf("= %v, %v", a, err)
		}
		_, err = e.svc.GetQueueAttributes(e.ctx, url, []string{"Colour"})
		wantErr(t, err, awserr.ErrInvalidAttributeName)
	})
	tests := []struct {
		rule     string
		attrs    map[string]string
		err      error
		mentions []string
	}{
		{"VisibilityTimeout is at most 43200", map[string]string{"VisibilityTimeout": "43201"}, awserr.ErrInvalidAttributeValue, []string{"VisibilityTimeout", "0 and 43200"}},
		{"VisibilityTimeout is not negative", map[string]string{"VisibilityTimeout": "-1"}, awserr.ErrInvalidAttributeValue, []string{"VisibilityTimeout"}},
		{"VisibilityTimeout is a number", map[string]string{"VisibilityTimeout": "ten"}, awserr.ErrInvalidAttributeValue, []string{"VisibilityTimeout"}},
		{"DelaySeconds is at most 900", map[string]string{"DelaySeconds": "901"}, awserr.ErrInvalidAttributeValue, []string{"DelaySeconds", "0 and 900"}},
		{"MessageRetentionPeriod is at least 60", map[string]string{"MessageRetentionPeriod": "59"}, awserr.ErrInvalidAttributeValue, []string{"MessageRetentionPeriod", "60 and 1209600"}},
		{"MessageRetentionPeriod is at most 14 days", map[string]string{"MessageRetentionPeriod": "1209601"}, awserr.ErrInvalidAttributeValue, []string{"MessageRetentionPeriod"}},
		{"ReceiveMessageWaitTimeSeconds is at most 20", map[string]string{"ReceiveMessageWaitTimeSeconds": "21"}, awserr.ErrInvalidAttributeValue, []string{"ReceiveMessageWaitTimeSeconds", "0 and 20"}},
		{"MaximumMessageSize is at least 1024", map[string]string{"MaximumMessageSize": "1023"}, awserr.ErrInvalidAttributeValue, []string{"MaximumMessageSize", "1024 and 1048576"}},
		{"MaximumMessageSize is at most 1 MiB", map[string]string{"MaximumMessageSize": "1048577"}, awserr.ErrInvalidAttributeValue, []string{"MaximumMessageSize"}},
		{"maxReceiveCount is at least 1", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":0}`}, awserr.ErrInvalidAttributeValue, []string{"RedrivePolicy", "maxReceiveCount", "1 and 1000"}},
		{"maxReceiveCount is at most 1000", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":1001}`}, awserr.ErrInvalidAttributeValue, []string{"maxReceiveCount"}},
		{"RedrivePolicy is JSON", map[string]string{"RedrivePolicy": `dlq,5`}, awserr.ErrInvalidAttributeValue, []string{"RedrivePolicy"}},
		{"the dead-letter queue must exist", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:nope","maxReceiveCount":3}`}, awserr.ErrInvalidAttributeValue, []string{"does not exist"}},
		{"the dead-letter queue of a standard queue is standard", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq.fifo","maxReceiveCount":3}`}, awserr.ErrInvalidAttributeValue, []string{"standard"}},
		{"a queue is not its own dead-letter queue", map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:q","maxReceiveCount":3}`}, awserr.ErrInvalidAttributeValue, []string{"own"}},
		{"byQueue needs source ARNs", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"byQueue"}`}, awserr.ErrInvalidAttributeValue, []string{"RedriveAllowPolicy"}},
		{"redrivePermission is allowAll, denyAll or byQueue", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"some"}`}, awserr.ErrInvalidAttributeValue, []string{"redrivePermission"}},
		{"FifoQueue can't be changed", map[string]string{"FifoQueue": "true"}, awserr.ErrInvalidAttributeName, []string{"FifoQueue"}},
		{"ContentBasedDeduplication is FIFO only", map[string]string{"ContentBasedDeduplication": "true"}, awserr.ErrInvalidAttributeName, []string{"ContentBasedDeduplication"}},
		{"read-only attributes can't be set", map[string]string{"QueueArn": "x"}, awserr.ErrInvalidAttributeName, nil},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			err := e.svc.SetQueueAttributes(e.ctx, url, tt.attrs)
			wantErr(t, err, tt.err, tt.mentions...)
		})
	}
	t.Run("set, then read back and in GetQueueAttributes; maxReceiveCount as a string", func(t *testing.T) {
		e.clock.Advance(10 * time.Second)
		err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{
			"VisibilityTimeout": "45", "MaximumMessageSize": "1048576",
			"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":"5"}`,
		})
		if err != nil {
			t.Fatal(err)
		}
		a := e.attrs(url)
		if a["VisibilityTimeout"] != "45" || a["MaximumMessageSize"] != "1048576" ||
			a["RedrivePolicy"] != `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":5}` ||
			a["LastModifiedTimestamp"] != strconv.FormatInt(epoch.Add(10*time.Second).Unix(), 10) {
			t.Fatalf("attributes = %v", a)
		}
		if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"RedrivePolicy": ""}); err != nil {
			t.Fatal(err)
		}
		if _, ok := e.attrs(url)["RedrivePolicy"]; ok {
			t.Fatal("an empty RedrivePolicy did not remove it")
		}
	})
	t.Run("a denyAll RedriveAllowPolicy refuses sources", func(t *testing.T) {
		if err := e.svc.SetQueueAttributes(e.ctx, "dlq", map[string]string{"RedriveAllowPolicy": `{"redrivePermission":"denyAll"}`}); err != nil {
			t.Fatal(err)
		}
		err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3}`})
		wantErr(t, err, awserr.ErrInvalidAttributeValue, "RedriveAllowPolicy")
	})
}

func TestVisibilityTimeout(t *testing.T) {
	tests := []struct {
		rule string
		run  func(t *testing.T, e *env, url string)
	}{
		{"a received message is invisible for the queue's 30 s, then visible again", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
				t.Fatalf("first receive = %v", got)
			}
			e.clock.Advance(29 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("received %v 29 s after the receive", got)
			}
			e.clock.Advance(time.Second)
			m := e.receive(url, queue.ReceiveMessageInput{})
			if len(m) != 1 || m[0].Attributes["ApproximateReceiveCount"] != "2" {
				t.Fatalf("after 30 s: %+v", m)
			}
		}},
		{"the call's VisibilityTimeout overrides the queue's", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(5)})
			e.clock.Advance(4 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("received %v before 5 s", got)
			}
			e.clock.Advance(time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
				t.Fatalf("after 5 s: %v", got)
			}
		}},
		{"the queue's VisibilityTimeout attribute applies", func(t *testing.T, e *env, url string) {
			if err := e.svc.SetQueueAttributes(e.ctx, url, map[string]string{"VisibilityTimeout": "100"}); err != nil {
				t.Fatal(err)
			}
			e.send(url, "a")
			e.receive(url, queue.ReceiveMessageInput{})
			e.clock.Advance(99 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("received %v before 100 s", got)
			}
			e.clock.Advance(time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 1 {
				t.Fatalf("not visible after 100 s")
			}
		}},
		{"ChangeMessageVisibility to 12 h keeps it invisible 12 h", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{})
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 43200); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(12*time.Hour - time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("received %v before 12 h", got)
			}
			e.clock.Advance(time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
				t.Fatalf("after 12 h: %v", got)
			}
		}},
		{"the visibility may not end more than 12 h after the receive", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(43200)})
			e.clock.Advance(time.Hour)
			err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 43200)
			wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "43200")
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 39600); err != nil {
				t.Fatalf("extending to exactly 12 h after the receive: %v", err)
			}
		}},
		{"ChangeMessageVisibility 0 makes it visible at once", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{})
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 0); err != nil {
				t.Fatal(err)
			}
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"ChangeMessageVisibility shortens a timeout", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(600)})
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 10); err != nil {
				t.Fatal(err)
			}
			e.clock.Advance(10 * time.Second)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
				t.Fatalf("= %v", got)
			}
		}},
		{"a handle of an earlier receive is ReceiptHandleIsInvalid", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			first := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
			second := e.receive(url, queue.ReceiveMessageInput{})
			if first[0].ReceiptHandle == second[0].ReceiptHandle {
				t.Fatal("two receives gave the same receipt handle")
			}
			err := e.svc.ChangeMessageVisibility(e.ctx, url, first[0].ReceiptHandle, 60)
			wantErr(t, err, awserr.ErrReceiptHandleIsInvalid)
			if err := e.svc.ChangeMessageVisibility(e.ctx, url, second[0].ReceiptHandle, 60); err != nil {
				t.Fatalf("latest handle: %v", err)
			}
		}},
		{"a message whose timeout ended is not in flight", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{})
			e.clock.Advance(30 * time.Second)
			err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 60)
			wantErr(t, err, awserr.ErrMessageNotInflight)
		}},
		{"a deleted message's handle is invalid", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{})
			e.delete(url, m[0].ReceiptHandle)
			err := e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 60)
			wantErr(t, err, awserr.ErrReceiptHandleIsInvalid)
		}},
		{"VisibilityTimeout is 0..43200", func(t *testing.T, e *env, url string) {
			e.send(url, "a")
			_, err := e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(43201)})
			wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "VisibilityTimeout")
			m := e.receive(url, queue.ReceiveMessageInput{})
			err = e.svc.ChangeMessageVisibility(e.ctx, url, m[0].ReceiptHandle, 43201)
			wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "VisibilityTimeout")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			e := newEnv(t)
			tt.run(t, e, e.create("q", nil))
		})
	}
}

func TestDelaySeconds(t *testing.T) {
	e := newEnv(t)
	t.Run("the queue's DelaySeconds hides new messages", func(t *testing.T) {
		url := e.create("delayed", map[string]string{"DelaySeconds": "60"})
		e.send(url, "a")
		if c := e.counts(url); c != [3]string{"0", "0", "1"} {
			t.Fatalf("counts = %v, want 1 delayed", c)
		}
		e.clock.Advance(59 * time.Second)
		if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
			t.Fatalf("received %v before 60 s", got)
		}
		e.clock.Advance(time.Second)
		if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"a"}) {
			t.Fatalf("after 60 s: %v", got)
		}
	})
	t.Run("a message's DelaySeconds overrides the queue's", func(t *testing.T) {
		url := e.create("delayed2", map[string]string{"DelaySeconds": "60"})
		e.sendIn(url, queue.SendMessageInput{MessageBody: "now", DelaySeconds: ptr(0)})
		e.sendIn(url, queue.SendMessageInput{MessageBody: "soon", DelaySeconds: ptr(10)})
		if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"now"}) {
			t.Fatalf("= %v", got)
		}
		e.clock.Advance(10 * time.Second)
		if got := e.bodies(url, queue.ReceiveMessageInput{}); !equal(got, []string{"soon"}) {
			t.Fatalf("after 10 s: %v", got)
		}
	})
	t.Run("DelaySeconds is 0..900", func(t *testing.T) {
		_, err := e.svc.SendMessage(e.ctx, "delayed", queue.SendMessageInput{MessageBody: "x", DelaySeconds: ptr(901)})
		wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "DelaySeconds", "0 and 900")
	})
}

func TestReceiveAttributes(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	sent := e.clock.Now()
	out := e.sendIn(url, queue.SendMessageInput{
		MessageBody:             "hello",
		MessageAttributes:       map[string]queue.MessageAttributeValue{"color": {DataType: "String", StringValue: str("red")}, "size": {DataType: "Number", StringValue: str("3")}},
		MessageSystemAttributes: map[string]queue.MessageAttributeValue{"AWSTraceHeader": {DataType: "String", StringValue: str("Root=1-5759e988-bd862e3fe1be46a994272793")}},
	})
	e.clock.Advance(2 * time.Second)
	first := e.clock.Now()
	m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0), MessageAttributeNames: []string{"All"}})
	want := map[string]string{
		"ApproximateReceiveCount": "1", "SentTimestamp": ms(sent), "ApproximateFirstReceiveTimestamp": ms(first),
		"SenderId": "000000000000", "AWSTraceHeader": "Root=1-5759e988-bd862e3fe1be46a994272793",
	}
	if fmt.Sprint(m[0].Attributes) != fmt.Sprint(want) {
		t.Fatalf("attributes = %v, want %v", m[0].Attributes, want)
	}
	if m[0].MessageId != out.MessageId || len(m[0].MessageAttributes) != 2 || m[0].MD5OfMessageAttributes != out.MD5OfMessageAttributes {
		t.Fatalf("message = %+v", m[0])
	}
	t.Run("receive counts increase, the first receive time stays", func(t *testing.T) {
		e.clock.Advance(5 * time.Second)
		m := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
		if m[0].Attributes["ApproximateReceiveCount"] != "2" || m[0].Attributes["ApproximateFirstReceiveTimestamp"] != ms(first) {
			t.Fatalf("attributes = %v", m[0].Attributes)
		}
	})
	t.Run("only the attributes asked for", func(t *testing.T) {
		m, err := e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{
			VisibilityTimeout: ptr(0), MessageSystemAttributeNames: []string{"SentTimestamp"}, MessageAttributeNames: []string{"col.*", "size"},
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(m[0].Attributes) != 1 || m[0].Attributes["SentTimestamp"] != ms(sent) {
			t.Fatalf("attributes = %v", m[0].Attributes)
		}
		if len(m[0].MessageAttributes) != 1 || *m[0].MessageAttributes["size"].StringValue != "3" {
			t.Fatalf("message attributes = %v", m[0].MessageAttributes)
		}
		m, _ = e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
		if m[0].Attributes != nil || m[0].MessageAttributes != nil {
			t.Fatalf("attributes returned unasked: %+v", m[0])
		}
	})
	t.Run("unknown system attribute names are refused", func(t *testing.T) {
		_, err := e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{AttributeNames: []string{"Colour"}})
		wantErr(t, err, awserr.ErrInvalidAttributeName)
	})
	t.Run("MaxNumberOfMessages is 1..10", func(t *testing.T) {
		for _, n := range []int{-1, 11} {
			_, err := e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: n})
			wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "MaxNumberOfMessages")
		}
		_, err := e.svc.ReceiveMessage(e.ctx, url, queue.ReceiveMessageInput{WaitTimeSeconds: ptr(21)})
		wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "WaitTimeSeconds")
	})
}

func TestSendOrderAndCounts(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	var want []string
	for i := 0; i < 25; i++ {
		want = append(want, strconv.Itoa(i))
		e.send(url, strconv.Itoa(i))
	}
	e.sendIn(url, queue.SendMessageInput{MessageBody: "late", DelaySeconds: ptr(100)})
	if c := e.counts(url); c != [3]string{"25", "0", "1"} {
		t.Fatalf("counts = %v, want 25 visible, 1 delayed", c)
	}
	var got []string
	for i := 0; i < 3; i++ {
		got = append(got, e.bodies(url, queue.ReceiveMessageInput{})...)
	}
	if !equal(got, want) {
		t.Fatalf("receive order = %v, want send order %v", got, want)
	}
	if c := e.counts(url); c != [3]string{"0", "25", "1"} {
		t.Fatalf("counts = %v, want 25 in flight, 1 delayed", c)
	}
	e.clock.Advance(30 * time.Second)
	if c := e.counts(url); c != [3]string{"25", "0", "1"} {
		t.Fatalf("counts after the timeout = %v", c)
	}
}

func TestDeleteMessage(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	other := e.create("other", nil)
	tests := []struct {
		rule string
		run  func(t *testing.T)
	}{
		{"a deleted message is never received again", func(t *testing.T) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{})
			e.delete(url, m[0].ReceiptHandle)
			e.clock.Advance(time.Minute)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("received %v after delete", got)
			}
		}},
		{"deleting twice succeeds", func(t *testing.T) {
			e.send(url, "a")
			m := e.receive(url, queue.ReceiveMessageInput{})
			e.delete(url, m[0].ReceiptHandle)
			e.delete(url, m[0].ReceiptHandle)
		}},
		{"on a standard queue an earlier handle still deletes", func(t *testing.T) {
			e.send(url, "a")
			first := e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
			e.receive(url, queue.ReceiveMessageInput{VisibilityTimeout: ptr(0)})
			e.delete(url, first[0].ReceiptHandle)
			if got := e.bodies(url, queue.ReceiveMessageInput{}); len(got) != 0 {
				t.Fatalf("received %v after delete with the first handle", got)
			}
		}},
		{"a malformed handle is ReceiptHandleIsInvalid", func(t *testing.T) {
			wantErr(t, e.svc.DeleteMessage(e.ctx, url, "not-a-handle"), awserr.ErrReceiptHandleIsInvalid)
		}},
		{"another queue's handle is ReceiptHandleIsInvalid", func(t *testing.T) {
			e.send(other, "b")
			m := e.receive(other, queue.ReceiveMessageInput{})
			wantErr(t, e.svc.DeleteMessage(e.ctx, url, m[0].ReceiptHandle), awserr.ErrReceiptHandleIsInvalid)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.rule, tt.run)
	}
}

func TestBatchAPIs(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", nil)
	entry := func(id, body string) queue.SendMessageBatchRequestEntry {
		return queue.SendMessageBatchRequestEntry{Id: id, SendMessageInput: queue.SendMessageInput{MessageBody: body}}
	}
	t.Run("whole-batch errors", func(t *testing.T) {
		var eleven []queue.SendMessageBatchRequestEntry
		for i := 0; i < 11; i++ {
			eleven = append(eleven, entry(strconv.Itoa(i), "x"))
		}
		tests := []struct {
			rule    string
			entries []queue.SendMessageBatchRequestEntry
			err     error
		}{
			{"an empty batch is EmptyBatchRequest", nil, awserr.ErrEmptyBatchRequest},
			{"more than 10 entries is TooManyEntriesInBatchRequest", eleven, awserr.ErrTooManyEntriesInBatchRequest},
			{"repeated Ids are BatchEntryIdsNotDistinct", []queue.SendMessageBatchRequestEntry{entry("a", "x"), entry("a", "y")}, awserr.ErrBatchEntryIdsNotDistinct},
			{"Ids are alphanumerics, - and _", []queue.SendMessageBatchRequestEntry{entry("a b", "x")}, awserr.ErrInvalidBatchEntryId},
			{"more than 1 MiB in all is BatchRequestTooLong", []queue.SendMessageBatchRequestEntry{entry("a", strings.Repeat("x", 600_000)), entry("b", strings.Repeat("x", 600_000))}, awserr.ErrBatchRequestTooLong},
		}
		for _, tt := range tests {
			t.Run(tt.rule, func(t *testing.T) {
				_, err := e.svc.SendMessageBatch(e.ctx, url, tt.entries)
				wantErr(t, err, tt.err)
			})
		}
		_, err := e.svc.DeleteMessageBatch(e.ctx, url, nil)
		wantErr(t, err, awserr.ErrEmptyBatchRequest)
		_, err = e.svc.ChangeMessageVisibilityBatch(e.ctx, url, []queue.ChangeMessageVisibilityBatchRequestEntry{{Id: "a"}, {Id: "a"}})
		wantErr(t, err, awserr.ErrBatchEntryIdsNotDistinct)
	})
	t.Run("each entry succeeds or fails on its own", func(t *testing.T) {
		out, err := e.svc.SendMessageBatch(e.ctx, url, []queue.SendMessageBatchRequestEntry{
			entry("ok1", "one"),
			{Id: "late", SendMessageInput: queue.SendMessageInput{MessageBody: "x", DelaySeconds: ptr(1000)}},
			entry("empty", ""),
			entry("ok2", "two"),
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Successful) != 2 || out.Successful[0].Id != "ok1" || out.Successful[1].Id != "ok2" || out.Successful[0].MD5OfMessageBody != queue.MD5OfBody("one") {
			t.Fatalf("successful = %+v", out.Successful)
		}
		if len(out.Failed) != 2 || out.Failed[0].Id != "late" || out.Failed[0].Code != awserr.ErrSQSInvalidParameterValue.Code || !out.Failed[0].SenderFault ||
			out.Failed[1].Id != "empty" || out.Failed[1].Code != awserr.ErrMissingParameter.Code {
			t.Fatalf("failed = %+v", out.Failed)
		}
		msgs := e.receive(url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
		if len(msgs) != 2 {
			t.Fatalf("received %d messages, want 2", len(msgs))
		}
		cv, err := e.svc.ChangeMessageVisibilityBatch(e.ctx, url, []queue.ChangeMessageVisibilityBatchRequestEntry{
			{Id: "a", ReceiptHandle: msgs[0].ReceiptHandle, VisibilityTimeout: 100},
			{Id: "b", ReceiptHandle: msgs[1].ReceiptHandle, VisibilityTimeout: 50000},
		})
		if err != nil || len(cv.Successful) != 1 || cv.Successful[0].Id != "a" || len(cv.Failed) != 1 || cv.Failed[0].Code != awserr.ErrSQSInvalidParameterValue.Code {
			t.Fatalf("ChangeMessageVisibilityBatch = %+v, %v", cv, err)
		}
		del, err := e.svc.DeleteMessageBatch(e.ctx, url, []queue.DeleteMessageBatchRequestEntry{
			{Id: "a", ReceiptHandle: msgs[0].ReceiptHandle},
			{Id: "bad", ReceiptHandle: "garbage"},
			{Id: "b", ReceiptHandle: msgs[1].ReceiptHandle},
		})
		if err != nil || len(del.Successful) != 2 || len(del.Failed) != 1 || del.Failed[0].Id != "bad" || del.Failed[0].Code != awserr.ErrReceiptHandleIsInvalid.Code {
			t.Fatalf("DeleteMessageBatch = %+v, %v", del, err)
		}
		if c := e.counts(url); c != [3]string{"0", "0", "0"} {
			t.Fatalf("counts = %v", c)
		}
	})
}

func TestMessageValidation(t *testing.T) {
	e := newEnv(t)
	url := e.create("q", map[string]string{"MaximumMessageSize": "1024"})
	attrs := func(n int) map[string]queue.MessageAttributeValue {
		m := map[string]queue.MessageAttributeValue{}
		for i := 0; i < n; i++ {
			m["a"+strconv.Itoa(i)] = queue.MessageAttributeValue{DataType: "String", StringValue: str("v")}
		}
		return m
	}
	tests := []struct {
		rule string
		in   queue.SendMessageInput
		err  error
	}{
		{"the body is required", queue.SendMessageInput{}, awserr.ErrMissingParameter},
		{"the body holds XML characters only", queue.SendMessageInput{MessageBody: "a\x00b"}, awserr.ErrInvalidMessageContents},
		{"the body and attributes fit MaximumMessageSize", queue.SendMessageInput{MessageBody: strings.Repeat("x", 1020), MessageAttributes: attrs(1)}, awserr.ErrSQSInvalidParameterValue},
		{"at most 10 message attributes", queue.SendMessageInput{MessageBody: "x", MessageAttributes: attrs(11)}, awserr.ErrSQSInvalidParameterValue},
		{"attribute names can't start with AWS.", queue.SendMessageInput{MessageBody: "x", MessageAttributes: map[string]queue.MessageAttributeValue{"AWS.x": {DataType: "String", StringValue: str("v")}}}, awserr.ErrSQSInvalidParameterValue},
		{"a Number attribute is a number", queue.SendMessageInput{MessageBody: "x", MessageAttributes: map[string]queue.MessageAttributeValue{"n": {DataType: "Number", StringValue: str("ten")}}}, awserr.ErrSQSInvalidParameterValue},
		{"data types are String, Number or Binary", queue.SendMessageInput{MessageBody: "x", MessageAttributes: map[string]queue.MessageAttributeValue{"n": {DataType: "Text", StringValue: str("v")}}}, awserr.ErrSQSInvalidParameterValue},
		{"a Binary attribute needs a BinaryValue", queue.SendMessageInput{MessageBody: "x", MessageAttributes: map[string]queue.MessageAttributeValue{"n": {DataType: "Binary"}}}, awserr.ErrSQSInvalidParameterValue},
		{"MessageDeduplicationId is FIFO only", queue.SendMessageInput{MessageBody: "x", MessageDeduplicationId: "d"}, awserr.ErrSQSInvalidParameterValue},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			_, err := e.svc.SendMessage(e.ctx, url, tt.in)
			wantErr(t, err, tt.err)
		})
	}
	if c := e.counts(url); c != [3]string{"0", "0", "0"} {
		t.Fatalf("refused messages were stored: counts %v", c)
	}
	if _, err := e.svc.SendMessage(e.ctx, url, queue.SendMessageInput{MessageBody: strings.Repeat("x", 1024)}); err != nil {
		t.Fatalf("a body of exactly MaximumMessageSize: %v", err)
	}
}

func TestMD5(t *testing.T) {
	tests := []struct {
		rule  string
		body  string
		attrs map[string]queue.MessageAttributeValue
		body5 string
		attr5 string
	}{
		// Lambda developer guide, SQS example event (with-sqs).
		{"MD5OfBody of the Lambda example", "Test message.", nil, "e4e68fb7bd0e697a0ae8f1bb342846b3", ""},
		// SQS developer guide, sqs-message-metadata example.
		{"MD5OfBody of the SQS example", "This is a test message", nil, "fafb00f5732ab283681e124bf8747ed1", ""},
		// AWS SDK test vectors (also in ydb's attributes_md5 tests).
		{"MD5OfMessageAttributes of two strings", "x", map[string]queue.MessageAttributeValue{
			"test_attribute_name_1": {DataType: "String", StringValue: str("test_attribute_value_1")},
			"test_attribute_name_2": {DataType: "String", StringValue: str("test_attribute_value_2")},
		}, "9dd4e461268c8034f5c8564e155c67a6", "d53f3b558fe951154770f25cb63dbba9"},
		{"MD5OfMessageAttributes of a binary", "x", map[string]queue.MessageAttributeValue{
			"test_attribute_name": {DataType: "Binary", BinaryValue: []byte("test_attribute_value")},
		}, "9dd4e461268c8034f5c8564e155c67a6", "23f6bd27ea87aab7dfeadcc9aebee495"},
		// sqslite's md5 test: a Number and a String.
		{"MD5OfMessageAttributes of a number and a string", "x", map[string]queue.MessageAttributeValue{
			"ordinal":  {DataType: "Number", StringValue: str("1")},
			"category": {DataType: "String", StringValue: str("test")},
		}, "9dd4e461268c8034f5c8564e155c67a6", "d21ae90c49061e927f57df5f5d72be1f"},
	}
	e := newEnv(t)
	url := e.create("q", nil)
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			out := e.sendIn(url, queue.SendMessageInput{MessageBody: tt.body, MessageAttributes: tt.attrs})
			if out.MD5OfMessageBody != tt.body5 || out.MD5OfMessageAttributes != tt.attr5 {
				t.Fatalf("SendMessage MD5s = %s %s, want %s %s", out.MD5OfMessageBody, out.MD5OfMessageAttributes, tt.body5, tt.attr5)
			}
			m := e.receive(url, queue.ReceiveMessageInput{MessageAttributeNames: []string{"All"}})
			if m[0].MD5OfBody != tt.body5 || m[0].MD5OfMessageAttributes != tt.attr5 {
				t.Fatalf("ReceiveMessage MD5s = %s %s", m[0].MD5OfBody, m[0].MD5OfMessageAttributes)
			}
			e.delete(url, m[0].ReceiptHandle)
		})
	}
}

// TestMD5OfMessageAttributesIsOfTheAttributesReturned: a receive that asks
// for some of a message's attributes gets the digest of those it gets:
// the SDKs that check MD5OfMessageAttributes (Java, .NET, Ruby, PHP)
// compute it over the attributes in the response. (It was the digest of
// all of them, and every such receive failed their check.)
func TestMD5OfMessageAttributesIsOfTheAttributesReturned(t *testing.T) {
	e := newEnv(t)
	url := e.create("attrs", nil)
	attrs := map[string]queue.MessageAttributeValue{"a": {DataType: "String", StringValue: str("1")}, "b": {DataType: "String", StringValue: str("2")}}
	sent := e.sendIn(url, queue.SendMessageInput{MessageBody: "x", MessageAttributes: attrs})
	for _, c := range []struct {
		names []string
		want  map[string]queue.MessageAttributeValue
	}{
		{[]string{"a"}, map[string]queue.MessageAttributeValue{"a": attrs["a"]}},
		{[]string{"All"}, attrs},
	} {
		m := e.receive(url, queue.ReceiveMessageInput{MessageAttributeNames: c.names, VisibilityTimeout: ptr(0)})
		if len(m) != 1 || len(m[0].MessageAttributes) != len(c.want) {
			t.Fatalf("names %v: %d messages, attributes %v", c.names, len(m), m)
		}
		if got, want := m[0].MD5OfMessageAttributes, queue.MD5OfMessageAttributes(c.want); got != want {
			t.Errorf("names %v: MD5OfMessageAttributes %s, want %s (of the attributes returned)", c.names, got, want)
		}
	}
	if sent.MD5OfMessageAttributes != queue.MD5OfMessageAttributes(attrs) {
		t.Errorf("SendMessage's MD5OfMessageAttributes %s, want all of them", sent.MD5OfMessageAttributes)
	}
}
