package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel"

	"github.com/runnel-dev/runnel/stream"
)

func putCmd(g *globals) *cobra.Command {
	var name, key, data, file string
	cmd := &cobra.Command{
		Use:   "put",
		Short: "Put records into a stream (PutRecord / PutRecords)",
		Long: `put stores one record (--data) or one record per line of a file (--file, "-" for
standard input), in PutRecords calls of up to 500, and prints each record's
shard and sequence number as JSON lines.`,
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			ctx := cmd.Context()
			out := json.NewEncoder(cmd.OutOrStdout())
			flush := func(entries []stream.PutRecordsRequestEntry) error {
				if len(entries) == 0 {
					return nil
				}
				res, err := rn.Streams.PutRecords(ctx, name, entries)
				if err != nil {
					return err
				}
				for _, r := range res.Records {
					out.Encode(r)
				}
				if res.FailedRecordCount > 0 {
					return fmt.Errorf("%d records failed", res.FailedRecordCount)
				}
				return nil
			}
			if file == "" {
				return flush([]stream.PutRecordsRequestEntry{{PartitionKey: key, Data: []byte(data)}})
			}
			var r io.Reader = os.Stdin
			if file != "-" {
				f, err := os.Open(file)
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			sc := bufio.NewScanner(r)
			sc.Buffer(make([]byte, 64<<10), stream.MaxRecordSize)
			var batch []stream.PutRecordsRequestEntry
			for sc.Scan() {
				batch = append(batch, stream.PutRecordsRequestEntry{PartitionKey: key, Data: append([]byte(nil), sc.Bytes()...)})
				if len(batch) == stream.MaxPutRecords {
					if err := flush(batch); err != nil {
						return err
					}
					batch = batch[:0]
				}
			}
			if err := sc.Err(); err != nil {
				return err
			}
			return flush(batch)
		}),
	}
	cmd.Flags().StringVar(&name, "stream", "", "stream name (required)")
	cmd.Flags().StringVar(&key, "partition-key", "", "partition key (required)")
	cmd.Flags().StringVar(&data, "data", "", "record data")
	cmd.Flags().StringVar(&file, "file", "", "put one record per line of this file (- for stdin)")
	cmd.MarkFlagRequired("stream")
	cmd.MarkFlagRequired("partition-key")
	return cmd
}

// jsonRecord is how get prints a record.
type jsonRecord struct {
	SequenceNumber              string
	ApproximateArrivalTimestamp time.Time
	PartitionKey                string
	Data                        string
}

func getCmd(g *globals) *cobra.Command {
	var in stream.GetShardIteratorInput
	var limit int
	var at string
	var follow bool
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Read a shard from an iterator (GetShardIterator + GetRecords)",
		Long: `get reads records of one shard, starting where --iterator-type says, and prints
them as JSON lines (data as text). With --follow it keeps reading new records.
MillisBehindLatest goes to standard error.`,
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			ctx := cmd.Context()
			if at != "" {
				var err error
				if in.Timestamp, err = time.Parse(time.RFC3339, at); err != nil {
					return fmt.Errorf("--timestamp: %w", err)
				}
			}
			it, err := rn.Streams.GetShardIterator(ctx, in)
			if err != nil {
				return err
			}
			out := json.NewEncoder(cmd.OutOrStdout())
			for {
				res, err := rn.Streams.GetRecords(ctx, it, limit)
				if err != nil {
					return err
				}
				for _, r := range res.Records {
					out.Encode(jsonRecord{r.SequenceNumber, r.ApproximateArrivalTimestamp, r.PartitionKey, string(r.Data)})
				}
				it = res.NextShardIterator
				if !follow {
					fmt.Fprintf(cmd.ErrOrStderr(), "records %d, MillisBehindLatest %d\n", len(res.Records), res.MillisBehindLatest)
					return nil
				}
				if len(res.Records) == 0 {
					select {
					case <-ctx.Done():
						return nil
					case <-time.After(time.Second):
					}
				}
			}
		}),
	}
	f := cmd.Flags()
	f.StringVar(&in.StreamName, "stream", "", "stream name (required)")
	f.StringVar(&in.ShardID, "shard", stream.ShardID(0), "shard id")
	f.StringVar(&in.ShardIteratorType, "iterator-type", stream.TrimHorizon, "TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER or AT_TIMESTAMP")
	f.StringVar(&in.StartingSequenceNumber, "sequence-number", "", "with AT_/AFTER_SEQUENCE_NUMBER")
	f.StringVar(&at, "timestamp", "", "with AT_TIMESTAMP (RFC 3339)")
	f.IntVar(&limit, "limit", 100, "GetRecords Limit (1..10000)")
	flagRange(f, "limit", &limit, 1, stream.MaxGetRecordsLimit)
	f.BoolVar(&follow, "follow", false, "keep reading new records")
	cmd.MarkFlagRequired("stream")
	return cmd
}

func streamsCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "streams", Short: "Create, list, describe and delete streams"}
	var in stream.CreateStreamInput
	create := &cobra.Command{
		Use: "create NAME", Short: "CreateStream", Args: cobra.ExactArgs(1),
		RunE: g.withCreate(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			in.StreamName = args[0]
			d, err := rn.Streams.CreateStream(cmd.Context(), in)
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), d)
		}),
	}
	create.Flags().IntVar(&in.ShardCount, "shards", 1, "ShardCount (1..1024)")
	create.Flags().IntVar(&in.RetentionPeriodHours, "retention-hours", 24, "RetentionPeriodHours (24..8760)")
	flagRange(create.Flags(), "shards", &in.ShardCount, 1, stream.MaxShardCount)
	flagRange(create.Flags(), "retention-hours", &in.RetentionPeriodHours, stream.MinRetentionPeriodHours, stream.MaxRetentionPeriodHours)
	list := &cobra.Command{
		Use: "list", Short: "ListStreams",
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			names, err := rn.Streams.ListStreams(cmd.Context())
			if err != nil {
				return err
			}
			for _, n := range names {
				fmt.Fprintln(cmd.OutOrStdout(), n)
			}
			return nil
		}),
	}
	describe := &cobra.Command{
		Use: "describe NAME", Short: "DescribeStream", Args: cobra.ExactArgs(1),
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			d, err := rn.Streams.DescribeStream(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printJSON(cmd.OutOrStdout(), d)
		}),
	}
	var enforce bool
	del := &cobra.Command{
		Use: "delete NAME", Short: "DeleteStream (and its records); refused while it has consumers, unless --enforce-consumer-deletion", Args: cobra.ExactArgs(1),
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			return rn.Streams.DeleteStreamEnforce(cmd.Context(), args[0], enforce)
		}),
	}
	del.Flags().BoolVar(&enforce, "enforce-consumer-deletion", false, "delete the stream's registered consumers with it (EnforceConsumerDeletion)")
	cmd.AddCommand(create, list, describe, del)
	return cmd
}

func printJSON(w io.Writer, v any) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(v)
}
