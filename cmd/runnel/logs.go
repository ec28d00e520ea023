package main

// runnel logs FUNCTION: a function's log, the CloudWatch Logs group
// /aws/lambda/FUNCTION (function/logs), as `aws logs tail` prints it:
// the events of the last --since (default 10m) in the order they were
// stored, each as "<time> <log stream> <message>" (--format detailed) or
// "<time> <message>" (short), filtered by --filter-pattern (terms,
// ?terms, -terms, quoted phrases); --follow then prints new events as
// they come until interrupted, polling every --interval (default 1s) on
// the engine's clock.

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jonboulle/clockwork"
	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/logs"
)

// tailOptions are runnel logs' flags.
type tailOptions struct {
	Since    time.Duration
	Follow   bool
	Pattern  string
	Format   string // detailed or short
	Interval time.Duration
}

func logsCmd(g *globals) *cobra.Command {
	var o tailOptions
	cmd := &cobra.Command{
		Use:   "logs FUNCTION",
		Short: "Print a function's log (group /aws/lambda/FUNCTION) like aws logs tail; --follow for new events",
		Args:  cobra.ExactArgs(1),
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			name, _, err := function.ParseRef(args[0])
			if err != nil {
				return err
			}
			store, err := logs.Open(cmd.Context(), rn.Engine, g.logger())
			if err != nil {
				return err
			}
			return tailLogs(cmd.Context(), store, rn.Engine.Clock, function.LogGroup(name), o, cmd.OutOrStdout())
		}),
	}
	cmd.Flags().DurationVar(&o.Since, "since", 10*time.Minute, "print the events of this long ago on")
	flagAtLeast(cmd.Flags(), "since", &o.Since, 0)
	cmd.Flags().BoolVarP(&o.Follow, "follow", "f", false, "keep printing new events until interrupted")
	cmd.Flags().StringVar(&o.Pattern, "filter-pattern", "", "print only the events matching this CloudWatch Logs filter pattern")
	cmd.Flags().StringVar(&o.Format, "format", "detailed", "detailed (time, log stream, message) or short (time, message)")
	cmd.Flags().DurationVar(&o.Interval, "interval", time.Second, "with --follow, how often to look for new events (at least 1ms)")
	flagAtLeast(cmd.Flags(), "interval", &o.Interval, time.Millisecond)
	return cmd
}

// tailLogs prints the events of group from now-o.Since on, then with
// o.Follow the new ones until ctx ends (nil then).
func tailLogs(ctx context.Context, s *logs.Store, clock clockwork.Clock, group string, o tailOptions, w io.Writer) error {
	pat, err := logs.ParsePattern(o.Pattern)
	if err != nil {
		return err
	}
	if o.Format != "detailed" && o.Format != "short" {
		return fmt.Errorf("--format %q: detailed or short", o.Format)
	}
	since := clock.Now().Add(-o.Since).UnixMilli()
	var from uint64
	for {
		ok, err := s.GroupExists(ctx, group)
		if err != nil {
			return err
		}
		if !ok && !o.Follow {
			return fmt.Errorf("log group %s does not exist (the function has not been invoked, or does not exist)", group)
		}
		err = s.Read(ctx, group, "", from, func(ev logs.Event) bool {
			from = ev.Seq + 1
			if ev.Timestamp >= since && pat.Match(ev.Message) {
				printEvent(w, ev, o.Format)
			}
			return true
		})
		if err != nil || !o.Follow {
			return err
		}
		if engine.Sleep(ctx, clock, o.Interval) != nil {
			return nil
		}
	}
}

func printEvent(w io.Writer, ev logs.Event, format string) {
	t := time.UnixMilli(ev.Timestamp).UTC()
	if format == "short" {
		fmt.Fprintf(w, "%s %s\n", t.Format("2006-01-02T15:04:05"), ev.Message)
		return
	}
	fmt.Fprintf(w, "%s %s %s\n", t.Format("2006-01-02T15:04:05.000000-07:00"), ev.Stream, ev.Message)
}
