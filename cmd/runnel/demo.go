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
MaximumRetryAttempts 3, an on-failure destination stream) feeds a function that
computes per-airport statistics. The demo makes a share of invocations fail
transiently and marks some records as poison; bisect isolates the poison records
into the failure destination while everything else is processed.

At the end it reconciles: records in = processed + sent to the failure
destination, lost = 0, and the statistics equal an independent computation
straight from the parquet file.`,
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
	f.IntVar(&cfg.MaximumRetryAttempts, "maximum-retry-attempts", 3, "MaximumRetryAttempts of the mapping")
	f.Float64Var(&cfg.FailureRate, "failure-rate", 0.02, "share of invocations that fail transiently (negative: none)")
	f.IntVar(&cfg.PoisonRecords, "poison", 10, "number of poison records (negative: none)")
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
Reconciliation:
  records in                 %d
  processed (unique)         %d
  sent to failure destination %d  (poison injected %d, of them in the destination %d)
  lost                       %d
  deliveries                 %d  (redeliveries %d; %d invocations, %d failed)
  statistics match parquet   %v%s
  elapsed                    %.1f s  (%.0f records/s)
  end-to-end latency         p50 %.0f ms, p99 %.0f ms
  peak RSS                   %.0f MiB
`, r.RecordsIn, r.ProcessedUnique, r.ToFailureDestination, r.PoisonInjected, r.PoisonInFailDest, r.Lost,
		r.Deliveries, r.Redeliveries, r.Invocations, r.FailedInvokes, r.StatsMatch, diff(r.StatsDiff),
		r.ElapsedS, r.RecordsPerS, r.Latency.P50, r.Latency.P99, r.PeakRSSMiB)
}

func diff(d string) string {
	if d == "" {
		return ""
	}
	return " (" + d + ")"
}
