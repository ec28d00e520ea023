package demo

// The external flight demo (`runnel demo --external`): the same story as
// Run, but runnel is only an AWS endpoint. The producer is the
// aws-sdk-go-v2 Kinesis client, the function is an unmodified aws-lambda-go
// binary (demo/external/fn) deployed with the Lambda API, and everything is
// set up with the AWS clients. The function stores each successful batch's
// result in an SQS results queue; RunExternal reads it back, with the
// on-failure queue, and reconciles as Run does.

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

// externalFnPkg is the function's package, relative to the module root.
const externalFnPkg = "./demo/external/fn"

// externalResult is a message of the results queue (demo/external/fn).
type externalResult struct {
	Seqs  map[string][]string `json:"seqs"`
	Stats *flights.Stats      `json:"stats"`
}

// RunExternal runs the flight demo through runnel's AWS-compatible
// endpoint and returns its reconciliation. It needs the Go toolchain (go on
// PATH) and runnel's source tree, to build the function. The flaky records,
// transient failures and the outage of Run are not injected here; poison
// records are, and end in the on-failure queue.
func RunExternal(ctx context.Context, cfg Config) (*Result, error) {
	cfg.setDefaults()
	if runtime.GOOS == "windows" {
		return nil, errors.New("demo --external: process functions need a Unix")
	}
	zipFile, err := buildExternalFunction(ctx)
	if err != nil {
		return nil, err
	}
	run, err := openRun(ctx, cfg, "demo-external-", "engine")
	if err != nil {
		return nil, err
	}
	defer run.close()
	total, dir, rn := run.total, run.dir, run.rn

	// The endpoint, on a free local port.
	if err := os.MkdirAll(filepath.Join(dir, "functions"), 0o755); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	url := "http://" + ln.Addr().String()
	srv := awsapi.NewServer(ln.Addr().String(), awsapi.NewEndpoint(rn, awsapi.Options{Logger: cfg.Logger},
		awsapi.LambdaOptions{Logger: cfg.Logger, WorkDir: filepath.Join(dir, "functions"), Endpoint: url}))
	go srv.Serve(ln)
	defer srv.Close()

	// From here on, only AWS clients.
	awsCfg := aws.Config{HTTPClient: sdkhttp.Client(),
		Region:       rn.Engine.Region(),
		Credentials:  credentials.NewStaticCredentialsProvider("runnel", "runnel", ""),
		BaseEndpoint: aws.String(url),
	}
	kc, qc, lc := kinesis.NewFromConfig(awsCfg), sqs.NewFromConfig(awsCfg), lambda.NewFromConfig(awsCfg)

	suffix := strings.TrimPrefix(filepath.Base(dir), "demo-external-")
	src := "flights-" + suffix
	if _, err := kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(src), ShardCount: aws.Int32(int32(cfg.Shards))}); err != nil {
		return nil, fmt.Errorf("CreateStream: %w", err)
	}
	var streamARN string
	for {
		d, err := kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(src)})
		if err != nil {
			return nil, fmt.Errorf("DescribeStreamSummary: %w", err)
		}
		if d.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive {
			streamARN = aws.ToString(d.StreamDescriptionSummary.StreamARN)
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	createQueue := func(name string) (url, arn string, err error) {
		q, err := qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"MaximumMessageSize": "1048576"}})
		if err != nil {
			return "", "", fmt.Errorf("CreateQueue %s: %w", name, err)
		}
		a, err := qc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return "", "", fmt.Errorf("GetQueueAttributes %s: %w", name, err)
		}
		return aws.ToString(q.QueueUrl), a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
	}
	resultsURL, _, err := createQueue("flights-results-" + suffix)
	if err != nil {
		return nil, err
	}
	failURL, failARN, err := createQueue("flights-failures-" + suffix)
	if err != nil {
		return nil, err
	}

	fn := "flight-stats-" + suffix
	if _, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String(fn), Role: aws.String("arn:aws:iam::" + rn.Engine.AccountID() + ":role/flight-stats"),
		Runtime: ltypes.RuntimeProvidedal2023, Handler: aws.String("bootstrap"), Code: &ltypes.FunctionCode{ZipFile: zipFile},
		Timeout: aws.Int32(60), Environment: &ltypes.Environment{Variables: map[string]string{"RESULTS_QUEUE_URL": resultsURL}},
	}); err != nil {
		return nil, fmt.Errorf("CreateFunction: %w", err)
	}
	defer lc.DeleteFunction(context.Background(), &lambda.DeleteFunctionInput{FunctionName: aws.String(fn)})

	// Poison rows, spread at random over the run (as Run marks them).
	poison := markRows(cfg.Seed, 2, max(cfg.PoisonRecords, 0), total, nil)

	start := time.Now()
	esm, err := lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
		EventSourceArn: aws.String(streamARN), FunctionName: aws.String(fn),
		StartingPosition: ltypes.EventSourcePositionTrimHorizon, BatchSize: aws.Int32(int32(cfg.BatchSize)),
		ParallelizationFactor:      aws.Int32(int32(cfg.ParallelizationFactor)),
		MaximumRetryAttempts:       aws.Int32(int32(min(cfg.MaximumRetryAttempts, 3))),
		BisectBatchOnFunctionError: aws.Bool(true),
		DestinationConfig:          &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(failARN)}},
	})
	if err != nil {
		return nil, fmt.Errorf("CreateEventSourceMapping: %w", err)
	}
	defer lc.DeleteEventSourceMapping(context.Background(), &lambda.DeleteEventSourceMappingInput{UUID: esm.UUID})

	encode := func(row int64, f *flights.Flight) []byte {
		if poison[row] {
			return f.AppendJSONPoison(nil)
		}
		return f.AppendJSON(nil)
	}
	// The same producer as Run, putting through the aws-sdk-go-v2 client.
	putRecords := func(ctx context.Context, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
		return nodeset.PutRecordsWith(ctx, kc, src, entries)
	}
	prod := startProduction(ctx, cfg, total, encode, putRecords)

	// Read the results and the on-failure queue until every record put is
	// accounted for.
	rd := &resultReader{done: make([]positions, cfg.Shards), failed: make([]positions, cfg.Shards), stats: flights.NewStats(), seen: map[string]bool{}}
	err = prod.settle(ctx, func(producing bool) (int64, bool, bool, error) {
		got, err := drain(ctx, qc, resultsURL, rd.seen, rd.result)
		if err != nil {
			return 0, false, false, err
		}
		gotFail, err := drain(ctx, qc, failURL, rd.seen, func(body string) error { return rd.failure(ctx, rn, body) })
		if err != nil {
			return 0, false, false, err
		}
		resolved := rd.resolved()
		return resolved, !producing && resolved >= prod.put.Load(), got+gotFail > 0, nil
	}, prod.unresolved(rd.missing))
	if err != nil {
		return nil, err
	}
	elapsed := time.Since(start)

	res := &Result{RecordsIn: prod.put.Load(), ElapsedS: elapsed.Seconds(), PoisonInjected: len(poison)}
	res.RecordsPerS = float64(res.RecordsIn) / res.ElapsedS
	res.Deliveries, res.Invocations = rd.delivered, rd.batches
	res.ToFailureDestination = rd.toFailure
	failedRows := res.tally(prod.rows, rd.done, rd.failed, poison, nil)
	if err := res.check(cfg, total, failedRows, rd.stats); err != nil {
		return nil, err
	}
	if rd.partial > 0 {
		res.StatsMatch = false
		res.StatsDiff = fmt.Sprintf("%d results partly overlapped earlier ones and could not be merged; %s", rd.partial, res.StatsDiff)
	}
	return res, nil
}

// resultReader merges the results queue and the on-failure queue, once per
// record (by shard and sequence number).
type resultReader struct {
	done, failed []positions
	stats        *flights.Stats
	unique       int64           // records processed
	failedN      int64           // records in the on-failure queue, not processed
	delivered    int64           // records in results, duplicates included
	batches      int64           // results read
	toFailure    int64           // records in on-failure messages
	partial      int64           // results that overlapped earlier ones only in part
	seen         map[string]bool // the ids of the messages merged (drain)
}

// drainVisibility is the visibility timeout, in seconds, of drain's
// receives. It bounds how long a message whose delete was lost with a
// killed node stays hidden: at 20 s the nodes demo's run with a SIGKILL
// waited 20 s for its last results.
const drainVisibility = 5

func (rd *resultReader) resolved() int64 { return rd.unique + rd.failedN }

// missing describes the records put but not resolved, per shard: how many
// and the first position.
func (rd *resultReader) missing(rows [][]int32) string {
	n, first := make([]int, len(rows)), make([]uint64, len(rows))
	eachRow(rows, func(sh int, pos uint64, _ int64) {
		if !rd.done[sh].has(pos) && !rd.failed[sh].has(pos) {
			if n[sh] == 0 {
				first[sh] = pos
			}
			n[sh]++
		}
	})
	var b strings.Builder
	for sh := range rows {
		fmt.Fprintf(&b, "%s: %d from position %d of %d; ", stream.ShardID(sh), n[sh], first[sh], len(rows[sh]))
	}
	return strings.TrimSuffix(b.String(), "; ")
}

// drain receives and deletes what a queue holds now (at most
// drainReceives receives of 10), handing each body to
// fn once (a message id in seen was handed over before: it is only
// deleted); it returns how many messages it read. The visibility timeout
// is short (drainVisibility): a message received again because its
// receive answer or its delete was lost (a node killed mid-call) comes
// back soon, and seen keeps it from counting twice.
func drain(ctx context.Context, qc *sqs.Client, url string, seen map[string]bool, fn func(string) error) (int, error) {
	n := 0
	for range drainReceives {
		out, err := qc.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, VisibilityTimeout: drainVisibility})
		if err != nil {
			return n, fmt.Errorf("ReceiveMessage: %w", err)
		}
		if len(out.Messages) == 0 {
			return n, nil
		}
		del := make([]sqstypes.DeleteMessageBatchRequestEntry, 0, len(out.Messages))
		for i, m := range out.Messages {
			if id := aws.ToString(m.MessageId); !seen[id] {
				if err := fn(aws.ToString(m.Body)); err != nil {
					return n, err
				}
				seen[id] = true
			}
			del = append(del, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if _, err := qc.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			return n, fmt.Errorf("DeleteMessageBatch: %w", err)
		}
		n += len(out.Messages)
	}
	return n, nil
}

// drainReceives bounds one drain call, so that its caller's loop shows
// progress while the results keep coming.
const drainReceives = 100

// locate returns a record's shard index and log position.
func locate(shardID, seq string, shards int) (int, uint64, error) {
	sh, err := stream.ShardIndex(shardID)
	if err != nil || sh >= shards || len(seq) < 20 {
		return 0, 0, fmt.Errorf("demo: record %s/%s is not of the flights stream", shardID, seq)
	}
	return sh, seqPosition(seq), nil
}

// result merges a results-queue message: its statistics count if none of
// its records was counted before (a redelivered batch is skipped whole).
func (rd *resultReader) result(body string) error {
	var r externalResult
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return fmt.Errorf("demo: a results message does not parse: %w", err)
	}
	rd.batches++
	var fresh, seen int
	type loc struct {
		sh  int
		pos uint64
	}
	var locs []loc
	for shard, seqs := range r.Seqs {
		for _, s := range seqs {
			sh, pos, err := locate(shard, s, len(rd.done))
			if err != nil {
				return err
			}
			locs = append(locs, loc{sh, pos})
			if rd.done[sh].has(pos) {
				seen++
			} else {
				fresh++
			}
		}
	}
	rd.delivered += int64(len(locs))
	if fresh == 0 {
		return nil
	}
	if seen > 0 {
		rd.partial++
	}
	for _, l := range locs {
		if rd.done[l.sh].set(l.pos) {
			rd.unique++
			if rd.failed[l.sh].has(l.pos) {
				rd.failedN--
			}
		}
	}
	if seen == 0 {
		rd.stats.Merge(r.Stats)
	}
	return nil
}

// failure resolves an on-failure message back to its records.
func (rd *resultReader) failure(ctx context.Context, rn *runnel.Runnel, body string) error {
	r, err := recovery.Resolve(ctx, rn.Streams, []byte(body))
	if err != nil || r.Info == nil {
		return fmt.Errorf("demo: the on-failure queue holds a message that does not resolve to stream records (%v): %s", err, body)
	}
	for _, rec := range r.Records {
		shard, _, _ := strings.Cut(rec.EventID, ":")
		sh, pos, err := locate(shard, rec.Kinesis.SequenceNumber, len(rd.done))
		if err != nil {
			return err
		}
		rd.toFailure++
		if rd.failed[sh].set(pos) && !rd.done[sh].has(pos) {
			rd.failedN++
		}
	}
	return nil
}

// buildExternalFunction builds demo/external/fn with the Go toolchain
// (go build -tags lambda.norpc) and returns its deployment package: a zip
// holding the binary as bootstrap.
func buildExternalFunction(ctx context.Context) ([]byte, error) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return nil, errors.New("demo --external builds its function with the Go toolchain, and go is not on PATH")
	}
	root, err := moduleRoot(ctx, goBin)
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "runnel-demo-fn-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "bootstrap")
	cmd := exec.CommandContext(ctx, goBin, "build", "-tags", "lambda.norpc", "-o", bin, externalFnPkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("demo --external: go build %s in %s: %v\n%s", externalFnPkg, root, err, out)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	hdr := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(exe); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// moduleRoot finds runnel's source tree: the module of the working
// directory (go env GOMOD) if it is runnel, else the tree this file was
// compiled from.
func moduleRoot(ctx context.Context, goBin string) (string, error) {
	isRunnel := func(dir string) bool {
		b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err != nil {
			return false
		}
		first, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimSpace(first) == "module github.com/runnel-dev/runnel"
	}
	if out, err := exec.CommandContext(ctx, goBin, "env", "GOMOD").Output(); err == nil {
		if gomod := strings.TrimSpace(string(out)); gomod != "" && gomod != os.DevNull {
			if dir := filepath.Dir(gomod); isRunnel(dir) {
				return dir, nil
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		if dir := filepath.Dir(filepath.Dir(file)); isRunnel(dir) {
			return dir, nil
		}
	}
	return "", errors.New("demo --external builds its function from runnel's source: run it inside the runnel repository (github.com/runnel-dev/runnel)")
}
