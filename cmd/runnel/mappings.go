package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
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
			printSettings(w, c)
		}
		if err == nil && st.Queue != nil {
			q := st.Queue
			fmt.Fprintf(w, "  queue %s: %d pollers, %d invocations, %d received, %d deleted, %d failed, %d moved to the dead-letter queue, last result %s\n",
				q.QueueURL, q.Pollers, q.Invocations, q.ReceivedMessages, q.DeletedMessages, q.FailedMessages, q.MovedToDeadLetter, q.LastProcessingResult)
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

// printSettings prints a mapping's settings line: a queue mapping's own
// (BatchSize, window, MaximumConcurrency, FunctionResponseTypes,
// RetryPolicy), a stream's (BatchSize, window, ParallelizationFactor,
// MaximumRetryAttempts, MaximumRecordAgeInSeconds, Bisect,
// FunctionResponseTypes, OnFailure). A setting not set prints as "-"
// (MaximumRetryAttempts and MaximumRecordAgeInSeconds are nil for a queue
// mapping: the line used to dereference them and panic).
func printSettings(w io.Writer, c mapping.Config) {
	if strings.HasPrefix(c.EventSourceArn, "arn:aws:sqs:") {
		conc, retry := "-", "none (a failed message is visible again after the queue's VisibilityTimeout)"
		if c.ScalingConfig != nil {
			conc = strconv.Itoa(c.ScalingConfig.MaximumConcurrency)
		}
		if p := c.RetryPolicy; p != nil {
			retry = fmt.Sprintf("BaseDelaySeconds %d, MaxDelaySeconds %d, MaxAttempts %d, MaximumAgeInSeconds %d",
				p.BaseDelaySeconds, p.MaxDelaySeconds, p.MaxAttempts, p.MaximumAgeInSeconds)
		}
		fmt.Fprintf(w, "  BatchSize %d, window %ds, MaximumConcurrency %s, FunctionResponseTypes %v, RetryPolicy %s\n",
			c.BatchSize, c.MaximumBatchingWindowInSeconds, conc, c.FunctionResponseTypes, retry)
		return
	}
	fmt.Fprintf(w, "  BatchSize %d, window %ds, ParallelizationFactor %d, MaximumRetryAttempts %s, MaximumRecordAgeInSeconds %s, Bisect %v, FunctionResponseTypes %v, OnFailure %q\n",
		c.BatchSize, c.MaximumBatchingWindowInSeconds, c.ParallelizationFactor, optInt(c.MaximumRetryAttempts), optInt(c.MaximumRecordAgeInSeconds),
		c.BisectBatchOnFunctionError, c.FunctionResponseTypes, destination(c))
}

// optInt is *p, or "-" when p is nil.
func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return strconv.Itoa(*p)
}

func destination(c mapping.Config) string {
	if c.DestinationConfig == nil || c.DestinationConfig.OnFailure == nil {
		return ""
	}
	return c.DestinationConfig.OnFailure.Destination
}
