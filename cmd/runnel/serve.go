package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel/stack"
)

func serveCmd(g *globals) *cobra.Command {
	var file, listen string
	var every time.Duration
	var obs observeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Apply a stack file and run its event source mappings until interrupted",
		Long: `serve opens runnel, applies the stack file (streams, functions by registered
handler name, event source mappings; see package stack), and runs the mappings
until SIGINT or SIGTERM, then stores their checkpoints and stops. Stored
mappings from earlier runs resume from their checkpoints.

Handlers built into this binary: noop, log, fail, fail-on-poison.

With --listen the embedded JetStream also accepts NATS clients, so other
runnel commands can work on the same data with --nats-url while serve runs.

serve evaluates the alarm rules (see 'runnel status') every --alarm-interval,
logs their changes and runs --alarm-command / posts to --alarm-webhook on each;
with --http it serves /metrics (Prometheus), /status (JSON), and at / a web page
refreshed every second: the pipeline as a graph, the lag of every shard, the
dead-letter queues with their messages and a redrive button (its JSON under /api/).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rn, err := g.serve(ctx, listen)
			if err != nil {
				return err
			}
			defer rn.Close()
			if file != "" {
				s, err := stack.Load(file)
				if err != nil {
					return err
				}
				a, err := stack.Apply(ctx, rn, s)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "stack applied: streams created %v kept %v; functions %v; mappings created %v updated %v\n",
					a.StreamsCreated, a.StreamsKept, a.FunctionsCreated, a.MappingsCreated, a.MappingsUpdated)
			}
			if u := rn.Engine.ClientURL(); u != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "NATS clients: --nats-url %s\n", u)
			}
			stopObserve, err := obs.start(ctx, cmd.OutOrStdout(), rn, g.logger())
			if err != nil {
				return err
			}
			defer stopObserve()
			fmt.Fprintln(cmd.OutOrStdout(), "serving; Ctrl-C to stop")
			var tick <-chan time.Time
			if every > 0 {
				t := time.NewTicker(every)
				defer t.Stop()
				tick = t.C
			}
			for {
				select {
				case <-ctx.Done():
					fmt.Fprintln(cmd.OutOrStdout(), "stopping: storing checkpoints")
					return nil
				case <-tick:
					printMappings(cmd.OutOrStdout(), rn, false)
				}
			}
		},
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "stack file (YAML)")
	cmd.Flags().StringVar(&listen, "listen", "", "also accept NATS clients on this address (127.0.0.1:4222)")
	cmd.Flags().DurationVar(&every, "status-every", time.Minute, "print mapping status this often (0: never)")
	obs.register(cmd.Flags())
	return cmd
}
