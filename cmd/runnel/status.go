package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/observe"
)

func statusCmd(g *globals) *cobra.Command {
	var asJSON bool
	var cfg observe.Config
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the alarms (DLQ depth, iterator age, error rate, throttles) and a summary of functions, mappings and queues",
		Long: `status evaluates runnel's alarm rules once and prints them with a summary:
functions (invocations, errors, throttles), mappings (iterator age and pending
records per shard), queues (depth, and whether each is a dead-letter queue).

The rules, from the failure playbook's alarms table:
  dlq-depth     a dead-letter queue (a RedrivePolicy target; a mapping's or a
                function's asynchronous on-failure destination queue; a
                function's, SNS subscription's, rule's or schedule's
                DeadLetterConfig queue; or a queue named like *-dlq /
                *dead-letter*) holds messages
  iterator-age  an enabled stream mapping's iterator age is above 60 s
  error-rate    a function's errors are above 1 % of its invocations
  throttles     a function was throttled

status reads the stored and published state: run it with --nats-url against a
'runnel serve --listen', or on a data directory no serve holds. Function
counters are the sums of their mappings' counters as the serving process last
published them (every second), counted since that process started, so the
error-rate and throttle rules look at that whole period. 'runnel serve --http'
evaluates the same rules continuously and serves them on /status.`,
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			cfg.Passive = true
			cfg.Logger = g.logger()
			a, err := observe.NewAlarms(rn, cfg)
			if err != nil {
				return err
			}
			rep := a.Report(cmd.Context())
			if asJSON {
				return printJSON(cmd.OutOrStdout(), rep)
			}
			return observe.WriteText(cmd.OutOrStdout(), rep)
		}),
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	thresholdFlags(cmd.Flags(), &cfg)
	return cmd
}

// thresholdFlags registers the alarm thresholds.
func thresholdFlags(fs *pflag.FlagSet, cfg *observe.Config) {
	fs.DurationVar(&cfg.IteratorAge, "alarm-iterator-age", time.Minute, "iterator-age alarm threshold")
	fs.Float64Var(&cfg.ErrorRate, "alarm-error-rate", 0.01, "error-rate alarm threshold, a fraction of invocations (0.01 = 1%)")
	fs.Int64Var(&cfg.DLQDepth, "alarm-dlq-depth", 0, "dlq-depth alarm threshold: a dead-letter queue with more messages is in ALARM")
	fs.Int64Var(&cfg.Throttles, "alarm-throttles", 0, "throttles alarm threshold: more throttles in an evaluation window is ALARM")
	fs.DurationVar(&cfg.AsyncEventAge, "alarm-async-event-age", time.Hour, "async-event-age alarm threshold: a function whose oldest waiting asynchronous event is older is in ALARM")
	flagAtLeast(fs, "alarm-iterator-age", &cfg.IteratorAge, time.Millisecond)
	flagCheck(fs, "alarm-error-rate", &cfg.ErrorRate, func(r float64) error {
		if r <= 0 || r >= 1 {
			return fmt.Errorf("out of range: must be a fraction between 0 and 1, both excluded (0.01 is 1%%)")
		}
		return nil
	})
	flagAtLeast(fs, "alarm-dlq-depth", &cfg.DLQDepth, 0)
	flagAtLeast(fs, "alarm-throttles", &cfg.Throttles, 0)
	flagAtLeast(fs, "alarm-async-event-age", &cfg.AsyncEventAge, time.Second)
}

// observeFlags are serve's operator's-view flags: the HTTP server and the
// alarm hooks.
type observeFlags struct {
	addr string
	cfg  observe.Config
}

func (o *observeFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&o.addr, "http", "", "serve /metrics (Prometheus) and /status (alarms and summary, JSON) on this address (127.0.0.1:9090)")
	fs.StringSliceVar(&o.cfg.AllowedHosts, "http-allowed-hosts", nil, "host names the --http server answers to on a loopback connection besides localhost, IP addresses and this machine's name (a reverse proxy's name); others get 421 (DNS rebinding)")
	fs.StringVar(&o.cfg.Command, "alarm-command", "", "run this shell command when an alarm changes state (env RUNNEL_ALARM_NAME, _STATE, _PREVIOUS_STATE, _VALUE, _THRESHOLD, _RULE, _RESOURCE, _MESSAGE)")
	fs.StringVar(&o.cfg.Webhook, "alarm-webhook", "", "POST the alarm as JSON to this URL when it changes state")
	fs.DurationVar(&o.cfg.Interval, "alarm-interval", 10*time.Second, "how often the alarm rules are evaluated (and the error-rate and throttle window)")
	flagAtLeast(fs, "alarm-interval", &o.cfg.Interval, time.Millisecond)
	thresholdFlags(fs, &o.cfg)
}

// start runs the alarm rules and, with --http, the HTTP server, until the
// returned stop is called (before rn closes).
func (o *observeFlags) start(ctx context.Context, w io.Writer, rn *runnel.Runnel, log *slog.Logger) (stop func(), err error) {
	o.cfg.Logger = log
	a, err := observe.NewAlarms(rn, o.cfg)
	if err != nil {
		return nil, err
	}
	var srv *http.Server
	if o.addr != "" {
		ln, err := net.Listen("tcp", o.addr)
		if err != nil {
			return nil, fmt.Errorf("--http: %w", err)
		}
		srv = &http.Server{Handler: observe.Handler(rn, a), ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Error("http server stopped", "err", err)
			}
		}()
		fmt.Fprintf(w, "metrics: http://%s/metrics  status: http://%s/status\n", ln.Addr(), ln.Addr())
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	return func() {
		if srv != nil {
			sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
			srv.Shutdown(sctx)
			scancel()
		}
		cancel()
		<-done
	}, nil
}
