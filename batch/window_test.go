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
		func(ctx context.Context, e batch.WindowEmit, s sums) error {
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

// TestWindowStateCarriesTheSequenceNumbersFoldedIntoIt: emit is told the
// shard, whether the invocation is the window's final one or terminates
// it early, and the first and last sequence numbers folded into the
// state, carried from one invocation to the next inside the state object
// (WindowStateKey) and taken out of S. Before, emit got the window alone
// (emit(ctx, w, state)): its calls for the shards of a window, for the
// parts of an early-terminated one, and a call run again after a crash
// could not be told apart.
func TestWindowStateCarriesTheSequenceNumbersFoldedIntoIt(t *testing.T) {
	var emits []batch.WindowEmit
	var states []map[string]int
	h := batch.AggregateKinesis(
		func(ctx context.Context, n map[string]int, r events.KinesisEventRecord) (map[string]int, error) {
			if n == nil {
				n = map[string]int{}
			}
			n[r.Kinesis.PartitionKey]++
			return n, nil
		},
		func(ctx context.Context, e batch.WindowEmit, n map[string]int) error {
			emits, states = append(emits, e), append(states, n)
			return nil
		})
	rec := func(pk, seq string) string {
		b, _ := json.Marshal(events.KinesisEventRecord{Kinesis: events.KinesisRecord{PartitionKey: pk, SequenceNumber: seq, Data: []byte("d")}})
		return string(b)
	}
	props := `"window":{"start":"2020-12-09T07:04:00Z","end":"2020-12-09T07:06:00Z"},"shardId":"shardId-000000000001","eventSourceARN":"arn:src"`
	invoke := func(js string) string {
		t.Helper()
		var ev batch.KinesisWindowEvent[map[string]int]
		if err := json.Unmarshal([]byte(js), &ev); err != nil {
			t.Fatal(err)
		}
		resp, err := h(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		out, _ := json.Marshal(resp)
		var top struct{ State json.RawMessage }
		json.Unmarshal(out, &top)
		return string(top.State)
	}
	st := invoke(`{"Records":[` + rec("a", "11") + `,` + rec("b", "12") + `],` + props + `,"state":{}}`)
	if st != `{"runnel.folded":{"first":"11","last":"12"},"a":1,"b":1}` {
		t.Fatalf("state after the first invocation: %s", st)
	}
	st = invoke(`{"Records":[` + rec("a", "13") + `],` + props + `,"state":` + st + `}`)
	if st != `{"runnel.folded":{"first":"11","last":"13"},"a":2,"b":1}` {
		t.Fatalf("state after the second invocation: %s", st)
	}
	// Terminated early, then a fresh state ({}), then the final invocation.
	invoke(`{"Records":[],` + props + `,"state":` + st + `,"isWindowTerminatedEarly":true}`)
	st = invoke(`{"Records":[` + rec("c", "14") + `],` + props + `,"state":{}}`)
	invoke(`{"Records":[],` + props + `,"state":` + st + `,"isFinalInvokeForWindow":true}`)
	if len(emits) != 2 {
		t.Fatalf("%d emits; want 2", len(emits))
	}
	early, final := emits[0], emits[1]
	if !early.TerminatedEarly || early.Final || early.ShardID != "shardId-000000000001" || early.EventSourceARN != "arn:src" ||
		early.FirstSequenceNumber != "11" || early.LastSequenceNumber != "13" || states[0]["a"] != 2 || len(states[0]) != 2 {
		t.Fatalf("the early emit: %+v %v", early, states[0])
	}
	if !final.Final || final.TerminatedEarly || final.FirstSequenceNumber != "14" || final.LastSequenceNumber != "14" || states[1]["c"] != 1 || len(states[1]) != 1 {
		t.Fatalf("the final emit: %+v %v", final, states[1])
	}
	if early.Key() == final.Key() || early.Key() != "shardId-000000000001/2020-12-09T07:04:00Z/11" {
		t.Fatalf("keys %q and %q", early.Key(), final.Key())
	}
	// A state without records folded stays as it was (no key added).
	if st := invoke(`{"Records":[],` + props + `,"state":{}}`); st != `{}` {
		t.Fatalf("a state with nothing folded: %s", st)
	}
}
