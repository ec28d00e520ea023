//go:build lambda.norpc

// Command poison is a test function of package awsapi: an aws-lambda-go
// custom runtime for stream and queue event source mappings. A record whose
// data holds "poison" is reported in batchItemFailures; one holding "boom"
// fails the whole invocation; the others are appended, one per line, to the
// file named by $OUT_FILE. Any other event is echoed back.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
)

func record(data string) {
	f, err := os.OpenFile(os.Getenv("OUT_FILE"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	f.WriteString(data + "\n")
}

func handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	json.Unmarshal(raw, &probe)
	if len(probe.Records) == 0 {
		return raw, nil
	}
	var resp events.KinesisEventResponse
	if probe.Records[0].EventSource == "aws:sqs" {
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, err
		}
		for _, m := range ev.Records {
			switch {
			case strings.Contains(m.Body, "boom"):
				return nil, errors.New("boom in " + m.MessageId)
			case strings.Contains(m.Body, "poison"):
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: m.MessageId})
			default:
				record(m.Body)
			}
		}
		return resp, nil
	}
	var ev events.KinesisEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	for _, r := range ev.Records {
		data := string(r.Kinesis.Data)
		switch {
		case strings.Contains(data, "boom"):
			return nil, errors.New("boom at " + r.Kinesis.SequenceNumber)
		case strings.Contains(data, "poison"):
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.KinesisBatchItemFailure{ItemIdentifier: r.Kinesis.SequenceNumber})
		default:
			record(data)
		}
	}
	return resp, nil
}

func main() { lambda.Start(handle) }
