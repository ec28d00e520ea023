package observe_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/sns"
)

// TestSNSTopicMetricsAndDeadLetterQueues: a topic's delivery counters
// are exported per topic, and a subscription's RedrivePolicy queue counts
// as a dead-letter queue (so the DLQ alarms watch it).
func TestSNSTopicMetricsAndDeadLetterQueues(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	topic, err := rn.SNS.CreateTopic(ctx, "orders", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	createQueue(t, rn, "parking", nil)
	createQueue(t, rn, "gone", nil)
	createQueue(t, rn, "kept", nil)
	for _, q := range []string{"gone", "kept"} {
		if _, err := rn.SNS.Subscribe(ctx, sns.SubscribeInput{TopicArn: topic, Protocol: "sqs", Endpoint: rn.Queues.ARN(q),
			Attributes: map[string]string{"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("parking") + `"}`}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rn.Queues.DeleteQueue(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := rn.SNS.Publish(ctx, sns.PublishInput{TopicArn: topic, Message: "m"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, wait, "both deliveries", func() bool { st := rn.SNS.Stats("orders"); return st.Delivered+st.Failed == 2 })
	c := observe.NewCollector(rn, nil)
	expected := `
# HELP runnel_sns_messages_published_total Messages published to the topic (NumberOfMessagesPublished).
# TYPE runnel_sns_messages_published_total counter
runnel_sns_messages_published_total{topic="orders"} 1
# HELP runnel_sns_notifications_delivered_total Deliveries that succeeded (NumberOfNotificationsDelivered).
# TYPE runnel_sns_notifications_delivered_total counter
runnel_sns_notifications_delivered_total{topic="orders"} 1
# HELP runnel_sns_notifications_failed_total Deliveries that ended without success (NumberOfNotificationsFailed).
# TYPE runnel_sns_notifications_failed_total counter
runnel_sns_notifications_failed_total{topic="orders"} 1
# HELP runnel_sns_notifications_dead_lettered_total Failed deliveries stored in a subscription's dead-letter queue (NumberOfNotificationsRedrivenToDlq).
# TYPE runnel_sns_notifications_dead_lettered_total counter
runnel_sns_notifications_dead_lettered_total{topic="orders"} 1
`
	names := []string{"runnel_sns_messages_published_total", "runnel_sns_notifications_delivered_total", "runnel_sns_notifications_failed_total",
		"runnel_sns_notifications_dead_lettered_total"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), names...); err != nil {
		t.Fatal(err)
	}
	for _, q := range observe.Take(ctx, rn, observe.TakeOptions{}).Queues {
		want := q.Name == "parking"
		if q.DeadLetter != want || (want && !strings.Contains(strings.Join(q.DeadLetterFor, " "), "SNS subscription "+topic+":")) {
			t.Errorf("queue %s: DeadLetter %v %v", q.Name, q.DeadLetter, q.DeadLetterFor)
		}
	}
}

// TestWebGraphShowsTopics: the pipeline graph has a topic node, an edge
// per subscription to its endpoint and one to a subscription's
// dead-letter queue.
func TestWebGraphShowsTopics(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	topic, err := rn.SNS.CreateTopic(ctx, "orders", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	createQueue(t, rn, "eu", nil)
	createQueue(t, rn, "eu-dlq", nil)
	for _, s := range []sns.SubscribeInput{
		{Protocol: "sqs", Endpoint: rn.Queues.ARN("eu"), Attributes: map[string]string{"FilterPolicy": `{"r":["eu"]}`,
			"RedrivePolicy": `{"deadLetterTargetArn":"` + rn.Queues.ARN("eu-dlq") + `"}`}},
		{Protocol: "lambda", Endpoint: rn.Functions.ARN("audit")},
	} {
		s.TopicArn = topic
		if _, err := rn.SNS.Subscribe(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	a, err := observe.NewAlarms(rn, observe.Config{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(observe.Handler(rn, a))
	defer srv.Close()
	r, err := http.Get(srv.URL + "/api/graph")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var g observe.Graph
	if err := json.NewDecoder(r.Body).Decode(&g); err != nil {
		t.Fatal(err)
	}
	edges := map[string]bool{}
	for _, e := range g.Edges {
		edges[e.From+" "+e.Kind+" "+e.To+" "+e.Label] = true
	}
	for _, want := range []string{"topic:orders subscription queue:eu sqs, filtered", "topic:orders subscription function:audit lambda",
		"topic:orders deadLetter queue:eu-dlq subscription DLQ"} {
		if !edges[want] {
			t.Errorf("no edge %q in %v", want, edges)
		}
	}
	found := false
	for _, n := range g.Nodes {
		found = found || (n.ID == "topic:orders" && n.Kind == "topic")
	}
	if !found {
		t.Errorf("no topic node in %+v", g.Nodes)
	}
}
