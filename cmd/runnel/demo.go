package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/demo"
)

func demoCmd(g *globals) *cobra.Command {
	var cfg demo.Config
	var jsonPath string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Put real flight records through a stream and a function, with failures injected, and reconcile",
		Long: `demo puts every flight of data/flights-3m.parquet (3,000,000 US flights of 2001,
U.S. Bureau of Transportation Statistics) into a stream with the origin airport
as partition key. An event source mapping (BatchSize 500, BisectBatchOnFunctionError,
MaximumRetryAttempts 0) feeds a function that computes per-airport statistics,
with the two-tier dead-letter design: the stream's on-failure destination is a
Retry-DLQ queue, consumed by the same function with exponential backoff and full
jitter; what still fails after 4 attempts moves to the Unrecoverable-DLQ. The
demo makes a share of invocations fail transiently, marks some records flaky
(they fail twice, then recover through the Retry-DLQ) and some poison (they
always fail and end in the Unrecoverable-DLQ); bisect isolates them while
everything else is processed.

At the end it reconciles: records in = processed + unrecoverable, lost = 0, and
the statistics equal an independent computation straight from the parquet file
without the unrecoverable records.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.DataDir, cfg.NATSURL = g.dataDir, g.natsURL
			cfg.Logger = g.logger()
			if !quiet {
				cfg.Progress = os.Stderr
			}
			res, err := demo.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			printDemo(cmd.OutOrStdout(), res)
			if jsonPath != "" {
				b, _ := json.MarshalIndent(res, "", "  ")
				if err := os.WriteFile(jsonPath, append(b, '\n'), 0o644); err != nil {
					return err
				}
			}
			if res.Lost != 0 || !res.StatsMatch {
				return fmt.Errorf("reconciliation failed: lost=%d stats_match=%v", res.Lost, res.StatsMatch)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 0, "run on the first N rows only (0: all 3,000,000)")
	f.StringVar(&jsonPath, "json", "", "write the reconciliation as JSON to this file")
	f.StringVar(&cfg.DataPath, "data", "data/flights-3m.parquet", "the flights parquet file")
	f.IntVar(&cfg.Shards, "shards", 4, "shards of the flights stream")
	f.IntVar(&cfg.BatchSize, "batch-size", 500, "BatchSize of the mapping")
	f.IntVar(&cfg.ParallelizationFactor, "parallelization-factor", 1, "ParallelizationFactor of the mapping")
	f.IntVar(&cfg.MaximumRetryAttempts, "maximum-retry-attempts", 0, "MaximumRetryAttempts of the stream mapping (0: a record failing alone goes to the Retry-DLQ)")
	f.Float64Var(&cfg.FailureRate, "failure-rate", 0.02, "share of invocations that fail transiently (negative: none)")
	f.IntVar(&cfg.PoisonRecords, "poison", 10, "number of poison records, which always fail (negative: none)")
	f.IntVar(&cfg.FlakyRecords, "flaky", 20, "number of flaky records, which fail their first 2 attempts (negative: none)")
	f.IntVar(&cfg.RetryAttempts, "retry-attempts", 4, "attempts through the Retry-DLQ before a message moves to the Unrecoverable-DLQ")
	f.BoolVar(&cfg.Keep, "keep", false, "keep the run's data directory")
	f.BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	return cmd
}

func printDemo(w io.Writer, r *demo.Result) {
	fmt.Fprintln(w, "\nTop airports by flights (from the pipeline):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "airport\tflights\tavg delay (min)\tmax delay (min)\tdelayed >15 min\t")
	for _, a := range r.Top {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%d\t%.1f%%\t\n", a.Airport, a.Flights, a.AvgDelay(), a.MaxDelay, 100*a.ShareDelayed())
	}
	tw.Flush()
	fmt.Fprintf(w, `
Reconciliation (records in = processed + unrecoverable; lost = neither):
  records in                  %d
  processed (unique)          %d  (of them recovered through the Retry-DLQ: %d)
  sent to the Retry-DLQ       %d  (Retry-DLQ messages handled: %d)
  unrecoverable               %d  (in the Unrecoverable-DLQ; poison injected %d, of them unrecoverable %d; flaky injected %d)
  lost                        %d
  deliveries                  %d  (redeliveries %d; %d invocations, %d failed)
  statistics match parquet    %v%s
  elapsed                     %.1f s  (%.0f records/s)
  end-to-end latency          p50 %.0f ms, p99 %.0f ms
  peak RSS                    %.0f MiB
`, r.RecordsIn, r.ProcessedUnique, r.Recovered, r.ToFailureDestination, r.RetriedMessages,
		r.Unrecoverable, r.PoisonInjected, r.PoisonInFailDest, r.FlakyInjected, r.Lost,
		r.Deliveries, r.Redeliveries, r.Invocations, r.FailedInvokes, r.StatsMatch, diff(r.StatsDiff),
		r.ElapsedS, r.RecordsPerS, r.Latency.P50, r.Latency.P99, r.PeakRSSMiB)
}

func diff(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}
