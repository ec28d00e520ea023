package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/bench"
	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
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
Markdown table (the form of docs/benchmarks/streams.md).

With --nats-url the JetStream must be one no 'runnel serve' uses: the
mapping scenario's handler exists only in the bench process, so a serve
that took its mapping's shards would leave the bench waiting forever; bench
refuses such a JetStream at once, naming the serving node.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.NATSURL = g.natsURL
			if err := nodeset.RefuseShared(cmd.Context(), cfg.NATSURL, "bench", g.logger()); err != nil {
				return err
			}
			cfg.Progress = os.Stderr
			return markdownReport(cmd, out, func() (*bench.Report, error) { return bench.Run(cmd.Context(), cfg) })
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 500_000, "records per scenario")
	f.StringSliceVar(&cfg.Only, "only", nil, "run only these scenarios (comma-separated names, as in the report)")
	f.IntVar(&cfg.RecordSize, "record-size", 100, "bytes of data per record")
	f.IntVar(&cfg.Shards, "shards", 4, "shards")
	f.IntVar(&cfg.BatchSize, "batch-size", 500, "mapping BatchSize")
	f.StringVar(&out, "out", "", "also write the Markdown report to this file")
	flagAtLeast(f, "records", &cfg.Records, 1)
	flagAtLeast(f, "record-size", &cfg.RecordSize, 1)
	flagRange(f, "shards", &cfg.Shards, 1, stream.MaxShardCount)
	flagRange(f, "batch-size", &cfg.BatchSize, 1, mapping.MaxBatchSize)
	cmd.AddCommand(benchEndpointCmd(), benchFunctionsCmd(), benchTablesCmd())
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

// benchSubcommand is a `runnel bench` subcommand: run (with its progress
// on stderr, through *progress) and print its Markdown report, also
// written to --out when given, and the whole report as JSON to --json
// when given.
func benchSubcommand[R interface{ Markdown() string }](use, short, long string, progress *io.Writer, run func(context.Context) (R, error)) *cobra.Command {
	var out, jsonPath string
	cmd := &cobra.Command{
		Use: use, Short: short, Long: long, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			*progress = os.Stderr
			return markdownReport(cmd, out, func() (R, error) {
				rep, err := run(cmd.Context())
				if err == nil && jsonPath != "" {
					err = writeJSON(jsonPath, rep)
				}
				return rep, err
			})
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "also write the Markdown report to this file")
	cmd.Flags().StringVar(&jsonPath, "json", "", "also write the whole report as JSON to this file")
	return cmd
}

// benchFunctionsCmd is `runnel bench functions`: cold start and warm
// invocation overhead of a Go, a Python and a Node.js function that does
// nothing, against the handler run directly by its interpreter.
func benchFunctionsCmd() *cobra.Command {
	var cfg bench.FunctionsConfig
	cmd := benchSubcommand("functions",
		"Measure cold start and warm invocation overhead of Go, Python and Node.js functions against their handler run directly, in one run",
		`functions builds, for a Go (in-process), a python3.12 and a nodejs20.x function whose
handler does nothing, new functions and times their first invocation (the cold start:
for Python and Node.js, this machine's interpreter starting runnel's runtime client),
then times warm invocations of one started environment. In the same run, it times the
same handler run directly: a new python3 or node process importing it, calling it once
and exiting (cold), and a loop calling it in one process (warm). The times and the
overheads are printed as a Markdown table (the form of docs/benchmarks/functions.md). A runtime
whose interpreter is missing is reported as not measured.`,
		&cfg.Progress, func(ctx context.Context) (*bench.FunctionsReport, error) { return bench.RunFunctions(ctx, cfg) })
	f := cmd.Flags()
	f.IntVar(&cfg.Cold, "cold", 10, "cold starts measured per runtime")
	f.IntVar(&cfg.Warm, "warm", 2000, "warm invocations measured per runtime")
	flagAtLeast(f, "cold", &cfg.Cold, 1)
	flagAtLeast(f, "warm", &cfg.Warm, 1)
	return cmd
}

// benchEndpointCmd is `runnel bench endpoint`: PutRecords and GetRecords
// through the AWS endpoint with aws-sdk-go-v2, against kinesalite.
func benchEndpointCmd() *cobra.Command {
	var cfg bench.EndpointConfig
	cmd := benchSubcommand("endpoint",
		"Measure PutRecords and GetRecords through the AWS endpoint with aws-sdk-go-v2, against kinesalite, in one run",
		`endpoint serves runnel's AWS endpoint in this process on a free loopback port and,
when kinesalite is installed (npm install in bench/kinesalite, or --kinesalite), starts
kinesalite on another; then, for each, the aws-sdk-go-v2 Kinesis client creates a stream,
puts the records (PutRecords of 500, --producers at once) and reads them all back
(GetRecords, one reader per shard), and the rates and the ratio runnel/kinesalite are
printed as a Markdown table (the form of docs/benchmarks/kinesis-endpoint.md).`,
		&cfg.Progress, func(ctx context.Context) (*bench.EndpointReport, error) { return bench.RunEndpoint(ctx, cfg) })
	f := cmd.Flags()
	f.IntVar(&cfg.Records, "records", 200_000, "records put and read back through runnel")
	f.IntVar(&cfg.PeerRecords, "kinesalite-records", 0, "records put and read back through kinesalite (0: as many as --records, so both do the same work)")
	f.IntVar(&cfg.RecordSize, "record-size", 100, "bytes of data per record (at least 10)")
	f.IntVar(&cfg.Shards, "shards", 4, "shards of the stream, on both")
	f.IntVar(&cfg.Producers, "producers", 4, "PutRecords calls at once")
	flagAtLeast(f, "records", &cfg.Records, 1)
	flagAtLeast(f, "kinesalite-records", &cfg.PeerRecords, 0)
	flagAtLeast(f, "record-size", &cfg.RecordSize, 10)
	flagRange(f, "shards", &cfg.Shards, 1, stream.MaxShardCount)
	flagAtLeast(f, "producers", &cfg.Producers, 1)
	f.StringVar(&cfg.Kinesalite, "kinesalite", "", `the kinesalite package or its node_modules/.bin/kinesalite ("" finds bench/kinesalite's; "none" measures runnel alone)`)
	return cmd
}

// benchTablesCmd is `runnel bench tables`: DynamoDB's item operations in
// process and through the AWS endpoint with aws-sdk-go-v2, against
// dynalite.
func benchTablesCmd() *cobra.Command {
	var cfg bench.TablesConfig
	cmd := benchSubcommand("tables",
		"Measure DynamoDB item operations in-process and through the AWS endpoint with aws-sdk-go-v2, against dynalite, in one run",
		`tables measures, one after the other on a fresh server and table each, runnel's
table.Service called in this process, runnel's AWS endpoint served in this process on a
free loopback port, and, when dynalite is installed (npm install in bench/dynalite, or
--dynalite), dynalite on another; both endpoints through the same aws-sdk-go-v2 DynamoDB
client code. With --callers calls in flight it times DescribeTable (the client's and
HTTP's own ceiling), PutItem of --items items, GetItem of each, a conditional UpdateItem
of each (ADD n :one if attribute_exists(pk)), BatchWriteItem of --items other items
(25 a call), BatchGetItem of those (100 keys a call), Query of every partition key,
a Scan and a parallel Scan; every item read back is checked. The rates, the ratios
(runnel/dynalite, each operation / DescribeTable) and issue 12's targets are printed
as a Markdown table (the form of docs/benchmarks/tables.md).`,
		&cfg.Progress, func(ctx context.Context) (*bench.TablesReport, error) { return bench.RunTables(ctx, cfg) })
	f := cmd.Flags()
	f.IntVar(&cfg.Items, "items", 20_000, "items written by PutItem, and as many others by BatchWriteItem")
	f.IntVar(&cfg.ItemSize, "item-size", 100, "bytes of each item's data attribute (at least 10)")
	f.IntVar(&cfg.PartitionItems, "partition-items", 25, "items per partition key, what one Query reads (1..1000)")
	f.IntVar(&cfg.Callers, "callers", 8, "calls of an operation in flight at once")
	f.IntVar(&cfg.Describes, "describes", 0, "DescribeTable calls of the baseline (0: as many as --items)")
	f.IntVar(&cfg.ScanSegments, "scan-segments", 0, "TotalSegments of the parallel Scan (0: as many as --callers)")
	flagAtLeast(f, "items", &cfg.Items, 1)
	flagAtLeast(f, "item-size", &cfg.ItemSize, 10)
	flagRange(f, "partition-items", &cfg.PartitionItems, 1, 1000)
	flagAtLeast(f, "callers", &cfg.Callers, 1)
	flagAtLeast(f, "describes", &cfg.Describes, 0)
	flagAtLeast(f, "scan-segments", &cfg.ScanSegments, 0)
	f.StringVar(&cfg.RunnelEndpoint, "runnel-endpoint", "", "measure this running runnel's AWS endpoint (http://ADDR of `runnel serve --aws ADDR`) instead of one served in this process")
	f.StringVar(&cfg.TableIndex, "table-index", "", `where runnel's tables keep their item indexes in this process: disk (the index store, the default) or memory (the heap)`)
	f.StringVar(&cfg.Dynalite, "dynalite", "", `the dynalite package or its node_modules/.bin/dynalite ("" finds bench/dynalite's; "none" measures runnel alone)`)
	return cmd
}
