package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/batch"
)

var errBad = errors.New("bad record")

// Events in the JSON Lambda sends (SPEC §1.4, §2.3, §5).
const kinesisEvent = `{"Records":[
 {"kinesis":{"kinesisSchemaVersion":"1.0","partitionKey":"1","sequenceNumber":"101","data":"YQ==","approximateArrivalTimestamp":1545084650.987},
  "eventSource":"aws:kinesis","eventVersion":"1.0","eventID":"shardId-000000000006:101","eventName":"aws:kinesis:record",
  "invokeIdentityArn":"arn:aws:iam::123456789012:role/lambda-role","awsRegion":"us-east-2","eventSourceARN":"arn:aws:kinesis:us-east-2:123456789012:stream/s"},
 {"kinesis":{"partitionKey":"1","sequenceNumber":"102","data":"Yg=="},"eventSource":"aws:kinesis","eventID":"shardId-000000000006:102"},
 {"kinesis":{"partitionKey":"1","sequenceNumber":"103","data":"Yw=="},"eventSource":"aws:kinesis","eventID":"shardId-000000000006:103"},
 {"kinesis":{"partitionKey":"1","sequenceNumber":"104","data":"ZA=="},"eventSource":"aws:kinesis","eventID":"shardId-000000000006:104"}]}`

const dynamodbEvent = `{"Records":[
 {"eventID":"1","eventName":"INSERT","eventVersion":"1.1","eventSource":"aws:dynamodb","awsRegion":"us-east-2",
  "dynamodb":{"ApproximateCreationDateTime":1479499740,"Keys":{"Id":{"N":"101"}},"NewImage":{"Id":{"N":"101"},"Message":{"S":"a"}},
   "SequenceNumber":"111","SizeBytes":26,"StreamViewType":"NEW_AND_OLD_IMAGES"},
  "eventSourceARN":"arn:aws:dynamodb:us-east-2:123456789012:table/T/stream/2015-06-27T00:48:05.899"},
 {"eventID":"2","eventName":"MODIFY","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"Id":{"N":"101"}},"NewImage":{"Id":{"N":"101"},"Message":{"S":"b"}},"SequenceNumber":"222"}},
 {"eventID":"3","eventName":"REMOVE","eventSource":"aws:dynamodb","dynamodb":{"Keys":{"Id":{"N":"101"}},"OldImage":{"Id":{"N":"101"},"Message":{"S":"b"}},"SequenceNumber":"333"}}]}`

func decode[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sqsEvent builds an SQS event: one message per body, id "m-<body>",
// group = the body's first letter on a FIFO queue.
func sqsEvent(fifo bool, bodies ...string) events.SQSEvent {
	arn := "arn:aws:sqs:us-east-2:123456789012:q"
	if fifo {
		arn += ".fifo"
	}
	var ev events.SQSEvent
	for _, b := range bodies {
		m := events.SQSMessage{MessageId: "m-" + b, Body: b, EventSource: "aws:sqs", EventSourceARN: arn,
			Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
		if fifo {
			m.Attributes["MessageGroupId"] = b[:1]
		}
		ev.Records = append(ev.Records, m)
	}
	return ev
}

func kinesisIDs(r events.KinesisEventResponse) []string {
	out := []string{}
	for _, f := range r.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func sqsIDs(r events.SQSEventResponse) []string {
	out := []string{}
	for _, f := range r.BatchItemFailures {
		out = append(out, f.ItemIdentifier)
	}
	return out
}

func TestKinesis(t *testing.T) {
	ev := decode[events.KinesisEvent](t, kinesisEvent)
	cases := []struct {
		name   string
		fail   string // data of failing records
		opts   []batch.Option
		ran    string
		failed []string
		entire bool
	}{
		{"all succeed: an empty list", "", nil, "abcd", []string{}, false},
		{"a failure is reported by sequence number and the rest runs", "b", nil, "abcd", []string{"102"}, false},
		{"StopOnFirstFailure reports the rest without running it", "b", []batch.Option{batch.StopOnFirstFailure()}, "ab", []string{"102", "103", "104"}, false},
		{"all failed: an error for the whole invocation", "abcd", nil, "abcd", []string{"101", "102", "103", "104"}, true},
		{"stopped at the first record counts as all failed", "a", []batch.Option{batch.StopOnFirstFailure()}, "a", []string{"101", "102", "103", "104"}, true},
		{"EntireBatchError(false) returns the list instead", "abcd", []batch.Option{batch.EntireBatchError(false)}, "abcd", []string{"101", "102", "103", "104"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ran := ""
			resp, err := batch.ProcessKinesis(context.Background(), ev, func(ctx context.Context, r events.KinesisEventRecord) error {
				d := string(r.Kinesis.Data)
				ran += d
				for _, f := range c.fail {
					if string(f) == d {
						return errBad
					}
				}
				return nil
			}, c.opts...)
			if ran != c.ran || !reflect.DeepEqual(kinesisIDs(resp), c.failed) {
				t.Fatalf("ran %q, failed %v; want %q, %v", ran, kinesisIDs(resp), c.ran, c.failed)
			}
			if c.entire != (err != nil) || (err != nil && (!errors.Is(err, batch.ErrEntireBatchFailed) || !errors.Is(err, errBad))) {
				t.Fatalf("err = %v, want entire-batch failure %v", err, c.entire)
			}
		})
	}
}

func TestSQS(t *testing.T) {
	cases := []struct {
		name   string
		fifo   bool
		bodies []string
		fail   string
		opts   []batch.Option
		ran    []string
		failed []string
	}{
		{"standard: each failure reported, the rest runs", false, []string{"a1", "b1", "a2", "c1"}, "b1 a2", nil,
			[]string{"a1", "b1", "a2", "c1"}, []string{"m-b1", "m-a2"}},
		{"standard ignores StopOnFirstFailure", false, []string{"a1", "b1", "c1"}, "b1", []batch.Option{batch.StopOnFirstFailure()},
			[]string{"a1", "b1", "c1"}, []string{"m-b1"}},
		{"FIFO: the first failure stops the batch", true, []string{"a1", "b1", "a2", "c1"}, "b1", nil,
			[]string{"a1", "b1"}, []string{"m-b1", "m-a2", "m-c1"}},
		{"FIFO SkipGroupOnError: only the failed group is skipped", true, []string{"a1", "b1", "a2", "b2", "c1", "b3"}, "b1", []batch.Option{batch.SkipGroupOnError()},
			[]string{"a1", "b1", "a2", "c1"}, []string{"m-b1", "m-b2", "m-b3"}},
		{"FIFO SkipGroupOnError: two failed groups", true, []string{"a1", "b1", "a2", "b2", "c1"}, "a1 c1", []batch.Option{batch.SkipGroupOnError()},
			[]string{"a1", "b1", "b2", "c1"}, []string{"m-a1", "m-a2", "m-c1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var ran []string
			resp, err := batch.ProcessSQS(context.Background(), sqsEvent(c.fifo, c.bodies...), func(ctx context.Context, m events.SQSMessage) error {
				ran = append(ran, m.Body)
				if contains(c.fail, m.Body) {
					return errBad
				}
				return nil
			}, c.opts...)
			if err != nil || !reflect.DeepEqual(ran, c.ran) || !reflect.DeepEqual(sqsIDs(resp), c.failed) {
				t.Fatalf("ran %v, failed %v, err %v; want %v, %v", ran, sqsIDs(resp), err, c.ran, c.failed)
			}
		})
	}
	t.Run("FIFO: a failed first message fails the whole invocation", func(t *testing.T) {
		resp, err := batch.ProcessSQS(context.Background(), sqsEvent(true, "a1", "b1"), func(ctx context.Context, m events.SQSMessage) error { return errBad })
		if !errors.Is(err, batch.ErrEntireBatchFailed) || !errors.Is(err, batch.ErrNotProcessed) || len(resp.BatchItemFailures) != 2 {
			t.Fatalf("resp %v, err %v", resp, err)
		}
	})
}

func contains(list, s string) bool { return slices.Contains(strings.Fields(list), s) }

func TestDynamoDB(t *testing.T) {
	ev := decode[events.DynamoDBEvent](t, dynamodbEvent)
	var names []string
	resp, err := batch.ProcessDynamoDB(context.Background(), ev, func(ctx context.Context, r events.DynamoDBEventRecord) error {
		names = append(names, r.EventName)
		if r.EventName == "MODIFY" {
			return errBad
		}
		return nil
	}, batch.StopOnFirstFailure())
	if err != nil || !reflect.DeepEqual(names, []string{"INSERT", "MODIFY"}) {
		t.Fatalf("ran %v, err %v", names, err)
	}
	b, _ := json.Marshal(resp)
	if string(b) != `{"batchItemFailures":[{"itemIdentifier":"222"},{"itemIdentifier":"333"}]}` {
		t.Fatalf("response %s", b)
	}
}

func TestResponseJSON(t *testing.T) {
	// Success is an empty list, which Lambda reads as "all succeeded".
	resp, err := batch.KinesisHandler(func(context.Context, events.KinesisEventRecord) error { return nil })(context.Background(), events.KinesisEvent{})
	b, _ := json.Marshal(resp)
	if err != nil || string(b) != `{"batchItemFailures":[]}` {
		t.Fatalf("empty event: %s, %v", b, err)
	}
}

func TestPanicFailsOnlyItsRecord(t *testing.T) {
	resp, err := batch.SQSHandler(func(ctx context.Context, m events.SQSMessage) error {
		if m.Body == "b" {
			panic("boom")
		}
		return nil
	})(context.Background(), sqsEvent(false, "a", "b", "c"))
	if err != nil || !reflect.DeepEqual(sqsIDs(resp), []string{"m-b"}) {
		t.Fatalf("resp %v, err %v", resp, err)
	}
	_, err = batch.ProcessSQS(context.Background(), sqsEvent(false, "b"), func(context.Context, events.SQSMessage) error { panic("boom") })
	if !errors.Is(err, batch.ErrRecordPanicked) {
		t.Fatalf("err %v, want ErrRecordPanicked", err)
	}
}

func TestDoneContextStopsTheBatch(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ran []string
	resp, err := batch.ProcessSQS(ctx, sqsEvent(false, "a", "b", "c"), func(ctx context.Context, m events.SQSMessage) error {
		ran = append(ran, m.Body)
		cancel()
		return nil
	})
	if err != nil || !reflect.DeepEqual(ran, []string{"a"}) || !reflect.DeepEqual(sqsIDs(resp), []string{"m-b", "m-c"}) {
		t.Fatalf("ran %v, resp %v, err %v", ran, resp, err)
	}
}
