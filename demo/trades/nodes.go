package trades

// The trades pipeline on a cluster of node processes (`runnel demo trades
// --nodes 3`): the nodes are started as for the flight demo
// (demo/nodeset), the stream, tables, functions and mappings are created
// through a passive client of the cluster, the functions are built into
// the binary (nodefn.go) and run on whichever node holds each mapping, the
// messages are put through the nodes' AWS endpoints in turn, and one node
// is killed with SIGKILL mid-run and started again. The results are read
// through the AWS endpoints and verified as in one process.

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/stream"
)

// NodesConfig configures RunNodes. KillAt kills the node holding the
// most of the pipeline's work: the state mapping, the tables, the map and
// reduce mappings, in that order of preference on a tie.
type NodesConfig = nodeset.Plan

// RunNodes runs the experiment on a cluster of node processes and
// verifies it as Run does. Config.CrashAt is not used (KillAt kills a
// node instead). The latency is not measured (Result.LatencyMeasured
// false); the stages' invocations and failures injected are the sums of
// what each node process answered last on CountsSubject (polled every
// second: a killed node's last second is missing). The run's directory
// (<DataDir>/trades-nodes-*) keeps each node's log; the nodes' data is
// removed after an exact run unless Keep.
func RunNodes(ctx context.Context, cfg Config, nc NodesConfig) (*Result, error) {
	cfg.setDefaults()
	if err := nc.Check("messages"); err != nil {
		return nil, fmt.Errorf("trades %w", err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o755); err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(cfg.DataDir, "trades-nodes-")
	if err != nil {
		return nil, err
	}
	say := nodeset.Progress(cfg.Progress, "trades: ")
	// The client checks the functions' handlers when it creates them; it
	// runs none of them (the nodes do).
	reg := function.NewRegistry()
	if _, err := RegisterNodeFunctions(reg, "client"); err != nil {
		return nil, err
	}
	var res *Result
	err = nc.Run(ctx, nodeset.Options{Dir: dir, Logger: cfg.Logger, Say: say, Registry: reg}, cfg.Keep, func(set *nodeset.Set) (bool, error) {
		res, err = runOnNodes(ctx, cfg, nc, set, say)
		if err == nil && !res.Exact {
			say("not exact: the run's directory %s is kept", dir)
		}
		return err == nil && res.Exact, err
	})
	if err != nil {
		return nil, fmt.Errorf("trades --nodes: %w", err)
	}
	return res, nil
}

func runOnNodes(ctx context.Context, cfg Config, nc NodesConfig, set *nodeset.Set, say func(string, ...any)) (*Result, error) {
	rate := func(r float64) string { return strconv.FormatFloat(r, 'g', -1, 64) }
	env := map[string]string{EnvStateFailure: rate(cfg.StateFailure), EnvMapFailure: rate(cfg.MapFailure), EnvReduceFailure: rate(cfg.ReduceFailure)}
	if err := setup(ctx, set.RN, cfg, [3]string{StateHandler, MapHandler, ReduceHandler}, env); err != nil {
		return nil, fmt.Errorf("setup: %w", err)
	}
	// The work the kill aims at, by preference on a tie.
	uuid := map[string]string{}
	for _, m := range set.RN.Mappings.ListEventSourceMappings() {
		uuid[m.FunctionName] = m.UUID
	}
	killer := &nodeset.Killer{Set: set, Keys: []string{"esm." + uuid["state"], "dynamodb", "esm." + uuid["map"], "esm." + uuid["reduce"]},
		What: "the most of: the state mapping, the tables, the map and reduce mappings", Say: say, Log: cfg.Logger}
	counts := &nodeCounts{last: map[string]NodeCounts{}}
	pollCtx, stopPolling := context.WithCancel(ctx)
	polled := make(chan struct{})
	go func() {
		defer close(polled)
		counts.pollEvery(pollCtx, set.RN.Engine.NC, len(set.Proc.Nodes), time.Second)
	}()
	defer func() { stopPolling(); <-polled }()

	p := newProducer(cfg.Seed, cfg.Modifications, cfg.Duplicates)
	res := &Result{Stages: map[string]*StageReport{}, Nodes: len(set.Proc.Nodes)}
	putBatch := func(ctx context.Context, entries []stream.PutRecordsRequestEntry) bool {
		out, err := nodeset.PutRecords(ctx, set.AWS, tradeStream, entries)
		if err != nil {
			cfg.Logger.Debug("trades: a put failed; putting the batch again on the next node", "err", err)
			return false
		}
		for _, r := range out {
			if r.ErrorCode != "" {
				return false
			}
		}
		return true
	}
	killAt := int64(nc.KillAt * float64(cfg.Messages))
	start := time.Now()
	put, err := produce(ctx, cfg, p, start, putBatch, func(put int64) error {
		if nc.KillAt > 0 && !killer.Started() && put >= killAt {
			killer.Start(ctx)
		}
		return killer.Err()
	})
	if err != nil {
		return nil, err
	}
	produceSecs := time.Since(start).Seconds()

	src := &awsSource{set: set}
	want := p.expected[KeyTrades]
	var drainErr error
	res.Drained = drain(ctx, cfg, func() (int64, bool) {
		got, _ := src.aggregateInt(ctx, KeyTrades)
		changes, _ := src.aggregateInt(ctx, KeyChanges)
		if err := killer.Err(); err != nil {
			drainErr = err
			return got + changes, true
		}
		// Every trade is aggregated and the restarted node serves: the run
		// ends when every stage has caught up (the mappings' stored
		// checkpoints, read through the passive client).
		return got + changes, got >= want && killer.Finished(nc.KillAt > 0) && caughtUp(ctx, set.RN)
	})
	if drainErr != nil {
		return nil, drainErr
	}
	elapsed := time.Since(start).Seconds()
	res.NodeKills = killer.Kills()
	res.report(p, put, elapsed, produceSecs)
	stopPolling()
	<-polled
	counts.poll(ctx, set.RN.Engine.NC, len(set.Proc.Nodes))
	if err := verify(ctx, src, p, counts.sum(), res); err != nil {
		return nil, err
	}
	return res, nil
}

// nodeCounts keeps the last counts each node process answered.
type nodeCounts struct {
	mu   sync.Mutex
	last map[string]NodeCounts // by instance
}

func (c *nodeCounts) pollEvery(ctx context.Context, nc *nats.Conn, nodes int, every time.Duration) {
	for {
		c.poll(ctx, nc, nodes)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// poll asks every node for its counts and keeps the answers that arrive
// within 500 ms (fewer than nodes answers: it waits that long).
func (c *nodeCounts) poll(ctx context.Context, nc *nats.Conn, nodes int) {
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return
	}
	defer sub.Unsubscribe()
	if err := nc.PublishRequest(CountsSubject, inbox, nil); err != nil {
		return
	}
	deadline := time.Now().Add(500 * time.Millisecond)
	for got := 0; got < nodes; got++ {
		m, err := sub.NextMsg(time.Until(deadline))
		if err != nil || ctx.Err() != nil {
			return
		}
		var n NodeCounts
		if json.Unmarshal(m.Data, &n) == nil {
			c.mu.Lock()
			c.last[n.Instance] = n
			c.mu.Unlock()
		}
	}
}

// sum adds up every instance's counts by stage.
func (c *nodeCounts) sum() map[string][2]int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string][2]int64{}
	for _, n := range c.last {
		for name, v := range n.Stages {
			s := out[name]
			out[name] = [2]int64{s[0] + v[0], s[1] + v[1]}
		}
	}
	return out
}
