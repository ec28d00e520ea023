package batch

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Tumbling window aggregation, in the manner of Powertools' aggregation
// with tumbling windows: a typed fold over a window's records whose
// result Lambda carries from one invocation to the next as the
// TimeWindowEventResponse's state, and an emit called with the state on
// the window's final invocation and on one that terminates it early.
//
// A window does not have one emit, and emit must tell its calls apart:
//
//   - each shard has its own state for a window (each lane of a shard,
//     with ParallelizationFactor above 1), and emits it;
//   - a state over 1 MB terminates the window early: emit gets that part
//     of the window, and the window goes on with a fresh state (the next
//     emit holds only the records after it);
//   - emit runs at least once, not exactly once (as on AWS): when it
//     fails, or the process dies after its write and before the mapping
//     records the invocation, the same invocation runs again, with the
//     same state.
//
// So emit gets a WindowEmit: the window, the shard, whether the window
// ends (Final) or was terminated early, and the sequence numbers of the
// first and last records folded into the state. Its Key (shard, window
// start, first sequence number) names one part of the window's result:
// an emit run again, even one whose state ends at another record (a part
// cut at another batch after a restart), has the same key; two parts
// holding records never do. A sink that puts each part under its key (an overwrite, not
// an increment) and reads a window as the sum of its parts is right:
//
//	function.Register("counts", batch.AggregateKinesis(
//		func(ctx context.Context, n map[string]int, r events.KinesisEventRecord) (map[string]int, error) {
//			n[r.Kinesis.PartitionKey]++
//			return n, nil
//		},
//		func(ctx context.Context, e batch.WindowEmit, n map[string]int) error {
//			// One part of the window's counts: put, keyed by the part.
//			return putPart(ctx, e.Window.Start.Time, e.Key(), n)
//		}))
//
//	// The counts of the window starting at start: the sum of its parts.
//	func windowCounts(ctx context.Context, start time.Time) (map[string]int, error)
//
// (Keyed by the window's start alone, each part overwrites the others:
// of 11 records over two shards and an early termination, the store
// kept 3.)
//
// The state is typed S and sent as JSON, so numbers stay numbers
// (aws-lambda-go's TimeWindowProperties.State is a map[string]string,
// which a state like {"1": 282} does not decode into). Lambda's state is
// a JSON object, {} at the start of a window: S must be a struct or a
// map (a map is nil when the state is null, empty when it is {}). The
// sequence numbers travel in the state object, under the key
// "runnel.folded" (WindowStateKey), which the event's decoding takes out
// of S's JSON and the response's encoding puts back in: the state stays
// opaque to Lambda, so this works on AWS as on runnel.

// WindowStateKey is the key of the state object under which the
// aggregation carries the sequence numbers of the records folded into it.
const WindowStateKey = "runnel.folded"

// Folded is the range of records folded into a window's state: the
// sequence numbers of the first and the last. Both are empty when no
// record has been (a fresh state after an early termination), or when
// the state came from a handler that did not carry them.
type Folded struct {
	FirstSequenceNumber string `json:"first"`
	LastSequenceNumber  string `json:"last"`
}

// WindowEmit is what emit is told about the state it gets: Lambda's
// TimeWindowEventResponse properties and the records folded into it.
type WindowEmit struct {
	Window         events.Window
	ShardID        string
	EventSourceARN string
	// Final is the window's final invocation (isFinalInvokeForWindow):
	// the state is the shard's (lane's) last part of the window.
	Final bool
	// TerminatedEarly is an invocation that ends the window's state early
	// (isWindowTerminatedEarly, the state passed 1 MB): a part of the
	// window; more parts follow.
	TerminatedEarly bool
	Folded
}

// Key names the part of the window's result emit got: shard, window
// start (Unix ms) and first folded sequence number. It is the same when
// the emit runs again and differs between parts. (With no record folded,
// a fresh state after an early termination, the state is S's zero and
// the key ends empty.)
func (e WindowEmit) Key() string {
	return e.ShardID + "/" + e.Window.Start.Time.UTC().Format(time.RFC3339Nano) + "/" + e.FirstSequenceNumber
}

// KinesisWindowEvent is events.KinesisTimeWindowEvent with its state
// decoded as S.
type KinesisWindowEvent[S any] struct {
	events.KinesisTimeWindowEvent
	State S `json:"state"`
	// Folded is taken out of the state object (WindowStateKey).
	Folded Folded `json:"-"`
}

// UnmarshalJSON decodes the event, the state as S and Folded.
func (e *KinesisWindowEvent[S]) UnmarshalJSON(b []byte) error {
	var w struct {
		events.KinesisTimeWindowEvent
		State json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e.KinesisTimeWindowEvent = w.KinesisTimeWindowEvent
	return decodeState(w.State, &e.State, &e.Folded)
}

// MarshalJSON encodes the event with Folded in its state.
func (e KinesisWindowEvent[S]) MarshalJSON() ([]byte, error) {
	st, err := encodeState(e.State, e.Folded)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		events.KinesisTimeWindowEvent
		State json.RawMessage `json:"state"`
	}{e.KinesisTimeWindowEvent, st})
}

// DynamoDBWindowEvent is events.DynamoDBTimeWindowEvent with its state
// decoded as S.
type DynamoDBWindowEvent[S any] struct {
	events.DynamoDBTimeWindowEvent
	State S `json:"state"`
	// Folded is taken out of the state object (WindowStateKey).
	Folded Folded `json:"-"`
}

// UnmarshalJSON decodes the event, the state as S and Folded.
func (e *DynamoDBWindowEvent[S]) UnmarshalJSON(b []byte) error {
	var w struct {
		events.DynamoDBTimeWindowEvent
		State json.RawMessage `json:"state"`
	}
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	e.DynamoDBTimeWindowEvent = w.DynamoDBTimeWindowEvent
	return decodeState(w.State, &e.State, &e.Folded)
}

// MarshalJSON encodes the event with Folded in its state.
func (e DynamoDBWindowEvent[S]) MarshalJSON() ([]byte, error) {
	st, err := encodeState(e.State, e.Folded)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		events.DynamoDBTimeWindowEvent
		State json.RawMessage `json:"state"`
	}{e.DynamoDBTimeWindowEvent, st})
}

// WindowResponse is the TimeWindowEventResponse with its state typed S.
// Its batchItemFailures have the shape of both Kinesis's and DynamoDB's.
type WindowResponse[S any] struct {
	State             S                                `json:"state"`
	BatchItemFailures []events.KinesisBatchItemFailure `json:"batchItemFailures"`
	// Folded goes into the state object (WindowStateKey).
	Folded Folded `json:"-"`
}

// MarshalJSON encodes the response with Folded in its state.
func (r WindowResponse[S]) MarshalJSON() ([]byte, error) {
	st, err := encodeState(r.State, r.Folded)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		State             json.RawMessage                  `json:"state"`
		BatchItemFailures []events.KinesisBatchItemFailure `json:"batchItemFailures"`
	}{st, r.BatchItemFailures})
}

// decodeState decodes a state object into S, taking WindowStateKey out
// of it into f.
func decodeState[S any](raw json.RawMessage, s *S, f *Folded) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	if raw[0] == '{' && bytes.Contains(raw, []byte(`"`+WindowStateKey+`"`)) {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		if v, ok := m[WindowStateKey]; ok {
			if err := json.Unmarshal(v, f); err != nil {
				return err
			}
			delete(m, WindowStateKey)
			var err error
			if raw, err = json.Marshal(m); err != nil {
				return err
			}
		}
	}
	return json.Unmarshal(raw, s)
}

// encodeState encodes S, with f under WindowStateKey when a record was
// folded (and S is an object, or null: then the state is f alone).
func encodeState[S any](s S, f Folded) (json.RawMessage, error) {
	st, err := json.Marshal(s)
	if err != nil || f == (Folded{}) {
		return st, err
	}
	meta, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	head := `{"` + WindowStateKey + `":` + string(meta)
	switch body := strings.TrimSpace(string(st)); {
	case body == "null":
		return json.RawMessage(head + "}"), nil
	case strings.HasPrefix(body, "{"):
		rest := strings.TrimSpace(body[1:])
		if rest == "}" {
			return json.RawMessage(head + "}"), nil
		}
		return json.RawMessage(head + "," + rest), nil
	}
	return st, nil
}

// AggregateKinesis returns the handler of a Kinesis mapping with
// TumblingWindowInSeconds. Each invocation folds its records, in order,
// into the state it was given and returns the result as the state. On the
// window's final invocation (isFinalInvokeForWindow), and on one that
// terminates the window early because the state passed 1 MB
// (isWindowTerminatedEarly), emit receives the WindowEmit and the state;
// the next invocation starts from a fresh (zero) state. emit runs at
// least once per part of a window, and once per shard (lane): see the
// package's tumbling window notes.
//
// If fold or emit fails, the invocation fails: Lambda invokes the same
// records again with the state from before them, so each record is folded
// once into the state that reaches emit. (A partial response would not
// be safe here: without ReportBatchItemFailures it is taken as success.)
func AggregateKinesis[S any](fold func(ctx context.Context, state S, rec events.KinesisEventRecord) (S, error), emit func(ctx context.Context, e WindowEmit, state S) error) func(context.Context, KinesisWindowEvent[S]) (WindowResponse[S], error) {
	return func(ctx context.Context, ev KinesisWindowEvent[S]) (WindowResponse[S], error) {
		return aggregate(ctx, ev.State, ev.Folded, ev.Records, func(r *events.KinesisEventRecord) string { return r.Kinesis.SequenceNumber },
			&ev.TimeWindowProperties, fold, emit)
	}
}

// AggregateDynamoDB is AggregateKinesis for a DynamoDB stream mapping.
func AggregateDynamoDB[S any](fold func(ctx context.Context, state S, rec events.DynamoDBEventRecord) (S, error), emit func(ctx context.Context, e WindowEmit, state S) error) func(context.Context, DynamoDBWindowEvent[S]) (WindowResponse[S], error) {
	return func(ctx context.Context, ev DynamoDBWindowEvent[S]) (WindowResponse[S], error) {
		return aggregate(ctx, ev.State, ev.Folded, ev.Records, func(r *events.DynamoDBEventRecord) string { return r.Change.SequenceNumber },
			&ev.TimeWindowProperties, fold, emit)
	}
}

func aggregate[S, R any](ctx context.Context, state S, folded Folded, recs []R, seq func(*R) string, p *events.TimeWindowProperties, fold func(context.Context, S, R) (S, error), emit func(context.Context, WindowEmit, S) error) (WindowResponse[S], error) {
	var err error
	for i := range recs {
		if state, err = fold(ctx, state, recs[i]); err != nil {
			return WindowResponse[S]{}, err
		}
		if s := seq(&recs[i]); s != "" {
			if folded.FirstSequenceNumber == "" {
				folded.FirstSequenceNumber = s
			}
			folded.LastSequenceNumber = s
		}
	}
	if p.IsFinalInvokeForWindow || p.IsWindowTerminatedEarly {
		e := WindowEmit{Window: p.Window, ShardID: p.ShardID, EventSourceARN: p.EventSourceARN,
			Final: p.IsFinalInvokeForWindow, TerminatedEarly: p.IsWindowTerminatedEarly, Folded: folded}
		if err := emit(ctx, e, state); err != nil {
			return WindowResponse[S]{}, err
		}
	}
	return WindowResponse[S]{State: state, Folded: folded, BatchItemFailures: []events.KinesisBatchItemFailure{}}, nil
}
