package demo

// The function of `runnel demo --nodes`, built into the runnel binary so
// that every node process can run it: whichever node holds the mapping's
// lease invokes it there. It parses a batch of flight records and stores
// each record's contribution (its origin and delay, by shard and sequence
// number) as one message in the results queue named by the function's
// environment variable RESULTS_QUEUE_URL, before it returns success. The
// demo merges the contributions once per record: after a failover the new
// holder resumes from the checkpoint with other batch boundaries, so whole
// batches would overlap.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
)

// NodeHandler is the name the cluster demo's function is registered under
// in every `runnel serve` (see RegisterNodeFunction).
const NodeHandler = "demo-flight-stats"

// nodeRecord is one record's contribution to the statistics.
type nodeRecord struct {
	Seq    string `json:"s"`
	Origin string `json:"o"`
	Delay  int64  `json:"d"`
}

// nodeResult is one message of the results queue: a successful batch.
type nodeResult struct {
	// Node is the node that ran the function.
	Node string `json:"node"`
	// Records by shard id.
	Records map[string][]nodeRecord `json:"records"`
}

// NodeFunction is the cluster demo's function in a node process. Set its
// queues with Use once runnel is open.
type NodeFunction struct {
	node   string
	queues atomic.Pointer[queue.Service]
}

// RegisterNodeFunction registers the cluster demo's function in reg under
// NodeHandler; node names the process in its results. Call it before
// runnel.Open, and Use on the result once the queues exist.
func RegisterNodeFunction(reg *function.Registry, node string) (*NodeFunction, error) {
	f := &NodeFunction{node: node}
	return f, reg.Register(NodeHandler, function.KinesisHandler(f.handle))
}

// Use sets the queues the function stores its results in.
func (f *NodeFunction) Use(q *queue.Service) { f.queues.Store(q) }

func (f *NodeFunction) handle(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	res := nodeResult{Node: f.node, Records: map[string][]nodeRecord{}}
	if err := flights.EachKinesisFlight(ev, func(shard string, r events.KinesisEventRecord, fl flights.Flight) {
		res.Records[shard] = append(res.Records[shard], nodeRecord{Seq: r.Kinesis.SequenceNumber, Origin: fl.Origin, Delay: fl.Delay})
	}); err != nil {
		return events.KinesisEventResponse{}, err
	}
	q := f.queues.Load()
	url := function.Env(ctx)["RESULTS_QUEUE_URL"]
	if q == nil || url == "" {
		return events.KinesisEventResponse{}, errors.New("demo function: no results queue (RESULTS_QUEUE_URL)")
	}
	body, err := json.Marshal(res)
	if err != nil {
		return events.KinesisEventResponse{}, err
	}
	if _, err := q.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: string(body)}); err != nil {
		return events.KinesisEventResponse{}, fmt.Errorf("storing the batch result: %w", err)
	}
	return events.KinesisEventResponse{}, nil
}
