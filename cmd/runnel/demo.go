package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

func demoCmd(g *globals) *cobra.Command {
	var cfg demo.Config
	var jsonPath string
	var quiet, outage, external bool
	var outageCfg demo.Outage
	var nodes demo.NodesConfig
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Put real flight records through a stream and a function, with failures injected, and reconcile",
		Args:  cobra.NoArgs, // "runnel demo tradez" is an unknown command, not the flight demo
		Long: `demo puts every flight of data/flights-3m.parquet (3,000,000 US flights of 2001,
U.S. Bureau of Transportation Statistics; a copy is embedded in the binary, so
the demo runs from any directory, and --data reads another file) into a stream with the origin airport
as partition key. An event source mapping (BatchSize 500, BisectBatchOnFunctionError,
MaximumRetryAttempts 0) feeds a function that computes per-airport statistics,
with the two-tier dead-letter design: the stream's on-failure destination is a
Retry-DLQ queue, consumed by the same function with exponential backoff and full
jitter; what still fails after 4 attempts moves to the Unrecoverable-DLQ. The
demo makes a share of invocations fail transiently, marks some records flaky
(they fail twice, then recover by a bisect split or through the Retry-DLQ) and some poison (they
always fail and end in the Unrecoverable-DLQ); bisect isolates them while
everything else is processed.

At the end it reconciles: records in = processed + unrecoverable, lost = 0, and
the statistics equal an independent computation straight from the parquet file
without the unrecoverable records.

With --outage it tells the incident story: rows --outage-at .. --outage-at +
--outage-records arrive during a downstream outage, so the function fails every
one of them and they go stream -> Retry-DLQ -> (after --retry-attempts, 2 in
this mode) -> Unrecoverable-DLQ. Once the run settles the demo evaluates the
alarm rules as runnel status does (the Unrecoverable-DLQ's dlq-depth alarm
fires), fixes the outage, redrives the Unrecoverable-DLQ back to the Retry-DLQ
(runnel dlq redrive), waits for both DLQs to empty, and reconciles: every record
processed exactly once, lost 0, statistics equal to the parquet computation over
every row. The outage mode runs without poison records so that it ends clean.

With --external runnel is only an AWS endpoint (on a free local port): the
demo sets everything up with the aws-sdk-go-v2 clients (Kinesis CreateStream,
SQS CreateQueue, Lambda CreateFunction and CreateEventSourceMapping), the
producer puts the rows with Kinesis PutRecords, and the function is an
aws-lambda-go binary (demo/external/fn, Runtime provided.al2023) that stores
each batch's statistics in an SQS results queue. Poison records go to the
mapping's on-failure queue; no flaky records, transient failures or outage.
It builds the function with go build, so it needs the Go toolchain on PATH and
must run inside runnel's source tree; it is slower than the in-process demo
(every invocation goes over HTTP and JSON).

With --nodes 3 the demo starts three runnel nodes, each a separate process
(runnel serve of this binary) on free loopback ports, whose embedded NATS
servers form one cluster with JetStream replicas 3; it sets everything up and
produces through the nodes' AWS endpoints, each call to the next node. The
function (demo-flight-stats, built into the binary) runs on the nodes holding
the mapping's shards. Once --kill-node-at of the rows are put, a node running
some of them is killed with SIGKILL and started again. It reconciles as --external
does (poison records only); --json adds nodes, node_kills and records_by_node.
The nodes' logs stay in the run's directory (node-<i>.log). See docs/cluster.md.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.DataDir, cfg.NATSURL = g.dataDir, g.natsURL
			fl := cmd.Flags()
			noneIfZero(fl, "poison", &cfg.PoisonRecords)
			noneIfZero(fl, "flaky", &cfg.FlakyRecords)
			noneIfZero(fl, "failure-rate", &cfg.FailureRate)
			if nodes.Nodes > 0 {
				for _, f := range []string{"outage", "outage-at", "outage-records", "flaky", "failure-rate", "retry-attempts", "external", "nats-url"} {
					if fl.Changed(f) {
						return fmt.Errorf("--nodes runs without --%s (it starts its own nodes and injects only poison records)", f)
					}
				}
				if !fl.Changed("maximum-retry-attempts") {
					cfg.MaximumRetryAttempts = 2 // a batch that fails while a node dies is retried, not discarded
				}
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				nodes.Binary, nodes.CPUProfile = exe, g.cpuProf // --cpuprofile: the nodes' too, in <file>.node-<i>
				cfg.Logger, cfg.Progress = g.logger(), progressTo(quiet)
				return runAndReport(cmd, func() (*demo.Result, error) { return demo.RunNodes(cmd.Context(), cfg, nodes) },
					printNodes, jsonPath, (*demo.Result).Check)
			}
			if external {
				for _, f := range []string{"outage", "outage-at", "outage-records", "flaky", "failure-rate", "retry-attempts"} {
					if fl.Changed(f) {
						return fmt.Errorf("--external runs without --%s (only poison records are injected)", f)
					}
				}
				if cfg.MaximumRetryAttempts > 3 {
					return fmt.Errorf("--external: --maximum-retry-attempts is 0..3")
				}
				cfg.Logger, cfg.Progress = g.logger(), progressTo(quiet)
				return runAndReport(cmd, func() (*demo.Result, error) { return demo.RunExternal(cmd.Context(), cfg) },
					printExternal, jsonPath, (*demo.Result).Check)
			}
			if outage || fl.Changed("outage-at") || fl.Changed("outage-records") {
				if fl.Changed("poison") {
					return fmt.Errorf("--outage runs without poison records (they would stay unrecoverable by design): drop --poison")
				}
				if !fl.Changed("retry-attempts") {
					cfg.RetryAttempts = 0 // the outage mode's short RetryPolicy
				}
				cfg.Outage = &outageCfg
			}
			cfg.Logger, cfg.Progress = g.logger(), progressTo(quiet)
			return runAndReport(cmd, func() (*demo.Result, error) { return demo.Run(cmd.Context(), cfg) },
				func(w io.Writer, res *demo.Result) {
					if res.Incident != nil {
						printIncident(w, res.Incident)
					}
					printDemo(w, res)
				}, jsonPath, func(res *demo.Result) error {
					if err := res.Check(); err != nil {
						return err
					}
					if inc := res.Incident; inc != nil && (!inc.AlarmFired || inc.OutageRecovered != inc.OutageRecords || res.Unrecoverable != 0) {
						return fmt.Errorf("incident not recovered: alarm_fired=%v outage records recovered %d of %d, unrecoverable %d",
							inc.AlarmFired, inc.OutageRecovered, inc.OutageRecords, res.Unrecoverable)
					}
					return nil
				})
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 0, "run on the first N rows only (0: all 3,000,000)")
	f.StringVar(&jsonPath, "json", "", "write the reconciliation as JSON to this file")
	f.StringVar(&cfg.DataPath, "data", "", "another flights parquet file to read (default: the copy of data/flights-3m.parquet embedded in the binary)")
	f.IntVar(&cfg.Shards, "shards", 4, "shards of the flights stream")
	f.IntVar(&cfg.BatchSize, "batch-size", 500, "BatchSize of the mapping")
	f.IntVar(&cfg.ParallelizationFactor, "parallelization-factor", 1, "ParallelizationFactor of the mapping")
	f.IntVar(&cfg.MaximumRetryAttempts, "maximum-retry-attempts", 0, "MaximumRetryAttempts of the stream mapping (0: a record failing alone goes to the Retry-DLQ)")
	f.Float64Var(&cfg.FailureRate, "failure-rate", 0.02, "share of invocations that fail transiently, at most 0.3 (0 or negative: none); above it a flaky record can spend all its Retry-DLQ attempts on injected failures and the run cannot reconcile")
	f.IntVar(&cfg.PoisonRecords, "poison", 10, "number of poison records, which always fail (0 or negative: none)")
	f.IntVar(&cfg.FlakyRecords, "flaky", 20, "number of flaky records, which fail their first 2 attempts (0 or negative: none)")
	f.IntVar(&cfg.RetryAttempts, "retry-attempts", 4, "attempts through the Retry-DLQ before a message moves to the Unrecoverable-DLQ")
	f.BoolVar(&outage, "outage", false, "induce a downstream outage, show the alarm, fix it and redrive the DLQ (the incident story)")
	f.Int64Var(&outageCfg.At, "outage-at", 0, "first row of the outage (0: a third of the way through; implies --outage)")
	f.Int64Var(&outageCfg.Records, "outage-records", 0, "rows the outage lasts (0: min(2000, a tenth of the run); implies --outage)")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the run's data directory")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	f.BoolVar(&external, "external", false, "run through the AWS endpoint: aws-sdk-go-v2 producer, aws-lambda-go function binary (needs the Go toolchain and runnel's source tree: it runs go build)")
	f.IntVar(&nodes.Nodes, "nodes", 0, "run on this many runnel nodes (1..9), each a separate process (runnel serve) of one embedded NATS cluster with replicas 3; 0: one process")
	f.Float64Var(&nodes.KillAt, "kill-node-at", 0.5, "with --nodes: once this share of the rows is put, kill the node running the mapping with SIGKILL and start it again (0: no kill)")
	f.BoolVar(&nodes.KillMetaLeader, "kill-meta-leader", false, "with --nodes and --kill-node-at: kill the JetStream meta leader's node instead of the node running the mapping")
	flagAtLeast(f, "records", &cfg.Records, 0)
	flagRange(f, "shards", &cfg.Shards, 1, stream.MaxShardCount)
	flagRange(f, "batch-size", &cfg.BatchSize, 1, mapping.MaxBatchSize)
	flagRange(f, "parallelization-factor", &cfg.ParallelizationFactor, 1, mapping.MaxParallelizationFactor)
	flagRange(f, "maximum-retry-attempts", &cfg.MaximumRetryAttempts, 0, mapping.MaxMaximumRetryAttempts)
	flagFloatRange(f, "failure-rate", &cfg.FailureRate, math.Inf(-1), maxFailureRate,
		"0 or negative: none; above 0.3 a flaky record can spend all its Retry-DLQ attempts on injected failures and end unrecoverable, so the run cannot reconcile")
	flagAtLeast(f, "retry-attempts", &cfg.RetryAttempts, 1)
	flagAtLeast(f, "outage-at", &outageCfg.At, 0)
	flagAtLeast(f, "outage-records", &outageCfg.Records, 0)
	flagNodes(f, &nodes.Nodes)
	flagFloatRange(f, "kill-node-at", &nodes.KillAt, 0, 1, "")
	fan := fanoutCmd(g)
	fan.Args = cobra.NoArgs
	cmd.AddCommand(tradesCmd(g))
	cmd.AddCommand(fan)
	return cmd
}

const (
	// maxFailureRate bounds demo --failure-rate. A flaky record fails its
	// first 2 attempts that reach it; injected transient failures (and a
	// failing neighbour in its batch) take attempts from it on the stream
	// and on the Retry-DLQ, whose RetryPolicy attempts can then run out:
	// the record ends unrecoverable and the run cannot reconcile. Measured
	// (seed 2001): 1 and 0.9 fail every run, 0.5 failed one run of 2,000
	// records; 0.3 and 0.4 reconciled every run tried (2,000 and 20,000
	// records). 0.3 keeps a margin.
	maxFailureRate = 0.3
	// maxDemoNodes bounds demo --nodes (and demo trades --nodes): each
	// node is a whole runnel process on this machine (its NATS server,
	// JetStream store and AWS endpoint) while JetStream keeps 3 replicas
	// whatever the count, so more nodes only compete for the machine's
	// cores and memory.
	maxDemoNodes = 9
)

// flagNodes makes --nodes of fs refuse a count outside 0..maxDemoNodes,
// saying why.
func flagNodes(fs *pflag.FlagSet, p *int) {
	flagCheck(fs, "nodes", p, func(n int) error {
		if n < 0 || n > maxDemoNodes {
			return fmt.Errorf("out of range: must be between 0 and %d (0: one process; each node is a whole runnel process on this machine and JetStream keeps 3 replicas whatever the count, so more only compete for its cores and memory)", maxDemoNodes)
		}
		return nil
	})
}

func printDemo(w io.Writer, r *demo.Result) {
	printTop(w, "\nTop airports by flights (from the pipeline):", r)
	fmt.Fprintf(w, `
Reconciliation (records in = processed + unrecoverable; lost = neither):
  records in                  %d
  processed (unique)          %d  (of them recovered through the Retry-DLQ: %d)
  sent to the Retry-DLQ       %d  (Retry-DLQ messages handled: %d)
  unrecoverable               %d  (in the Unrecoverable-DLQ; poison injected %d, of them unrecoverable %d; flaky injected %d)
  lost                        %d
  deliveries                  %d  (redeliveries %d; %d invocations, %d of them failed: an error, or failed Retry-DLQ messages reported)
  statistics match parquet    %v%s
  elapsed                     %.1f s  (%.0f records/s)
  end-to-end latency          p50 %.0f ms, p99 %.0f ms
  peak RSS                    %.0f MiB
`, r.RecordsIn, r.ProcessedUnique, r.Recovered, r.ToFailureDestination, r.RetriedMessages,
		r.Unrecoverable, r.PoisonInjected, r.PoisonInFailDest, r.FlakyInjected, r.Lost,
		r.Deliveries, r.Redeliveries, r.Invocations, r.FailedInvokes, r.StatsMatch, diff(r.StatsDiff),
		r.ElapsedS, r.RecordsPerS, r.Latency.P50, r.Latency.P99, r.PeakRSSMiB)
}

// runAndReport runs a demo, prints its result, writes it as JSON to
// jsonPath when set, and returns verdict's judgement of it (an error
// makes the command fail).
func runAndReport[R any](cmd *cobra.Command, run func() (*R, error), print func(io.Writer, *R), jsonPath string, verdict func(*R) error) error {
	res, err := run()
	if err != nil && cmd.Context().Err() != nil && !strings.Contains(err.Error(), "interrupted") {
		// Ctrl-C at a point that returned the bare context error.
		return fmt.Errorf("interrupted before the run finished; not reconciled: %w", err)
	}
	if err != nil {
		return err
	}
	print(cmd.OutOrStdout(), res)
	if jsonPath != "" {
		if err := writeJSON(jsonPath, res); err != nil {
			return err
		}
	}
	return verdict(res)
}

// writeJSON writes v as indented JSON to the file at path.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// progressTo is where a demo's progress goes: stderr, or nowhere with
// --quiet.
func progressTo(quiet bool) io.Writer {
	if quiet {
		return nil
	}
	return os.Stderr
}

// printTop prints the top airports of a run's result under title.
func printTop(w io.Writer, title string, r *demo.Result) {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "airport\tflights\tavg delay (min)\tmax delay (min)\tdelayed >15 min\t")
	for _, a := range r.Top {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%.1f%%\t\n", a.Airport, a.Flights, a.AvgDelay(), a.MaxDelay, 100*a.ShareDelayed())
	}
	tw.Flush()
}

// printExternal prints the reconciliation of demo --external.
func printExternal(w io.Writer, r *demo.Result) {
	printReconciliation(w, r)
	fmt.Fprintf(w, "  peak RSS                    %.0f MiB\n", r.PeakRSSMiB)
}

// printReconciliation is the reconciliation of demo --external and
// --nodes, without the peak RSS line.
func printReconciliation(w io.Writer, r *demo.Result) {
	printTop(w, "\nTop airports by flights (from the function's results):", r)
	fmt.Fprintf(w, `
Reconciliation (records in = processed + on-failure queue; lost = neither):
  records in                  %d
  processed (unique)          %d  (in %d stored batch results; %d records reported twice)
  to the on-failure queue     %d  (poison injected %d, of them in the on-failure queue %d; not processed %d)
  lost                        %d
  statistics match parquet    %v%s
  elapsed                     %.1f s  (%.0f records/s)
`, r.RecordsIn, r.ProcessedUnique, r.Invocations, r.Redeliveries, r.ToFailureDestination, r.PoisonInjected, r.PoisonInFailDest,
		r.Unrecoverable, r.Lost, r.StatsMatch, diff(r.StatsDiff), r.ElapsedS, r.RecordsPerS)
}

// printNodes prints the reconciliation of demo --nodes.
// The per-node figures count the records stored twice by a retried
// PutRecords (each position processed once), so they add up to processed
// (unique) + stored twice, which it prints; the peak RSS lines tell the
// largest node's from the driver's.
func printNodes(w io.Writer, r *demo.Result) {
	printReconciliation(w, r)
	fmt.Fprintf(w, "  stored twice                %d  (records a retried PutRecords stored again at another position; processed once more, not reconciled twice)\n", r.StoredTwice)
	if r.NodePeakRSSMiB > 0 {
		fmt.Fprintf(w, "  peak RSS of a node          %.0f MiB  (the largest node process)\n", r.NodePeakRSSMiB)
	}
	fmt.Fprintf(w, "  peak RSS of this driver     %.0f MiB  (the producer and reconciliation, not a node)\n", r.PeakRSSMiB)
	fmt.Fprintf(w, "  nodes                       %d  (killed with SIGKILL and restarted: %d)\n", r.Nodes, r.NodeKills)
	var sum int64
	for _, n := range r.RecordsByNode {
		sum += n
	}
	fmt.Fprintf(w, "  processed per node          %d  (= processed (unique) %d + stored twice %d)\n", sum, r.ProcessedUnique, r.StoredTwice)
	names := slices.Sorted(maps.Keys(r.RecordsByNode))
	for _, n := range names {
		fmt.Fprintf(w, "  processed by %-14s %d  (%.1f%%)\n", n, r.RecordsByNode[n], 100*float64(r.RecordsByNode[n])/float64(max(sum, 1)))
	}
}

func diff(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}

func printIncident(w io.Writer, inc *demo.Incident) {
	fmt.Fprintf(w, `
Incident: a downstream outage on rows %d..%d (%d records): the function failed every one of them
until the fix, so each went stream -> Retry-DLQ -> %d attempts -> Unrecoverable-DLQ.

runnel status, evaluated once the run had settled (%d alarms in ALARM):
`, inc.OutageAt, inc.OutageAt+inc.OutageRecords-1, inc.OutageRecords, inc.RetryAttempts, len(inc.InAlarm))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  STATE\tALARM\tVALUE\tTHRESHOLD\tMESSAGE")
	for _, a := range inc.InAlarm {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", a.State, a.Name, alarmValue(a.Value, a.Unit), alarmValue(a.Threshold, a.Unit), a.Message)
	}
	tw.Flush()
	fmt.Fprintf(w, `
  alarm fired                 %v  (%s: %g messages in the Unrecoverable-DLQ, %d records)
  fix                         fixing the outage; redriving the Unrecoverable-DLQ to the Retry-DLQ
                              (runnel dlq redrive %s), which the same function consumes
  redriven                    %d messages in %d round(s)
  recovered after the fix     %d records in %.1f s  (outage records recovered: %d of %d; processed before the fix: %d)
  duplicates prevented        %d  (records already counted, skipped by the shard+sequence dedupe)
  DLQ alarm after recovery    %s
`, inc.AlarmFired, inc.Alarm.Name, inc.Alarm.Value, inc.UnrecoverableBeforeFix, inc.Unrecoverable,
		inc.Redriven, inc.RedriveRounds, inc.RecoveredAfterFix, inc.RecoveryS, inc.OutageRecovered, inc.OutageRecords,
		inc.OutageProcessedBeforeFix, inc.DuplicatesPrevented, inc.AlarmAfter.State)
	if len(inc.ReplayAlternative) > 0 {
		fmt.Fprintln(w, "\n  The alternative, runnel replay of the affected ranges, would re-send records that had succeeded")
		fmt.Fprintln(w, "  (skipped by the dedupe) and invoke the function directly, without the Retry-DLQ's retries:")
		for _, r := range inc.ReplayAlternative {
			fmt.Fprintf(w, "    runnel replay --stream %s --shard %s --from-seq %s --to-seq %s --to-function flight-stats  # %d records, %d already processed\n",
				inc.Stream, r.Shard, r.FromSeq, r.ToSeq, r.Records, r.AlreadyProcessed)
		}
	}
}

func alarmValue(v float64, unit string) string {
	if unit == "ratio" {
		return fmt.Sprintf("%.4g%%", v*100)
	}
	if unit == "ms" {
		return fmt.Sprintf("%gms", v)
	}
	return fmt.Sprintf("%g", v)
}
