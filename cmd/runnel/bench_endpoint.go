package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/bench"
)

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
	f.StringVar(&cfg.Kinesalite, "kinesalite", "", `the kinesalite package or its node_modules/.bin/kinesalite ("" finds bench/kinesalite's; "none" measures runnel alone)`)
	return cmd
}
