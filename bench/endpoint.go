package bench

// The endpoint scenario: PutRecords and GetRecords through runnel's
// AWS-compatible endpoint (package awsapi) with the real aws-sdk-go-v2
// Kinesis client, against kinesalite (the npm package, a Kinesis emulator
// in Node.js) measured in the same run on the same machine with the same
// client code. `runnel bench endpoint` runs it; docs/benchmarks/kinesis-endpoint.md records
// a run.

import (
	"context"
	"fmt"
	"net"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/table"
)

// Endpoint targets.
const (
	TargetRunnel     = "runnel"
	TargetKinesalite = "kinesalite"
)

// NoKinesalite as EndpointConfig.Kinesalite measures runnel alone.
const NoKinesalite = noPeer

// EndpointConfig configures RunEndpoint. The zero value runs the defaults.
type EndpointConfig struct {
	// tableIndex is the served tables' table.Options.Index (bench tables).
	tableIndex string
	// Records put and read back through runnel's endpoint. Default 200_000.
	Records int
	// PeerRecords put and read back through kinesalite. Default: Records,
	// the same work for both (the ratios are of rates, but a run's rate
	// depends on its size: fixed costs amortize over more records, and
	// kinesalite's put slows as its store grows).
	PeerRecords int
	// Producers is how many PutRecords calls (of 500 records) run at once.
	// Default 4.
	Producers int
	// Kinesalite is the kinesalite package (its directory, or its
	// node_modules/.bin/kinesalite script). Empty: found with
	// FindKinesalite. NoKinesalite: runnel only.
	Kinesalite string
	Workload
}

func (c *EndpointConfig) setDefaults() {
	orDefault(&c.Records, 200_000)
	orDefault(&c.PeerRecords, c.Records)
	orDefault(&c.Producers, 4)
	c.Workload.setDefaults()
}

// EndpointTarget is the measurement of one target.
type EndpointTarget struct {
	Name string
	// Server describes the server measured (version, how it ran).
	Server string
	// Records put; Read is how many distinct ones GetRecords returned
	// (RunEndpoint fails unless they are equal and none came twice).
	Records, Read int
	PutSeconds    float64
	PutPerS       float64
	GetSeconds    float64
	GetPerS       float64
	// GetRecordsCalls is how many GetRecords calls the read took.
	GetRecordsCalls int64
	// GetCPUMicros is the CPU time the read took per record read, in µs:
	// this process's (the client's, and runnel's server, which runs in
	// it) plus kinesalite's node process's. Unlike the rate, it hardly
	// moves with what else runs on the machine. 0 where it cannot be read
	// (not Linux).
	GetCPUMicros float64
}

// EndpointReport is the result of RunEndpoint.
type EndpointReport struct {
	Machine string
	Config  EndpointConfig
	Targets []EndpointTarget
	// PeerSkipped says why kinesalite was not measured ("" when it was).
	PeerSkipped string
	// PutRatio and GetRatio are runnel's rate over kinesalite's (0 when
	// kinesalite was not measured).
	PutRatio, GetRatio float64
}

// RunEndpoint measures runnel's endpoint and, when found, kinesalite, one
// after the other, and returns the report. Each target gets a fresh
// server, a stream of cfg.Shards shards, then the timed put (PutRecords of
// 500, cfg.Producers at once, until every record is accepted) and the
// timed read (one reader per shard, GetShardIterator TRIM_HORIZON and
// GetRecords with Limit 10000, until every record has been read).
func RunEndpoint(ctx context.Context, cfg EndpointConfig) (*EndpointReport, error) {
	cfg.setDefaults()
	if cfg.RecordSize < indexDigits {
		return nil, fmt.Errorf("bench: RecordSize %d: the endpoint scenario needs at least %d bytes per record", cfg.RecordSize, indexDigits)
	}
	rep := &EndpointReport{Machine: Machine(), Config: cfg}
	rep.Config.Progress = nil

	var peer string
	peer, rep.PeerSkipped = kinesalite.resolve(cfg.Kinesalite, cfg.Progress)

	r, err := measureEndpoint(ctx, cfg, TargetRunnel, cfg.Records, startRunnelEndpoint)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", TargetRunnel, err)
	}
	rep.Targets = append(rep.Targets, r)
	if peer != "" {
		k, err := measureEndpoint(ctx, cfg, TargetKinesalite, cfg.PeerRecords, func(ctx context.Context, cfg EndpointConfig) (*endpointServer, error) {
			return kinesalite.start(ctx, peer)
		})
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", TargetKinesalite, err)
		}
		rep.Targets = append(rep.Targets, k)
		if k.PutPerS > 0 {
			rep.PutRatio = r.PutPerS / k.PutPerS
		}
		if k.GetPerS > 0 {
			rep.GetRatio = r.GetPerS / k.GetPerS
		}
	}
	return rep, nil
}

// endpointServer is a running target: its URL, what it is, how to stop it.
type endpointServer struct {
	url         string
	description string
	stop        func()
	// cpu is the CPU time the server's own process has used, when it is
	// not this process (nil otherwise).
	cpu func() time.Duration
}

func startRunnelEndpoint(ctx context.Context, cfg EndpointConfig) (*endpointServer, error) {
	rn, dir, err := openTemp(ctx, cfg.DataDir, "runnel-bench-endpoint-", "", table.Options{Index: cfg.tableIndex})
	if err != nil {
		return nil, err
	}
	logger := warnLogger()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rn.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	srv := awsapi.NewServer(ln.Addr().String(), awsapi.NewEndpoint(rn, awsapi.Options{Logger: logger}, awsapi.LambdaOptions{Logger: logger, WorkDir: dir}))
	go srv.Serve(ln)
	return &endpointServer{
		url:         "http://" + ln.Addr().String(),
		description: "runnel awsapi.NewEndpoint in this process (embedded JetStream, file storage)",
		stop: func() {
			srv.Close()
			rn.Close()
			os.RemoveAll(dir)
		},
	}, nil
}

// FindKinesalite returns the kinesalite package to run: $RUNNEL_KINESALITE,
// else bench/kinesalite/node_modules/kinesalite of this checkout (found
// from the working directory upwards; `npm install` in bench/kinesalite
// puts it there), else a kinesalite on PATH. It fails, saying what to
// install, when there is none or no node to run it.
func FindKinesalite() (string, error) { return kinesalite.find() }

// kinesalite runs as its command line does with --createStreamMs 0
// --deleteStreamMs 0 --updateStreamMs 0 (nodePeer.script).
var kinesalite = nodePeer{name: "kinesalite", env: "RUNNEL_KINESALITE", flag: "--kinesalite",
	zeroMs: []string{"createStreamMs", "deleteStreamMs", "updateStreamMs"}}

// indexDigits is the width of the record index each record's data starts
// with.
const indexDigits = 10

// endpointPutBatch is the PutRecords batch size (Kinesis's maximum).
const endpointPutBatch = 500

// endpointGetLimit is GetRecords' Limit (Kinesis's maximum).
const endpointGetLimit = 10_000

func measureEndpoint(ctx context.Context, cfg EndpointConfig, name string, n int,
	start func(context.Context, EndpointConfig) (*endpointServer, error)) (EndpointTarget, error) {
	srv, err := start(ctx, cfg)
	if err != nil {
		return EndpointTarget{}, err
	}
	defer srv.stop()
	client, shards, entries, err := endpointSetup(ctx, cfg, srv.url, n)
	if err != nil {
		return EndpointTarget{}, err
	}
	runtimeGC()

	t0 := time.Now()
	if err := endpointPut(ctx, client, endpointStream, entries, cfg.Producers); err != nil {
		return EndpointTarget{}, fmt.Errorf("put: %w", err)
	}
	putSec := time.Since(t0).Seconds()
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "%-11s put %9d records %8.2f s %11.0f records/s\n", name, n, putSec, float64(n)/putSec)
	}
	runtimeGC()

	cpu0 := srv.cpuTime()
	t0 = time.Now()
	read, calls, err := endpointGet(ctx, client, endpointStream, shards, n, cfg.RecordSize)
	if err != nil {
		return EndpointTarget{}, fmt.Errorf("get: %w", err)
	}
	getSec := time.Since(t0).Seconds()
	getCPU := srv.cpuTime() - cpu0
	if cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "%-11s get %9d records %8.2f s %11.0f records/s (%d GetRecords calls, %.2f µs CPU per record)\n", name, read, getSec, float64(read)/getSec, calls,
			getCPU.Seconds()*1e6/float64(max(read, 1)))
	}
	return EndpointTarget{
		Name: name, Server: srv.description, Records: n, Read: read,
		PutSeconds: putSec, PutPerS: float64(n) / putSec,
		GetSeconds: getSec, GetPerS: float64(read) / getSec,
		GetRecordsCalls: calls,
		GetCPUMicros:    getCPU.Seconds() * 1e6 / float64(max(read, 1)),
	}, nil
}

// endpointStream is the stream the endpoint scenario writes and reads.
const endpointStream = "bench-endpoint"

// endpointSetup is the untimed part of a target's run: the client of the
// server at url, the stream of cfg.Shards shards (ACTIVE; its shard ids
// returned) and the n records to put. Record i's data is i in indexDigits
// decimal digits followed by filler, its partition key one of 1024 (so
// every shard gets some).
func endpointSetup(ctx context.Context, cfg EndpointConfig, url string, n int) (*kinesis.Client, []string, []ktypes.PutRecordsRequestEntry, error) {
	client := kinesis.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(),
		Region:       "us-east-1",
		Credentials:  credentials.NewStaticCredentialsProvider("AKIDBENCH", "bench-secret", ""),
		BaseEndpoint: aws.String(url),
	})
	if _, err := client.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String(endpointStream), ShardCount: aws.Int32(int32(cfg.Shards))}); err != nil {
		return nil, nil, nil, fmt.Errorf("CreateStream: %w", err)
	}
	shards, err := waitActive(ctx, client, endpointStream)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(shards) != cfg.Shards {
		return nil, nil, nil, fmt.Errorf("stream has %d shards, want %d", len(shards), cfg.Shards)
	}
	filler := make([]byte, cfg.RecordSize)
	for i := range filler {
		filler[i] = byte('a' + i%26)
	}
	entries := make([]ktypes.PutRecordsRequestEntry, n)
	for i := range entries {
		data := make([]byte, cfg.RecordSize)
		copy(data, filler)
		copy(data, fmt.Sprintf("%0*d", indexDigits, i))
		entries[i] = ktypes.PutRecordsRequestEntry{Data: data, PartitionKey: aws.String("pk-" + strconv.Itoa(i%1024))}
	}
	return client, shards, entries, nil
}

// cpuTime is the CPU time used so far by this process and, when it runs
// apart, the server's process.
func (s *endpointServer) cpuTime() time.Duration {
	t := processCPU()
	if s.cpu != nil {
		t += s.cpu()
	}
	return t
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// processCPUOf is the CPU time (user and system, all threads) process pid
// has used, from /proc/<pid>/stat (Linux; 0 elsewhere). The kernel counts
// it in ticks of 1/100 s (USER_HZ).
func processCPUOf(pid int) time.Duration {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The fields after the command name (in parentheses, which may hold
	// spaces): state is field 3, utime 14 and stime 15.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * (time.Second / 100)
}

// waitActive waits for the stream to be ACTIVE and returns its shard ids.
func waitActive(ctx context.Context, client *kinesis.Client, streamName string) ([]string, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := client.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String(streamName)})
		if err != nil {
			return nil, fmt.Errorf("DescribeStream: %w", err)
		}
		if d.StreamDescription.StreamStatus == ktypes.StreamStatusActive {
			var ids []string
			for _, s := range d.StreamDescription.Shards {
				ids = append(ids, aws.ToString(s.ShardId))
			}
			return ids, nil
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("stream %s not ACTIVE after a minute (%s)", streamName, d.StreamDescription.StreamStatus)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// endpointPut puts the entries in PutRecords calls of endpointPutBatch,
// producers at once; entries that fail are put again (at most 10 times).
func endpointPut(ctx context.Context, client *kinesis.Client, streamName string, all []ktypes.PutRecordsRequestEntry, producers int) error {
	return putBatches(ctx, all, endpointPutBatch, producers, func(ctx context.Context, entries []ktypes.PutRecordsRequestEntry) ([]ktypes.PutRecordsRequestEntry, error) {
		out, err := client.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String(streamName), Records: entries})
		if err != nil || aws.ToInt32(out.FailedRecordCount) == 0 {
			return nil, err
		}
		var retry []ktypes.PutRecordsRequestEntry
		for i, r := range out.Records {
			if r.ErrorCode != nil {
				retry = append(retry, entries[i])
			}
		}
		return retry, nil
	})
}

// endpointGet reads every shard from TRIM_HORIZON, one reader per shard,
// each to its end (an empty page with MillisBehindLatest 0: every record
// was put before), and checks that n distinct records were read: each
// record's size and index are checked, a duplicate, a stall or a shortfall
// fails. It returns the records read and the GetRecords calls made.
func endpointGet(ctx context.Context, client *kinesis.Client, streamName string, shards []string, n, size int) (int, int64, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	seen := make([]atomic.Bool, n)
	var read, calls atomic.Int64
	var progress atomic.Int64 // unix nanos of the last record read
	progress.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	for _, shard := range shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			it, err := client.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String(streamName), ShardId: aws.String(shard),
				ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})
			if err != nil {
				cancel(fmt.Errorf("GetShardIterator %s: %w", shard, err))
				return
			}
			iter := it.ShardIterator
			for read.Load() < int64(n) && ctx.Err() == nil {
				out, err := client.GetRecords(ctx, &kinesis.GetRecordsInput{ShardIterator: iter, Limit: aws.Int32(endpointGetLimit)})
				calls.Add(1)
				if err != nil {
					cancel(fmt.Errorf("GetRecords %s: %w", shard, err))
					return
				}
				for _, r := range out.Records {
					i, err := strconv.Atoi(string(r.Data[:min(indexDigits, len(r.Data))]))
					if err != nil || len(r.Data) != size || i < 0 || i >= n {
						cancel(fmt.Errorf("shard %s: a record that was not put: %q", shard, r.Data))
						return
					}
					if seen[i].Swap(true) {
						cancel(fmt.Errorf("shard %s: record %d read twice", shard, i))
						return
					}
				}
				if len(out.Records) > 0 {
					read.Add(int64(len(out.Records)))
					progress.Store(time.Now().UnixNano())
				} else if aws.ToInt64(out.MillisBehindLatest) == 0 {
					// Every record was put before the read began: an
					// empty page at the tip is this shard's end. (If a
					// record were missing, the count below says so.)
					return
				} else if time.Since(time.Unix(0, progress.Load())) > stallLimit {
					cancel(fmt.Errorf("no record read for %v (%d of %d)", stallLimit, read.Load(), n))
					return
				}
				if out.NextShardIterator == nil {
					cancel(fmt.Errorf("shard %s closed after %d of %d records", shard, read.Load(), n))
					return
				}
				iter = out.NextShardIterator
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return int(read.Load()), calls.Load(), err
	}
	if got := read.Load(); got != int64(n) {
		return int(got), calls.Load(), fmt.Errorf("every shard read to its end, but %d of %d records were read", got, n)
	}
	return int(read.Load()), calls.Load(), nil
}

// runtimeGC starts a timed phase from a collected heap.
func runtimeGC() {
	runtime.GC()
	debug.FreeOSMemory()
}

// Markdown renders the report for docs/benchmarks/kinesis-endpoint.md.
func (r *EndpointReport) Markdown() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	fmt.Fprintf(&b, "Client: aws-sdk-go-v2 Kinesis, %d shards, PutRecords of %d records of %d bytes, %d producers at once; "+
		"GetRecords (Limit %d) with one reader per shard from TRIM_HORIZON until every record was read back (each checked).\n\n",
		c.Shards, endpointPutBatch, c.RecordSize, c.Producers, endpointGetLimit)
	b.WriteString("| target | records | put s | put records/s | get s | get records/s | GetRecords calls | get CPU µs/record | server |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %.2f | %s | %d | %.2f | %s |\n", t.Name, t.Records, t.PutSeconds, group(t.PutPerS), t.GetSeconds, group(t.GetPerS), t.GetRecordsCalls, t.GetCPUMicros, t.Server)
	}
	if r.PeerSkipped != "" {
		fmt.Fprintf(&b, "\nkinesalite not measured: %s\n", r.PeerSkipped)
	} else {
		b.WriteString("\n| ratio runnel/kinesalite | value |\n|---|---:|\n")
		fmt.Fprintf(&b, "| put | %.1f× |\n| get | %.1f× |\n", r.PutRatio, r.GetRatio)
	}
	return b.String()
}
