package batch

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
)

// Tumbling window aggregation, in the manner of Powertools' aggregation
// with tumbling windows: a typed fold over a window's records whose
// result Lambda carries from one invocation to the next as the
// TimeWindowEventResponse's state, and an emit called once per window
// with the final state.
//
//	function.Register("counts", batch.AggregateKinesis(
//		func(ctx context.Context, n map[string]int, r events.KinesisEventRecord) (map[string]int, error) {
//			n[r.Kinesis.PartitionKey]++
//			return n, nil
//		},
//		func(ctx context.Context, w events.Window, n map[string]int) error {
//			return store(ctx, w.Start.Time, n)
//		}))
//
// The state is typed S and sent as JSON, so numbers stay numbers
// (aws-lambda-go's TimeWindowProperties.State is a map[string]string,
// which a state like {"1": 282} does not decode into). Lambda's state is
// a JSON object, {} at the start of a window: S must be a struct or a
// map (a map is nil when the state is null, empty when it is {}).

// KinesisWindowEvent is events.KinesisTimeWindowEvent with its state
// decoded as S.
type KinesisWindowEvent[S any] struct {
	events.KinesisTimeWindowEvent
	State S `json:"state"`
}

// DynamoDBWindowEvent is events.DynamoDBTimeWindowEvent with its state
// decoded as S.
type DynamoDBWindowEvent[S any] struct {
	events.DynamoDBTimeWindowEvent
	State S `json:"state"`
}

// WindowResponse is the TimeWindowEventResponse with its state typed S.
// Its batchItemFailures have the shape of both Kinesis's and DynamoDB's.
type WindowResponse[S any] struct {
	State             S                                `json:"state"`
	BatchItemFailures []events.KinesisBatchItemFailure `json:"batchItemFailures"`
}

// AggregateKinesis returns the handler of a Kinesis mapping with
// TumblingWindowInSeconds. Each invocation folds its records, in order,
// into the state it was given and returns the result as the state. On the
// window's final invocation (isFinalInvokeForWindow), and on one that
// terminates the window early because the state passed 1 MB
// (isWindowTerminatedEarly), emit receives the window and its state; the
// next invocation starts from a fresh (zero) state.
//
// If fold or emit fails, the invocation fails: Lambda invokes the same
// records again with the state from before them, so each record is folded
// once into the state that reaches emit. (A partial response would not
// be safe here: without ReportBatchItemFailures it is taken as success.)
func AggregateKinesis[S any](fold func(ctx context.Context, state S, rec events.KinesisEventRecord) (S, error), emit func(ctx context.Context, w events.Window, state S) error) func(context.Context, KinesisWindowEvent[S]) (WindowResponse[S], error) {
	return func(ctx context.Context, ev KinesisWindowEvent[S]) (WindowResponse[S], error) {
		return aggregate(ctx, ev.State, ev.Records, &ev.TimeWindowProperties, fold, emit)
	}
}

// AggregateDynamoDB is AggregateKinesis for a DynamoDB stream mapping.
func AggregateDynamoDB[S any](fold func(ctx context.Context, state S, rec events.DynamoDBEventRecord) (S, error), emit func(ctx context.Context, w events.Window, state S) error) func(context.Context, DynamoDBWindowEvent[S]) (WindowResponse[S], error) {
	return func(ctx context.Context, ev DynamoDBWindowEvent[S]) (WindowResponse[S], error) {
		return aggregate(ctx, ev.State, ev.Records, &ev.TimeWindowProperties, fold, emit)
	}
}

func aggregate[S, R any](ctx context.Context, state S, recs []R, p *events.TimeWindowProperties, fold func(context.Context, S, R) (S, error), emit func(context.Context, events.Window, S) error) (WindowResponse[S], error) {
	var err error
	for _, r := range recs {
		if state, err = fold(ctx, state, r); err != nil {
			return WindowResponse[S]{}, err
		}
	}
	if p.IsFinalInvokeForWindow || p.IsWindowTerminatedEarly {
		if err := emit(ctx, p.Window, state); err != nil {
			return WindowResponse[S]{}, err
		}
	}
	return WindowResponse[S]{State: state, BatchItemFailures: []events.KinesisBatchItemFailure{}}, nil
}
