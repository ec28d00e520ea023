package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/builtin"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

// recoverySetup writes a data directory with a stream "s" (records r0..r5),
// a queue "work" whose dead-letter queue "work-dlq" holds three pointer
// messages (r0..r1, r2, r3..r5), a queue "replayed" and a function "logf"
// (the built-in "log" handler). It returns the directory, the sequence
// numbers and the pointer bodies.
func recoverySetup(t *testing.T) (string, []string, []string) {
	t.Helper()
	dir := t.TempDir()
	builtin.Register(nil)
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	ctx := context.Background()
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	var entries []stream.PutRecordsRequestEntry
	for i := range 6 {
		entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: fmt.Appendf(nil, "r%d", i)})
	}
	out, err := rn.Streams.PutRecords(ctx, "s", entries)
	if err != nil {
		t.Fatal(err)
	}
	var seqs []string
	for _, r := range out.Records {
		seqs = append(seqs, r.SequenceNumber)
	}
	if _, err := rn.Queues.CreateQueue(ctx, "work-dlq", nil); err != nil {
		t.Fatal(err)
	}
	src, err := rn.Queues.CreateQueue(ctx, "work", map[string]string{
		queue.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, rn.Queues.ARN("work-dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Queues.CreateQueue(ctx, "replayed", nil); err != nil {
		t.Fatal(err)
	}
	var pointers []string
	for _, r := range [][2]int{{0, 1}, {2, 2}, {3, 5}} {
		b, _ := json.Marshal(wire.OnFailureRecord{
			RequestContext: wire.RequestContext{Condition: "RetryAttemptsExhausted", ApproximateInvokeCount: 2}, Version: "1.0",
			ResponseContext: wire.ResponseContext{FunctionError: "Unhandled"},
			KinesisBatchInfo: &wire.KinesisBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: seqs[r[0]],
				EndSequenceNumber: seqs[r[1]], BatchSize: r[1] - r[0] + 1, StreamArn: d.StreamARN},
		})
		pointers = append(pointers, string(b))
		if _, err := rn.Queues.SendMessage(ctx, src, queue.SendMessageInput{MessageBody: string(b)}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := rn.Queues.ReceiveMessage(ctx, src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
	if err != nil || len(ms) != 3 {
		t.Fatalf("receive: %d, %v", len(ms), err)
	}
	for _, m := range ms {
		if err := rn.Queues.MoveToDeadLetterQueue(ctx, src, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "logf", Handler: "log"}); err != nil {
		t.Fatal(err)
	}
	rn.Close()
	return dir, seqs, pointers
}

// TestRecoveryCommandsEndToEnd builds the binary and runs the recovery
// commands against a data directory: dlq list/show (nothing consumed),
// redrive refused without "y" then done with it, replay to a queue and to a
// function, resolve from standard input, archive --delete and purge.
func TestRecoveryCommandsEndToEnd(t *testing.T) {
	bin := runnelBinary(t)
	dir, seqs, pointers := recoverySetup(t)
	data := filepath.Join(dir)
	run := func(t *testing.T, stdin string, args ...string) (string, string, error) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--data-dir", data}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	mustJSON := func(t *testing.T, s string, v any) {
		t.Helper()
		if err := json.Unmarshal([]byte(s), v); err != nil {
			t.Fatalf("output is not JSON: %v\n%s", err, s)
		}
	}
	depth := func(t *testing.T, name string) int {
		t.Helper()
		out, errOut, err := run(t, "", "dlq", "list", "--all", "--no-age", "--json")
		if err != nil {
			t.Fatalf("dlq list: %v\n%s", err, errOut)
		}
		var qs []recovery.QueueSummary
		mustJSON(t, out, &qs)
		for _, q := range qs {
			if q.Name == name {
				return q.Visible + q.InFlight + q.Delayed
			}
		}
		t.Fatalf("queue %s not listed: %s", name, out)
		return 0
	}

	t.Run("dlq list and show", func(t *testing.T) {
		out, errOut, err := run(t, "", "dlq", "list", "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var qs []recovery.QueueSummary
		mustJSON(t, out, &qs)
		if len(qs) != 1 || qs[0].Name != "work-dlq" || qs[0].Visible != 3 || qs[0].OldestSent == nil || qs[0].Sources[0] != "work" {
			t.Fatalf("dlq list = %+v", qs)
		}
		out, errOut, err = run(t, "", "dlq", "show", "work-dlq", "--limit", "2", "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var in recovery.Inspection
		mustJSON(t, out, &in)
		if in.Visible != 3 || in.Scanned != 3 || len(in.Messages) != 2 || in.ByCondition["RetryAttemptsExhausted"] != 3 ||
			in.Messages[0].ShardID != "shardId-000000000000" {
			t.Fatalf("dlq show = %+v", in)
		}
		out, _, err = run(t, "", "dlq", "show", "work-dlq")
		if err != nil || !strings.Contains(out, "3 visible") || !strings.Contains(out, "RetryAttemptsExhausted 3") {
			t.Fatalf("dlq show (text): %v\n%s", err, out)
		}
		if n := depth(t, "work-dlq"); n != 3 {
			t.Fatalf("after show, work-dlq holds %d", n)
		}
	})

	t.Run("resolve from stdin and from an SQS message", func(t *testing.T) {
		out, errOut, err := run(t, pointers[2], "resolve", "-")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var ev events.KinesisEvent
		mustJSON(t, out, &ev)
		if len(ev.Records) != 3 || string(ev.Records[0].Kinesis.Data) != "r3" || ev.Records[2].Kinesis.SequenceNumber != seqs[5] {
			t.Fatalf("resolve = %s", out)
		}
		async := `{"body":"{\"requestContext\":{\"condition\":\"EventAgeExceeded\"},\"requestPayload\":{\"order\":7}}"}`
		out, _, err = run(t, async, "resolve", "--json")
		var res recovery.Resolved
		mustJSON(t, out, &res)
		var payload bytes.Buffer
		json.Compact(&payload, res.Payload)
		if err != nil || res.Kind != recovery.KindAsync || payload.String() != `{"order":7}` || res.Condition != "EventAgeExceeded" {
			t.Fatalf("resolve async = %s, %v", out, err)
		}
		// An SNS dead letter prints its message. Before, an empty Kinesis
		// event ({"Records":[]}).
		sns := `{"Type":"Notification","MessageId":"m-1","TopicArn":"arn:aws:sns:us-east-1:000000000000:t","Message":"{\"order\":8}"}`
		out, _, err = run(t, sns, "resolve", "-")
		var msg map[string]any
		mustJSON(t, out, &msg)
		if err != nil || msg["order"] != 8.0 {
			t.Fatalf("resolve sns = %s, %v", out, err)
		}
	})

	t.Run("replay to a queue and to a function", func(t *testing.T) {
		// Without "y" nothing is sent.
		_, errOut, err := run(t, "n\n", "replay", "--stream", "s", "--from-seq", seqs[1], "--to-seq", seqs[3], "--to-queue", "replayed")
		if err == nil || !strings.Contains(errOut, "replay: put 3 records") || !strings.Contains(errOut, "aborted") {
			t.Fatalf("replay without confirmation: %v\n%s", err, errOut)
		}
		if n := depth(t, "replayed"); n != 0 {
			t.Fatalf("unconfirmed replay sent %d", n)
		}
		out, errOut, err := run(t, "", "replay", "--stream", "s", "--from-seq", seqs[1], "--to-seq", seqs[3], "--to-queue", "replayed", "--yes", "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var res recovery.ReplayResult
		mustJSON(t, out, &res)
		if res.Sent != 3 || res.Plan.Available != 3 {
			t.Fatalf("replay = %+v", res)
		}
		if n := depth(t, "replayed"); n != 3 {
			t.Fatalf("replayed holds %d", n)
		}
		_, errOut, err = run(t, "y\n", "--log-level", "info", "replay", "--stream", "s", "--from-seq", seqs[4], "--to-seq", seqs[5], "--to-function", "logf")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		if strings.Count(errOut, "msg=record") != 2 || !strings.Contains(errOut, "data=r4") || !strings.Contains(errOut, "data=r5") {
			t.Fatalf("function did not log r4 and r5 exactly:\n%s", errOut)
		}
	})

	t.Run("redrive asks, then moves back to the source", func(t *testing.T) {
		_, errOut, err := run(t, "\n", "dlq", "redrive", "work-dlq", "--rate", "50")
		if err == nil || !strings.Contains(errOut, "move the 3 visible messages of work-dlq to each message's source queue (work)") {
			t.Fatalf("redrive without confirmation: %v\n%s", err, errOut)
		}
		if n := depth(t, "work-dlq"); n != 3 {
			t.Fatalf("unconfirmed redrive moved messages: %d left", n)
		}
		out, errOut, err := run(t, "y\n", "dlq", "redrive", "work-dlq", "--rate", "50", "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var res recovery.RedriveResult
		mustJSON(t, out, &res)
		if res.Status != queue.MoveTaskCompleted || res.ApproximateNumberOfMessagesMoved != 3 || res.MaxNumberOfMessagesPerSecond != 50 {
			t.Fatalf("redrive = %+v", res)
		}
		if depth(t, "work-dlq") != 0 || depth(t, "work") != 3 {
			t.Fatal("messages not back in work")
		}
	})

	t.Run("archive --delete then purge", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "work.jsonl")
		out, errOut, err := run(t, "", "dlq", "archive", "work", "--out", file, "--delete", "--yes", "--json")
		if err != nil {
			t.Fatalf("%v\n%s", err, errOut)
		}
		var res recovery.ArchiveResult
		mustJSON(t, out, &res)
		lines, rerr := recovery.ReadArchive(file)
		if res.Archived != 3 || res.Deleted != 3 || res.Resolved != 3 || rerr != nil || len(lines) != 3 || len(lines[0].Resolved.Records) == 0 {
			t.Fatalf("archive = %+v; file %d lines, %v", res, len(lines), rerr)
		}
		if n := depth(t, "work"); n != 0 {
			t.Fatalf("work holds %d after archive --delete", n)
		}
		_, errOut, err = run(t, "no\n", "dlq", "purge", "replayed")
		if err == nil || !strings.Contains(errOut, "DELETE all 3 messages") || depth(t, "replayed") != 3 {
			t.Fatalf("purge without confirmation: %v\n%s", err, errOut)
		}
		out, errOut, err = run(t, "", "dlq", "purge", "replayed", "--yes")
		if err != nil || !strings.Contains(out, "purged 3") || depth(t, "replayed") != 0 {
			t.Fatalf("purge: %v\n%s%s", err, out, errOut)
		}
	})
}

// The purge case of issue 13, as an operator meets it: `runnel dlq purge`
// and `runnel dlq redrive` run with --nats-url against a running serve act
// on the queues that serve delivers from. (Before the queues had one
// serving process, the CLI purged a copy of the index of its own: the
// serve went on counting and delivering all five messages.)
func TestDLQCommandsAgainstARunningServeActOnItsQueues(t *testing.T) {
	serve := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	dlqCommandsActOnTheQueues(t, serve.Engine.ClientURL(), serve.Queues)
}

// The same against a running 3-node cluster: the CLI connects to one
// node, the queues are watched through another, whichever node serves
// them. It starts a cluster (20 to 60 s here), so it runs only with
// RUNNEL_CLUSTER_TESTS=1.
func TestDLQCommandsAgainstARunningClusterActOnItsQueues(t *testing.T) {
	if os.Getenv("RUNNEL_CLUSTER_TESTS") == "" {
		t.Skip("set RUNNEL_CLUSTER_TESTS=1: starts a 3-node cluster")
	}
	nodes := testenv.Cluster(t, 3)
	dlqCommandsActOnTheQueues(t, nodes[0].Engine.ClientURL(), nodes[1].Queues)
}

// dlqCommandsActOnTheQueues runs `runnel dlq purge` and `runnel dlq
// redrive` with --nats-url url, and checks through q (a service of a
// running process) that they acted on the queues it delivers from.
func dlqCommandsActOnTheQueues(t *testing.T, url string, q *queue.Service) {
	bin := runnelBinary(t)
	ctx := context.Background()
	dlq, err := q.CreateQueue(ctx, "jobs-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	src, err := q.CreateQueue(ctx, "jobs", map[string]string{
		queue.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":5}`, q.ARN("jobs-dlq"))})
	if err != nil {
		t.Fatal(err)
	}
	cli := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"--nats-url", url}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("runnel %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	counts := func(url string) string {
		t.Helper()
		a, err := q.GetQueueAttributes(ctx, url, []string{queue.AttrAll})
		if err != nil {
			t.Fatal(err)
		}
		return a["ApproximateNumberOfMessages"] + "/" + a["ApproximateNumberOfMessagesNotVisible"]
	}
	receive := func(url string) []queue.Message {
		t.Helper()
		ms, err := q.ReceiveMessage(ctx, url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, WaitTimeSeconds: new(int)})
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}

	for i := range 5 {
		if _, err := q.SendMessage(ctx, dlq, queue.SendMessageInput{MessageBody: fmt.Sprintf("poison-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if out := cli("dlq", "purge", "jobs-dlq", "--yes"); !strings.Contains(out, "purged 5 messages") {
		t.Fatalf("dlq purge printed %q", out)
	}
	if c := counts(dlq); c != "0/0" {
		t.Errorf("serve counts %s (visible/in flight) in jobs-dlq after the CLI's purge, want 0/0", c)
	}
	if ms := receive(dlq); len(ms) != 0 {
		t.Errorf("serve delivered %d purged messages", len(ms))
	}

	// Three messages dead-lettered by the serve, redriven by the CLI.
	for i := range 3 {
		if _, err := q.SendMessage(ctx, src, queue.SendMessageInput{MessageBody: fmt.Sprintf("job-%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, m := range receive(src) {
		if err := q.MoveToDeadLetterQueue(ctx, src, m.ReceiptHandle); err != nil {
			t.Fatal(err)
		}
	}
	if c := counts(dlq); c != "3/0" {
		t.Fatalf("jobs-dlq holds %s before the redrive, want 3/0", c)
	}
	if out := cli("dlq", "redrive", "jobs-dlq", "--yes"); !strings.Contains(out, "moved 3 of 3") {
		t.Fatalf("dlq redrive printed %q", out)
	}
	if c := counts(dlq); c != "0/0" {
		t.Errorf("serve counts %s in jobs-dlq after the CLI's redrive, want 0/0", c)
	}
	if ms := receive(src); len(ms) != 3 {
		t.Errorf("serve delivered %d redriven messages from jobs, want 3", len(ms))
	}
}
