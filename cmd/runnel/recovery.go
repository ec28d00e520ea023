package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/builtin"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// errAborted is returned when the operator does not confirm.
var errAborted = errors.New("aborted: nothing done")

// confirm prints what a command is about to do (to standard error, so
// standard output stays the result) and, unless yes, asks for "y".
func confirm(cmd *cobra.Command, yes bool, plan string) error {
	w := cmd.ErrOrStderr()
	fmt.Fprintln(w, plan)
	if yes {
		return nil
	}
	fmt.Fprint(w, "Proceed? [y/N] ")
	line, _ := bufio.NewReader(cmd.InOrStdin()).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return nil
	}
	return errAborted
}

// bar is a progress bar on standard error when it is a terminal, else
// nothing.
type bar struct{ b *progressbar.ProgressBar }

func newBar(cmd *cobra.Command, total int64, what string) *bar {
	f, ok := cmd.ErrOrStderr().(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return &bar{}
	}
	return &bar{progressbar.NewOptions64(max(total, 1), progressbar.OptionSetWriter(f), progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(30), progressbar.OptionClearOnFinish())}
}

func (b *bar) set(done, total int64) {
	if b.b == nil {
		return
	}
	if total > 0 && total != b.b.GetMax64() {
		b.b.ChangeMax64(total)
	}
	b.b.Set64(done)
}

func (b *bar) finish() {
	if b.b != nil {
		b.b.Finish()
	}
}

// withHandlers is g.with with the built-in handlers registered, so that
// functions using them can be invoked (replay --to-function).
func (g *globals) withHandlers(fn func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		streams := builtin.Register(g.logger())
		rn, err := g.open(cmd.Context())
		if err != nil {
			return err
		}
		defer rn.Close()
		streams.Use(rn.Streams)
		streams.UseMappings(rn.Mappings)
		return fn(cmd, args, rn)
	}
}

func dlqCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Inspect, redrive, purge and archive dead-letter queues",
		Long: `dlq works on dead-letter queues, the queues 'runnel status' raises dlq-depth
alarms for: RedrivePolicy targets of queues and SNS subscriptions, mappings'
on-failure destinations, functions' asynchronous OnFailure destinations and
DeadLetterConfig queues, rules' and schedules' dead-letter queues, runnel's
asynchronous dead-letter store, and queues named like *-dlq / *dead-letter*.

Looking at messages (show) receives them and sets their visibility back to 0 at
once, as the AWS console does: each look adds one to their
ApproximateReceiveCount (show reports the count before its own look). list reads
the oldest message's age from the queue's index and receives nothing.`,
	}
	cmd.AddCommand(dlqListCmd(g), dlqShowCmd(g), dlqRedriveCmd(g), dlqPurgeCmd(g), dlqArchiveCmd(g))
	return cmd
}

func dlqListCmd(g *globals) *cobra.Command {
	var asJSON, all, noAge bool
	cmd := &cobra.Command{
		Use: "list", Short: "List dead-letter queues with their depth and the age of their oldest message",
		Args: cobra.NoArgs,
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			qs, err := recovery.ListQueues(cmd.Context(), rn.Queues, recovery.ListOptions{DLQOnly: !all, Age: !noAge, Now: rn.Engine.Clock.Now(),
				DeadLetterFor: deadLetterQueues(cmd.Context(), rn)})
			if err != nil {
				return err
			}
			if asJSON {
				if qs == nil {
					qs = []recovery.QueueSummary{}
				}
				return printJSON(cmd.OutOrStdout(), qs)
			}
			if len(qs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no dead-letter queues")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "queue\tdlq\tvisible\tin flight\tdelayed\toldest\tsources\tdead letters of")
			for _, q := range qs {
				age := "-"
				if q.OldestSent != nil {
					age = (time.Duration(q.OldestAgeSeconds) * time.Second).String()
				}
				fmt.Fprintf(tw, "%s\t%v\t%d\t%d\t%d\t%s\t%s\t%s\n", q.Name, q.IsDLQ, q.Visible, q.InFlight, q.Delayed, age,
					cmp.Or(strings.Join(q.Sources, ","), "-"), cmp.Or(strings.Join(q.DeadLetterFor, "; "), "-"))
			}
			return tw.Flush()
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().BoolVar(&all, "all", false, "list every queue, not only dead-letter queues")
	cmd.Flags().BoolVar(&noAge, "no-age", false, "don't read the age of the oldest message (nothing is received either way)")
	return cmd
}

// deadLetterQueues classifies the dead-letter queues as 'runnel status'
// and the web page do (observe.Take's QueueState.DeadLetterFor): queue
// name -> why it is one. Never nil, so ListQueues uses it and not its
// name heuristic alone.
func deadLetterQueues(ctx context.Context, rn *runnel.Runnel) map[string][]string {
	out := map[string][]string{}
	for _, q := range observe.Take(ctx, rn, observe.TakeOptions{Passive: true}).Queues {
		if q.DeadLetter {
			out[q.Name] = q.DeadLetterFor
		}
	}
	return out
}

func dlqShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	var o recovery.InspectOptions
	cmd := &cobra.Command{
		Use: "show QUEUE", Short: "Show a dead-letter queue: counts, age, error breakdown and a page of messages",
		Args: cobra.ExactArgs(1),
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			o.Now = rn.Engine.Clock.Now()
			in, err := recovery.Inspect(cmd.Context(), rn.Queues, args[0], o)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(cmd.OutOrStdout(), in)
			}
			printInspection(cmd.OutOrStdout(), in)
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	cmd.Flags().IntVar(&o.Limit, "limit", 10, "messages to show (at least 1)")
	cmd.Flags().IntVar(&o.Scan, "scan", 1000, "messages to look at for the breakdown (at least 1; at least --limit are)")
	flagAtLeast(cmd.Flags(), "limit", &o.Limit, 1)
	flagAtLeast(cmd.Flags(), "scan", &o.Scan, 1)
	return cmd
}

func printInspection(w io.Writer, in *recovery.Inspection) {
	fmt.Fprintf(w, "%s: %d visible, %d in flight, %d delayed", in.Queue, in.Visible, in.InFlight, in.Delayed)
	if len(in.Sources) > 0 {
		fmt.Fprintf(w, "; dead-letter queue of %s", strings.Join(in.Sources, ", "))
	}
	fmt.Fprintln(w)
	if in.OldestSent != nil {
		fmt.Fprintf(w, "oldest message sent %s (%s ago)\n", in.OldestSent.Format(time.RFC3339), time.Duration(in.OldestAgeSeconds)*time.Second)
	}
	if in.Warning != "" {
		fmt.Fprintln(w, "warning:", in.Warning)
	}
	fmt.Fprintf(w, "looked at %d messages:\n", in.Scanned)
	for _, b := range []struct {
		name string
		m    map[string]int
	}{{"kind", in.ByKind}, {"condition", in.ByCondition}, {"error type", in.ByErrorType}} {
		fmt.Fprintf(w, "  by %s: %s\n", b.name, counts(b.m))
	}
	for _, m := range in.Messages {
		fmt.Fprintf(w, "\n%s  sent %s  receives %d  %s", m.MessageId, m.SentTimestamp.Format(time.RFC3339), m.ReceiveCount, m.Kind)
		if m.Condition != "" {
			fmt.Fprintf(w, "  %s", m.Condition)
		}
		if m.ErrorType != "" {
			fmt.Fprintf(w, "  %s", m.ErrorType)
		}
		if m.ErrorMessage != "" {
			fmt.Fprintf(w, ": %s", m.ErrorMessage)
		}
		fmt.Fprintln(w)
		if m.InvokeCount > 0 {
			fmt.Fprintf(w, "  invocations %d (function %s, request %s)\n", m.InvokeCount, m.FunctionArn, m.RequestID)
		}
		if m.Attempt > 0 {
			fmt.Fprintf(w, "  retry attempt %d, first at %s\n", m.Attempt, m.InitialTimestamp.Format(time.RFC3339))
		}
		if m.ShardID != "" {
			fmt.Fprintf(w, "  %s %s %s..%s (%d records)\n", m.StreamArn, m.ShardID, m.StartSequenceNumber, m.EndSequenceNumber, m.BatchSize)
		}
		if m.DeadLetterQueueSourceArn != "" {
			fmt.Fprintf(w, "  from %s\n", m.DeadLetterQueueSourceArn)
		}
		body := m.Body
		if len(body) > 300 {
			body = body[:300] + "..."
		}
		fmt.Fprintf(w, "  body: %s\n", body)
	}
}

func counts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}

// depthOf returns a queue's visible, in-flight and delayed counts.
func depthOf(ctx context.Context, rn *runnel.Runnel, name string) (recovery.QueueSummary, error) {
	qs, err := recovery.ListQueues(ctx, rn.Queues, recovery.ListOptions{})
	if err != nil {
		return recovery.QueueSummary{}, err
	}
	for _, q := range qs {
		if q.Name == name {
			return q, nil
		}
	}
	_, err = rn.Queues.GetQueueURL(ctx, name)
	return recovery.QueueSummary{}, err
}

func dlqRedriveCmd(g *globals) *cobra.Command {
	var op queueOp
	var o recovery.RedriveOptions
	cmd := g.queueCmd(&cobra.Command{
		Use: "redrive QUEUE", Short: "Move a dead-letter queue's messages back to their source queues, or to --to, at --rate",
	}, &op, func(cmd *cobra.Command, rn *runnel.Runnel, name string, q recovery.QueueSummary) error {
		to := "each message's source queue"
		if len(q.Sources) > 0 {
			to += " (" + strings.Join(q.Sources, ", ") + ")"
		}
		if o.To != "" {
			to = "queue " + o.To
		}
		rate := o.Rate
		if rate == 0 {
			rate = 500
		}
		plan := fmt.Sprintf("redrive: move the %d visible messages of %s to %s, at most %d per second", q.Visible, name, to, rate)
		if err := confirm(cmd, op.yes, plan); err != nil {
			return err
		}
		b := newBar(cmd, int64(q.Visible), "moved")
		o.Progress = b.set
		res, err := recovery.Redrive(cmd.Context(), rn.Queues, name, o)
		b.finish()
		report(op, cmd, res, func(w io.Writer) {
			fmt.Fprintf(w, "%s: moved %d of %d messages (%s)\n", name, res.ApproximateNumberOfMessagesMoved,
				res.ApproximateNumberOfMessagesToMove, res.Status)
		})
		return err
	})
	cmd.Flags().StringVar(&o.To, "to", "", "destination queue (default: each message's source queue)")
	cmd.Flags().IntVar(&o.Rate, "rate", 0, "MaxNumberOfMessagesPerSecond, 1..500 (default 500)")
	flagRange(cmd.Flags(), "rate", &o.Rate, 1, queue.MaxMoveTaskRate)
	return cmd
}

// queueOp holds the flags of a dlq subcommand acting on one QUEUE.
type queueOp struct{ asJSON, yes bool }

// queueCmd completes c as a dlq subcommand on one QUEUE: it opens runnel,
// reads the queue's depth (failing if there is no such queue) and calls
// run; --json and --yes set op.
func (g *globals) queueCmd(c *cobra.Command, op *queueOp, run func(cmd *cobra.Command, rn *runnel.Runnel, name string, q recovery.QueueSummary) error) *cobra.Command {
	c.Args = cobra.ExactArgs(1)
	c.RunE = g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
		q, err := depthOf(cmd.Context(), rn, args[0])
		if err != nil {
			return err
		}
		return run(cmd, rn, args[0], q)
	})
	c.Flags().BoolVar(&op.asJSON, "json", false, "print JSON")
	c.Flags().BoolVarP(&op.yes, "yes", "y", false, "don't ask for confirmation")
	return c
}

// report prints res (when not nil) as JSON with --json, else with text.
func report[T any](op queueOp, cmd *cobra.Command, res *T, text func(w io.Writer)) {
	switch {
	case res == nil:
	case op.asJSON:
		printJSON(cmd.OutOrStdout(), res)
	default:
		text(cmd.OutOrStdout())
	}
}

func dlqPurgeCmd(g *globals) *cobra.Command {
	var op queueOp
	return g.queueCmd(&cobra.Command{
		Use: "purge QUEUE", Short: "Delete every message of a queue (PurgeQueue)",
	}, &op, func(cmd *cobra.Command, rn *runnel.Runnel, name string, q recovery.QueueSummary) error {
		plan := fmt.Sprintf("purge: DELETE all %d messages of %s (%d visible, %d in flight, %d delayed); they cannot be recovered. Archive first with 'runnel dlq archive'.",
			q.Visible+q.InFlight+q.Delayed, name, q.Visible, q.InFlight, q.Delayed)
		if err := confirm(cmd, op.yes, plan); err != nil {
			return err
		}
		res, err := recovery.Purge(cmd.Context(), rn.Queues, name)
		report(op, cmd, res, func(w io.Writer) { fmt.Fprintf(w, "%s: purged %d messages\n", res.Queue, res.Messages) })
		return err
	})
}

func dlqArchiveCmd(g *globals) *cobra.Command {
	var op queueOp
	var o recovery.ArchiveOptions
	cmd := g.queueCmd(&cobra.Command{
		Use:   "archive QUEUE --out FILE",
		Short: "Write a queue's messages to a JSON Lines file (with the records pointers stand for), optionally deleting them",
		Long: `archive writes each visible message of QUEUE as one JSON line: body, attributes,
message attributes and, for a failure record pointing at stream records still
retained, the records themselves (else the pointer and a note). The file must not
exist. With --delete, exactly the archived messages are deleted, and only after
the file is fsynced; without it they stay in the queue.`,
	}, &op, func(cmd *cobra.Command, rn *runnel.Runnel, name string, q recovery.QueueSummary) error {
		// --limit archives (and deletes) at most that many of them.
		n := q.Visible
		plan := fmt.Sprintf("archive: write the %d visible messages of %s to %s", n, name, o.Out)
		if o.Limit > 0 && o.Limit < n {
			n = o.Limit
			plan = fmt.Sprintf("archive: write %d of the %d visible messages of %s (--limit) to %s", n, q.Visible, name, o.Out)
		}
		if o.Delete {
			plan += fmt.Sprintf(", then DELETE those %d from the queue", n)
			if err := confirm(cmd, op.yes, plan); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(cmd.ErrOrStderr(), plan+" (the messages stay in the queue)")
		}
		b := newBar(cmd, int64(n), "archived")
		o.Progress = b.set
		o.Tables, o.Mappings = rn.Tables, rn.Mappings
		res, err := recovery.Archive(cmd.Context(), rn.Queues, rn.Streams, name, o)
		b.finish()
		report(op, cmd, res, func(w io.Writer) {
			fmt.Fprintf(w, "%s: archived %d messages to %s (%d resolved, %d with a note), deleted %d\n",
				res.Queue, res.Archived, res.Out, res.Resolved, res.Unresolved, res.Deleted)
			if len(res.DeleteFailed) > 0 {
				fmt.Fprintf(w, "not deleted (still in the queue and in the file): %s\n", strings.Join(res.DeleteFailed, ", "))
			}
		})
		return err
	})
	cmd.Flags().StringVar(&o.Out, "out", "", "the JSON Lines file to write (required; must not exist)")
	cmd.Flags().BoolVar(&o.Delete, "delete", false, "delete the archived messages once the file is on disk")
	cmd.Flags().IntVar(&o.Limit, "limit", 0, "archive at most this many messages (0: all)")
	flagAtLeast(cmd.Flags(), "limit", &o.Limit, 0)
	cmd.MarkFlagRequired("out")
	return cmd
}

func replayCmd(g *globals) *cobra.Command {
	var asJSON, yes bool
	var o recovery.ReplayOptions
	var fromTime, toTime string
	cmd := &cobra.Command{
		Use:   "replay --stream S (--from-seq X --to-seq Y | --from-time T --to-time T) --to-function F|--to-queue Q|--to-stream S2",
		Short: "Put exactly a range of a stream's records back through a function, a queue or another stream",
		Long: `replay reads the records of a stream range and puts exactly those through a target:
a function (invoked with Kinesis events shaped as an event source mapping's, in
batches of --batch-size), a queue (one message per record: the Kinesis event
record as JSON) or another stream (PutRecords with the same partition keys).
The function runs in this process, so its handler must be a built-in one: a
function created with the Lambda API (python, nodejs, provided) runs only in
serve and is refused; replay into a stream or queue its mapping reads instead.

The range is a sequence-number range of one shard (--from-seq/--to-seq, both
inclusive; the shard is the sequence numbers') or a time range (--from-time/
--to-time, RFC 3339, both inclusive, AT_TIMESTAMP semantics) of --shard or of
every shard. A range reaching past the stream's retention is reported (how many
records are missing, the first sequence number still available) and refused
unless --allow-past-retention. Replay stops at the first batch the target
rejects (or a read that fails, or Ctrl-C) and says, for every shard of the
range, whether it is done or which replay command (a sequence range) replays
what is left of it; those commands together replay everything not replayed.`,
		Args: cobra.NoArgs,
		RunE: g.withHandlers(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			ctx := cmd.Context()
			var err error
			if fromTime != "" {
				if o.Range.FromTime, err = time.Parse(time.RFC3339Nano, fromTime); err != nil {
					return fmt.Errorf("--from-time: %w", err)
				}
			}
			if toTime != "" {
				if o.Range.ToTime, err = time.Parse(time.RFC3339Nano, toTime); err != nil {
					return fmt.Errorf("--to-time: %w", err)
				}
			}
			o.Range.Now = rn.Engine.Clock.Now()
			n := 0
			for _, t := range []string{o.Target.Function, o.Target.Queue, o.Target.Stream} {
				if t != "" {
					n++
				}
			}
			if n != 1 {
				return errors.New("give exactly one of --to-function, --to-queue, --to-stream")
			}
			if cmd.Flags().Changed("batch-size") {
				switch {
				case o.Target.Queue != "":
					return errors.New("--batch-size: a queue always gets batches of 10 (SendMessageBatch); it sets the batches of --to-function (1..10000) and --to-stream (1..500)")
				case o.Target.Stream != "" && o.BatchSize > stream.MaxPutRecords:
					return fmt.Errorf("--batch-size: %d is out of range with --to-stream: must be between 1 and %d (PutRecords)", o.BatchSize, stream.MaxPutRecords)
				case o.Target.Function != "" && o.BatchSize > mapping.MaxBatchSize:
					return fmt.Errorf("--batch-size: %d is out of range with --to-function: must be between 1 and %d (BatchSize)", o.BatchSize, mapping.MaxBatchSize)
				}
			}
			if o.Target.Function != "" {
				// Before the plan: a function this process cannot invoke
				// is refused, not found after the confirmation.
				if err := checkReplayFunction(ctx, rn, o.Target.Function); err != nil {
					return err
				}
			}
			plan, err := recovery.PlanReplay(ctx, rn.Streams, o.Range)
			if err != nil {
				return err
			}
			plan.Target = o.Target.String()
			text := describePlan(plan)
			if plan.PastRetention && !o.AllowPastRetention {
				fmt.Fprintln(cmd.ErrOrStderr(), text)
				if asJSON {
					printJSON(cmd.OutOrStdout(), &recovery.ReplayResult{Plan: plan, Error: "past retention"})
				}
				return fmt.Errorf("%w: %d stored messages of the range (1..500 records each) are gone; run again with --allow-past-retention to replay the %d records that are left",
					recovery.ErrPastRetention, plan.MissingMessages, plan.Available)
			}
			if err := confirm(cmd, yes, text); err != nil {
				return err
			}
			b := newBar(cmd, int64(plan.Available), "replayed")
			o.Progress = b.set
			res, err := recovery.Replay(ctx, recovery.Services{Streams: rn.Streams, Queues: rn.Queues, Functions: rn.Functions}, o)
			b.finish()
			if res != nil {
				if asJSON {
					printJSON(cmd.OutOrStdout(), res)
				} else {
					fmt.Fprintf(cmd.OutOrStdout(), "replayed %d records to %s (read %d, skipped %d, failed %d, stored messages missing %d)\n",
						res.Sent, plan.Target, res.Read, res.Skipped, res.Failed, res.Plan.MissingMessages)
					if res.TrimmedMessages > 0 {
						fmt.Fprintf(cmd.OutOrStdout(), "trimmed by retention while replaying, not sent: %d stored messages (1..500 records each); see the log\n", res.TrimmedMessages)
					}
					if res.Error != "" && len(res.Resume) > 0 {
						fmt.Fprintf(cmd.OutOrStdout(), "stopped: %s\n", res.Error)
						printResume(cmd.OutOrStdout(), res, o, cmd.Flags().Changed("batch-size"))
					}
				}
			}
			return err
		}),
	}
	f := cmd.Flags()
	f.StringVar(&o.Range.Stream, "stream", "", "the stream to read (required)")
	f.StringVar(&o.Range.Shard, "shard", "", "the shard (default: the sequence numbers' shard, or every shard for a time range)")
	f.StringVar(&o.Range.FromSeq, "from-seq", "", "first sequence number (inclusive)")
	f.StringVar(&o.Range.ToSeq, "to-seq", "", "last sequence number (inclusive)")
	f.StringVar(&fromTime, "from-time", "", "first arrival time (RFC 3339, inclusive)")
	f.StringVar(&toTime, "to-time", "", "last arrival time (RFC 3339, inclusive)")
	f.StringVar(&o.Target.Function, "to-function", "", "invoke this function")
	f.StringVar(&o.Target.Queue, "to-queue", "", "send to this queue")
	f.StringVar(&o.Target.Stream, "to-stream", "", "put into this stream")
	f.IntVar(&o.BatchSize, "batch-size", 0, "records per invocation (1..10000, default 100) or per PutRecords (1..500, default 500)")
	flagAtLeast(f, "batch-size", &o.BatchSize, 1)
	f.BoolVar(&o.AllowPastRetention, "allow-past-retention", false, "replay what is left of a range that reaches past retention")
	f.BoolVar(&asJSON, "json", false, "print JSON")
	f.BoolVarP(&yes, "yes", "y", false, "don't ask for confirmation")
	cmd.MarkFlagRequired("stream")
	return cmd
}

// printResume prints, for a replay that stopped, each shard of its plan:
// done, or the replay command (a sequence range of that shard, with the
// same target and options) that replays what is left of it. Run together,
// once the cause is fixed, they replay everything not replayed. Before,
// only the failing shard's resume point was printed, as --from-seq
// without --to-seq, and the later shards of a time range were lost.
func printResume(w io.Writer, res *recovery.ReplayResult, o recovery.ReplayOptions, batchSize bool) {
	var target string
	switch {
	case o.Target.Function != "":
		target = " --to-function " + o.Target.Function
	case o.Target.Queue != "":
		target = " --to-queue " + o.Target.Queue
	default:
		target = " --to-stream " + o.Target.Stream
	}
	if batchSize {
		target += fmt.Sprintf(" --batch-size %d", o.BatchSize)
	}
	if o.AllowPastRetention {
		target += " --allow-past-retention"
	}
	fmt.Fprintln(w, "to replay what is left, run (with the same global flags, once the cause is fixed):")
	for _, r := range res.Resume {
		if r.State == recovery.ResumeDone {
			fmt.Fprintf(w, "  %s done\n", r.ShardID)
			continue
		}
		fmt.Fprintf(w, "  %s %s: runnel replay --stream %s --from-seq %s --to-seq %s%s\n",
			r.ShardID, r.State, res.Plan.Stream, r.FromSequenceNumber, r.ToSequenceNumber, target)
	}
}

// checkReplayFunction reports why replay cannot invoke the function ref
// in this process, or nil if it can: replay invokes functions whose handler
// is registered here (the built-in ones). A function of the Lambda API
// (a python, node or provided runtime: handler "process:<name>") runs only
// in serve, which runs its processes.
func checkReplayFunction(ctx context.Context, rn *runnel.Runnel, ref string) error {
	_, err := rn.Functions.GetFunction(ref)
	if err == nil {
		return nil
	}
	if !errors.Is(err, awserr.ErrResourceNotFound) {
		return fmt.Errorf("--to-function: %w", err)
	}
	handlers := strings.Join(rn.Functions.Registry().Handlers(), ", ")
	name, _, _ := function.ParseRef(ref)
	if kv, kerr := rn.Engine.Bucket(ctx, "runnel_functions"); kerr == nil {
		if e, gerr := kv.Get(ctx, name); gerr == nil {
			var c function.Config
			if json.Unmarshal(e.Value(), &c) == nil && c.Handler != "" {
				what := fmt.Sprintf("its handler %q is not registered in this process", c.Handler)
				if strings.HasPrefix(c.Handler, "process:") {
					what = "it is a process function of the Lambda API (a python, nodejs or provided runtime), which only serve runs"
				}
				return fmt.Errorf("--to-function: %s cannot be a replay target: %s; replay invokes only functions whose handler is registered in the CLI's process (the built-in handlers: %s). "+
					"Replay into a stream or queue an event source mapping of %s reads (--to-stream, --to-queue) instead", name, what, handlers, name)
			}
		}
	}
	return fmt.Errorf("--to-function: %w (replay invokes only functions whose handler is registered in the CLI's process; the built-in handlers: %s)", err, handlers)
}

func describePlan(p *recovery.ReplayPlan) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "replay: put %d records of stream %s into %s", p.Available, p.Stream, p.Target)
	for _, s := range p.Shards {
		fmt.Fprintf(&sb, "\n  %s %s..%s: %d records", s.ShardID, s.FromSequenceNumber, s.ToSequenceNumber, s.Available)
		if s.MissingMessages > 0 {
			exact := ""
			if !s.MissingExact {
				exact = "up to "
			}
			fmt.Fprintf(&sb, "; %s%d stored messages (1..500 records each) GONE (past retention; first available %s)", exact, s.MissingMessages, s.FirstAvailableSequenceNumber)
		}
		if s.NotWritten {
			fmt.Fprintf(&sb, "; the range ends after the last record written")
		}
	}
	return sb.String()
}

func resolveCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "resolve [FILE|-]",
		Short: "Turn failure records (async requestPayload, stream KinesisBatchInfo, retry envelope) into the original events",
		Long: `resolve reads failure records (dead-letter message bodies; also the lines of a
'runnel dlq archive' file, JSON Lines, or SQS message JSON with a "body") from
FILE or standard input, one JSON value after another, and prints the original
events of each as JSON: a Kinesis event with the records a KinesisBatchInfo
points at (read back from the stream, with the awsRegion and invokeIdentityArn
the mapping sends) or a retry envelope holds, or the requestPayload of an
asynchronous invocation record. With --json it prints the whole resolution
(kind, condition, pointer, missing count) of each. Input that is not JSON is
resolved as one body. A record that cannot be resolved is reported on standard
error with its number (1 = the first) and the others are still resolved; the
command then fails.`,
		Args: cobra.MaximumNArgs(1),
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			var r io.Reader = cmd.InOrStdin()
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				r = f
			}
			body, err := io.ReadAll(r)
			if err != nil {
				return err
			}
			src := recovery.Sources{Streams: rn.Streams, Tables: rn.Tables, Mappings: rn.Mappings}
			docs := jsonValues(body)
			var failed, gone int
			var pastRetention error
			for i, doc := range docs {
				where := ""
				if len(docs) > 1 {
					where = fmt.Sprintf("record %d: ", i+1)
				}
				res, err := resolveBody(cmd.Context(), src, doc)
				if err != nil && !errors.Is(err, recovery.ErrPastRetention) {
					if len(docs) == 1 {
						return err
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "%s%v\n", where, err)
					failed++
					continue
				}
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%swarning: %v\n", where, err)
					gone, pastRetention = gone+1, err
				}
				printResolved(cmd, res, asJSON, where)
			}
			switch {
			case failed > 0:
				return fmt.Errorf("%d of %d records could not be resolved (see above)", failed, len(docs))
			case gone > 0 && len(docs) == 1:
				return pastRetention
			case gone > 0:
				return fmt.Errorf("%d of %d records point at stream records past retention: %w", gone, len(docs), recovery.ErrPastRetention)
			}
			return nil
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the whole resolution as JSON")
	return cmd
}

// jsonValues splits input into its JSON values: the lines of a JSON Lines
// file (dlq archive), or one value, however it is indented. Input that is
// not a sequence of JSON values is one body.
func jsonValues(input []byte) [][]byte {
	dec := json.NewDecoder(bytes.NewReader(input))
	var out [][]byte
	for {
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return [][]byte{input}
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return [][]byte{input}
	}
	return out
}

// resolveBody resolves a failure record body, or the body of an archive
// line or an SQS message JSON ({"body": ...} or {"Body": ...}).
func resolveBody(ctx context.Context, src recovery.Sources, body []byte) (*recovery.Resolved, error) {
	res, err := recovery.ResolveFrom(ctx, src, body)
	if errors.Is(err, recovery.ErrUnknownFormat) {
		var wrapped struct {
			Body  *string `json:"body"`
			Body2 *string `json:"Body"`
		}
		if json.Unmarshal(body, &wrapped) == nil && (wrapped.Body != nil || wrapped.Body2 != nil) {
			inner := wrapped.Body
			if inner == nil {
				inner = wrapped.Body2
			}
			res, err = recovery.ResolveFrom(ctx, src, []byte(*inner))
		}
	}
	return res, err
}

// printResolved prints what a failure record stands for: the whole
// resolution with --json, else its events (where prefixes the line on
// standard error).
func printResolved(cmd *cobra.Command, res *recovery.Resolved, asJSON bool, where string) {
	if asJSON {
		printJSON(cmd.OutOrStdout(), res)
		return
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "%s%s failure record, condition %s\n", where, res.Kind, res.Condition)
	switch res.Kind {
	case recovery.KindAsync, recovery.KindSNS, recovery.KindEvent:
		// The event (async, EventBridge) or the published message
		// (SNS). Before, SNS and EventBridge dead letters printed an
		// empty Kinesis event.
		var v any
		if json.Unmarshal(res.Payload, &v) != nil {
			v = string(res.Payload)
		}
		printJSON(cmd.OutOrStdout(), v)
	case recovery.KindDDBStreamBatch:
		recs := res.DynamoDB
		if recs == nil {
			recs = []events.DynamoDBEventRecord{}
		}
		printJSON(cmd.OutOrStdout(), events.DynamoDBEvent{Records: recs})
	default:
		recs := res.Records
		if recs == nil {
			recs = []events.KinesisEventRecord{}
		}
		printJSON(cmd.OutOrStdout(), events.KinesisEvent{Records: recs})
	}
}
