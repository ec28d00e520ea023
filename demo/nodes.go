package demo

// The cluster flight demo (`runnel demo --nodes 3`): the flights go
// through runnel nodes running as separate processes, whose embedded NATS
// servers form one cluster (JetStream replicas 3). Everything is set up
// and produced through the nodes' AWS endpoints, spread over all of them;
// the function is built into the binary (nodefn.go) and runs on the nodes
// holding the mapping's shards (a lease each). Mid-run the node running
// the most of them is killed with SIGKILL and started again; the demo then
// reconciles as the single-node demo does.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/demo/nodeset"
	"github.com/runnel-dev/runnel/stream"
)

// NodesConfig configures the cluster demo (RunNodes); KillAt kills the
// node running the flights mapping.
type NodesConfig = nodeset.Plan

// RunNodes runs the flight demo on a cluster of node processes and
// returns its reconciliation. Poison records are injected and end in the
// mapping's on-failure queue; the flaky records, transient failures and
// the Retry-DLQ tier of Run are not (their state would live in one
// process). The run's directory keeps each node's log (node-<i>.log); the
// nodes' data is removed after a successful run unless Config.Keep, and
// everything is kept after a failed one.
func RunNodes(ctx context.Context, cfg Config, nc NodesConfig) (*Result, error) {
	cfg.setDefaults()
	if err := nc.Check("rows"); err != nil {
		return nil, fmt.Errorf("demo %w", err)
	}
	total, dir, err := prepareRun(cfg, "demo-nodes-")
	if err != nil {
		return nil, err
	}
	say := nodeset.Progress(cfg.Progress, "demo: ")
	var res *Result
	err = nc.Run(ctx, nodeset.Options{Dir: dir, Logger: cfg.Logger, Say: say}, cfg.Keep, func(set *nodeset.Set) (bool, error) {
		res, err = runOnNodes(ctx, cfg, nc, set, total, say)
		return err == nil, err
	})
	if err != nil {
		return nil, fmt.Errorf("demo --nodes: %w", err)
	}
	// The nodes have exited and been waited for: the children's maximum
	// resident set is the largest node's peak.
	res.NodePeakRSSMiB = childrenPeakRSSMiB()
	return res, nil
}

// nodeSetup is what runOnNodes creates through the AWS API.
type nodeSetup struct {
	stream, streamARN, resultsURL, failURL, failARN, fn, mappingUUID string
}

// unlessExists is a create call's err, or nil when it is an E: the
// service's "already exists" answer, here to a retried call whose first
// answer was lost.
func unlessExists[E error](err error) error {
	var e E
	if errors.As(err, &e) {
		return nil
	}
	return err
}

// setUpOnNodes creates the stream, the results and on-failure queues, the
// function and the mapping, each call through any node.
func setUpOnNodes(ctx context.Context, cfg Config, a *nodeset.Clients, suffix, account string) (*nodeSetup, error) {
	s := &nodeSetup{stream: "flights-" + suffix, fn: "flight-stats-" + suffix}
	if _, err := nodeset.OnAny(ctx, a, func(i int) (*kinesis.CreateStreamOutput, error) {
		out, err := a.Kinesis[i].CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(s.stream), ShardCount: aws.Int32(int32(cfg.Shards))})
		return out, unlessExists[*ktypes.ResourceInUseException](err)
	}); err != nil {
		return nil, fmt.Errorf("CreateStream: %w", err)
	}
	for s.streamARN == "" {
		d, err := nodeset.OnAny(ctx, a, func(i int) (*kinesis.DescribeStreamSummaryOutput, error) {
			return a.Kinesis[i].DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String(s.stream)})
		})
		if err != nil {
			return nil, fmt.Errorf("DescribeStreamSummary: %w", err)
		}
		if d.StreamDescriptionSummary.StreamStatus == ktypes.StreamStatusActive {
			s.streamARN = aws.ToString(d.StreamDescriptionSummary.StreamARN)
		} else if err := sleepCtx(ctx, 50*time.Millisecond); err != nil {
			return nil, err
		}
	}
	createQueue := func(name string) (url, arn string, err error) {
		q, err := nodeset.OnAny(ctx, a, func(i int) (*sqs.CreateQueueOutput, error) {
			return a.SQS[i].CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: map[string]string{"MaximumMessageSize": "1048576"}})
		})
		if err != nil {
			return "", "", fmt.Errorf("CreateQueue %s: %w", name, err)
		}
		attrs, err := nodeset.OnAny(ctx, a, func(i int) (*sqs.GetQueueAttributesOutput, error) {
			return a.SQS[i].GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		})
		if err != nil {
			return "", "", fmt.Errorf("GetQueueAttributes %s: %w", name, err)
		}
		return aws.ToString(q.QueueUrl), attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
	}
	var err error
	if s.resultsURL, _, err = createQueue("flights-results-" + suffix); err != nil {
		return nil, err
	}
	if s.failURL, s.failARN, err = createQueue("flights-failures-" + suffix); err != nil {
		return nil, err
	}
	if _, err := nodeset.OnAny(ctx, a, func(i int) (*lambda.CreateFunctionOutput, error) {
		out, err := a.Lambda[i].CreateFunction(ctx, &lambda.CreateFunctionInput{
			FunctionName: aws.String(s.fn), Role: aws.String("arn:aws:iam::" + account + ":role/flight-stats"),
			Runtime: "runnel", Handler: aws.String(NodeHandler), Timeout: aws.Int32(60), Code: &ltypes.FunctionCode{},
			Environment: &ltypes.Environment{Variables: map[string]string{"RESULTS_QUEUE_URL": s.resultsURL}},
		})
		return out, unlessExists[*ltypes.ResourceConflictException](err)
	}); err != nil {
		return nil, fmt.Errorf("CreateFunction: %w", err)
	}
	esm, err := nodeset.OnAny(ctx, a, func(i int) (*lambda.CreateEventSourceMappingOutput, error) {
		return a.Lambda[i].CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{
			EventSourceArn: aws.String(s.streamARN), FunctionName: aws.String(s.fn),
			StartingPosition: ltypes.EventSourcePositionTrimHorizon, BatchSize: aws.Int32(int32(cfg.BatchSize)),
			ParallelizationFactor:      aws.Int32(int32(cfg.ParallelizationFactor)),
			MaximumRetryAttempts:       aws.Int32(int32(cfg.MaximumRetryAttempts)),
			BisectBatchOnFunctionError: aws.Bool(true),
			DestinationConfig:          &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(s.failARN)}},
		})
	})
	if err != nil {
		return nil, fmt.Errorf("CreateEventSourceMapping: %w", err)
	}
	s.mappingUUID = aws.ToString(esm.UUID)
	return s, nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// runOnNodes is RunNodes once the nodes run: set up, produce, kill and
// restart a node, settle and reconcile.
func runOnNodes(ctx context.Context, cfg Config, nc NodesConfig, set *nodeset.Set, total int64, say func(string, ...any)) (*Result, error) {
	cl, rn, a := set.Proc, set.RN, set.AWS
	suffix := strings.TrimPrefix(filepath.Base(filepath.Dir(cl.Nodes[0].LogPath())), "demo-nodes-")
	s, err := setUpOnNodes(ctx, cfg, a, suffix, rn.Engine.AccountID())
	if err != nil {
		return nil, err
	}
	poison := markRows(cfg.Seed, 2, max(cfg.PoisonRecords, 0), total, nil)
	encode := func(row int64, f *flights.Flight) []byte {
		if poison[row] {
			return f.AppendJSONPoison(nil)
		}
		return f.AppendJSON(nil)
	}
	putRecords := func(ctx context.Context, entries []stream.PutRecordsRequestEntry) ([]stream.PutRecordsResultEntry, error) {
		return nodeset.PutRecords(ctx, a, s.stream, entries)
	}
	start := time.Now()
	prod := startProduction(ctx, cfg, total, encode, putRecords)
	killer := &nodeset.Killer{Set: set, Keys: []string{"esm." + s.mappingUUID}, What: "the flights mapping", Say: say, Log: cfg.Logger,
		MetaLeader: nc.KillMetaLeader}
	killAt := int64(nc.KillAt * float64(total))

	if nc.KillAt > 0 {
		// Not in the settle loop below: its drain of the results can
		// last until the end of the run, and the kill would come after it.
		killer.StartAt(ctx, func() bool { return prod.put.Load() >= killAt })
	}
	rd := newNodeReader(cfg.Shards)
	var resolvedAt time.Time
	err = prod.settle(ctx, func(producing bool) (int64, bool, bool, error) {
		got, err := rd.drainAny(ctx, a, s.resultsURL, rd.result)
		if err != nil {
			return rd.resolved(), false, false, err
		}
		gotFail, err := rd.drainAny(ctx, a, s.failURL, func(body string) error { return rd.failure(ctx, rn, body) })
		if err != nil {
			return rd.resolved(), false, false, err
		}
		if err := killer.Err(); err != nil {
			return 0, false, false, err
		}
		resolved := rd.resolved()
		all := !producing && resolved >= prod.put.Load() && rd.complete(prod)
		if all && resolvedAt.IsZero() {
			resolvedAt = time.Now()
		}
		done := all && killer.Finished(nc.KillAt > 0)
		return resolved, done, got+gotFail > 0, nil
	}, prod.unresolved(rd.missing))
	if err != nil {
		return nil, err
	}
	// elapsed ends with the last record resolved, not with the killed
	// node's restart, which the run waits for before it reconciles.
	elapsed := resolvedAt.Sub(start)

	res := &Result{RecordsIn: prod.put.Load(), ElapsedS: elapsed.Seconds(), PoisonInjected: len(poison),
		Nodes: len(cl.Nodes), NodeKills: killer.Kills(), RecordsByNode: rd.byNode, RecordsByShard: rd.byShard}
	res.RecordsPerS = float64(res.RecordsIn) / res.ElapsedS
	if d, ok := killer.Failover(); ok {
		res.FailoverS = d.Seconds()
	}
	if at := killer.KilledAt(); !at.IsZero() {
		res.AfterKillS = resolvedAt.Sub(at).Seconds()
	}
	res.Deliveries, res.Invocations, res.ToFailureDestination = rd.delivered, rd.batches, rd.toFailure
	stats := flights.NewStats()
	failedRows := res.tally(prod.rows, rd.done, rd.failed, poison, func(sh int, pos uint64) { stats.Add(rd.flight(sh, pos)) })
	// Positions processed that hold no acknowledged row: stored twice.
	res.StoredTwice = rd.unique - res.ProcessedUnique
	if err := res.check(cfg, total, failedRows, stats); err != nil {
		return nil, err
	}
	return res, nil
}

// nodeReader merges the results queue and the on-failure queue once per
// record, keeping each processed record's contribution by position.
type nodeReader struct {
	done, failed []positions
	origin       [][]uint16 // [shard][pos-1]: index in codes
	delay        [][]int32
	codes        []string
	codeOf       map[string]uint16
	unique       int64 // records processed
	failedN      int64 // records in the on-failure queue, not processed
	delivered    int64 // records in results, duplicates included
	batches      int64 // results read
	toFailure    int64 // records in on-failure messages
	byNode       map[string]int64
	byShard      map[string]map[string]int64 // shard id -> node -> records processed first there
	seen         map[string]bool             // the ids of the messages merged (drain)
}

func newNodeReader(shards int) *nodeReader {
	return &nodeReader{done: make([]positions, shards), failed: make([]positions, shards),
		origin: make([][]uint16, shards), delay: make([][]int32, shards), codeOf: map[string]uint16{}, byNode: map[string]int64{}, byShard: map[string]map[string]int64{}}
}

func (rd *nodeReader) resolved() int64 { return rd.unique + rd.failedN }

// complete reports whether every record the producer stored (by its
// acknowledged position) is processed or in the on-failure queue: a
// record stored twice by a retried put is counted in resolved but is not
// one of them.
func (rd *nodeReader) complete(prod *production) bool {
	prod.mu.Lock()
	defer prod.mu.Unlock()
	all := true
	eachRow(prod.rows, func(sh int, pos uint64, _ int64) {
		if all && !rd.done[sh].has(pos) && !rd.failed[sh].has(pos) {
			all = false
		}
	})
	return all
}

// flight is the processed record at (sh, pos) as the function reported
// it (only what the statistics read).
func (rd *nodeReader) flight(sh int, pos uint64) flights.Flight {
	return flights.Flight{Origin: rd.codes[rd.origin[sh][pos-1]], Delay: int64(rd.delay[sh][pos-1])}
}

// result merges a results-queue message.
func (rd *nodeReader) result(body string) error {
	var r nodeResult
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return fmt.Errorf("demo: a results message does not parse: %w", err)
	}
	rd.batches++
	for shard, recs := range r.Records {
		for _, rec := range recs {
			sh, pos, err := locate(shard, rec.Seq, len(rd.done))
			if err != nil {
				return err
			}
			rd.delivered++
			if !rd.done[sh].set(pos) {
				continue
			}
			rd.unique++
			rd.byNode[r.Node]++
			if rd.byShard[shard] == nil {
				rd.byShard[shard] = map[string]int64{}
			}
			rd.byShard[shard][r.Node]++
			if rd.failed[sh].has(pos) {
				rd.failedN--
			}
			code, ok := rd.codeOf[rec.Origin]
			if !ok {
				code = uint16(len(rd.codes))
				rd.codes = append(rd.codes, rec.Origin)
				rd.codeOf[rec.Origin] = code
			}
			for uint64(len(rd.origin[sh])) < pos {
				rd.origin[sh], rd.delay[sh] = append(rd.origin[sh], 0), append(rd.delay[sh], 0)
			}
			rd.origin[sh][pos-1], rd.delay[sh][pos-1] = code, int32(rec.Delay)
		}
	}
	return nil
}

// failure resolves an on-failure message back to its records.
func (rd *nodeReader) failure(ctx context.Context, rn *runnel.Runnel, body string) error {
	ext := &resultReader{done: rd.done, failed: rd.failed}
	if err := ext.failure(ctx, rn, body); err != nil {
		return err
	}
	rd.toFailure += ext.toFailure
	rd.failedN += ext.failedN
	return nil
}

// missing describes the records put but not resolved (see
// resultReader.missing).
func (rd *nodeReader) missing(rows [][]int32) string {
	return (&resultReader{done: rd.done, failed: rd.failed}).missing(rows)
}

// drainAny drains a queue (resultReader.drain) through the next node.
func (rd *nodeReader) drainAny(ctx context.Context, a *nodeset.Clients, url string, fn func(string) error) (int, error) {
	if rd.seen == nil {
		rd.seen = map[string]bool{}
	}
	i := a.Pick()
	n, err := drain(ctx, a.SQS[i], url, rd.seen, fn)
	a.Report(i, err)
	return n, err
}
