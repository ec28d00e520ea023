package eventbus_test

import (
	"context"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/eventbus"
)

// createBuses creates event buses.
func createBuses(t *testing.T, rn *runnel.Runnel, names ...string) {
	t.Helper()
	for _, b := range names {
		if _, err := rn.Events.CreateEventBus(context.Background(), b, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAnEventIsDeliveredWithoutHTMLEscaping: AWS counts an event's Detail
// by its UTF-8 bytes and delivers it as sent (eb-putevent-size); neither
// the event, an InputPath, an InputTransformer's output nor an event put
// on another bus has <, > or & written as \u003c, \u003e, \u0026. Before,
// the event was encoded with json.Marshal, which escapes them (6 bytes for
// 1, also inside the Detail's json.RawMessage): a Detail of 60 KB of '<'
// became 360 KB and never reached a 256 KB queue.
func TestAnEventIsDeliveredWithoutHTMLEscaping(t *testing.T) {
	rn, clock := start(t)
	createBuses(t, rn, "b")
	for _, q := range []string{"whole", "path", "tpl", "onb", "big"} {
		newQueue(t, rn, q, nil) // MaximumMessageSize 256 KB
	}
	rule(t, rn, eventbus.Rule{Name: "r", EventPattern: `{"source":["shop"]}`},
		eventbus.Target{Id: "whole", Arn: rn.Queues.ARN("whole")},
		eventbus.Target{Id: "path", Arn: rn.Queues.ARN("path"), InputPath: "$.detail"},
		eventbus.Target{Id: "tpl", Arn: rn.Queues.ARN("tpl"), InputTransformer: &eventbus.InputTransformer{
			InputPathsMap: map[string]string{"html": "$.detail.html", "url": "$.detail.url"},
			InputTemplate: `{"html": <html>, "text": "see <url> for <html>", "event": <aws.events.event>}`}},
		eventbus.Target{Id: "bus", Arn: rn.Events.ARN("b")})
	rule(t, rn, eventbus.Rule{Name: "onb", EventBusName: "b", EventPattern: `{"source":["shop"]}`},
		eventbus.Target{Id: "q", Arn: rn.Queues.ARN("onb")})
	put(t, rn, eventbus.PutEventsRequestEntry{Source: "shop", DetailType: "x & <y>",
		Detail: `{"url":"https://x/?a=1&b=2","html":"<p>hi</p>"}`})
	for q, want := range map[string][]string{
		"whole": {`"html":"<p>hi</p>"`, `"url":"https://x/?a=1&b=2"`, `"detail-type":"x & <y>"`},
		"path":  {`{"url":"https://x/?a=1&b=2","html":"<p>hi</p>"}`},
		"tpl":   {`"html": "<p>hi</p>"`, `"text": "see https://x/?a=1&b=2 for <p>hi</p>"`, `"detailType":"x & <y>"`},
		"onb":   {`"html":"<p>hi</p>"`, `"detail-type":"x & <y>"`},
	} {
		body := drain(t, rn, clock, q, 1, 0)[0].Body
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s got %s, want %s in it", q, body, w)
			}
		}
		if strings.Contains(body, `\u00`) {
			t.Errorf("%s got %s, HTML-escaped", q, body)
		}
	}

	rule(t, rn, eventbus.Rule{Name: "big", EventPattern: `{"source":["big"]}`}, eventbus.Target{Id: "q", Arn: rn.Queues.ARN("big")})
	detail := `{"pad":"` + strings.Repeat("<", 60*1024) + `"}`
	if out := put(t, rn, eventbus.PutEventsRequestEntry{Source: "big", DetailType: "x", Detail: detail}); out.FailedEntryCount != 0 {
		t.Fatalf("PutEvents: %+v", out.Entries)
	}
	if body := drain(t, rn, clock, "big", 1, 0)[0].Body; !strings.Contains(body, `"detail":`+detail) || len(body) > len(detail)+1024 {
		t.Errorf("delivered %d bytes for a Detail of %d", len(body), len(detail))
	}
}
