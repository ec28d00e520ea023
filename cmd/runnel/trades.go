package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/demo/trades"
	"github.com/runnel-dev/runnel/stream"
)

func tradesCmd(g *globals) *cobra.Command {
	var cfg trades.Config
	var jsonPath string
	var quiet bool
	var nodes trades.NodesConfig
	cmd := &cobra.Command{
		Use:   "trades",
		Args:  cobra.NoArgs,
		Short: "Run the exactly-once trade-risk aggregation pipeline (seed 002) and verify the totals",
		Long: `trades reproduces the pipeline of "Build a fault-tolerant, serverless data
aggregation pipeline with exactly-once processing" (AWS Database Blog) in one
runnel process: a producer puts risk messages {TradeID, Version, Value,
Hierarchy, Timestamp} into a Kinesis stream (partition key = SHA-256 of the
message, in-batch duplicates, 1% modifications with a higher Version each
followed by an out-of-order older Version); the state function writes them to
the state table with a conditional update (new trade or higher Version); the
state table's change stream (NEW_AND_OLD_IMAGES) feeds the map function, which
pre-aggregates value deltas per hierarchy level and writes them with a
conditional put keyed by the SHA-256 of its batch; the reduce table's change
stream feeds the reduce function (reserved concurrency 1), which adds them to
the aggregate table in one TransactWriteItems with ClientRequestToken = MD5 of
its batch. The functions fail at random (state 1%, map 2%, reduce 2% of
invocations, before or after their writes); --crash-at crashes the engine
mid-run and opens it again.

At the end a verifier compares every aggregate with the producer's exact
totals and counts duplicates and losses per stage; the command fails unless
the run is exact.

With --nodes 3 the pipeline runs on three runnel nodes, each a separate process
(runnel serve of this binary) of one embedded NATS cluster with JetStream
replicas 3, as demo --nodes does. The functions are built into the binary
(demo-trades-state, -map, -reduce) and run on whichever node holds each
mapping; each node injects the same failure rates (set through the functions'
environment). The messages are put through the nodes' AWS endpoints in turn.
Once --kill-node-at of the messages are put (default 0.5; 0: no kill), the node
holding the most of the work (the state mapping, the tables, the map and reduce
mappings) is killed with SIGKILL and started again. The verifier reads the
tables through the nodes. The latency is not measured on nodes (--json says
latency_measured false); --json adds nodes and node_kills. See
docs/cluster.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.DataDir, cfg.NATSURL = g.dataDir, g.natsURL
			for name, p := range map[string]*float64{"state-failure": &cfg.StateFailure, "map-failure": &cfg.MapFailure, "reduce-failure": &cfg.ReduceFailure} {
				noneIfZero(cmd.Flags(), name, p)
			}
			if cfg.Rate <= 0 {
				cfg.Rate = -1 // the flag's 0 (or less): as fast as accepted
			}
			cfg.Logger, cfg.Progress = g.logger(), progressTo(quiet)
			run := func() (*trades.Result, error) { return trades.Run(cmd.Context(), cfg) }
			if nodes.Nodes > 0 {
				for _, f := range []string{"crash-at", "nats-url", "memory-limit-mib", "table-index"} {
					if cmd.Flags().Changed(f) {
						return fmt.Errorf("--nodes runs without --%s (it starts its own nodes and kills one with --kill-node-at)", f)
					}
				}
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				nodes.Binary, nodes.CPUProfile = exe, g.cpuProf // --cpuprofile: the nodes' too, in <file>.node-<i>
				run = func() (*trades.Result, error) { return trades.RunNodes(cmd.Context(), cfg, nodes) }
			} else if cmd.Flags().Changed("kill-node-at") {
				return fmt.Errorf("--kill-node-at needs --nodes")
			}
			return runAndReport(cmd, run,
				printTrades, jsonPath, func(res *trades.Result) error {
					if !res.Exact {
						return fmt.Errorf("verification failed: the aggregates are not exact")
					}
					return nil
				})
		},
	}
	f := cmd.Flags()
	f.Int64Var(&cfg.Messages, "messages", 10_000_000, "messages to put (duplicates, modifications and out-of-order messages included)")
	f.IntVar(&cfg.Rate, "rate", 50_000, "producer target in messages/s (0 or less: as fast as the pipeline accepts them)")
	f.IntVar(&cfg.Shards, "shards", 8, "shards of the trades stream")
	f.IntVar(&cfg.StateShards, "state-shards", 1, "shards of the state table's change stream (more shards: smaller map batches, more map and reduce invocations)")
	f.StringVar(&cfg.TableIndex, "table-index", "", "where the tables keep their item indexes: disk (the index store: memory bounded whatever the item count; the default) or memory (the heap: 10 million trades need about 12 GiB; the default with --nats-url)")
	f.IntVar(&cfg.MemoryLimitMiB, "memory-limit-mib", 0, "soft limit of the Go heap during the run, MiB (0: five eighths of the machine's memory, at most 2560 with --table-index disk, 12288 with memory)")
	f.Float64Var(&cfg.StateFailure, "state-failure", 0.01, "share of state invocations that fail, at most 1 (0 or negative: none)")
	f.Float64Var(&cfg.MapFailure, "map-failure", 0.02, "share of map invocations that fail, at most 1 (0 or negative: none)")
	f.Float64Var(&cfg.ReduceFailure, "reduce-failure", 0.02, "share of reduce invocations that fail, at most 1 (0 or negative: none)")
	f.Float64Var(&cfg.CrashAt, "crash-at", 0, "crash the engine when this share of the messages is put, then reopen it (0: no crash)")
	f.IntVar(&nodes.Nodes, "nodes", 0, "run on this many runnel nodes (1..9), each a separate process (runnel serve) of one embedded NATS cluster with replicas 3; 0: one process")
	f.Float64Var(&nodes.KillAt, "kill-node-at", 0.5, "with --nodes: once this share of the messages is put, kill the node holding the most of the pipeline's work with SIGKILL and start it again (0: no kill)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the run's data directory")
	f.StringVar(&jsonPath, "json", "", "write the report as JSON to this file")
	f.BoolVar(&quiet, "quiet", false, "no progress bar")
	flagAtLeast(f, "messages", &cfg.Messages, 1)
	flagRange(f, "shards", &cfg.Shards, 1, stream.MaxShardCount)
	flagRange(f, "state-shards", &cfg.StateShards, 1, stream.MaxShardCount)
	flagAtLeast(f, "memory-limit-mib", &cfg.MemoryLimitMiB, 0)
	flagFloatRange(f, "state-failure", &cfg.StateFailure, math.Inf(-1), 1, "0 or negative: none")
	flagFloatRange(f, "map-failure", &cfg.MapFailure, math.Inf(-1), 1, "0 or negative: none")
	flagFloatRange(f, "reduce-failure", &cfg.ReduceFailure, math.Inf(-1), 1, "0 or negative: none")
	flagFloatRange(f, "crash-at", &cfg.CrashAt, 0, 1, "")
	flagNodes(f, &nodes.Nodes)
	flagFloatRange(f, "kill-node-at", &nodes.KillAt, 0, 1, "")
	return cmd
}

func printTrades(w io.Writer, r *trades.Result) {
	fmt.Fprintf(w, "\nmessages %d (trades %d, modifications %d, out-of-order %d, duplicates %d)%s\n",
		r.Messages, r.Trades, r.Modifications, r.OutOfOrder, r.Duplicates, map[bool]string{true: ", engine crashed and reopened mid-run", false: ""}[r.Crashed])
	fmt.Fprintf(w, "end to end: %.1f s, %.0f messages/s (producer %.0f/s)\n", r.Seconds, r.Throughput, r.ProduceRate)
	if !r.Drained {
		fmt.Fprintln(w, "the run ended because nothing moved for the drain timeout, before every stage caught up")
	}
	if r.Nodes > 0 {
		fmt.Fprintf(w, "nodes %d (killed with SIGKILL and restarted: %d); latency not measured on nodes\n", r.Nodes, r.NodeKills)
	}
	if r.LatencyMeasured {
		fmt.Fprintf(w, "latency (message timestamp -> aggregate committed): mean %.0f ms, p50 %d ms, p99 %d ms, max %d ms\n",
			r.Latency.Mean, r.Latency.P50, r.Latency.P99, r.Latency.Max)
	}
	fmt.Fprintf(w, "state changes aggregated per second: %s\n", sparkline(r.PerSecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tinvocations\tfailures injected\tretries\tduplicates\tlosses\t")
	for _, name := range []string{"state", "map", "reduce"} {
		s := r.Stages[name]
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t\n", name, s.Invocations, s.FailuresInjected, s.Retries, s.Duplicates, s.Losses)
	}
	tw.Flush()
	bad := 0
	for _, a := range r.Aggregates {
		if !a.OK {
			bad++
			fmt.Fprintf(w, "MISMATCH %s: expected %s, got %s\n", a.Key, a.Expected, a.Got)
		}
	}
	verdict := "EXACT: every aggregate equals the producer's totals, no duplicate, no loss"
	if !r.Exact {
		verdict = fmt.Sprintf("NOT EXACT: %d of %d aggregates differ", bad, len(r.Aggregates))
	}
	fmt.Fprintf(w, "verification: %s (%d aggregates)\n", verdict, len(r.Aggregates))
	if r.Nodes == 0 {
		fmt.Fprintf(w, "peak RSS %.0f MiB\n", r.PeakRSSMiB)
	}
}

func sparkline(v []int64) string {
	if len(v) == 0 {
		return "-"
	}
	bars := []rune("▁▂▃▄▅▆▇█")
	var hi int64 = 1
	for _, x := range v {
		hi = max(hi, x)
	}
	var b strings.Builder
	for _, x := range v {
		b.WriteRune(bars[int(x*int64(len(bars)-1)/hi)])
	}
	return b.String() + fmt.Sprintf(" (peak %d/s)", hi)
}
