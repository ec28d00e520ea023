// Command fn is the function of `runnel demo --external`: an unmodified
// aws-lambda-go custom runtime (build it with -tags lambda.norpc and ship
// it as bootstrap in a zip, Runtime provided.al2023) for a Kinesis event
// source mapping. It computes per-airport statistics over a batch of
// flight records and stores the batch's result, the records' shard and
// sequence numbers with the statistics, as one message in the SQS queue
// named by $RESULTS_QUEUE_URL, with the aws-sdk-go-v2 SQS client on
// $AWS_ENDPOINT_URL, before it returns success: a success means the result
// is stored; a failure to store fails the batch, which is then retried. A
// batch holding a poison record fails, so bisect isolates the record and
// the mapping sends it to its on-failure destination.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runnel-dev/runnel/demo/flights"
)

// Result is one message of the results queue: a successful batch.
type Result struct {
	// Seqs holds the batch's sequence numbers by shard id.
	Seqs  map[string][]string `json:"seqs"`
	Stats *flights.Stats      `json:"stats"`
}

var (
	client   *sqs.Client
	queueURL = os.Getenv("RESULTS_QUEUE_URL")
)

func handle(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	res := Result{Seqs: map[string][]string{}, Stats: flights.NewStats()}
	if err := flights.EachKinesisFlight(ev, func(shard string, r events.KinesisEventRecord, f flights.Flight) {
		res.Stats.Add(f)
		res.Seqs[shard] = append(res.Seqs[shard], r.Kinesis.SequenceNumber)
	}); err != nil {
		return events.KinesisEventResponse{}, err
	}
	body, err := json.Marshal(res)
	if err != nil {
		return events.KinesisEventResponse{}, err
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(string(body))}); err != nil {
		return events.KinesisEventResponse{}, fmt.Errorf("storing the batch result: %w", err)
	}
	return events.KinesisEventResponse{}, nil
}

func main() {
	region := os.Getenv("AWS_REGION")
	if region == "" {
		region = "us-east-1"
	}
	key, secret := os.Getenv("AWS_ACCESS_KEY_ID"), os.Getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		key, secret = "runnel", "runnel" // runnel accepts any credentials
	}
	cfg := aws.Config{HTTPClient: sdkhttp.Client(),
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider(key, secret, os.Getenv("AWS_SESSION_TOKEN")),
	}
	if ep := os.Getenv("AWS_ENDPOINT_URL"); ep != "" {
		cfg.BaseEndpoint = aws.String(ep)
	}
	client = sqs.NewFromConfig(cfg)
	lambda.Start(handle)
}
