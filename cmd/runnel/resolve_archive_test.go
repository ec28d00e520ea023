package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestResolveReadsEveryLineOfADLQArchive: `runnel dlq archive` writes
// JSON Lines, one message a line, and `runnel resolve` of that file
// resolves every line (each body a KinesisBatchInfo pointer, Lambda's
// on-failure record: "Event source mappings ... on-failure destination",
// KinesisBatchInfo), into the records the function was sent: each with the
// awsRegion and invokeIdentityArn the mapping put in them (Lambda's Kinesis
// event, "Using Lambda with Kinesis": "awsRegion": "us-east-2",
// "invokeIdentityArn": "arn:aws:iam::123456789012:role/lambda-role"). It
// read the file as one JSON value, so an archive of more than one message
// failed, and its records had "awsRegion": "" and "invokeIdentityArn": "".
func TestResolveReadsEveryLineOfADLQArchive(t *testing.T) {
	dir, seqs, _ := recoverySetup(t)
	file := filepath.Join(t.TempDir(), "work-dlq.jsonl")
	if _, _, err := runCLI(t, "", "--data-dir", dir, "dlq", "archive", "work-dlq", "--out", file, "--yes"); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := runCLI(t, "", "--data-dir", dir, "resolve", file)
	if err != nil {
		t.Fatalf("resolve of a 3-line archive: %v\n%s", err, errOut)
	}
	dec := json.NewDecoder(strings.NewReader(out))
	var got []string
	for dec.More() {
		var ev events.KinesisEvent
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		for _, r := range ev.Records {
			got = append(got, r.Kinesis.SequenceNumber)
			if r.AwsRegion != "us-east-1" || r.InvokeIdentityArn != "arn:aws:iam::000000000000:role/runnel-event-source-mapping" {
				t.Errorf("record %s: awsRegion %q, invokeIdentityArn %q; want the mapping's us-east-1 and arn:aws:iam::000000000000:role/runnel-event-source-mapping",
					r.Kinesis.SequenceNumber, r.AwsRegion, r.InvokeIdentityArn)
			}
		}
	}
	if strings.Join(got, ",") != strings.Join(seqs, ",") {
		t.Fatalf("resolved records %v, want the 6 records of the 3 pointers %v (stderr: %s)", got, seqs, errOut)
	}

	// A line that is no failure record is named; the others still resolve.
	_, errOut, err = runCLI(t, "{\"body\":\"not a failure record\"}\n"+firstLine(t, file), "--data-dir", dir, "resolve")
	if err == nil || !strings.Contains(err.Error(), "1 of 2 records could not be resolved") || !strings.Contains(errOut, "record 1: ") ||
		!strings.Contains(errOut, "record 2: stream-batch failure record") {
		t.Fatalf("resolve of a bad line and a good one: %v\n%s", err, errOut)
	}
}

func firstLine(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return line + "\n"
}
