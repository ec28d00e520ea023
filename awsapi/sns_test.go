package awsapi_test

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func (e *endpoint) sns() *sns.Client { return sns.NewFromConfig(e.config("AKID", "secret")) }

// receiveBodies long-polls a queue until it has n messages (or 10 s).
func receiveBodies(t *testing.T, qc *sqs.Client, url string, n int) []sqstypes.Message {
	t.Helper()
	var out []sqstypes.Message
	deadline := time.Now().Add(10 * time.Second)
	for len(out) < n && time.Now().Before(deadline) {
		r := must(qc.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: &url, MaxNumberOfMessages: 10,
			WaitTimeSeconds: 1, MessageAttributeNames: []string{"All"}}))
		out = append(out, r.Messages...)
	}
	return out
}

// TestSNSFanOutToThreeQueuesThroughTheSDK is issue 16's first done-when
// for SNS: from aws-sdk-go-v2, unchanged, a topic fans out to three SQS
// queues with filter policies and a dead-letter queue per subscription.
func TestSNSFanOutToThreeQueuesThroughTheSDK(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	sc, qc := e.sns(), e.sqs()
	topic := aws.ToString(must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("orders")})).TopicArn)
	if topic != "arn:aws:sns:us-east-1:000000000000:orders" {
		t.Fatalf("TopicArn %q", topic)
	}
	type target struct{ url, dlqURL, subArn string }
	targets := map[string]*target{}
	policies := map[string]string{
		"eu":    `{"region":[{"prefix":"eu-"}]}`,
		"big":   `{"amount":[{"numeric":[">=",100]}]}`,
		"audit": `{"$or":[{"kind":["refund"]},{"amount":[{"numeric":[">",1000]}]}]}`,
	}
	arnOf := func(url string) string {
		a := must(qc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url, AttributeNames: []sqstypes.QueueAttributeName{"QueueArn"}}))
		return a.Attributes["QueueArn"]
	}
	for name, policy := range policies {
		tg := &target{url: aws.ToString(must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})).QueueUrl),
			dlqURL: aws.ToString(must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name + "-dlq")})).QueueUrl)}
		attrs := map[string]string{"FilterPolicy": policy, "RedrivePolicy": `{"deadLetterTargetArn":"` + arnOf(tg.dlqURL) + `"}`}
		if name == "audit" {
			attrs["RawMessageDelivery"] = "true"
		}
		tg.subArn = aws.ToString(must(sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"),
			Endpoint: aws.String(arnOf(tg.url)), Attributes: attrs})).SubscriptionArn)
		targets[name] = tg
	}
	attr := func(typ, v string) snstypes.MessageAttributeValue {
		return snstypes.MessageAttributeValue{DataType: aws.String(typ), StringValue: aws.String(v)}
	}
	must(sc.Publish(ctx, &sns.PublishInput{TopicArn: &topic, Message: aws.String("o1"), Subject: aws.String("order"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"region": attr("String", "eu-west-1"), "amount": attr("Number", "150")}}))
	batch := must(sc.PublishBatch(ctx, &sns.PublishBatchInput{TopicArn: &topic, PublishBatchRequestEntries: []snstypes.PublishBatchRequestEntry{
		{Id: aws.String("a"), Message: aws.String("o2"), MessageAttributes: map[string]snstypes.MessageAttributeValue{"region": attr("String", "us-east-1"), "amount": attr("Number", "5000")}},
		{Id: aws.String("b"), Message: aws.String("o3"), MessageAttributes: map[string]snstypes.MessageAttributeValue{"kind": attr("String", "refund"), "amount": attr("Number", "1")}},
		{Id: aws.String("c"), Message: aws.String("")},
	}}))
	if len(batch.Successful) != 2 || len(batch.Failed) != 1 || aws.ToString(batch.Failed[0].Code) != "InvalidParameter" || !batch.Failed[0].SenderFault {
		t.Fatalf("PublishBatch: %+v", batch)
	}
	want := map[string][]string{"eu": {"o1"}, "big": {"o1", "o2"}, "audit": {"o2", "o3"}}
	for name, tg := range targets {
		msgs := receiveBodies(t, qc, tg.url, len(want[name]))
		var got []string
		for _, m := range msgs {
			body := aws.ToString(m.Body)
			if name != "audit" {
				var env map[string]any
				json.Unmarshal([]byte(body), &env)
				if env["Type"] != "Notification" || env["TopicArn"] != topic || env["UnsubscribeURL"] == nil {
					t.Fatalf("%s: envelope %s", name, body)
				}
				verifySignature(t, e, env)
				body = env["Message"].(string)
			} else if m.MessageAttributes["amount"].DataType == nil {
				t.Fatalf("raw delivery without attributes: %+v", m.MessageAttributes)
			}
			got = append(got, body)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want[name], ",") {
			t.Errorf("%s got %v, want %v", name, got, want[name])
		}
	}
	// A deleted queue: its messages go to its subscription's DLQ.
	must(qc.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: &targets["eu"].url}))
	id := aws.ToString(must(sc.Publish(ctx, &sns.PublishInput{TopicArn: &topic, Message: aws.String("o4"),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"region": attr("String", "eu-north-1")}})).MessageId)
	dl := receiveBodies(t, qc, targets["eu"].dlqURL, 1)
	if len(dl) != 1 || !strings.Contains(aws.ToString(dl[0].Body), id) {
		t.Fatalf("eu-dlq: %+v", dl)
	}
	for _, n := range []string{"big", "audit"} {
		if extra := receiveBodies(t, qc, targets[n].dlqURL, 0); len(extra) != 0 {
			t.Fatalf("%s-dlq not empty", n)
		}
	}
}

// verifySignature checks an envelope's Signature as AWS's guide says a
// subscriber should: the certificate from SigningCertURL (here, its path
// on this endpoint), SHA1withRSA over "name\nvalue\n" of Message,
// MessageId, Subject (if any), Timestamp, TopicArn and Type.
func verifySignature(t *testing.T, e *endpoint, env map[string]any) {
	t.Helper()
	u, _ := url.Parse(env["SigningCertURL"].(string))
	resp, err := http.Get(e.srv.URL + u.Path)
	if err != nil {
		t.Fatal(err)
	}
	pemBytes, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		t.Fatalf("no certificate at %s", u.Path)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, k := range []string{"Message", "MessageId", "Subject", "Timestamp", "TopicArn", "Type"} {
		if v, ok := env[k].(string); ok {
			b.WriteString(k + "\n" + v + "\n")
		}
	}
	sig, _ := base64.StdEncoding.DecodeString(env["Signature"].(string))
	sum := sha1.Sum([]byte(b.String()))
	if env["SignatureVersion"] != "1" || rsa.VerifyPKCS1v15(cert.PublicKey.(*rsa.PublicKey), crypto.SHA1, sum[:], sig) != nil {
		t.Fatalf("the signature does not verify: %v", env)
	}
}

// hook is an HTTP subscriber that records the requests it gets.
type hook struct {
	mu     sync.Mutex
	bodies []map[string]string
}

func (h *hook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var m map[string]string
	b, _ := io.ReadAll(r.Body)
	json.Unmarshal(b, &m)
	h.mu.Lock()
	h.bodies = append(h.bodies, m)
	h.mu.Unlock()
}

func (h *hook) last() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.bodies) == 0 {
		return nil
	}
	return h.bodies[len(h.bodies)-1]
}

// TestSNSOperations drives the other operations: attributes, tags,
// listing, the HTTP confirmation (through the GET SubscribeURL),
// Unsubscribe, DeleteTopic, and AWS's errors.
func TestSNSOperations(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	sc := e.sns()
	topic := aws.ToString(must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("t"),
		Attributes: map[string]string{"DisplayName": "T"}, Tags: []snstypes.Tag{{Key: aws.String("team"), Value: aws.String("a")}}})).TopicArn)
	if again := aws.ToString(must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("t")})).TopicArn); again != topic {
		t.Fatalf("CreateTopic again: %s", again)
	}
	_, err := sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("t"), Attributes: map[string]string{"DisplayName": "U"}})
	var bad *snstypes.InvalidParameterException
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "different attributes") {
		t.Fatalf("CreateTopic with other attributes: %v", err)
	}
	fifo := aws.ToString(must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("f.fifo"),
		Attributes: map[string]string{"FifoTopic": "true", "ContentBasedDeduplication": "true"}})).TopicArn)
	for i := range 3 {
		must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(fmt.Sprintf("x%d", i))}))
	}
	if lt := must(sc.ListTopics(ctx, &sns.ListTopicsInput{})); len(lt.Topics) != 5 || lt.NextToken != nil {
		t.Fatalf("ListTopics: %+v", lt)
	}
	must(sc.SetTopicAttributes(ctx, &sns.SetTopicAttributesInput{TopicArn: &topic, AttributeName: aws.String("DisplayName"), AttributeValue: aws.String("New")}))
	ta := must(sc.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: &topic})).Attributes
	if ta["DisplayName"] != "New" || ta["TopicArn"] != topic || ta["SubscriptionsConfirmed"] != "0" || ta["EffectiveDeliveryPolicy"] == "" {
		t.Fatalf("GetTopicAttributes: %v", ta)
	}
	if fa := must(sc.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: &fifo})).Attributes; fa["FifoTopic"] != "true" || fa["ContentBasedDeduplication"] != "true" {
		t.Fatalf("FIFO attributes: %v", fa)
	}
	out := must(sc.Publish(ctx, &sns.PublishInput{TopicArn: &fifo, Message: aws.String("m"), MessageGroupId: aws.String("g")}))
	if aws.ToString(out.SequenceNumber) == "" {
		t.Fatalf("FIFO Publish without SequenceNumber: %+v", out)
	}
	_, err = sc.Publish(ctx, &sns.PublishInput{TopicArn: &fifo, Message: aws.String("m")})
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "MessageGroupId") {
		t.Fatalf("FIFO Publish without a group: %v", err)
	}
	// Tags.
	must(sc.TagResource(ctx, &sns.TagResourceInput{ResourceArn: &topic, Tags: []snstypes.Tag{{Key: aws.String("env"), Value: aws.String("dev")}}}))
	must(sc.UntagResource(ctx, &sns.UntagResourceInput{ResourceArn: &topic, TagKeys: []string{"team"}}))
	tags := must(sc.ListTagsForResource(ctx, &sns.ListTagsForResourceInput{ResourceArn: &topic})).Tags
	if len(tags) != 1 || aws.ToString(tags[0].Key) != "env" || aws.ToString(tags[0].Value) != "dev" {
		t.Fatalf("tags %+v", tags)
	}
	_, err = sc.ListTagsForResource(ctx, &sns.ListTagsForResourceInput{ResourceArn: aws.String("arn:aws:sns:us-east-1:000000000000:nope")})
	var rnf *snstypes.ResourceNotFoundException
	if !errors.As(err, &rnf) {
		t.Fatalf("tags of a missing topic: %v", err)
	}
	// An HTTP subscription, confirmed through its SubscribeURL on this endpoint.
	h := &hook{}
	srv := httptest.NewServer(h)
	defer srv.Close()
	pending := must(sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: &topic, Protocol: aws.String("http"), Endpoint: aws.String(srv.URL)}))
	if aws.ToString(pending.SubscriptionArn) != "pending confirmation" {
		t.Fatalf("Subscribe http: %+v", pending)
	}
	testenv.Eventually(t, 10*time.Second, "the confirmation", func() bool { return h.last() != nil })
	conf := h.last()
	subURL := e.srv.URL + "/?" + strings.SplitN(conf["SubscribeURL"], "?", 2)[1]
	resp, err := http.Get(subURL)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET SubscribeURL: %v %v", resp, err)
	}
	resp.Body.Close()
	subs := must(sc.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: &topic})).Subscriptions
	if len(subs) != 1 || !strings.HasPrefix(aws.ToString(subs[0].SubscriptionArn), topic+":") || aws.ToString(subs[0].Protocol) != "http" {
		t.Fatalf("ListSubscriptionsByTopic: %+v", subs)
	}
	subArn := subs[0].SubscriptionArn
	must(sc.SetSubscriptionAttributes(ctx, &sns.SetSubscriptionAttributesInput{SubscriptionArn: subArn, AttributeName: aws.String("RawMessageDelivery"), AttributeValue: aws.String("true")}))
	sa := must(sc.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: subArn})).Attributes
	if sa["RawMessageDelivery"] != "true" || sa["PendingConfirmation"] != "false" || sa["Protocol"] != "http" || sa["EffectiveDeliveryPolicy"] == "" {
		t.Fatalf("GetSubscriptionAttributes: %v", sa)
	}
	_, err = sc.SetSubscriptionAttributes(ctx, &sns.SetSubscriptionAttributesInput{SubscriptionArn: subArn, AttributeName: aws.String("FilterPolicy"), AttributeValue: aws.String(`{"a":[]}`)})
	if !errors.As(err, &bad) || !strings.Contains(err.Error(), "Empty arrays are not allowed") {
		t.Fatalf("a bad filter policy: %v", err)
	}
	if all := must(sc.ListSubscriptions(ctx, &sns.ListSubscriptionsInput{})).Subscriptions; len(all) != 1 {
		t.Fatalf("ListSubscriptions: %+v", all)
	}
	must(sc.Unsubscribe(ctx, &sns.UnsubscribeInput{SubscriptionArn: subArn}))
	_, err = sc.GetSubscriptionAttributes(ctx, &sns.GetSubscriptionAttributesInput{SubscriptionArn: subArn})
	var nf *snstypes.NotFoundException
	if !errors.As(err, &nf) {
		t.Fatalf("a deleted subscription: %v", err)
	}
	must(sc.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: &topic}))
	_, err = sc.GetTopicAttributes(ctx, &sns.GetTopicAttributesInput{TopicArn: &topic})
	if !errors.As(err, &nf) || errCode(err) != "NotFound" {
		t.Fatalf("a deleted topic: %v", err)
	}
	_, err = sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: &fifo, Protocol: aws.String("lambda"), Endpoint: aws.String("arn:aws:lambda:us-east-1:000000000000:function:f")})
	if !errors.As(err, &bad) {
		t.Fatalf("lambda on a FIFO topic: %v", err)
	}
}

// snsJSON posts one SNS JSON-protocol call and decodes its answer.
func snsJSON(t *testing.T, e *endpoint, op, body string, out any) (*http.Response, string) {
	t.Helper()
	resp, b := postTarget(t, e, "SNS_20100331."+op, "application/x-amz-json-1.0", body)
	if out != nil && resp.StatusCode == 200 {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s: %v: %s", op, err, b)
		}
	}
	return resp, string(b)
}

// TestSNSJSONProtocol drives SNS's JSON protocol (X-Amz-Target
// SNS_20100331.*, JSON 1.0, query-compatible errors): a topic fanning out
// to a queue with raw delivery, PublishBatch, tags, and a NotFound.
func TestSNSJSONProtocol(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	var ct struct{ TopicArn string }
	snsJSON(t, e, "CreateTopic", `{"Name":"j","Tags":[{"Key":"k","Value":"v"}]}`, &ct)
	if ct.TopicArn != "arn:aws:sns:us-east-1:000000000000:j" {
		t.Fatalf("CreateTopic: %+v", ct)
	}
	qurl := aws.ToString(must(e.sqs().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("jq")})).QueueUrl)
	var sub struct{ SubscriptionArn string }
	snsJSON(t, e, "Subscribe", `{"TopicArn":"`+ct.TopicArn+`","Protocol":"sqs","Endpoint":"arn:aws:sqs:us-east-1:000000000000:jq","Attributes":{"RawMessageDelivery":"true"}}`, &sub)
	if !strings.HasPrefix(sub.SubscriptionArn, ct.TopicArn+":") {
		t.Fatalf("Subscribe: %+v", sub)
	}
	var pub struct{ MessageId string }
	snsJSON(t, e, "Publish", `{"TopicArn":"`+ct.TopicArn+`","Message":"one","MessageAttributes":{"b":{"DataType":"Binary","BinaryValue":"AgME"}}}`, &pub)
	var batch struct {
		Successful []struct{ Id, MessageId string }
		Failed     []struct{ Id, Code string }
	}
	snsJSON(t, e, "PublishBatch", `{"TopicArn":"`+ct.TopicArn+`","PublishBatchRequestEntries":[{"Id":"a","Message":"two"},{"Id":"b","Message":""}]}`, &batch)
	if pub.MessageId == "" || len(batch.Successful) != 1 || len(batch.Failed) != 1 || batch.Failed[0].Code != "InvalidParameter" {
		t.Fatalf("Publish %+v, PublishBatch %+v", pub, batch)
	}
	msgs := receiveBodies(t, e.sqs(), qurl, 2)
	var bodies []string
	for _, m := range msgs {
		bodies = append(bodies, aws.ToString(m.Body))
		if aws.ToString(m.Body) == "one" && string(m.MessageAttributes["b"].BinaryValue) != "\x02\x03\x04" {
			t.Fatalf("binary attribute %+v", m.MessageAttributes)
		}
	}
	sort.Strings(bodies)
	if strings.Join(bodies, ",") != "one,two" {
		t.Fatalf("delivered %v", bodies)
	}
	var tags struct{ Tags []struct{ Key, Value string } }
	snsJSON(t, e, "ListTagsForResource", `{"ResourceArn":"`+ct.TopicArn+`"}`, &tags)
	if len(tags.Tags) != 1 || tags.Tags[0].Key != "k" {
		t.Fatalf("tags %+v", tags)
	}
	resp, body := snsJSON(t, e, "GetTopicAttributes", `{"TopicArn":"arn:aws:sns:us-east-1:000000000000:nope"}`, nil)
	if resp.StatusCode != 404 || resp.Header.Get("x-amzn-query-error") != "NotFound;Sender" || !strings.Contains(body, `"com.amazonaws.sns#NotFoundException"`) {
		t.Fatalf("NotFound: %d %v %s", resp.StatusCode, resp.Header, body)
	}
}

// postTarget posts a JSON body of contentType with an X-Amz-Target and
// returns the answer and its body.
func postTarget(t *testing.T, e *endpoint, target, contentType, body string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(body))
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(sign(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}
