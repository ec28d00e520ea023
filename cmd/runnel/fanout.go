package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/demo/fanout"
)

func fanoutCmd(g *globals) *cobra.Command {
	var cfg fanout.Config
	var jsonPath string
	cmd := &cobra.Command{
		Use:   "fanout",
		Short: "Publish events through an SNS topic and an EventBridge bus to nine consumers and reconcile each",
		Long: `fanout publishes --events events (region, amount and kind as message
attributes) through the SNS topic fanout-events to five subscriptions, each
with a dead-letter queue: three queues with filter policies (all, region
prefix "eu-", amount >= 500 and kind anything-but refund), an HTTP endpoint
($or: refunds or ap-south-1) that answers HTTP 500 for --fail-for after the
first event (its delivery policy retries 6 times, 1 to 2 s apart), and a
function (amount < 100). The same events are put on the EventBridge bus
fanout-bus, whose four rules route them by pattern, each target with a
dead-letter queue: bus-all (every event), bus-eu-orders (region prefix
"eu-" and kind order), bus-big (detail-type Order, amount >= 500; its queue
refuses events for --fail-for, its target retries 4 times with backoff)
and the function bus-audit (amount < 100, kind anything-but order). It
then reconciles per consumer: every event its filter or pattern matches
was delivered (at least once) or is in its dead-letter queue, and nothing
else arrived. The command fails unless lost is 0.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg.DataDir, cfg.NATSURL, cfg.Logger = g.dataDir, g.natsURL, g.logger()
			return runAndReport(cmd, func() (*fanout.Result, error) { return fanout.Run(cmd.Context(), cfg) },
				printFanout, jsonPath, func(r *fanout.Result) error {
					if !r.Exact {
						return fmt.Errorf("reconciliation failed: %d lost", r.Lost)
					}
					return nil
				})
		},
	}
	f := cmd.Flags()
	f.IntVar(&cfg.Events, "events", 2000, "events to publish")
	f.DurationVar(&cfg.FailFor, "fail-for", 0, "how long the HTTP consumer and the bus queue bus-big fail from the first event, at least 1ms (default 3s)")
	flagAtLeast(f, "events", &cfg.Events, 1)
	flagAtLeast(f, "fail-for", &cfg.FailFor, time.Millisecond)
	f.BoolVar(&cfg.Keep, "keep", false, "keep the run's data directory")
	f.StringVar(&jsonPath, "json", "", "write the report (per-consumer counts) as JSON to this file")
	return cmd
}

func printFanout(w io.Writer, r *fanout.Result) {
	fmt.Fprintf(w, "%d events through %s and %s in %.1f s; webhook failures answered: %d; bus retries: %d\n", r.Events, r.Topic, r.Bus, r.Seconds, r.WebhookFailures, r.BusStats.Retried)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "consumer\tvia\tprotocol\texpected\tdelivered\tdead-lettered\tduplicates\tunexpected\tlost\t")
	for _, c := range r.Consumers {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", c.Name, c.Via, c.Protocol, c.Expected, c.Delivered, c.DeadLettered, c.Duplicates, c.Unexpected, c.Lost)
	}
	tw.Flush()
	fmt.Fprintf(w, "lost: %d\n", r.Lost)
}
