package main

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// runCLI runs the runnel command line args (global flags included)
// through the cobra root, as the binary does, with stdin; it returns the
// standard output and error and the command's error.
func runCLI(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	root := newRoot(&globals{})
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(stdin))
	// Bounded: a serve whose bad flag is not refused stops at the deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

// bootstrapZip is a provided-runtime deployment package: a bootstrap
// shell script (never run by these tests).
func bootstrapZip(t *testing.T) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	h := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	h.SetMode(0o755)
	w, err := zw.CreateHeader(h)
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("#!/bin/sh\nexit 1\n"))
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// replayTargetData writes a data directory with a stream "rs" holding one
// record (its sequence number returned) and a process function "pf"
// created through the Lambda API (runtime provided.al2023), and a function "logf" of the built-in handler
// "log".
func replayTargetData(t *testing.T) (dir, seq string) {
	t.Helper()
	dir = t.TempDir()
	// A registry of its own, as another process would have: the CLI's
	// (the default one) does not get the process function's handler.
	reg := function.NewRegistry()
	if err := reg.Register("log", func(context.Context, []byte) error { return nil }); err != nil {
		t.Fatal(err)
	}
	rn := testenv.Start(t, testenv.Options{Dir: dir, Registry: reg})
	ctx := context.Background()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "rs", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	out, err := rn.Streams.PutRecords(ctx, "rs", []stream.PutRecordsRequestEntry{{PartitionKey: "k", Data: []byte("r0")}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "logf", Handler: "log"}); err != nil {
		t.Fatal(err)
	}
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(ep)
	lc := lambda.NewFromConfig(aws.Config{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
	if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pf"), Runtime: ltypes.RuntimeProvidedal2023,
		Handler: aws.String("bootstrap"), Role: aws.String("arn:aws:iam::000000000000:role/r"),
		Code: &ltypes.FunctionCode{ZipFile: bootstrapZip(t)}}); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	ep.Close()
	rn.Close()
	return dir, out.Records[0].SequenceNumber
}

// replay --to-function refuses, before printing its plan, a function it
// cannot invoke: a process function created with the Lambda API (only
// serve runs those) and a function that does not exist; the error names
// the flag and the functions that are replay targets.
func TestReplayToFunctionRefusesWhatItCannotInvokeBeforeThePlan(t *testing.T) {
	dir, seq := replayTargetData(t)
	for _, tt := range []struct{ fn, want string }{
		{"pf", "process function of the Lambda API"},
		{"nosuch", "ResourceNotFoundException"},
	} {
		out, errOut, err := runCLI(t, "", "--data-dir", dir, "replay", "--stream", "rs", "--from-seq", seq, "--to-seq", seq, "--to-function", tt.fn, "--yes")
		if err == nil || !strings.Contains(err.Error(), "--to-function") || !strings.Contains(err.Error(), tt.want) ||
			!strings.Contains(err.Error(), "fail-on-poison") {
			t.Errorf("replay --to-function %s: %v; want an error naming --to-function, %q and the built-in handlers", tt.fn, err, tt.want)
		}
		if strings.Contains(errOut, "replay: put") || strings.Contains(out, "replayed") {
			t.Errorf("replay --to-function %s printed the plan or a result:\n%s%s", tt.fn, errOut, out)
		}
	}
	// A function of a built-in handler is still a target.
	out, errOut, err := runCLI(t, "", "--data-dir", dir, "replay", "--stream", "rs", "--from-seq", seq, "--to-seq", seq, "--to-function", "logf", "--yes")
	if err != nil || !strings.Contains(out, "replayed 1 records") {
		t.Errorf("replay --to-function logf: %v\n%s%s", err, errOut, out)
	}
}

// dlqData writes a data directory with a queue "arch-dlq" of n messages
// and a stream "orders" of 3 records.
func dlqData(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	ctx := context.Background()
	url, err := rn.Queues.CreateQueue(ctx, "arch-dlq", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := rn.Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: fmt.Sprintf("m%d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "orders", ShardCount: 1}); err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if _, err := rn.Streams.PutRecords(ctx, "orders", []stream.PutRecordsRequestEntry{{PartitionKey: "k", Data: fmt.Appendf(nil, "o%d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	rn.Close()
	return dir
}

// visible is the number of visible messages of queue name in dir.
func visible(t *testing.T, dir, name string) int {
	t.Helper()
	out, errOut, err := runCLI(t, "", "--data-dir", dir, "dlq", "list", "--all", "--no-age", "--json")
	if err != nil {
		t.Fatalf("dlq list: %v\n%s", err, errOut)
	}
	var qs []recovery.QueueSummary
	if err := json.Unmarshal([]byte(out), &qs); err != nil {
		t.Fatalf("dlq list: %v\n%s", err, out)
	}
	for _, q := range qs {
		if q.Name == name {
			return q.Visible
		}
	}
	t.Fatalf("no queue %s in %s", name, out)
	return 0
}

// dlq archive --limit N asks to confirm deleting min(N, visible) messages,
// the ones it archives and deletes, not every visible one.
func TestDLQArchivePlanSaysTheLimitNotEveryMessage(t *testing.T) {
	dir := dlqData(t, 5)
	out1 := filepath.Join(t.TempDir(), "a1.jsonl")
	_, errOut, err := runCLI(t, "n\n", "--data-dir", dir, "dlq", "archive", "arch-dlq", "--out", out1, "--delete", "--limit", "2")
	if err == nil || !strings.Contains(errOut, "write 2 of the 5 visible messages of arch-dlq (--limit) to "+out1+", then DELETE those 2 from the queue") {
		t.Fatalf("declined archive --limit 2 --delete: %v; plan:\n%s", err, errOut)
	}
	if n := visible(t, dir, "arch-dlq"); n != 5 {
		t.Fatalf("declined: %d visible, want 5", n)
	}
	out, errOut, err := runCLI(t, "", "--data-dir", dir, "dlq", "archive", "arch-dlq", "--out", out1, "--delete", "--limit", "2", "--yes")
	if err != nil || !strings.Contains(errOut, "write 2 of the 5 visible messages") || !strings.Contains(out, "archived 2 messages") || !strings.Contains(out, "deleted 2") {
		t.Fatalf("archive --limit 2 --delete --yes: %v\n%s%s", err, errOut, out)
	}
	if n := visible(t, dir, "arch-dlq"); n != 3 {
		t.Fatalf("after archive --limit 2 --delete: %d visible, want 3", n)
	}
	// A limit above the depth: the plan says the depth.
	out2 := filepath.Join(t.TempDir(), "a2.jsonl")
	_, errOut, err = runCLI(t, "", "--data-dir", dir, "dlq", "archive", "arch-dlq", "--out", out2, "--delete", "--limit", "10", "--yes")
	if err != nil || !strings.Contains(errOut, "write the 3 visible messages of arch-dlq to "+out2+", then DELETE those 3 from the queue") {
		t.Fatalf("archive --limit 10 --delete: %v\n%s", err, errOut)
	}
}

// A numeric flag outside its range is refused before the command runs,
// naming the flag and the range; nothing is created, read or archived.
func TestCLIRefusesOutOfRangeFlags(t *testing.T) {
	dir := dlqData(t, 2)
	archive := filepath.Join(t.TempDir(), "x.jsonl")
	for _, tt := range []struct {
		args []string
		flag string
		want string
	}{
		{[]string{"streams", "create", "x1", "--shards", "0"}, "--shards", "between 1 and 1024"},
		{[]string{"streams", "create", "x1", "--shards", "100000"}, "--shards", "between 1 and 1024"},
		{[]string{"streams", "create", "x1", "--retention-hours", "5"}, "--retention-hours", "between 24 and 8760"},
		{[]string{"get", "--stream", "orders", "--limit", "0"}, "--limit", "between 1 and 10000"},
		{[]string{"get", "--stream", "orders", "--limit", "10001"}, "--limit", "between 1 and 10000"},
		{[]string{"dlq", "show", "arch-dlq", "--limit", "-1"}, "--limit", "at least 1"},
		{[]string{"dlq", "show", "arch-dlq", "--limit", "0"}, "--limit", "at least 1"},
		{[]string{"dlq", "show", "arch-dlq", "--scan", "0"}, "--scan", "at least 1"},
		{[]string{"dlq", "archive", "arch-dlq", "--out", archive, "--limit", "-3", "--yes"}, "--limit", "at least 0"},
		{[]string{"dlq", "redrive", "arch-dlq", "--to", "x", "--rate", "0", "--yes"}, "--rate", "between 1 and 500"},
		{[]string{"dlq", "redrive", "arch-dlq", "--to", "x", "--rate", "501", "--yes"}, "--rate", "between 1 and 500"},
		{[]string{"replay", "--stream", "orders", "--from-seq", "1", "--to-seq", "2", "--to-stream", "x", "--batch-size", "0"}, "--batch-size", "at least 1"},
		{[]string{"replay", "--stream", "orders", "--from-seq", "1", "--to-seq", "2", "--to-stream", "x", "--batch-size", "501"}, "--batch-size", "between 1 and 500"},
		{[]string{"replay", "--stream", "orders", "--from-seq", "1", "--to-seq", "2", "--to-function", "x", "--batch-size", "10001"}, "--batch-size", "between 1 and 10000"},
		{[]string{"replay", "--stream", "orders", "--from-seq", "1", "--to-seq", "2", "--to-queue", "x", "--batch-size", "5"}, "--batch-size", "batches of 10"},
		{[]string{"logs", "f", "--since", "-1m"}, "--since", "at least 0s"},
		{[]string{"logs", "f", "--interval", "0s"}, "--interval", "at least 1ms"},
		{[]string{"status", "--alarm-error-rate", "0"}, "--alarm-error-rate", "between 0 and 1"},
		{[]string{"status", "--alarm-iterator-age", "0s"}, "--alarm-iterator-age", "at least 1ms"},
		{[]string{"status", "--alarm-dlq-depth", "-1"}, "--alarm-dlq-depth", "at least 0"},
		{[]string{"status", "--alarm-throttles", "-1"}, "--alarm-throttles", "at least 0"},
		{[]string{"serve", "--replicas", "0", "--aws", ""}, "--replicas", "between 1 and 5"},
		{[]string{"serve", "--status-every", "-1s", "--aws", ""}, "--status-every", "at least 0s"},
		{[]string{"serve", "--alarm-interval", "0s", "--aws", ""}, "--alarm-interval", "at least 1ms"},
		{[]string{"demo", "--shards", "0"}, "--shards", "between 1 and 1024"},
		{[]string{"demo", "--batch-size", "0"}, "--batch-size", "between 1 and 10000"},
		{[]string{"demo", "--parallelization-factor", "0"}, "--parallelization-factor", "between 1 and 10"},
		{[]string{"demo", "--maximum-retry-attempts", "-1"}, "--maximum-retry-attempts", "between 0 and 10000"},
		{[]string{"demo", "--retry-attempts", "0"}, "--retry-attempts", "at least 1"},
		{[]string{"demo", "--failure-rate", "1.5"}, "--failure-rate", "at most 0.3"},
		{[]string{"demo", "--records", "-5"}, "--records", "at least 0"},
		{[]string{"demo", "--kill-node-at", "2"}, "--kill-node-at", "between 0 and 1"},
		{[]string{"demo", "trades", "--messages", "0"}, "--messages", "at least 1"},
		{[]string{"demo", "trades", "--shards", "0"}, "--shards", "between 1 and 1024"},
		{[]string{"demo", "trades", "--state-shards", "0"}, "--state-shards", "between 1 and 1024"},
		{[]string{"demo", "trades", "--crash-at", "1.5"}, "--crash-at", "between 0 and 1"},
		{[]string{"demo", "fanout", "--events", "0"}, "--events", "at least 1"},
		{[]string{"demo", "fanout", "--fail-for", "0s"}, "--fail-for", "at least 1ms"},
		{[]string{"bench", "--records", "0"}, "--records", "at least 1"},
		{[]string{"bench", "--shards", "0"}, "--shards", "between 1 and 1024"},
		{[]string{"bench", "endpoint", "--record-size", "5"}, "--record-size", "at least 10"},
		{[]string{"bench", "functions", "--cold", "0"}, "--cold", "at least 1"},
		{[]string{"bench", "tables", "--partition-items", "0"}, "--partition-items", "between 1 and 1000"},
	} {
		out, errOut, err := runCLI(t, "", append([]string{"--data-dir", dir}, tt.args...)...)
		if err == nil || !strings.Contains(err.Error(), tt.flag) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("runnel %s: %v; want an error naming %s and %q", strings.Join(tt.args, " "), err, tt.flag, tt.want)
		}
		if out != "" || errOut != "" {
			t.Errorf("runnel %s printed:\n%s%s", strings.Join(tt.args, " "), out, errOut)
		}
	}
	if out, _, err := runCLI(t, "", "--data-dir", dir, "streams", "list"); err != nil || strings.Contains(out, "x1") {
		t.Errorf("streams list after refused creates: %v\n%s", err, out)
	}
	if _, err := os.Stat(archive); !os.IsNotExist(err) {
		t.Errorf("archive --limit -3 wrote %s: %v", archive, err)
	}
	if n := visible(t, dir, "arch-dlq"); n != 2 {
		t.Errorf("%d visible after refused commands, want 2", n)
	}
}

// serve --help and its --aws flag name every API the endpoint serves
// (awsapi.Services), not only Kinesis and SQS.
func TestServeHelpNamesEveryAPIServed(t *testing.T) {
	out, _, err := runCLI(t, "", "serve", "--help")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(out), " ")
	long, flag, ok := strings.Cut(text, "--aws string")
	if !ok {
		t.Fatalf("no --aws flag in serve --help:\n%s", out)
	}
	flag, _, _ = strings.Cut(flag, "--")
	for _, s := range awsapi.Services {
		if !strings.Contains(long, string(s)) {
			t.Errorf("serve --help does not name %s", s)
		}
		if !strings.Contains(flag, string(s)) {
			t.Errorf("serve's --aws flag does not name %s: %s", s, flag)
		}
	}
}

// demo --poison 0 (--flaky 0, --failure-rate 0) injects none, as "0 or
// negative: none" says; before, 0 was the library's "default" and the run
// had the 10 poison records, 20 flaky ones and 2% failures of the default.
func TestDemoZeroFailuresMeansNone(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	res := filepath.Join(t.TempDir(), "res.json")
	_, errOut, err := runCLI(t, "", "--data-dir", t.TempDir(), "demo", "--records", "2000", "--poison", "0", "--flaky", "0", "--failure-rate", "0", "-q", "--json", res)
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, errOut)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		RecordsIn      int64 `json:"records_in"`
		FailedInvokes  int64 `json:"failed_invocations"`
		PoisonInjected int   `json:"poison_injected"`
		FlakyInjected  int   `json:"flaky_injected"`
		Unrecoverable  int64 `json:"unrecoverable"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.RecordsIn != 2000 || r.PoisonInjected != 0 || r.FlakyInjected != 0 || r.FailedInvokes != 0 || r.Unrecoverable != 0 {
		t.Fatalf("demo --poison 0 --flaky 0 --failure-rate 0: %s", b)
	}
}
