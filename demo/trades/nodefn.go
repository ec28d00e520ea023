package trades

// The functions of `runnel demo trades --nodes`, built into the runnel
// binary so that every node process can run them: whichever node holds a
// mapping's lease invokes its function there, against that node's table
// service (which forwards to the node serving the tables). They are the
// one-process demo's functions; the failure rates come from the
// functions' environment variables (EnvStateFailure...), and each node
// draws its own failures.
//
// Each node answers NATS requests on CountsSubject with its stages'
// counts (invocations, failures injected) since it started, so the demo
// can report them.

import (
	"encoding/json"
	"math/rand/v2"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/table"
)

// The names the trades functions are registered under in every
// `runnel serve` (RegisterNodeFunctions).
const (
	StateHandler  = "demo-trades-state"
	MapHandler    = "demo-trades-map"
	ReduceHandler = "demo-trades-reduce"
)

// CountsSubject is the NATS subject every node answers with its
// NodeCounts.
const CountsSubject = "runnel.demo.trades.counts"

// NodeCounts are one node process's stage counts since it started.
type NodeCounts struct {
	// Instance names the process: the node's name and a random suffix
	// (a restarted node is another instance).
	Instance string `json:"instance"`
	// Stages by name ("state", "map", "reduce"): invocations and failures
	// injected.
	Stages map[string][2]int64 `json:"stages"`
}

// NodeFunctions are the trades functions in a node process. Set their
// tables with Use once runnel is open.
type NodeFunctions struct {
	fns      *functions
	instance string
}

// RegisterNodeFunctions registers the trades functions in reg under
// StateHandler, MapHandler and ReduceHandler; node names the process in
// its counts. Call it before runnel.Open, and Use on the result right
// after it (an invocation before Use panics, which the invoker reports as
// a function error: the mapping retries it).
func RegisterNodeFunctions(reg *function.Registry, node string) (*NodeFunctions, error) {
	f := &NodeFunctions{instance: node + "-" + nuid.Next()[:8],
		fns: &functions{stateTable: stateTable, reduceTable: reduceTable, agg: aggTable, concurrency: stateWriters,
			rng: rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))}}
	for _, h := range []struct {
		name string
		fn   any
	}{
		{StateHandler, function.KinesisHandler(f.fns.State)},
		{MapHandler, function.DynamoDBHandler(f.fns.Map)},
		{ReduceHandler, function.DynamoDBHandler(f.fns.Reduce)},
	} {
		if err := reg.Register(h.name, h.fn); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// Use sets the tables the functions write to, and answers CountsSubject
// on nc (nil: no counts) until nc closes.
func (f *NodeFunctions) Use(tables *table.Service, nc *nats.Conn) error {
	f.fns.tables.Store(tables)
	if nc == nil {
		return nil
	}
	_, err := nc.Subscribe(CountsSubject, func(m *nats.Msg) {
		b, _ := json.Marshal(f.counts())
		m.Respond(b)
	})
	return err
}

func (f *NodeFunctions) counts() NodeCounts {
	c := NodeCounts{Instance: f.instance, Stages: map[string][2]int64{}}
	for name, s := range map[string]*stage{"state": &f.fns.state, "map": &f.fns.mapper, "reduce": &f.fns.reducer} {
		c.Stages[name] = [2]int64{s.invocations.Load(), s.injected.Load()}
	}
	return c
}
