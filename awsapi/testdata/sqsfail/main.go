//go:build lambda.norpc

// Command sqsfail is a test function of package awsapi: an aws-lambda-go
// custom runtime for a queue (SQS) event source mapping with
// ReportBatchItemFailures. Every message it is given is appended to the
// file named by $OUT_FILE as "<ok|fail> <body> <ApproximateReceiveCount>";
// a message whose body holds "fail" is returned in the batchItemFailures
// of its events.SQSEventResponse, the others succeed.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	f, err := os.OpenFile(os.Getenv("OUT_FILE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return events.SQSEventResponse{}, err
	}
	defer f.Close()
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	var log strings.Builder
	for _, m := range ev.Records {
		outcome := "ok"
		if strings.Contains(m.Body, "fail") {
			outcome = "fail"
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
		}
		fmt.Fprintf(&log, "%s %s %s\n", outcome, m.Body, m.Attributes["ApproximateReceiveCount"])
	}
	// One write per invocation, so that the test never reads half a batch.
	if _, err := f.WriteString(log.String()); err != nil {
		return events.SQSEventResponse{}, err
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
