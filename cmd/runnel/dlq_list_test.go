package main

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// TestDLQListShowsEveryDeadLetterQueueStatusAlarmsFor: `runnel dlq list`
// lists the dead-letter queues `runnel status` raises dlq-depth alarms for
// (README: "dead-letter queues: depth, oldest message, sources"): besides
// RedrivePolicy targets, a mapping's on-failure destination (Lambda: "an
// SQS queue or SNS topic ... for discarded batches", Event source mapping
// DestinationConfig) and a function's DeadLetterConfig queue (Lambda
// Developer Guide, "Adding a dead-letter queue"), whatever their names,
// each with why it is one. It used to list only RedrivePolicy targets and
// names containing "dlq"/"dead", so status alarmed on a queue dlq list
// did not show.
func TestDLQListShowsEveryDeadLetterQueueStatusAlarmsFor(t *testing.T) {
	dir := t.TempDir()
	// A handler of the default registry, which the CLI's process (this
	// one) shares.
	if err := function.DefaultRegistry().Register("dlq-list-fn", func(context.Context, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	ctx := context.Background()
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	arns := map[string]string{}
	for _, name := range []string{"failures", "fn-failed", "work"} {
		u, err := rn.Queues.CreateQueue(ctx, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := rn.Queues.SendMessage(ctx, u, queue.SendMessageInput{MessageBody: "m"}); err != nil {
			t.Fatal(err)
		}
		attrs, err := rn.Queues.GetQueueAttributes(ctx, u, []string{queue.AttrQueueArn})
		if err != nil {
			t.Fatal(err)
		}
		arns[name] = attrs[queue.AttrQueueArn]
	}
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "fn", Handler: "dlq-list-fn",
		DeadLetterConfig: &function.DeadLetterConfig{TargetArn: arns["fn-failed"]}}); err != nil {
		t.Fatal(err)
	}
	off := false
	m, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: d.StreamARN, FunctionName: "fn", StartingPosition: "TRIM_HORIZON",
		Enabled: &off, DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: arns["failures"]}}})
	if err != nil {
		t.Fatal(err)
	}
	rn.Close()

	out, _, err := runCLI(t, "", "--data-dir", dir, "dlq", "list", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var list []recovery.QueueSummary
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	why := map[string]string{}
	for _, q := range list {
		if !q.IsDLQ {
			t.Errorf("dlq list shows %s, not a dead-letter queue", q.Name)
		}
		why[q.Name] = strings.Join(q.DeadLetterFor, "; ")
	}
	if why["failures"] != "on-failure destination of mapping "+m.UUID || why["fn-failed"] != "DeadLetterConfig of function fn" {
		t.Errorf("dlq list: %v; want failures (on-failure destination of mapping %s) and fn-failed (DeadLetterConfig of function fn)", why, m.UUID)
	}
	if _, ok := why["work"]; ok {
		t.Errorf("dlq list shows the work queue, no dead-letter queue")
	}

	out, _, err = runCLI(t, "", "--data-dir", dir, "status", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rep observe.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var alarmed, listed []string
	for _, a := range rep.Alarms {
		if a.Rule == observe.RuleDLQDepth && a.State == "ALARM" {
			alarmed = append(alarmed, a.Resource)
		}
	}
	for _, q := range list {
		if q.Visible+q.InFlight+q.Delayed > 0 {
			listed = append(listed, q.Name)
		}
	}
	slices.Sort(alarmed)
	slices.Sort(listed)
	if !slices.Equal(alarmed, listed) {
		t.Errorf("status alarms on dead-letter queues %v, dlq list shows %v holding messages", alarmed, listed)
	}
}
