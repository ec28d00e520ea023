package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/bench"
)

func benchCmd(g *globals) *cobra.Command {
	var cfg bench.Config
	var out string
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure put and mapping throughput against raw JetStream publish and consume, in one run",
		Long: `bench runs, each on a fresh embedded engine, raw JetStream publish and consume
(with and without per-message acks) as the baseline, then runnel's PutRecords and
a mapping into a no-op handler, and prints the rates and their ratios as a
Markdown table (the form of docs/benchmarks.md).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.NATSURL = g.natsURL
			cfg.Progress = os.Stderr
			return markdownReport(cmd, out, func() (*bench.Report, error) { return bench.Run(cmd.Context(), cfg) })
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 500_000, "records per scenario")
	f.IntVar(&cfg.RecordSize, "record-size", 100, "bytes of data per record")
	f.IntVar(&cfg.Shards, "shards", 4, "shards")
	f.IntVar(&cfg.BatchSize, "batch-size", 500, "mapping BatchSize")
	f.StringVar(&out, "out", "", "also write the Markdown report to this file")
	cmd.AddCommand(benchEndpointCmd())
	return cmd
}

// markdownReport runs a benchmark and prints its Markdown report, also
// writing it to out when set.
func markdownReport[R interface{ Markdown() string }](cmd *cobra.Command, out string, run func() (R, error)) error {
	rep, err := run()
	if err != nil {
		return err
	}
	md := rep.Markdown()
	fmt.Fprint(cmd.OutOrStdout(), md)
	if out != "" {
		return os.WriteFile(out, []byte(md), 0o644)
	}
	return nil
}
