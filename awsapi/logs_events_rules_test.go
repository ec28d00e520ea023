package awsapi_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function/logs"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// logsServer serves a CloudWatch Logs endpoint on a new engine and opens
// the engine's log store for the test to write to.
func logsServer(t *testing.T) (string, *logs.Store) {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	t.Cleanup(ep.Close)
	s, err := logs.Open(context.Background(), rn.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	return srv.URL, s
}

type logsPage struct {
	Events []struct {
		Message       string
		LogStreamName string
	}
	NextForwardToken, NextBackwardToken, NextToken string
}

// GetLogEvents of a log stream that does not exist, and FilterLogEvents
// naming one in logStreamNames, answer ResourceNotFoundException "The
// specified log stream does not exist." (HTTP 400), as CloudWatch Logs
// does (API_GetLogEvents and API_FilterLogEvents errors); a missing group
// is "The specified log group does not exist.". runnel used to answer 200
// with no events, so a typo in a stream name looked like a quiet stream.
func TestAMissingLogStreamIsResourceNotFound(t *testing.T) {
	url, s := logsServer(t)
	if err := s.Put(context.Background(), "g1", "real", "an event"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op   string
		in   map[string]any
		want string
	}{
		{"GetLogEvents", map[string]any{"logGroupName": "g1", "logStreamName": "nope"}, "The specified log stream does not exist."},
		{"FilterLogEvents", map[string]any{"logGroupName": "g1", "logStreamNames": []string{"real", "nope"}}, "The specified log stream does not exist."},
		{"GetLogEvents", map[string]any{"logGroupName": "nope", "logStreamName": "real"}, "The specified log group does not exist."},
		{"FilterLogEvents", map[string]any{"logGroupName": "nope"}, "The specified log group does not exist."},
	} {
		status, body := jsonCall(t, url, "Logs_20140328."+c.op, c.in, nil)
		if status != 400 || !strings.Contains(body, "ResourceNotFoundException") || !strings.Contains(body, c.want) {
			t.Errorf("%s %v: %d %s, want 400 ResourceNotFoundException %q", c.op, c.in, status, body, c.want)
		}
	}
	var p logsPage
	if status, body := jsonCall(t, url, "Logs_20140328.FilterLogEvents", map[string]any{"logGroupName": "g1", "logStreamNames": []string{"real"}}, &p); status != 200 || len(p.Events) != 1 {
		t.Fatalf("FilterLogEvents of the stream that exists: %d %s", status, body)
	}
}

// A page of GetLogEvents or FilterLogEvents holds up to 1 MB of events
// (API_GetLogEvents: "as many log events as can fit in a response size
// of 1 MB (up to 10,000 log events)"; API_FilterLogEvents the same),
// counting each event as its message plus 26 bytes (PutLogEvents' count);
// the rest comes with the token. runnel used to return up to 10,000
// events whatever their size.
func TestALogEventsPageHoldsAtMost1MB(t *testing.T) {
	url, s := logsServer(t)
	const n, size = 12, 100_000 // 10 fit in 1 MB with their 26 bytes, 11 do not
	for i := 0; i < n; i++ {
		if err := s.Put(context.Background(), "big", "s", fmt.Sprintf("%02d", i)+strings.Repeat("x", size-2)); err != nil {
			t.Fatal(err)
		}
	}
	call := func(op string, in map[string]any) logsPage {
		t.Helper()
		in["logGroupName"] = "big"
		var p logsPage
		if status, body := jsonCall(t, url, "Logs_20140328."+op, in, &p); status != 200 {
			t.Fatalf("%s %v: %d %.200s", op, in, status, body)
		}
		return p
	}
	first := func(p logsPage) string { return p.Events[0].Message[:2] }

	head := call("GetLogEvents", map[string]any{"logStreamName": "s", "startFromHead": true})
	if len(head.Events) != 10 || first(head) != "00" {
		t.Fatalf("GetLogEvents from the head: %d events, want the first 10 (1 MB)", len(head.Events))
	}
	if rest := call("GetLogEvents", map[string]any{"logStreamName": "s", "nextToken": head.NextForwardToken}); len(rest.Events) != 2 || first(rest) != "10" {
		t.Fatalf("GetLogEvents on forward: %d events, want the last 2", len(rest.Events))
	}
	tail := call("GetLogEvents", map[string]any{"logStreamName": "s"})
	if len(tail.Events) != 10 || first(tail) != "02" {
		t.Fatalf("GetLogEvents from the end: %d events, want the newest 10 (1 MB)", len(tail.Events))
	}
	if back := call("GetLogEvents", map[string]any{"logStreamName": "s", "nextToken": tail.NextBackwardToken}); len(back.Events) != 2 || first(back) != "00" {
		t.Fatalf("GetLogEvents back: %d events, want the first 2", len(back.Events))
	}
	f := call("FilterLogEvents", map[string]any{})
	if len(f.Events) != 10 || f.NextToken == "" {
		t.Fatalf("FilterLogEvents: %d events, token %q, want 10 and a token", len(f.Events), f.NextToken)
	}
	if f2 := call("FilterLogEvents", map[string]any{"nextToken": f.NextToken}); len(f2.Events) != 2 || first(f2) != "10" || f2.NextToken != "" {
		t.Fatalf("FilterLogEvents on: %d events, token %q, want the last 2 and none", len(f2.Events), f2.NextToken)
	}
}

// GetLogEvents without startFromHead returns the newest events of the
// stream and pages back from them (API_GetLogEvents: "If the value is
// false, the latest log events are returned first"), here of a quiet
// stream among a busy one's thousands of events, within a time range.
// It used to read the group's whole history on every call (20,000
// events: 360 ms for limit 1); it now reads back from the end in growing
// spans, in batched gets.
func TestGetLogEventsReadsTheNewestOfAQuietStreamAmongABusyOne(t *testing.T) {
	url, s := logsServer(t)
	ctx := context.Background()
	busy := make([]string, 1000)
	for i := range busy {
		busy[i] = fmt.Sprintf("busy %d", i)
	}
	for i := 0; i < 5; i++ {
		if err := s.Put(ctx, "g", "quiet", fmt.Sprintf("quiet %d", i)); err != nil {
			t.Fatal(err)
		}
		if err := s.Put(ctx, "g", "busy", busy...); err != nil {
			t.Fatal(err)
		}
	}
	get := func(in map[string]any) logsPage {
		t.Helper()
		in["logGroupName"], in["logStreamName"] = "g", "quiet"
		var p logsPage
		if status, body := jsonCall(t, url, "Logs_20140328.GetLogEvents", in, &p); status != 200 {
			t.Fatalf("GetLogEvents %v: %d %s", in, status, body)
		}
		return p
	}
	msgs := func(p logsPage) string {
		var m []string
		for _, e := range p.Events {
			m = append(m, e.Message)
		}
		return strings.Join(m, ",")
	}
	p := get(map[string]any{"limit": 2})
	if msgs(p) != "quiet 3,quiet 4" {
		t.Fatalf("newest 2: %q", msgs(p))
	}
	if p = get(map[string]any{"limit": 2, "nextToken": p.NextBackwardToken}); msgs(p) != "quiet 1,quiet 2" {
		t.Fatalf("back 2: %q", msgs(p))
	}
	if p = get(map[string]any{"limit": 2, "nextToken": p.NextBackwardToken}); msgs(p) != "quiet 0" {
		t.Fatalf("back 2 again: %q", msgs(p))
	}
	if p = get(map[string]any{"limit": 2, "nextToken": p.NextBackwardToken}); msgs(p) != "" {
		t.Fatalf("back past the head: %q", msgs(p))
	}
	if p = get(map[string]any{"limit": 1, "startFromHead": true}); msgs(p) != "quiet 0" {
		t.Fatalf("head 1: %q", msgs(p))
	}
	if p = get(map[string]any{"endTime": 1}); msgs(p) != "" {
		t.Fatalf("before any event: %q", msgs(p))
	}
}
