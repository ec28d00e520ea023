// Package nodeset is what the cluster demos (`runnel demo --nodes`,
// `runnel demo trades --nodes`) share: it starts runnel nodes as separate
// processes (internal/nodeproc) forming one embedded NATS cluster, opens a
// passive client of that cluster, holds AWS clients of every node (each
// call to the next node in turn, retried on the following ones while it
// fails), and kills the node holding the most of some leases with SIGKILL
// and starts it again.
package nodeset

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/nodeproc"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// Options configures Start.
type Options struct {
	// Binary is the runnel executable each node runs (`serve`). Required.
	Binary string
	// Dir is the run's directory: node-<i> (data) and node-<i>.log.
	// Required.
	Dir string
	// Nodes is the number of node processes. Default 3. The JetStream
	// replica count is min(Nodes, 3).
	Nodes int
	// Logger receives the client's logs; Say, if set, progress lines.
	Logger *slog.Logger
	Say    func(format string, args ...any)
	// Registry is the client's handler registry (default: the process's
	// default one). The client runs no function, but it checks that a
	// function's handler is registered when the function is created
	// through it: register the nodes' built-in handlers there.
	Registry *function.Registry
	// CPUProfile as Plan.CPUProfile.
	CPUProfile string
}

// Plan is what a cluster demo runs on: how many nodes, of which binary,
// and when one is killed.
type Plan struct {
	// Binary is the runnel executable each node runs (`serve`); runnel
	// passes os.Executable(). Required.
	Binary string
	// Nodes is the number of node processes. Default 3. The JetStream
	// replica count is min(Nodes, 3): 1 runs the same pipeline on one
	// node, for comparison.
	Nodes int
	// CPUProfile, if set, is where each node writes a CPU profile of its
	// serve: CPUProfile+".node-<i>" (nodeproc.Config.CPUProfile), complete
	// once the nodes are stopped at the end of the run.
	CPUProfile string
	// KillAt is the share of the input put (0 <= KillAt < 1) after which
	// the node running the demo's work (each demo says which) is killed
	// with SIGKILL and started again. 0: no node is killed.
	KillAt float64
	// KillMetaLeader kills the node that is the JetStream meta leader at
	// KillAt instead of the node running the work (the failover measured
	// is then that of every lease it held).
	KillMetaLeader bool
}

// Check sets Nodes' default and checks KillAt; what names the input in
// the error ("rows", "messages").
func (p *Plan) Check(what string) error {
	p.Nodes = cmp.Or(p.Nodes, 3)
	if p.KillAt < 0 || p.KillAt >= 1 {
		return fmt.Errorf("--nodes: --kill-node-at is a share of the %s, 0 <= at < 1 (got %g)", what, p.KillAt)
	}
	return nil
}

// Run starts the plan's nodes (Start, with o.Binary and o.Nodes from
// the plan), calls fn with them and stops them. When fn reports clean
// and keep is false, the nodes' data is removed; otherwise, and on
// error, everything in o.Dir is kept (the error says so).
func (p *Plan) Run(ctx context.Context, o Options, keep bool, fn func(set *Set) (clean bool, err error)) error {
	o.Binary, o.Nodes, o.CPUProfile = p.Binary, p.Nodes, p.CPUProfile
	set, err := Start(ctx, o)
	if err != nil {
		return fmt.Errorf("%w (the run's directory %s is kept)", err, o.Dir)
	}
	clean := false
	defer func() { set.Close(clean && !keep) }()
	if clean, err = fn(set); err != nil {
		return fmt.Errorf("%w (the run's directory %s is kept)", err, o.Dir)
	}
	return nil
}

// Progress returns a printf for progress lines on w, each prefixed
// ("demo: "); it prints nothing when w is nil.
func Progress(w io.Writer, prefix string) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, prefix+format+"\n", args...)
		}
	}
}

// Set is a running set of node processes and a passive client of their
// cluster.
type Set struct {
	Proc *nodeproc.Cluster
	// RN is a passive runnel client of the cluster (it runs no mapping
	// and serves no queue; a table call through it serves the tables
	// when no node does, so the demos read the tables through the AWS
	// endpoints instead).
	RN *runnel.Runnel
	// AWS are the AWS clients of every node.
	AWS *Clients
}

// Start starts the nodes and opens the client. On error everything
// started is stopped; the directory stays.
func Start(ctx context.Context, o Options) (*Set, error) {
	if o.Binary == "" {
		return nil, errors.New("--nodes: no runnel binary to start the nodes with")
	}
	o.Nodes = cmp.Or(o.Nodes, 3)
	if o.Say == nil {
		o.Say = func(string, ...any) {}
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	o.Say("starting %d runnel nodes (separate processes; logs in %s/node-*.log)", o.Nodes, o.Dir)
	replicas := min(o.Nodes, 3) // --nodes 1: the same pipeline on one node, for comparison
	cl, err := nodeproc.Start(ctx, nodeproc.Config{Binary: o.Binary, Dir: o.Dir, Nodes: o.Nodes, Replicas: replicas, CPUProfile: o.CPUProfile})
	if err != nil {
		return nil, err
	}
	for _, n := range cl.Nodes {
		o.Say("%s: AWS endpoint http://%s, NATS nats://%s", n.Name, n.AWS, n.NATS)
	}
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{NATSURL: cl.NATSURL(), Replicas: replicas, Logger: o.Logger},
		Mappings: mapping.Options{Passive: true}, Registry: o.Registry})
	if err != nil {
		cl.Close()
		return nil, err
	}
	return &Set{Proc: cl, RN: rn, AWS: NewClients(cl, rn.Engine.Region())}, nil
}

// Close closes the client and stops the nodes (SIGTERM, then SIGKILL
// after 30 s). With removeData each node's data directory is removed;
// the logs stay.
func (s *Set) Close(removeData bool) {
	s.RN.Close()
	s.Proc.Close()
	if removeData {
		for _, n := range s.Proc.Nodes {
			os.RemoveAll(strings.TrimSuffix(n.LogPath(), ".log"))
		}
	}
}

// RetryFor bounds how long a call is tried over the nodes (each try on
// the next node) while it fails: the ride-through of a leader election
// or a node restart.
const RetryFor = 2 * time.Minute

// Clients are the AWS clients of every node, indexed like the nodes. Each
// call goes to the next node in turn (Pick), so the work is spread and a
// dead node is skipped by the retry.
type Clients struct {
	Kinesis  []*kinesis.Client
	SQS      []*sqs.Client
	Lambda   []*lambda.Client
	DynamoDB []*dynamodb.Client
	Streams  []*dynamodbstreams.Client
	next     atomic.Uint32
	// down[i] is when node i may be picked again (Unix ns) after a
	// connection to it was refused (Report).
	down []atomic.Int64
}

// downFor is how long Pick skips a node whose connection was refused: a
// node killed mid-run is down for seconds, and every call sent to it
// (a third of them on 3 nodes) would fail and back off.
const downFor = 10 * time.Second

// NewClients returns the clients of cl's nodes. They do not retry on
// their own (one attempt: no client-side retry quota, which a dead node's
// refused connections drain, and no backoff against a dead node): OnAny
// and the callers retry over the nodes.
func NewClients(cl *nodeproc.Cluster, region string) *Clients {
	a := &Clients{down: make([]atomic.Int64, len(cl.Nodes))}
	for _, n := range cl.Nodes {
		cfg := aws.Config{HTTPClient: sdkhttp.Client(), Region: region, Credentials: credentials.NewStaticCredentialsProvider("runnel", "runnel", ""),
			BaseEndpoint: aws.String("http://" + n.AWS),
			Retryer: func() aws.Retryer {
				return retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter, o.MaxAttempts = ratelimit.None, 1 })
			}}
		a.Kinesis, a.SQS, a.Lambda = append(a.Kinesis, kinesis.NewFromConfig(cfg)), append(a.SQS, sqs.NewFromConfig(cfg)), append(a.Lambda, lambda.NewFromConfig(cfg))
		a.DynamoDB, a.Streams = append(a.DynamoDB, dynamodb.NewFromConfig(cfg)), append(a.Streams, dynamodbstreams.NewFromConfig(cfg))
	}
	return a
}

// Pick returns the index of the next node.
func (a *Clients) Pick() int {
	now := time.Now().UnixNano()
	first := int(a.next.Add(1)) % len(a.Kinesis)
	for k := range len(a.Kinesis) {
		if i := (first + k) % len(a.Kinesis); a.down[i].Load() <= now {
			return i
		}
	}
	return first // all down: try anyway
}

// Report tells Pick how a call to node i went: a refused connection (the
// node is down) skips it for downFor.
func (a *Clients) Report(i int, err error) {
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		a.down[i].Store(time.Now().Add(downFor).UnixNano())
	}
}

// Retryable reports whether an AWS client's error is worth another try
// on another node: what the SDK itself retries (a connection refused or
// reset by a dead node, a 5xx answer, a throttle).
func Retryable(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// OnAny calls fn on the next node, and again on the following ones while
// it fails with a retryable error, for at most RetryFor (100 ms to 1 s
// apart); it returns the last error.
func OnAny[T any](ctx context.Context, a *Clients, fn func(i int) (T, error)) (T, error) {
	start := time.Now()
	for attempt := 1; ; attempt++ {
		i := a.Pick()
		v, err := fn(i)
		a.Report(i, err)
		if err == nil || ctx.Err() != nil || time.Since(start) > RetryFor || !Retryable(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(time.Duration(min(attempt, 10)) * 100 * time.Millisecond):
		}
	}
}

// PutRecords is one Kinesis PutRecords call through the next node (no
// retry: the caller retries, on the next node).
func PutRecords(ctx context.Context, a *Clients, name string, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
	i := a.Pick()
	res, err := PutRecordsWith(ctx, a.Kinesis[i], name, entries)
	a.Report(i, err)
	return res, err
}

// PutRecordsWith is one Kinesis PutRecords call of entries into stream
// name with kc, answered as the stream package's PutRecords answers.
func PutRecordsWith(ctx context.Context, kc *kinesis.Client, name string, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
	in := &kinesis.PutRecordsInput{StreamName: aws.String(name), Records: make([]ktypes.PutRecordsRequestEntry, len(entries))}
	for i, e := range entries {
		in.Records[i] = ktypes.PutRecordsRequestEntry{Data: e.Data, PartitionKey: aws.String(e.PartitionKey)}
	}
	out, err := kc.PutRecords(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("PutRecords: %w", err)
	}
	res := make([]stream.PutRecordsResultEntry, len(out.Records))
	for i, r := range out.Records {
		res[i] = stream.PutRecordsResultEntry{SequenceNumber: aws.ToString(r.SequenceNumber), ShardId: aws.ToString(r.ShardId),
			ErrorCode: aws.ToString(r.ErrorCode), ErrorMessage: aws.ToString(r.ErrorMessage)}
	}
	return res, nil
}
