package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/mapping"
)

func mappingsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "mappings",
		Short: "Show event source mappings: state, last processing result and iterator age per shard",
		Long: `mappings lists every event source mapping with its settings and, for running
mappings, each shard's checkpoint, iterator age, pending records, last
processing result and counters. Run against a live 'runnel serve --listen'
with --nats-url to see the running process's pollers; against a data
directory it shows the stored state.`,
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			if asJSON {
				var all []*mapping.Status
				for _, c := range rn.Mappings.ListEventSourceMappings() {
					st, err := rn.Mappings.Status(c.UUID)
					if err != nil {
						return err
					}
					all = append(all, st)
				}
				return printJSON(cmd.OutOrStdout(), all)
			}
			printMappings(cmd.OutOrStdout(), rn, true)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return cmd
}

func printMappings(w io.Writer, rn *runnel.Runnel, settings bool) {
	ms := rn.Mappings.ListEventSourceMappings()
	if len(ms) == 0 {
		fmt.Fprintln(w, "no event source mappings")
		return
	}
	for _, c := range ms {
		fmt.Fprintf(w, "%s  %s -> %s  %s\n", c.UUID, c.EventSourceArn, c.FunctionName, c.State)
		st, err := rn.Mappings.Status(c.UUID)
		if settings {
			fmt.Fprintf(w, "  BatchSize %d, window %ds, ParallelizationFactor %d, MaximumRetryAttempts %d, MaximumRecordAgeInSeconds %d, Bisect %v, FunctionResponseTypes %v, OnFailure %q\n",
				c.BatchSize, c.MaximumBatchingWindowInSeconds, c.ParallelizationFactor, *c.MaximumRetryAttempts, *c.MaximumRecordAgeInSeconds,
				c.BisectBatchOnFunctionError, c.FunctionResponseTypes, destination(c))
		}
		if err != nil || len(st.Shards) == 0 {
			continue
		}
		if !st.Live {
			if st.PublishedAt.IsZero() {
				fmt.Fprintln(w, "  not running; stored checkpoints:")
			} else {
				fmt.Fprintf(w, "  counters as published by the running process at %s:\n", st.PublishedAt.Format(time.RFC3339))
			}
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  shard\tcheckpoint\titerator age\tpending\tprocessed\tdiscarded\tretries\tlast result")
		for _, s := range st.Shards {
			fmt.Fprintf(tw, "  %s\t%s\t%d ms\t%d\t%d\t%d\t%d\t%s\n", s.ShardID, s.Checkpoint, s.IteratorAgeMs, s.PendingRecords,
				s.ProcessedRecords, s.DiscardedRecords, s.Retries, s.LastProcessingResult)
		}
		tw.Flush()
	}
}

func destination(c mapping.Config) string {
	if c.DestinationConfig == nil || c.DestinationConfig.OnFailure == nil {
		return ""
	}
	return c.DestinationConfig.OnFailure.Destination
}
