package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestSQSJSON drives every SQS operation with the SDK's JSON protocol.
func TestSQSJSON(t *testing.T) {
	e := start(t, awsapi.Options{})
	testSQS(t, e, e.sqs(), false)
}

// TestSQSQuery drives the same operations with the SDK switched to the
// query protocol (form POST, XML answers), as older clients speak it.
func TestSQSQuery(t *testing.T) {
	e := start(t, awsapi.Options{})
	testSQS(t, e, e.sqs(func(o *sqs.Options) { o.Protocol = awsquery.New(schemas.AmazonSQS) }), true)
}

// testSQS drives the SQS API. With query, the SDK's awsQuery protocol
// reports the shape name as ErrorCode (the JSON protocol reports the
// query code from x-amzn-query-error, as against AWS).
func testSQS(t *testing.T, e *endpoint, qc *sqs.Client, query bool) {
	code := func(jsonCode, shape string) string {
		if query {
			return shape
		}
		return jsonCode
	}
	ctx := context.Background()
	host := strings.TrimPrefix(e.srv.URL, "http://")

	// Create, get URL, list, attributes.
	u := aws.ToString(must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"),
		Attributes: map[string]string{"VisibilityTimeout": "45"}})).QueueUrl)
	if u != "http://"+host+"/000000000000/work" {
		t.Fatalf("QueueUrl %q", u)
	}
	if again := aws.ToString(must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work")})).QueueUrl); again != u {
		t.Fatalf("CreateQueue again: %q", again)
	}
	_, err := qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work"), Attributes: map[string]string{"VisibilityTimeout": "46"}})
	var exists *types.QueueNameExists
	if !errors.As(err, &exists) || errCode(err) != code("QueueAlreadyExists", "QueueNameExists") {
		t.Fatalf("CreateQueue with other attributes: %v", err)
	}
	_, err = qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("bad"), Attributes: map[string]string{"VisibilityTimeout": "99999"}})
	var badValue *types.InvalidAttributeValue
	if !errors.As(err, &badValue) {
		t.Fatalf("CreateQueue with a bad attribute: %v", err)
	}
	dlqURL := aws.ToString(must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("work-dlq")})).QueueUrl)
	if got := aws.ToString(must(qc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("work")})).QueueUrl); got != u {
		t.Fatalf("GetQueueUrl %q", got)
	}
	_, err = qc.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String("nope")})
	var noQueue *types.QueueDoesNotExist
	if !errors.As(err, &noQueue) || errCode(err) != code("AWS.SimpleQueueService.NonExistentQueue", "QueueDoesNotExist") {
		t.Fatalf("GetQueueUrl of a missing queue: %v (%s)", err, errCode(err))
	}
	lq := must(qc.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("wo"), MaxResults: aws.Int32(1)}))
	if len(lq.QueueUrls) != 1 || lq.QueueUrls[0] != u || lq.NextToken == nil {
		t.Fatalf("ListQueues page 1: %+v", lq)
	}
	lq = must(qc.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String("wo"), MaxResults: aws.Int32(1), NextToken: lq.NextToken}))
	if len(lq.QueueUrls) != 1 || lq.QueueUrls[0] != dlqURL || lq.NextToken != nil {
		t.Fatalf("ListQueues page 2: %+v", lq)
	}
	dlqArn := must(qc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &dlqURL,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})).Attributes["QueueArn"]
	if dlqArn != "arn:aws:sqs:us-east-1:000000000000:work-dlq" {
		t.Fatalf("QueueArn %q", dlqArn)
	}
	must(qc.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: &u, Attributes: map[string]string{
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":2}`, dlqArn), "VisibilityTimeout": "30"}}))
	attrs := must(qc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &u, AttributeNames: []types.QueueAttributeName{"All"}})).Attributes
	if attrs["VisibilityTimeout"] != "30" || !strings.Contains(attrs["RedrivePolicy"], "work-dlq") || attrs["ApproximateNumberOfMessages"] != "0" {
		t.Fatalf("GetQueueAttributes: %v", attrs)
	}
	_, err = qc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &u, AttributeNames: []types.QueueAttributeName{"Bogus"}})
	var badName *types.InvalidAttributeName
	if !errors.As(err, &badName) {
		t.Fatalf("GetQueueAttributes Bogus: %v", err)
	}

	// Send with attributes, receive them back.
	sm := must(qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &u, MessageBody: aws.String("hello <&> world"),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"s": {DataType: aws.String("String"), StringValue: aws.String("v")},
			"n": {DataType: aws.String("Number"), StringValue: aws.String("42")},
			"b": {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
		}}))
	if aws.ToString(sm.MessageId) == "" || aws.ToString(sm.MD5OfMessageAttributes) == "" {
		t.Fatalf("SendMessage: %+v", sm)
	}
	rm := must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MessageAttributeNames: []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"All"}, WaitTimeSeconds: 1}))
	if len(rm.Messages) != 1 {
		t.Fatalf("ReceiveMessage: %d messages", len(rm.Messages))
	}
	m := rm.Messages[0]
	if aws.ToString(m.Body) != "hello <&> world" || aws.ToString(m.MessageId) != aws.ToString(sm.MessageId) ||
		aws.ToString(m.MessageAttributes["s"].StringValue) != "v" || string(m.MessageAttributes["b"].BinaryValue) != "\x00\x01\x02\xff" ||
		aws.ToString(m.MessageAttributes["n"].DataType) != "Number" || m.Attributes["ApproximateReceiveCount"] != "1" ||
		aws.ToString(m.MD5OfMessageAttributes) != aws.ToString(sm.MD5OfMessageAttributes) {
		t.Fatalf("received %+v", m)
	}
	// Visibility: make it visible again at once, receive it again.
	must(qc.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &u, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0}))
	rm = must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MessageSystemAttributeNames: []types.MessageSystemAttributeName{"ApproximateReceiveCount"}}))
	if len(rm.Messages) != 1 || rm.Messages[0].Attributes["ApproximateReceiveCount"] != "2" {
		t.Fatalf("receive after ChangeMessageVisibility 0: %+v", rm.Messages)
	}
	_, err = qc.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{QueueUrl: &u, ReceiptHandle: m.ReceiptHandle, VisibilityTimeout: 0})
	var badHandle *types.ReceiptHandleIsInvalid
	if !errors.As(err, &badHandle) {
		t.Fatalf("ChangeMessageVisibility with an old handle: %v", err)
	}
	must(qc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: rm.Messages[0].ReceiptHandle}))
	_, err = qc.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &u, ReceiptHandle: aws.String("garbage")})
	if !errors.As(err, &badHandle) {
		t.Fatalf("DeleteMessage garbage: %v", err)
	}

	// Batches.
	var entries []types.SendMessageBatchRequestEntry
	for i := range 4 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("e", i)), MessageBody: aws.String(fmt.Sprint("body ", i))})
	}
	entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String("toolong"), MessageBody: aws.String("x"), DelaySeconds: 901})
	sb := must(qc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &u, Entries: entries}))
	if len(sb.Successful) != 4 || len(sb.Failed) != 1 || aws.ToString(sb.Failed[0].Id) != "toolong" || !sb.Failed[0].SenderFault || aws.ToString(sb.Failed[0].Code) == "" {
		t.Fatalf("SendMessageBatch: %+v", sb)
	}
	_, err = qc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: &u, Entries: []types.SendMessageBatchRequestEntry{}})
	var empty *types.EmptyBatchRequest
	if !errors.As(err, &empty) {
		t.Fatalf("empty SendMessageBatch: %v", err)
	}
	rm = must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MaxNumberOfMessages: 10}))
	if len(rm.Messages) != 4 {
		t.Fatalf("receive batch: %d", len(rm.Messages))
	}
	cv := must(qc.ChangeMessageVisibilityBatch(ctx, &sqs.ChangeMessageVisibilityBatchInput{QueueUrl: &u, Entries: []types.ChangeMessageVisibilityBatchRequestEntry{
		{Id: aws.String("a"), ReceiptHandle: rm.Messages[0].ReceiptHandle, VisibilityTimeout: 0},
		{Id: aws.String("b"), ReceiptHandle: rm.Messages[1].ReceiptHandle, VisibilityTimeout: 600},
		{Id: aws.String("c"), ReceiptHandle: aws.String("garbage"), VisibilityTimeout: 0},
	}}))
	if len(cv.Successful) != 2 || len(cv.Failed) != 1 || aws.ToString(cv.Failed[0].Id) != "c" {
		t.Fatalf("ChangeMessageVisibilityBatch: %+v", cv)
	}
	var del []types.DeleteMessageBatchRequestEntry
	for i, msg := range rm.Messages[1:] {
		del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint("d", i)), ReceiptHandle: msg.ReceiptHandle})
	}
	del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String("bad"), ReceiptHandle: aws.String("garbage")})
	db := must(qc.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &u, Entries: del}))
	if len(db.Successful) != 3 || len(db.Failed) != 1 || aws.ToString(db.Failed[0].Code) != "ReceiptHandleIsInvalid" {
		t.Fatalf("DeleteMessageBatch: %+v", db)
	}
	// The one made visible is there; purge it.
	if n := len(must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, VisibilityTimeout: 0})).Messages); n != 1 {
		t.Fatalf("after batches: %d visible", n)
	}
	must(qc.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &u}))
	_, err = qc.PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: &u})
	var purging *types.PurgeQueueInProgress
	if !errors.As(err, &purging) {
		t.Fatalf("second PurgeQueue: %v", err)
	}
	if n := len(must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u})).Messages); n != 0 {
		t.Fatalf("after purge: %d", n)
	}

	// FIFO basics: order within a group, deduplication.
	fu := aws.ToString(must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("orders.fifo"),
		Attributes: map[string]string{"FifoQueue": "true", "ContentBasedDeduplication": "true"}})).QueueUrl)
	var seqs []string
	for i := range 3 {
		o := must(qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fu, MessageBody: aws.String(fmt.Sprint("o", i)), MessageGroupId: aws.String("g")}))
		seqs = append(seqs, aws.ToString(o.SequenceNumber))
	}
	dup := must(qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fu, MessageBody: aws.String("o0"), MessageGroupId: aws.String("g")}))
	if seqs[0] == "" || seqs[0] >= seqs[1] || aws.ToString(dup.MessageId) == "" {
		t.Fatalf("FIFO sends: %v %+v", seqs, dup)
	}
	_, err = qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fu, MessageBody: aws.String("no group")})
	if errCode(err) != "MissingParameter" {
		t.Fatalf("FIFO send without group: %v", err)
	}
	rm = must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &fu, MaxNumberOfMessages: 10,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{"MessageGroupId", "SequenceNumber"}}))
	if len(rm.Messages) != 3 || aws.ToString(rm.Messages[0].Body) != "o0" || aws.ToString(rm.Messages[2].Body) != "o2" || rm.Messages[0].Attributes["MessageGroupId"] != "g" {
		t.Fatalf("FIFO receive: %+v", rm.Messages)
	}
	if n := len(must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &fu})).Messages); n != 0 {
		t.Fatalf("FIFO group in flight, yet received %d", n)
	}

	// Message move tasks: from the dead-letter queue to the work queue.
	for i := range 3 {
		must(qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &dlqURL, MessageBody: aws.String(fmt.Sprint("dead ", i))}))
	}
	workArn := "arn:aws:sqs:us-east-1:000000000000:work"
	th := must(qc.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: &dlqArn, DestinationArn: &workArn}))
	if aws.ToString(th.TaskHandle) == "" {
		t.Fatal("no task handle")
	}
	testenv.Eventually(t, 10*time.Second, "move task completed", func() bool {
		r := must(qc.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: &dlqArn}))
		return len(r.Results) == 1 && aws.ToString(r.Results[0].Status) == "COMPLETED" && r.Results[0].ApproximateNumberOfMessagesMoved == 3
	})
	if n := len(must(qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: &u, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})).Messages); n != 3 {
		t.Fatalf("moved messages received: %d", n)
	}
	_, err = qc.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: th.TaskHandle})
	var rnf *types.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Fatalf("cancel a finished task: %v", err)
	}
	for i := range 5 {
		must(qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &dlqURL, MessageBody: aws.String(fmt.Sprint("slow ", i))}))
	}
	th = must(qc.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: &dlqArn, DestinationArn: &workArn, MaxNumberOfMessagesPerSecond: aws.Int32(1)}))
	cm := must(qc.CancelMessageMoveTask(ctx, &sqs.CancelMessageMoveTaskInput{TaskHandle: th.TaskHandle}))
	if cm.ApproximateNumberOfMessagesMoved > 2 {
		t.Fatalf("cancelled task moved %d", cm.ApproximateNumberOfMessagesMoved)
	}
	lt := must(qc.ListMessageMoveTasks(ctx, &sqs.ListMessageMoveTasksInput{SourceArn: &dlqArn, MaxResults: aws.Int32(10)}))
	if len(lt.Results) != 2 || aws.ToString(lt.Results[0].Status) != "CANCELLED" || aws.ToString(lt.Results[1].Status) != "COMPLETED" {
		t.Fatalf("ListMessageMoveTasks: %+v", lt.Results)
	}
	_, err = qc.StartMessageMoveTask(ctx, &sqs.StartMessageMoveTaskInput{SourceArn: aws.String("arn:aws:sqs:us-east-1:000000000000:nope")})
	if !errors.As(err, &rnf) {
		t.Fatalf("move task from a missing queue: %v", err)
	}

	// Delete.
	must(qc.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &fu}))
	_, err = qc.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &fu})
	if !errors.As(err, &noQueue) {
		t.Fatalf("DeleteQueue twice: %v", err)
	}
	_, err = qc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: &fu, MessageBody: aws.String("x"), MessageGroupId: aws.String("g")})
	if !errors.As(err, &noQueue) {
		t.Fatalf("send to a deleted queue: %v", err)
	}
}

// TestSQSQueryForm posts query-protocol forms by hand, as the AWS CLI v1
// does, and checks the XML.
func TestSQSQueryForm(t *testing.T) {
	e := start(t, awsapi.Options{})
	post := func(params ...string) (int, string) {
		t.Helper()
		v := url.Values{"Version": {"2012-11-05"}}
		for i := 0; i < len(params); i += 2 {
			v.Set(params[i], params[i+1])
		}
		req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(v.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
		resp, err := http.DefaultClient.Do(sign(req))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	contains := func(body string, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(body, p) {
				t.Fatalf("response lacks %q:\n%s", p, body)
			}
		}
	}
	host := strings.TrimPrefix(e.srv.URL, "http://")
	qurl := "http://" + host + "/000000000000/cli"
	st, body := post("Action", "CreateQueue", "QueueName", "cli", "Attribute.1.Name", "DelaySeconds", "Attribute.1.Value", "0")
	if st != 200 {
		t.Fatalf("CreateQueue: %d %s", st, body)
	}
	contains(body, `<CreateQueueResponse xmlns="http://queue.amazonaws.com/doc/2012-11-05/">`, "<CreateQueueResult><QueueUrl>"+qurl+"</QueueUrl></CreateQueueResult>", "<ResponseMetadata><RequestId>")

	st, body = post("Action", "SendMessage", "QueueUrl", qurl, "MessageBody", "a<b",
		"MessageAttribute.1.Name", "color", "MessageAttribute.1.Value.DataType", "String", "MessageAttribute.1.Value.StringValue", "red")
	if st != 200 {
		t.Fatalf("SendMessage: %d %s", st, body)
	}
	contains(body, "<SendMessageResult>", "<MD5OfMessageBody>", "<MD5OfMessageAttributes>", "<MessageId>")

	st, body = post("Action", "ReceiveMessage", "QueueUrl", qurl, "AttributeName.1", "All", "MessageAttributeName.1", "All", "MaxNumberOfMessages", "10")
	if st != 200 {
		t.Fatalf("ReceiveMessage: %d %s", st, body)
	}
	contains(body, "<ReceiveMessageResult><Message><MessageId>", "<Body>a&lt;b</Body>", "<Attribute><Name>ApproximateReceiveCount</Name><Value>1</Value></Attribute>",
		"<MessageAttribute><Name>color</Name><Value><StringValue>red</StringValue><DataType>String</DataType></Value></MessageAttribute>", "<ReceiptHandle>")
	handle := body[strings.Index(body, "<ReceiptHandle>")+len("<ReceiptHandle>") : strings.Index(body, "</ReceiptHandle>")]

	st, body = post("Action", "DeleteMessageBatch", "QueueUrl", qurl,
		"DeleteMessageBatchRequestEntry.1.Id", "one", "DeleteMessageBatchRequestEntry.1.ReceiptHandle", handle,
		"DeleteMessageBatchRequestEntry.2.Id", "two", "DeleteMessageBatchRequestEntry.2.ReceiptHandle", "garbage")
	contains(body, "<DeleteMessageBatchResult><DeleteMessageBatchResultEntry><Id>one</Id></DeleteMessageBatchResultEntry>",
		"<BatchResultErrorEntry><Id>two</Id><SenderFault>true</SenderFault><Code>ReceiptHandleIsInvalid</Code>")

	st, body = post("Action", "GetQueueAttributes", "QueueUrl", qurl, "AttributeName.1", "QueueArn", "AttributeName.2", "DelaySeconds")
	if st != 200 {
		t.Fatalf("GetQueueAttributes: %d %s", st, body)
	}
	contains(body, "<GetQueueAttributesResult><Attribute><Name>DelaySeconds</Name><Value>0</Value></Attribute><Attribute><Name>QueueArn</Name><Value>arn:aws:sqs:us-east-1:000000000000:cli</Value></Attribute></GetQueueAttributesResult>")

	st, body = post("Action", "ListQueues")
	contains(body, "<ListQueuesResult><QueueUrl>"+qurl+"</QueueUrl></ListQueuesResult>")

	st, body = post("Action", "DeleteQueue", "QueueUrl", qurl)
	if st != 200 || strings.Contains(body, "Result") {
		t.Fatalf("DeleteQueue: %d %s", st, body)
	}
	contains(body, "<DeleteQueueResponse", "<RequestId>")

	st, body = post("Action", "GetQueueUrl", "QueueName", "cli")
	if st != 400 {
		t.Fatalf("GetQueueUrl of a deleted queue: status %d", st)
	}
	contains(body, "<ErrorResponse", "<Type>Sender</Type>", "<Code>AWS.SimpleQueueService.NonExistentQueue</Code>", "<Message>", "<RequestId>")

	st, body = post("Action", "NoSuchAction")
	if st != 400 {
		t.Fatalf("unknown action: %d", st)
	}
	contains(body, "<Code>InvalidAction</Code>")
}

// TestSQSJSONErrorShape checks the raw error of the JSON protocol: the
// namespaced __type and the x-amzn-query-error header.
func TestSQSJSONErrorShape(t *testing.T) {
	e := start(t, awsapi.Options{})
	resp, b := postTarget(t, e, "AmazonSQS.GetQueueUrl", "application/x-amz-json-1.0", `{"QueueName":"missing"}`)
	if resp.StatusCode != 400 || resp.Header.Get("x-amzn-query-error") != "AWS.SimpleQueueService.NonExistentQueue;Sender" ||
		!strings.Contains(string(b), `"__type":"com.amazonaws.sqs#QueueDoesNotExist"`) {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	resp2, b := postTarget(t, e, "Kinesis_20131202.DescribeStream", "application/x-amz-json-1.1", `{"StreamName":"missing"}`)
	if resp2.StatusCode != 400 || !strings.Contains(string(b), `"__type":"ResourceNotFoundException"`) {
		t.Fatalf("%d %s", resp2.StatusCode, b)
	}
}

// TestListQueuesPagesThroughMoreThanAThousand: without MaxResults
// ListQueues answers "up to 1,000 results"; with MaxResults, NextToken
// pages through every queue (API_ListQueues). (The list was cut at 1000
// before paging: the pages ended there, with no token, and the queues
// after the 1000th were never listed.)
func TestListQueuesPagesThroughMoreThanAThousand(t *testing.T) {
	e := startEnv(t, awsapi.Options{}, testenv.Options{})
	ctx := context.Background()
	kv, err := e.rn.Engine.Bucket(ctx, "runnel_queues") // the listing reads the queues' names only
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1005 {
		if _, err := kv.Put(ctx, fmt.Sprintf("q%04d", i), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	qc := e.sqs()
	if lq := must(qc.ListQueues(ctx, &sqs.ListQueuesInput{})); len(lq.QueueUrls) != 1000 || lq.NextToken != nil {
		t.Fatalf("without MaxResults: %d URLs, token %v; want 1000 and none", len(lq.QueueUrls), lq.NextToken)
	}
	var all []string
	in := &sqs.ListQueuesInput{MaxResults: aws.Int32(1000)}
	for {
		lq := must(qc.ListQueues(ctx, in))
		all = append(all, lq.QueueUrls...)
		if lq.NextToken == nil {
			break
		}
		in.NextToken = lq.NextToken
	}
	if len(all) != 1005 || !strings.HasSuffix(all[1004], "/q1004") {
		t.Fatalf("paged with MaxResults 1000: %d URLs, want all 1005", len(all))
	}
}
