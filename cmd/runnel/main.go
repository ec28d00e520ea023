// Command runnel runs Kinesis-model streams and Lambda-style event source
// mappings on embedded NATS JetStream (or an external JetStream server).
//
//	runnel demo                      # the flight demo on 3,000,000 real records
//	runnel serve -f stack.yaml       # apply a stack file and run its mappings
//	runnel put --stream S --partition-key K --data '...'
//	runnel get --stream S --shard shardId-000000000000
//	runnel mappings                  # state, last result and iterator age per shard
//	runnel bench                     # throughput against raw JetStream
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"syscall"
	_ "time/tzdata" // Scheduler's IANA zones on a host without zoneinfo (~450 KB)

	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/demo/trades"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/builtin"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/sns"
	"github.com/runnel-dev/runnel/table"
)

// globals are the flags every command takes.
type globals struct {
	dataDir  string
	natsURL  string
	logLevel string
	cpuProf  string
	memProf  string
	trace    string
	region   string
	account  string
}

func (g *globals) logger() *slog.Logger {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(g.logLevel)); err != nil {
		lvl = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: lvl}))
}

// open opens runnel with the global flags, passive: it administers and
// reads but runs no mapping (that is serve's job). It refuses a data
// directory that does not exist (see storedData): the commands that open
// it read or act on what is stored. create is open for the commands that
// create things (streams create), which create the directory.
func (g *globals) open(ctx context.Context) (*runnel.Runnel, error) {
	if err := g.storedData(); err != nil {
		return nil, err
	}
	return g.create(ctx)
}

// storedData checks, without --nats-url, that --data-dir (default
// ./runnel-data) is an existing directory. The embedded engine creates a
// missing one, so a mistyped --data-dir, or a command run from another
// directory than the serve's, used to show an empty, all-clear runnel
// (status: "0 of 0 alarms", exit 0) and leave an empty directory behind.
// The error names the directory and the two ways to reach a runnel.
func (g *globals) storedData() error {
	if g.natsURL != "" {
		return nil
	}
	dir := cmp.Or(g.dataDir, engine.DefaultDataDir)
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		abs, _ := filepath.Abs(dir)
		return fmt.Errorf("--data-dir %s (%s): no such directory, so nothing is stored there; give the data directory of a stopped 'runnel serve' with --data-dir, or reach a running 'runnel serve --listen' with --nats-url nats://HOST:PORT", dir, abs)
	case err != nil:
		return fmt.Errorf("--data-dir %s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("--data-dir %s: not a directory; give the data directory of a stopped 'runnel serve' with --data-dir, or reach a running 'runnel serve --listen' with --nats-url nats://HOST:PORT", dir)
	}
	return nil
}

// create is open creating a missing data directory.
func (g *globals) create(ctx context.Context) (*runnel.Runnel, error) {
	return runnel.Open(ctx, runnel.Config{Engine: engine.Config{DataDir: g.dataDir, NATSURL: g.natsURL, Logger: g.logger(), Region: g.region, AccountID: g.account},
		Mappings: mapping.Options{Passive: true}})
}

// with wraps a command body that needs a (passive) runnel: it opens one
// with the global flags and closes it afterwards.
func (g *globals) with(fn func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error) func(*cobra.Command, []string) error {
	return g.withOpen(g.open, fn)
}

// withCreate is with for the commands that create things: a missing data
// directory is created.
func (g *globals) withCreate(fn func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error) func(*cobra.Command, []string) error {
	return g.withOpen(g.create, fn)
}

func (g *globals) withOpen(open func(context.Context) (*runnel.Runnel, error), fn func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		rn, err := open(cmd.Context())
		if err != nil {
			return err
		}
		defer rn.Close()
		return fn(cmd, args, rn)
	}
}

// serveOptions are serve's engine flags: the NATS listener and the
// cluster.
type serveOptions struct {
	listen     string
	cluster    engine.ClusterConfig
	replicas   int
	tableIndex string
}

// serve opens runnel to run the stored mappings, with the built-in handlers
// registered; SNS's links (SubscribeURL, UnsubscribeURL, SigningCertURL)
// point at awsAddr, the AWS endpoint's address.
func (g *globals) serve(ctx context.Context, o serveOptions, awsAddr string) (*runnel.Runnel, error) {
	log := g.logger()
	streams := builtin.Register(log)
	node := o.cluster.Name
	if node == "" {
		host, _ := os.Hostname()
		node = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	demoFn, err := demo.RegisterNodeFunction(function.DefaultRegistry(), node)
	if err != nil {
		return nil, err
	}
	tradesFn, err := trades.RegisterNodeFunctions(function.DefaultRegistry(), node)
	if err != nil {
		return nil, err
	}
	var snsOpts sns.Options
	if awsAddr != "" {
		snsOpts.BaseURL = "http://" + awsAddr
	}
	cfg := runnel.Config{Engine: engine.Config{DataDir: g.dataDir, NATSURL: g.natsURL, ListenAddr: o.listen,
		Cluster: o.cluster, Replicas: o.replicas, Logger: log, Region: g.region, AccountID: g.account},
		SNS: snsOpts, Tables: table.Options{Index: o.tableIndex}}
	rn, err := runnel.Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	streams.Use(rn.Streams)
	streams.UseMappings(rn.Mappings)
	demoFn.Use(rn.Queues)
	if err := tradesFn.Use(rn.Tables, rn.Engine.NC); err != nil {
		rn.Close()
		return nil, err
	}
	return rn, nil
}

func main() {
	root := newRoot(&globals{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "runnel:", err)
		os.Exit(1)
	}
}

// newRoot is the runnel command with its global flags (set into g) and
// every subcommand.
func newRoot(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "runnel",
		Short: "Kinesis-model streams and Lambda event source mappings, with the failure rules right",
		Long: `runnel runs streams with the Kinesis data model and functions fed by event source
mappings that behave like AWS Lambda's (batching, retries, bisect, partial batch
failures, on-failure destinations), durable on local disk through embedded NATS
JetStream, or against a NATS JetStream server with --nats-url.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&g.dataDir, "data-dir", engine.DefaultDataDir, "directory of the embedded engine's storage")
	root.PersistentFlags().StringVar(&g.natsURL, "nats-url", "", "use an external NATS JetStream server (nats://host:4222) instead of the embedded one")
	root.PersistentFlags().StringVar(&g.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&g.cpuProf, "cpuprofile", "", "write a CPU profile of the command to this file (demo --nodes: each node's serve too, to <file>.node-<i>)")
	root.PersistentFlags().StringVar(&g.trace, "trace", "", "write a runtime execution trace of the command to this file (go tool trace; -pprof=sync, sched or syscall name where goroutines wait); it slows the command down")
	root.PersistentFlags().StringVar(&g.memProf, "memprofile", "", "write a heap profile of the command to this file when it ends (allocations since the start: go tool pprof -sample_index=alloc_space)")
	root.PersistentFlags().StringVar(&g.region, "region", "us-east-1", "the AWS region in the ARNs runnel builds")
	root.PersistentFlags().StringVar(&g.account, "account", "000000000000", "the AWS account id in the ARNs runnel builds")
	root.PersistentPreRunE = func(cmd *cobra.Command, args []string) error {
		if g.trace != "" {
			f, err := os.Create(g.trace)
			if err != nil {
				return err
			}
			if err := trace.Start(f); err != nil {
				return err
			}
		}
		if g.cpuProf == "" {
			return nil
		}
		f, err := os.Create(g.cpuProf)
		if err != nil {
			return err
		}
		return pprof.StartCPUProfile(f)
	}
	root.PersistentPostRun = func(cmd *cobra.Command, args []string) {
		if g.cpuProf != "" {
			pprof.StopCPUProfile()
		}
		if g.trace != "" {
			trace.Stop()
		}
		if g.memProf != "" {
			if err := writeHeapProfile(g.memProf); err != nil {
				fmt.Fprintln(os.Stderr, "runnel: --memprofile:", err)
			}
		}
	}
	root.AddCommand(demoCmd(g), serveCmd(g), putCmd(g), getCmd(g), streamsCmd(g), mappingsCmd(g), benchCmd(g), dlqCmd(g), replayCmd(g), resolveCmd(g))
	root.AddCommand(statusCmd(g), clusterCmd(g), logsCmd(g))
	strictArgs(root)
	return root
}

// strictArgs makes every command under root refuse what it does not
// take: a command that says nothing of its arguments takes none
// (cobra.NoArgs: "runnel status extra" is an error, not a status), and a
// group of subcommands (dlq, streams, cluster) run with an unknown one
// ("runnel dlq lsit") or none fails with an "unknown command" or "missing
// subcommand" error naming them, instead of printing its help with exit
// status 0. Cobra itself checks only root's subcommands so.
func strictArgs(root *cobra.Command) {
	for _, c := range root.Commands() {
		strictArgs(c)
		if c.Args == nil {
			c.Args = cobra.NoArgs
		}
		if !c.Runnable() && c.HasSubCommands() {
			c.RunE = missingSubcommand
		}
	}
}

// missingSubcommand is the RunE of a group of subcommands run without one
// (an unknown one is refused by cobra.NoArgs before): an error listing
// them.
func missingSubcommand(cmd *cobra.Command, args []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return fmt.Errorf("missing subcommand for %q: one of %s (see '%s --help')", cmd.CommandPath(), strings.Join(names, ", "), cmd.CommandPath())
}

// writeHeapProfile writes the heap profile (live and allocated since the
// start, sampled every runtime.MemProfileRate bytes: 512 KiB) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
