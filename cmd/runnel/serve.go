package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/stack"
)

func serveCmd(g *globals) *cobra.Command {
	var file, awsAddr, authKeys string
	var allowUnsigned bool
	var so serveOptions
	var every time.Duration
	var obs observeFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Apply a stack file and run its event source mappings until interrupted",
		Long: `serve opens runnel, applies the stack file (streams, functions by registered
handler name, event source mappings; see package stack), and runs the mappings
until SIGINT or SIGTERM, then stores their checkpoints and stops. Stored
mappings from earlier runs resume from their checkpoints.

Handlers built into this binary: noop, log, slow-log, fail, fail-on-poison, and
demo-flight-stats (the function of runnel demo --nodes).

With --listen the embedded JetStream also accepts NATS clients, so other
runnel commands can work on the same data with --nats-url while serve runs.

With --cluster-listen and --routes, serve is a node of a runnel cluster: the
embedded servers of all nodes form one NATS cluster with clustered JetStream
(replicas 3 by default), the nodes share every stream, queue, table and mapping,
and split the work by leases (see docs/cluster.md and 'runnel cluster status').

serve evaluates the alarm rules (see 'runnel status') every --alarm-interval,
logs their changes and runs --alarm-command / posts to --alarm-webhook on each;
with --http it serves /metrics (Prometheus), /status (JSON), and at / a web page
refreshed every second: the pipeline as a graph, the lag of every shard, the
dead-letter queues with their messages and a redrive button (its JSON under /api/).

serve also answers AWS clients (SDKs, the AWS CLI) on --aws, 127.0.0.1:4566 by
default, over HTTP/1.1 and cleartext HTTP/2: the Kinesis, DynamoDB, DynamoDB
Streams, SQS, SNS, EventBridge, EventBridge Scheduler, Lambda, CloudWatch Logs,
IAM and STS APIs (the operations are listed in the README), e.g.
'aws --endpoint-url http://127.0.0.1:4566 kinesis list-streams'. Any credentials
are accepted, but a request must be SigV4-signed, as AWS requires (an unsigned
one is refused with AWS's MissingAuthenticationToken; --allow-unsigned accepts
it). With --auth KEY:SECRET the signature is checked too, for every API: it must
be made with one of those keys, with session credentials STS AssumeRole issued
(until they expire), or with the key runnel gives its process functions.
--aws "" turns it off; if the default port is taken, serve warns and
goes on without it (an explicit --aws address must be free).`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			rn, err := g.serve(ctx, so, awsAddr)
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
					// Say what was applied before the error: a stack is
					// applied in order, and a re-apply continues from there.
					if a != nil {
						b, _ := json.Marshal(a)
						fmt.Fprintf(cmd.ErrOrStderr(), "stack applied in part before the error: %s\n", b)
					}
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "stack applied: streams created %v kept %v; queues created %v kept %v; tables created %v kept %v; functions %v; mappings created %v updated %v replaced %v; topics %v; subscriptions %v removed %v\n",
					a.StreamsCreated, a.StreamsKept, a.QueuesCreated, a.QueuesKept, a.TablesCreated, a.TablesKept, a.FunctionsCreated,
					a.MappingsCreated, a.MappingsUpdated, a.MappingsReplaced, a.TopicsApplied, a.SubscriptionsApplied, a.SubscriptionsRemoved)
			}
			if u := rn.Engine.ClientURL(); u != "" {
				fmt.Fprintf(cmd.OutOrStdout(), "NATS clients: --nats-url %s\n", u)
			}
			auth, err := parseAuthKeys(authKeys)
			if err != nil {
				return err
			}
			stopAWS, err := startAWS(cmd.OutOrStdout(), rn, awsAddr, cmd.Flags().Changed("aws"), g.logger(), awsapi.Options{Auth: auth, AllowUnsigned: allowUnsigned})
			if err != nil {
				return err
			}
			defer stopAWS()
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
	cmd.Flags().StringVar(&so.listen, "listen", "", "also accept NATS clients on this address (127.0.0.1:4222)")
	cmd.Flags().StringVar(&so.tableIndex, "table-index", "", `where the tables keep their item indexes: "disk" (an index store in the data directory: memory bounded, opens without reading the tables) or "memory" (the heap); default disk (each node of a cluster its own), memory with --nats-url`)
	cmd.Flags().StringVar(&so.cluster.Listen, "cluster-listen", "", "be a cluster node: accept routes from the other nodes on this address (0.0.0.0:6222)")
	cmd.Flags().StringSliceVar(&so.cluster.Routes, "routes", nil, "the cluster nodes' route addresses, comma-separated (host1:6222,host2:6222,host3:6222)")
	cmd.Flags().StringVar(&so.cluster.Name, "node-name", "", "this node's name in the cluster (default runnel-<cluster port>)")
	cmd.Flags().IntVar(&so.replicas, "replicas", 0, "JetStream replicas of every stream and bucket, 1..5 (default 1; 3 with --cluster-listen)")
	flagRange(cmd.Flags(), "replicas", &so.replicas, 1, 5)
	cmd.Flags().StringVar(&authKeys, "auth", "", "check SigV4 signatures of AWS clients against these keys: ACCESS_KEY:SECRET[,ACCESS_KEY:SECRET...]; STS AssumeRole's sessions and process functions' own key are accepted too (default: any credentials accepted, but a request must be signed, as AWS requires)")
	cmd.Flags().BoolVar(&allowUnsigned, "allow-unsigned", false, "accept AWS requests without a SigV4 signature (hand-made ones, curl); AWS refuses them (MissingAuthenticationTokenException)")
	cmd.Flags().StringVar(&awsAddr, "aws", awsapi.DefaultAddr, "serve the AWS APIs ("+servedAPIs()+`) to AWS clients on this address ("" to disable)`)
	cmd.Flags().DurationVar(&every, "status-every", time.Minute, "print mapping status this often (0: never)")
	flagAtLeast(cmd.Flags(), "status-every", &every, 0)
	obs.register(cmd.Flags())
	return cmd
}

// servedAPIs lists the APIs the AWS endpoint serves (awsapi.Services).
func servedAPIs() string {
	names := make([]string, len(awsapi.Services))
	for i, s := range awsapi.Services {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// startAWS serves the AWS endpoint (package awsapi) on addr until the
// returned stop is called. An empty addr disables it; when the address is
// the default (explicit false) and cannot be bound, it warns and serves
// without it, so a second runnel (or a test) on the machine still starts.
func startAWS(w io.Writer, rn *runnel.Runnel, addr string, explicit bool, log *slog.Logger, o awsapi.Options) (stop func(), err error) {
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if explicit {
			return nil, fmt.Errorf("--aws: %w", err)
		}
		fmt.Fprintf(w, "AWS endpoint not started (%v); set --aws to another address\n", err)
		return func() {}, nil
	}
	// Functions' AWS SDKs call this endpoint (AWS_ENDPOINT_URL).
	o.Logger = log
	ep := awsapi.NewEndpoint(rn, o, awsapi.LambdaOptions{Logger: log, Endpoint: "http://" + ln.Addr().String()})
	srv := awsapi.NewServer(addr, ep)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("aws endpoint stopped", "err", err)
		}
	}()
	fmt.Fprintf(w, "AWS clients: --endpoint-url http://%s\n", ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		srv.Shutdown(ctx)
		cancel()
		ep.Close()
	}, nil
}

// parseAuthKeys reads --auth: comma-separated ACCESS_KEY:SECRET pairs.
func parseAuthKeys(v string) (map[string]string, error) {
	if v == "" {
		return nil, nil
	}
	keys := map[string]string{}
	for _, pair := range strings.Split(v, ",") {
		k, secret, ok := strings.Cut(strings.TrimSpace(pair), ":")
		if !ok || k == "" || secret == "" {
			return nil, fmt.Errorf("--auth: %q is not ACCESS_KEY:SECRET", pair)
		}
		keys[k] = secret
	}
	return keys, nil
}
