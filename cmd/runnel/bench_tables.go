package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/bench"
)

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
	f.StringVar(&cfg.RunnelEndpoint, "runnel-endpoint", "", "measure this running runnel's AWS endpoint (http://ADDR of `runnel serve --aws ADDR`) instead of one served in this process")
	f.StringVar(&cfg.Dynalite, "dynalite", "", `the dynalite package or its node_modules/.bin/dynalite ("" finds bench/dynalite's; "none" measures runnel alone)`)
	return cmd
}
