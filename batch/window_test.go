package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/batch"
)

func TestAggregateKinesis(t *testing.T) {
	type sums struct {
		N   int            `json:"n"`
		Per map[string]int `json:"per,omitempty"`
	}
	var emitted []sums
	h := batch.AggregateKinesis(
		func(ctx context.Context, s sums, r events.KinesisEventRecord) (sums, error) {
			if string(r.Kinesis.Data) == "bad" {
				return s, errors.New("bad record")
			}
			if s.Per == nil {
				s.Per = map[string]int{}
			}
			s.N++
			s.Per[r.Kinesis.PartitionKey]++
			return s, nil
		},
		func(ctx context.Context, w events.Window, s sums) error {
			emitted = append(emitted, s)
			return nil
		})
	decode := func(js string) batch.KinesisWindowEvent[sums] {
		var ev batch.KinesisWindowEvent[sums]
		if err := json.Unmarshal([]byte(js), &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	rec := func(pk, data string) string {
		b, _ := json.Marshal(events.KinesisEventRecord{Kinesis: events.KinesisRecord{PartitionKey: pk, Data: []byte(data)}})
		return string(b)
	}
	window := `"window":{"start":"2020-12-09T07:04:00Z","end":"2020-12-09T07:06:00Z"}`

	// The first invocation of a window: state {} is the zero state.
	resp, err := h(context.Background(), decode(`{"Records":[`+rec("a", "1")+`,`+rec("b", "2")+`],`+window+`,"state":{}}`))
	if err != nil || resp.State.N != 2 || resp.State.Per["a"] != 1 || len(emitted) != 0 {
		t.Fatalf("first invocation: %+v %v, emitted %v", resp, err, emitted)
	}
	out, _ := json.Marshal(resp)
	if string(out) != `{"state":{"n":2,"per":{"a":1,"b":1}},"batchItemFailures":[]}` {
		t.Fatalf("response JSON = %s", out)
	}
	// A failing record fails the invocation (retried with the same state).
	if _, err := h(context.Background(), decode(`{"Records":[`+rec("a", "bad")+`],`+window+`,"state":{"n":2}}`)); err == nil {
		t.Fatal("a failing fold did not fail the invocation")
	}
	// The final invocation emits the state it was given.
	resp, err = h(context.Background(), decode(`{"Records":[],`+window+`,"state":{"n":2,"per":{"a":1,"b":1}},"isFinalInvokeForWindow":true}`))
	if err != nil || len(emitted) != 1 || emitted[0].N != 2 || resp.State.N != 2 {
		t.Fatalf("final invocation: %+v %v, emitted %v", resp, err, emitted)
	}
}
