package async_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/eventbus"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/sns"
)

// TestTopicAndBusDestinationsGetTheRecord: Lambda's asynchronous
// destinations include "Amazon SNS – A standard SNS topic" and "Amazon
// EventBridge – An EventBridge event bus" (API_OnSuccess, API_OnFailure,
// invocation-async-retain-records). A topic gets the invocation record as
// its message; a bus gets an event whose detail is the record, source
// "lambda", detail type "Lambda Function Invocation Result - Success" or
// "- Failure". Both were refused (InvalidParameterValue), so SAM, CDK and
// Terraform stacks using them did not deploy. A FIFO topic is refused.
func TestTopicAndBusDestinationsGetTheRecord(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	topic, err := rn.SNS.CreateTopic(ctx, "failures", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	fromTopic := createQueue(t, rn, "from-topic", nil)
	if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: fromTopic,
		Attributes: map[string]string{"RawMessageDelivery": "true"}}); err != nil {
		t.Fatal(err)
	}
	fromBus := createQueue(t, rn, "from-bus", nil)
	if _, err := rn.Events.PutRule(ctx, eventbus.Rule{Name: "results", EventPattern: `{"source":["lambda"]}`}); err != nil {
		t.Fatal(err)
	}
	if failed, err := rn.Events.PutTargets(ctx, "default", "results", []eventbus.Target{{Id: "q", Arn: fromBus}}); err != nil || len(failed) > 0 {
		t.Fatalf("PutTargets: %v %v", failed, err)
	}
	bus, err := rn.Events.DescribeEventBus("default")
	if err != nil {
		t.Fatal(err)
	}
	fifo, err := rn.SNS.CreateTopic(ctx, "ordered.fifo", map[string]string{sns.AttrFifoTopic: "true"}, nil)
	if err != nil {
		t.Fatal(err)
	}

	newFunction(t, rn, function.Config{}, func(p string) (json.RawMessage, error) {
		if p == `{"fail":true}` {
			return fail("boom")(p)
		}
		return json.RawMessage(`{"done":1}`), nil
	})
	if _, err := rn.Async.PutFunctionEventInvokeConfig(ctx, async.EventInvokeConfig{FunctionName: "f", DestinationConfig: onFailure(fifo)}); err == nil || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("a FIFO topic destination: %v; want it refused as FIFO", err)
	}
	put(t, rn, async.EventInvokeConfig{FunctionName: "f", MaximumRetryAttempts: ptr(0), DestinationConfig: &async.DestinationConfig{
		OnFailure: &async.OnFailure{Destination: topic}, OnSuccess: &async.OnSuccess{Destination: bus.Arn}}})

	failed := invoke(t, rn, "f", async.Event, `{"fail":true}`)
	wantRecord(t, onlyMessage(t, rn, "from-topic").Body, map[string]any{
		"requestContext": map[string]any{"requestId": failed.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
			"condition": "RetriesExhausted", "approximateInvokeCount": 1},
		"requestPayload": map[string]any{"fail": true},
	}, "")

	ok := invoke(t, rn, "f", async.Event, `{"order":42}`)
	var ev struct {
		Source     string          `json:"source"`
		DetailType string          `json:"detail-type"`
		Resources  []string        `json:"resources"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal([]byte(onlyMessage(t, rn, "from-bus").Body), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Source != "lambda" || ev.DetailType != async.DetailTypeSuccess || len(ev.Resources) != 2 || ev.Resources[0] != bus.Arn || ev.Resources[1] != rn.Functions.ARN("f")+":$LATEST" {
		t.Fatalf("event from the bus: source %q, detail-type %q, resources %v", ev.Source, ev.DetailType, ev.Resources)
	}
	wantRecord(t, string(ev.Detail), map[string]any{
		"requestContext": map[string]any{"requestId": ok.RequestID, "functionArn": rn.Functions.ARN("f") + ":$LATEST",
			"condition": "Success", "approximateInvokeCount": 1},
		"requestPayload":  map[string]any{"order": 42},
		"responsePayload": map[string]any{"done": 1},
	}, "")
	if st := rn.Async.Stats("f"); st.DestinationDeliveries != 2 || st.KeptInStore != 0 {
		t.Fatalf("stats = %+v; want both records delivered, none kept", st)
	}
}
