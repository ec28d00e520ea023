package main

import (
	"archive/zip"
	"bytes"
	"context"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
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
	err := root.ExecuteContext(context.Background())
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
