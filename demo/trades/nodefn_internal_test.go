package trades

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
)

// TestAnInvocationBeforeTheTablesAreOpenFailsInsteadOfCrashing: the node
// functions are registered before runnel opens and get their tables
// after it (Use); a restarted node's mappings may invoke them in between.
// Each of the three must then fail the invocation (the mapping retries
// it), not crash the process: the state function writes from goroutines
// of its own, outside the invoker's recovery, where a nil table service
// took a node down in the cluster demo after its SIGKILL and restart.
func TestAnInvocationBeforeTheTablesAreOpenFailsInsteadOfCrashing(t *testing.T) {
	nf, err := RegisterNodeFunctions(function.NewRegistry(), "n")
	if err != nil {
		t.Fatal(err)
	}
	f := nf.fns
	ctx := context.Background()
	data, _ := json.Marshal(Message{TradeID: "t1", Version: 1, Value: "1.5", Hierarchy: Hierarchy{RiskType: "r", Region: "g", TradeDesk: "d"}, Timestamp: "1"})
	if _, err := f.State(ctx, events.KinesisEvent{Records: []events.KinesisEventRecord{{Kinesis: events.KinesisRecord{Data: data}}}}); !errors.Is(err, errTablesNotOpen) {
		t.Fatalf("State before Use: %v, want %v", err, errTablesNotOpen)
	}
	img := map[string]events.DynamoDBAttributeValue{
		"TradeID": events.NewStringAttribute("t1"), "Value": events.NewNumberAttribute("1.5"), "Version": events.NewNumberAttribute("1"),
		"RiskType": events.NewStringAttribute("r"), "Region": events.NewStringAttribute("g"), "TradeDesk": events.NewStringAttribute("d"),
		"Timestamp": events.NewNumberAttribute("1"),
	}
	insert := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1", NewImage: img}}}}
	if _, err := f.Map(ctx, insert); !errors.Is(err, errTablesNotOpen) {
		t.Fatalf("Map before Use: %v, want %v", err, errTablesNotOpen)
	}
	msg, _ := json.Marshal(preAggregate{Deltas: map[string]string{"Region:g": "1.5"}, Changes: 1, Trades: 1, Stamps: map[int64]int64{}})
	reduce := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventName: "INSERT", Change: events.DynamoDBStreamRecord{SequenceNumber: "1",
		NewImage: map[string]events.DynamoDBAttributeValue{"MessageHash": events.NewStringAttribute("h"), "Message": events.NewStringAttribute(string(msg))}}}}}
	if _, err := f.Reduce(ctx, reduce); !errors.Is(err, errTablesNotOpen) {
		t.Fatalf("Reduce before Use: %v, want %v", err, errTablesNotOpen)
	}
}
