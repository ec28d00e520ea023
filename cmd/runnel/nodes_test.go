package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/nodeproc"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/recovery"
)

// TestClusterSurvivesSIGKILLOfEveryNodeTwice is issue 13's fault test on
// three `runnel serve` processes of one embedded NATS cluster (replicas
// 3). Producers put Kinesis records and send SQS messages through the AWS
// endpoint of every node in turn; the function (built-in
// log-fail-on-poison) logs each record it succeeds on and fails the
// poison ones. Each node is killed with SIGKILL and started again twice,
// one after the other, the JetStream meta leader first in each round
// (found with `runnel cluster status`). Then, within a bounded wait:
// every record put is processed (in a node's log) or in the stream
// mapping's on-failure queue, every message sent is processed or in its
// queue's DLQ, the source queue is empty (every message deleted or
// moved), and every poison record and message is in a DLQ. On a timeout
// it prints what is missing. Skipped under -short: it builds the binary
// and runs 4 to 6 minutes on a 2-core machine under a load average of
// about 20 (starting the cluster alone took 10 to 100 s; each rolling
// restart waits for every stream's replicas to be current).
//
// It runs only with RUNNEL_CLUSTER_TESTS=1: it takes 4 to 6 minutes, more
// than CI's budget allows. Its finding of sessions 7 and 8 (poison items
// that go through a DLQ went missing; docs/cluster.md) was fixed; it has
// passed every run since (docs/cluster.md, "Status of the fault test").
func TestClusterSurvivesSIGKILLOfEveryNodeTwice(t *testing.T) {
	if os.Getenv("RUNNEL_CLUSTER_TESTS") == "" {
		t.Skip("set RUNNEL_CLUSTER_TESTS=1 to run it: 4 to 6 minutes, beyond CI's budget")
	}
	bin := runnelBinary(t)
	dir := t.TempDir()
	// Bounds the whole test; the waits inside are bounded on their own.
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	cl, err := nodeproc.Start(ctx, nodeproc.Config{Binary: bin, Dir: dir, Args: []string{"--log-level", "info"}})
	if err != nil {
		for i := range 3 {
			path := fmt.Sprintf("%s/node-%d.log", dir, i)
			t.Logf("last lines of %s:\n%s", path, tailFile(path, 60))
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cl.Close()
		if t.Failed() {
			keep, _ := os.MkdirTemp("", "runnel-fault-logs-")
			for _, n := range cl.Nodes {
				t.Logf("last lines of %s:\n%s", n.LogPath(), tailFile(n.LogPath(), 40))
				if b, err := os.ReadFile(n.LogPath()); err == nil && keep != "" {
					os.WriteFile(filepath.Join(keep, filepath.Base(n.LogPath())), b, 0o644)
				}
			}
			t.Logf("the nodes' whole logs are kept in %s", keep)
		}
	})
	nodes := newTestNodes(cl)
	s := nodes.setUp(ctx, t)
	rn, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{NATSURL: cl.NATSURL(), Replicas: 3},
		Mappings: mapping.Options{Passive: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer rn.Close()

	// Producers, through every node in turn, until the kills are over.
	prodCtx, stopProducers := context.WithCancel(ctx)
	var prod producers
	var wg sync.WaitGroup
	wg.Go(func() { prod.kinesis(prodCtx, nodes, s.stream) })
	wg.Go(func() { prod.sqs(prodCtx, nodes, s.jobsURL) })
	time.Sleep(3 * time.Second) // some load before the first kill (not an assertion)

	logs := newLogReader(cl)
	kills := map[string]int{}
	var leadersKilled []string
	for round := range 2 {
		leader := metaLeader(t, ctx, bin, cl)
		order := []int{slices.IndexFunc(cl.Nodes, func(n *nodeproc.Node) bool { return n.Name == leader })}
		if order[0] < 0 {
			t.Fatalf("cluster status names the meta leader %q, which is no node", leader)
		}
		for i := range cl.Nodes {
			if i != order[0] {
				order = append(order, i)
			}
		}
		for _, i := range order {
			t.Logf("round %d: SIGKILL %s (meta leader %s); %d records put, %d messages sent", round+1, cl.Nodes[i].Name, leader, prod.count(true), prod.count(false))
			cl.Kill(i)
			kills[cl.Nodes[i].Name]++
			if i == order[0] {
				leadersKilled = append(leadersKilled, leader)
			}
			if err := cl.Start(ctx, i); err != nil {
				t.Fatal(err)
			}
			// A rolling kill: the next one once every stream has a leader
			// and all its replicas are current again (with one replica
			// still catching up, a second kill could take a stream's
			// quorum, which no R3 cluster survives).
			waitHealthy(t, ctx, rn)
		}
	}
	stopProducers()
	wg.Wait()
	for _, n := range cl.Nodes {
		if kills[n.Name] < 2 {
			t.Fatalf("%s was killed %d times, want 2", n.Name, kills[n.Name])
		}
	}
	if err := prod.err(); err != nil {
		t.Fatalf("a producer gave up: %v", err)
	}
	t.Logf("kills done (meta leaders killed: %v); %d records put, %d messages sent; reconciling", leadersKilled, prod.count(true), prod.count(false))

	// Reconcile, within a bounded wait.
	dlq := map[string]bool{}
	var missing string
	deadline := time.Now().Add(2 * time.Minute)
	for {
		logs.read()
		nodes.drain(ctx, s.ordersDLQ, func(body string) {
			r, err := recovery.Resolve(ctx, rn.Streams, []byte(body))
			for start := time.Now(); awserr.IsRetryable(err) && time.Since(start) < time.Minute; {
				time.Sleep(time.Second) // a stream leader being elected
				r, err = recovery.Resolve(ctx, rn.Streams, []byte(body))
			}
			if err != nil {
				t.Fatalf("an on-failure message does not resolve: %v: %s", err, body)
			}
			for _, rec := range r.Records {
				dlq[string(rec.Kinesis.Data)] = true
			}
		})
		nodes.drain(ctx, s.jobsDLQ, func(body string) { dlq[body] = true })
		depth := nodes.depth(ctx, s.jobsURL)
		missing = prod.missing(logs.processed, dlq)
		switch {
		case depth < 0:
			missing += "; no node answered GetQueueAttributes on the source queue"
		case depth > 0:
			missing += fmt.Sprintf("; the source queue still holds %d messages", depth)
		}
		if missing == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes: %s\nwhere their stored copies are:%s", missing, traceIDs(ctx, rn.Engine.JS, prod.missingIDs(logs.processed, dlq)))
		}
		time.Sleep(500 * time.Millisecond)
	}
	var poisonInDLQ int
	for id := range dlq {
		if strings.Contains(id, "poison") {
			poisonInDLQ++
		}
	}
	for id := range logs.processed {
		if strings.Contains(id, "poison") {
			t.Errorf("poison %s was processed", id)
		}
	}
	if want := prod.poison(); poisonInDLQ < want {
		t.Errorf("%d poison records and messages in the DLQs, want the %d put", poisonInDLQ, want)
	}
	t.Logf("reconciled: %d records and %d messages, each processed or in its DLQ (%d in the DLQs, %d distinct ids processed)",
		prod.count(true), prod.count(false), len(dlq), len(logs.processed))
}

// testNodes are the AWS clients of every node; each call goes to the next
// node, and a failing call is tried on the following ones.
type testNodes struct {
	kc   []*kinesis.Client
	qc   []*sqs.Client
	lc   []*lambda.Client
	mu   sync.Mutex
	next int
}

func newTestNodes(cl *nodeproc.Cluster) *testNodes {
	n := &testNodes{}
	for _, node := range cl.Nodes {
		cfg := aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("runnel", "runnel", ""),
			BaseEndpoint: aws.String("http://" + node.AWS),
			Retryer: func() aws.Retryer {
				return retry.NewStandard(func(o *retry.StandardOptions) { o.RateLimiter = ratelimit.None })
			}}
		n.kc, n.qc, n.lc = append(n.kc, kinesis.NewFromConfig(cfg)), append(n.qc, sqs.NewFromConfig(cfg)), append(n.lc, lambda.NewFromConfig(cfg))
	}
	return n
}

func (n *testNodes) pick() int {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.next = (n.next + 1) % len(n.kc)
	return n.next
}

// try calls fn on the next node, and on the following ones while it
// fails with an error the SDK would retry, for at most 90 s.
func try[T any](ctx context.Context, n *testNodes, fn func(i int) (T, error)) (T, error) {
	deadline := time.Now().Add(90 * time.Second)
	for {
		v, err := fn(n.pick())
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) ||
			retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) != aws.TrueTernary {
			return v, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

type testSetup struct {
	stream                      string
	jobsURL, jobsDLQ, ordersDLQ string
}

// setUp creates, through the nodes' AWS endpoints, a stream with a
// mapping whose on-failure destination is a queue, and a queue with a DLQ
// and a mapping; both mappings run the built-in log-fail-on-poison.
func (n *testNodes) setUp(ctx context.Context, t *testing.T) testSetup {
	t.Helper()
	s := testSetup{stream: "orders"}
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := try(ctx, n, func(i int) (*kinesis.CreateStreamOutput, error) {
		out, err := n.kc[i].CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(s.stream), ShardCount: aws.Int32(2)})
		if _, inUse := errors.AsType[*ktypes.ResourceInUseException](err); inUse {
			err = nil
		}
		return out, err
	})
	must("CreateStream", err)
	var streamARN string
	for streamARN == "" {
		d, err := try(ctx, n, func(i int) (*kinesis.DescribeStreamSummaryOutput, error) {
			return n.kc[i].DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.stream)})
		})
		must("DescribeStreamSummary", err)
		if d.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive {
			streamARN = aws.ToString(d.StreamDescriptionSummary.StreamARN)
		}
	}
	queue := func(name string, attrs map[string]string) (url, arn string) {
		q, err := try(ctx, n, func(i int) (*sqs.CreateQueueOutput, error) {
			return n.qc[i].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		})
		must("CreateQueue "+name, err)
		return aws.ToString(q.QueueUrl), "arn:aws:sqs:us-east-1:000000000000:" + name
	}
	var ordersDLQARN, jobsDLQARN, jobsARN string
	s.ordersDLQ, ordersDLQARN = queue("orders-dlq", nil)
	s.jobsDLQ, jobsDLQARN = queue("jobs-dlq", nil)
	// A short visibility timeout: the messages a killed node had received
	// come back soon.
	s.jobsURL, jobsARN = queue("jobs", map[string]string{"VisibilityTimeout": "5",
		"RedrivePolicy": fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":"3"}`, jobsDLQARN)})
	_, err = try(ctx, n, func(i int) (*lambda.CreateFunctionOutput, error) {
		out, err := n.lc[i].CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("f"), Runtime: "runnel",
			Handler: aws.String("log-fail-on-poison"), Role: aws.String("arn:aws:iam::000000000000:role/f"), Code: &ltypes.FunctionCode{}})
		if _, exists := errors.AsType[*ltypes.ResourceConflictException](err); exists {
			err = nil
		}
		return out, err
	})
	must("CreateFunction", err)
	_, err = try(ctx, n, func(i int) (*lambda.CreateEventSourceMappingOutput, error) {
		return n.lc[i].CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"),
			EventSourceArn: aws.String(streamARN), StartingPosition: ltypes.EventSourcePositionTrimHorizon, BatchSize: aws.Int32(50),
			BisectBatchOnFunctionError: aws.Bool(true), MaximumRetryAttempts: aws.Int32(2),
			DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(ordersDLQARN)}}})
	})
	must("CreateEventSourceMapping (stream)", err)
	_, err = try(ctx, n, func(i int) (*lambda.CreateEventSourceMappingOutput, error) {
		return n.lc[i].CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{FunctionName: aws.String("f"),
			EventSourceArn: aws.String(jobsARN), BatchSize: aws.Int32(10), FunctionResponseTypes: []ltypes.FunctionResponseType{ltypes.FunctionResponseTypeReportBatchItemFailures}})
	})
	must("CreateEventSourceMapping (queue)", err)
	return s
}

// drain receives and deletes every message a queue holds now, handing
// each body to fn. Errors (a node dying) end the pass; the next pass goes
// on.
func (n *testNodes) drain(ctx context.Context, url string, fn func(string)) {
	for {
		i := n.pick()
		out, err := n.qc[i].ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: 30})
		if err != nil || len(out.Messages) == 0 {
			return
		}
		var del []sqstypes.DeleteMessageBatchRequestEntry
		for j, m := range out.Messages {
			fn(aws.ToString(m.Body))
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := n.qc[i].DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			return
		}
	}
}

// depth is how many messages a queue holds (visible, in flight, delayed);
// -1 if no node answers.
func (n *testNodes) depth(ctx context.Context, url string) int {
	a, err := try(ctx, n, func(i int) (*sqs.GetQueueAttributesOutput, error) {
		return n.qc[i].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
	})
	if err != nil {
		return -1
	}
	d := 0
	for _, k := range []string{"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible", "ApproximateNumberOfMessagesDelayed"} {
		v, _ := strconv.Atoi(a.Attributes[k])
		d += v
	}
	return d
}

// producers put records ("k-<n>", every 25th "k-poison-<n>") and send
// messages ("q-<n>", every 20th "q-poison-<n>"), remembering those
// acknowledged.
type producers struct {
	mu        sync.Mutex
	put, sent []string
	failed    error
}

func (p *producers) count(records bool) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if records {
		return len(p.put)
	}
	return len(p.sent)
}

func (p *producers) poison() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, id := range slices.Concat(p.put, p.sent) {
		if strings.Contains(id, "poison") {
			n++
		}
	}
	return n
}

func (p *producers) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed
}

func (p *producers) fail(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed = err
	}
}

// id is the n-th id of prefix k or q, poison every every-th.
func id(prefix string, n, every int) string {
	if n%every == every-1 {
		return fmt.Sprintf("%s-poison-%d", prefix, n)
	}
	return fmt.Sprintf("%s-%d", prefix, n)
}

// kinesis puts 20 records every 100 ms until ctx ends. A call that fails
// everywhere for 90 s ends it with an error.
func (p *producers) kinesis(ctx context.Context, n *testNodes, stream string) {
	for next := 0; ctx.Err() == nil; {
		var ids []string
		in := &kinesis.PutRecordsInput{StreamName: aws.String(stream)}
		for range 20 {
			ids = append(ids, id("k", next, 25))
			in.Records = append(in.Records, ktypes.PutRecordsRequestEntry{Data: []byte(ids[len(ids)-1]), PartitionKey: aws.String(strconv.Itoa(next))})
			next++
		}
		for len(in.Records) > 0 && ctx.Err() == nil {
			out, err := try(ctx, n, func(i int) (*kinesis.PutRecordsOutput, error) { return n.kc[i].PutRecords(ctx, in) })
			if err != nil {
				if ctx.Err() == nil {
					p.fail(fmt.Errorf("PutRecords: %w", err))
				}
				return
			}
			var again []ktypes.PutRecordsRequestEntry
			var againIDs []string
			p.mu.Lock()
			for j, r := range out.Records {
				if r.ErrorCode != nil {
					again, againIDs = append(again, in.Records[j]), append(againIDs, ids[j])
				} else {
					p.put = append(p.put, ids[j])
				}
			}
			p.mu.Unlock()
			in.Records, ids = again, againIDs
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sqs sends 10 messages every 100 ms until ctx ends.
func (p *producers) sqs(ctx context.Context, n *testNodes, url string) {
	for next := 0; ctx.Err() == nil; {
		var entries []sqstypes.SendMessageBatchRequestEntry
		for j := range 10 {
			entries = append(entries, sqstypes.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(j)), MessageBody: aws.String(id("q", next, 20))})
			next++
		}
		for len(entries) > 0 && ctx.Err() == nil {
			out, err := try(ctx, n, func(i int) (*sqs.SendMessageBatchOutput, error) {
				return n.qc[i].SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
			})
			if err != nil {
				if ctx.Err() == nil {
					p.fail(fmt.Errorf("SendMessageBatch: %w", err))
				}
				return
			}
			byID := map[string]sqstypes.SendMessageBatchRequestEntry{}
			for _, e := range entries {
				byID[aws.ToString(e.Id)] = e
			}
			p.mu.Lock()
			for _, ok := range out.Successful {
				p.sent = append(p.sent, aws.ToString(byID[aws.ToString(ok.Id)].MessageBody))
			}
			p.mu.Unlock()
			var again []sqstypes.SendMessageBatchRequestEntry
			for _, f := range out.Failed {
				again = append(again, byID[aws.ToString(f.Id)])
			}
			entries = again
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// missing describes the records and messages acknowledged but neither
// processed nor in a DLQ ("" when none).
func (p *producers) missing(processed, dlq map[string]bool) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, set := range []struct {
		what string
		ids  []string
	}{{"records", p.put}, {"messages", p.sent}} {
		var miss []string
		for _, id := range set.ids {
			if !processed[id] && !dlq[id] {
				miss = append(miss, id)
			}
		}
		if len(miss) > 0 {
			out = append(out, fmt.Sprintf("%d of %d %s neither processed nor in a DLQ: %v", len(miss), len(set.ids), set.what, miss[:min(len(miss), 20)]))
		}
	}
	return strings.Join(out, "; ")
}

// logReader follows the nodes' logs and collects the data of every
// record the function logged (processed).
type logReader struct {
	paths     []string
	offsets   []int64
	processed map[string]bool
}

var processedRE = regexp.MustCompile(`msg=record .*data=([kq]-\S+)`)

func newLogReader(cl *nodeproc.Cluster) *logReader {
	r := &logReader{processed: map[string]bool{}}
	for _, n := range cl.Nodes {
		r.paths = append(r.paths, n.LogPath())
	}
	r.offsets = make([]int64, len(r.paths))
	return r
}

// read reads what the logs gained since the last read (whole lines).
func (r *logReader) read() {
	for i, p := range r.paths {
		f, err := os.Open(p)
		if err != nil {
			continue
		}
		f.Seek(r.offsets[i], io.SeekStart)
		br := bufio.NewReader(f)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				break // a partial line is read again next time
			}
			r.offsets[i] += int64(len(line))
			if m := processedRE.FindStringSubmatch(line); m != nil {
				r.processed[m[1]] = true
			}
		}
		f.Close()
	}
}

// metaLeader asks `runnel cluster status` for the JetStream meta leader,
// until one is elected (at most 60 s).
func metaLeader(t *testing.T, ctx context.Context, bin string, cl *nodeproc.Cluster) string {
	t.Helper()
	re := regexp.MustCompile(`JetStream meta leader: (node-\d+)`)
	deadline := time.Now().Add(60 * time.Second)
	for {
		out, err := exec.CommandContext(ctx, bin, "--nats-url", cl.NATSURL(), "cluster", "status").CombinedOutput()
		if m := re.FindSubmatch(out); err == nil && m != nil {
			return string(m[1])
		}
		if time.Now().After(deadline) {
			t.Fatalf("runnel cluster status named no meta leader (%v):\n%s", err, out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// waitHealthy waits until every JetStream stream has a leader and all its
// replicas are current, at most 2 minutes.
func waitHealthy(t *testing.T, ctx context.Context, rn *runnel.Runnel) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var bad []string
		c, cancel := context.WithTimeout(ctx, 5*time.Second)
		names := rn.Engine.JS.StreamNames(c)
		for name := range names.Name() {
			info, err := rn.Engine.JS.Stream(c, name)
			switch {
			case err != nil:
				bad = append(bad, name+": "+err.Error())
			case info.CachedInfo().Cluster == nil || info.CachedInfo().Cluster.Leader == "":
				bad = append(bad, name+": no leader")
			default:
				for _, r := range info.CachedInfo().Cluster.Replicas {
					if !r.Current || r.Offline {
						bad = append(bad, fmt.Sprintf("%s: replica %s not current", name, r.Name))
					}
				}
			}
		}
		if err := names.Err(); err != nil {
			bad = append(bad, "listing streams: "+err.Error())
		}
		cancel()
		if len(bad) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster is not healthy 2 minutes after a restart: %v", bad)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// tailFile returns the last n lines of a file.
func tailFile(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
