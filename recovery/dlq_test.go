package recovery_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/wire"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// dlqEnv is a source queue "work" whose RedrivePolicy names "work-dlq",
// and a stream "s" with records the pointer messages point at.
type dlqEnv struct {
	rn        *runnel.Runnel
	clock     *clockwork.FakeClock
	src, dlq  string // URLs
	streamARN string
	seqs      []string
}

func newDLQEnv(t *testing.T) *dlqEnv {
	t.Helper()
	clock := clockwork.NewFakeClockAt(t0)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	e := &dlqEnv{rn: rn, clock: clock}
	var err error
	if e.dlq, err = rn.Queues.CreateQueue(ctx, "work-dlq", nil); err != nil {
		t.Fatal(err)
	}
	if e.src, err = rn.Queues.CreateQueue(ctx, "work", map[string]string{
		queue.AttrRedrivePolicy: fmt.Sprintf(`{"deadLetterTargetArn":%q,"maxReceiveCount":3}`, rn.Queues.ARN("work-dlq"))}); err != nil {
		t.Fatal(err)
	}
	d, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "s", ShardCount: 1})
	if err != nil {
		t.Fatal(err)
	}
	e.streamARN = d.StreamARN
	var entries []stream.PutRecordsRequestEntry
	for i := range 6 {
		entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: "k", Data: fmt.Appendf(nil, "r%d", i)})
	}
	out, err := rn.Streams.PutRecords(ctx, "s", entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Records {
		e.seqs = append(e.seqs, r.SequenceNumber)
	}
	return e
}

func (e *dlqEnv) pointer(from, to int, condition string) string {
	b, _ := json.Marshal(wire.OnFailureRecord{
		RequestContext:  wire.RequestContext{Condition: condition, ApproximateInvokeCount: 3, RequestID: "req"},
		ResponseContext: wire.ResponseContext{StatusCode: 200, FunctionError: "Unhandled"}, Version: "1.0",
		KinesisBatchInfo: &wire.KinesisBatchInfo{ShardID: "shardId-000000000000", StartSequenceNumber: e.seqs[from],
			EndSequenceNumber: e.seqs[to], BatchSize: to - from + 1, StreamArn: e.streamARN},
	})
	return string(b)
}

const asyncBody = `{"version":"1.0","timestamp":"2019-11-14T18:16:05.568Z","requestContext":{"requestId":"e4b46cbf","functionArn":"arn:aws:lambda:us-east-1:000000000000:function:f","condition":"RetriesExhausted","approximateInvokeCount":3},"requestPayload":{"order":42},"responseContext":{"statusCode":200,"executedVersion":"$LATEST","functionError":"Unhandled"},"responsePayload":{"errorType":"OrderError","errorMessage":"boom"}}`

// deadLetter sends bodies to the source queue and moves them to the DLQ
// as a consumer giving up would (MoveToDeadLetterQueue).
func (e *dlqEnv) deadLetter(t *testing.T, bodies ...string) {
	t.Helper()
	ctx := context.Background()
	for _, b := range bodies {
		if _, err := e.rn.Queues.SendMessage(ctx, e.src, queue.SendMessageInput{MessageBody: b}); err != nil {
			t.Fatal(err)
		}
		e.clock.Advance(time.Second) // distinct SentTimestamps
	}
	for {
		ms, err := e.rn.Queues.ReceiveMessage(ctx, e.src, queue.ReceiveMessageInput{MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			return
		}
		for _, m := range ms {
			if err := e.rn.Queues.MoveToDeadLetterQueue(ctx, e.src, m.ReceiptHandle); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func depth(t *testing.T, rn *runnel.Runnel, url string) (visible, inflight int) {
	t.Helper()
	a, err := rn.Queues.GetQueueAttributes(context.Background(), url, []string{queue.AttrAll})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Sscan(a[queue.AttrApproximateNumberOfMessages], &visible)
	fmt.Sscan(a[queue.AttrApproximateNumberOfMessagesNotVisible], &inflight)
	return
}

func bodies(t *testing.T, rn *runnel.Runnel, url string) []string {
	t.Helper()
	var out []string
	for {
		ms, err := rn.Queues.ReceiveMessage(context.Background(), url, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: new(int(600))})
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 0 {
			sort.Strings(out)
			return out
		}
		for _, m := range ms {
			out = append(out, m.Body)
		}
	}
}

func TestInspectDoesNotLoseMessages(t *testing.T) {
	e := newDLQEnv(t)
	ctx := context.Background()
	rec, _ := json.Marshal(recovery.KinesisEventRecord(e.streamARN, stream.Record{SequenceNumber: e.seqs[5], ShardID: "shardId-000000000000", Data: []byte("r5"), PartitionKey: "k"}))
	inserted, _ := wire.WrapRetry(rec, t0)
	e.deadLetter(t, e.pointer(0, 1, "RetryAttemptsExhausted"), e.pointer(2, 2, "RecordAgeExceeded"), asyncBody, string(inserted), "plain")

	in, err := recovery.Inspect(ctx, e.rn.Queues, "work-dlq", recovery.InspectOptions{Limit: 3, Now: e.clock.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if in.Visible != 5 || in.Scanned != 5 || len(in.Messages) != 3 {
		t.Fatalf("inspection: visible %d scanned %d page %d", in.Visible, in.Scanned, len(in.Messages))
	}
	if len(in.Sources) != 1 || in.Sources[0] != "work" {
		t.Errorf("sources = %v", in.Sources)
	}
	if in.OldestSent == nil || !in.OldestSent.Equal(t0) || in.OldestAgeSeconds != 5 {
		t.Errorf("oldest %v, age %v; want %v, 5 s", in.OldestSent, in.OldestAgeSeconds, t0)
	}
	wantKinds := map[string]int{recovery.KindStreamBatch: 2, recovery.KindAsync: 1, recovery.KindInserted: 1, recovery.KindUnknown: 1}
	for k, n := range wantKinds {
		if in.ByKind[k] != n {
			t.Errorf("ByKind = %v, want %v", in.ByKind, wantKinds)
		}
	}
	if in.ByCondition["RetryAttemptsExhausted"] != 1 || in.ByCondition["RecordAgeExceeded"] != 1 || in.ByCondition["RetriesExhausted"] != 1 {
		t.Errorf("ByCondition = %v", in.ByCondition)
	}
	if in.ByErrorType["OrderError"] != 1 || in.ByErrorType["Unhandled"] != 2 {
		t.Errorf("ByErrorType = %v", in.ByErrorType)
	}
	m := in.Messages[0]
	if m.Kind != recovery.KindStreamBatch || m.StartSequenceNumber != e.seqs[0] || m.EndSequenceNumber != e.seqs[1] || m.InvokeCount != 3 ||
		m.DeadLetterQueueSourceArn != e.rn.Queues.ARN("work") || m.ReceiveCount != 0 {
		t.Errorf("first message = %+v", m)
	}
	// Nothing consumed, nothing left in flight; a second look sees the same.
	if v, f := depth(t, e.rn, e.dlq); v != 5 || f != 0 {
		t.Fatalf("after inspect: visible %d in flight %d", v, f)
	}
	in2, err := recovery.Inspect(ctx, e.rn.Queues, "work-dlq", recovery.InspectOptions{})
	if err != nil || in2.Scanned != 5 || in2.Messages[0].ReceiveCount != 1 {
		t.Fatalf("second inspect: %+v %v (receive count counts the first look)", in2, err)
	}

	list, err := recovery.ListQueues(ctx, e.rn.Queues, recovery.ListOptions{DLQOnly: true, Age: true, Now: e.clock.Now()})
	if err != nil || len(list) != 1 || list[0].Name != "work-dlq" || list[0].Visible != 5 || list[0].OldestAgeSeconds != 5 {
		t.Fatalf("ListQueues = %+v, %v", list, err)
	}
	if v, _ := depth(t, e.rn, e.dlq); v != 5 {
		t.Fatalf("after list: visible %d", v)
	}
}

func TestRedriveToSourceAtRateLimit(t *testing.T) {
	e := newDLQEnv(t)
	ctx := context.Background()
	var want []string
	for i := range 12 {
		want = append(want, fmt.Sprintf("m%02d", i))
	}
	e.deadLetter(t, want...)
	type out struct {
		res *recovery.RedriveResult
		err error
	}
	done := make(chan out, 1)
	go func() {
		r, err := recovery.Redrive(ctx, e.rn.Queues, "work-dlq", recovery.RedriveOptions{Rate: 5, Poll: time.Millisecond})
		done <- out{r, err}
	}()
	// At 5 per second of the engine clock: 5 move, then the task waits for
	// the clock.
	for _, moved := range []int{5, 10, 12} {
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("%d moved", moved), func() bool {
			v, _ := depth(t, e.rn, e.src)
			return v == moved
		})
		if v, _ := depth(t, e.rn, e.src); v != moved {
			t.Fatalf("moved %d, want exactly %d before the clock advances", v, moved)
		}
		e.clock.Advance(time.Second)
	}
	o := <-done
	if o.err != nil || o.res.Status != queue.MoveTaskCompleted || o.res.ApproximateNumberOfMessagesMoved != 12 {
		t.Fatalf("Redrive = %+v, %v", o.res, o.err)
	}
	if v, f := depth(t, e.rn, e.dlq); v+f != 0 {
		t.Fatalf("DLQ still holds %d", v+f)
	}
	if got := bodies(t, e.rn, e.src); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("source holds %v, want %v", got, want)
	}
}

func TestRedriveToNamedQueue(t *testing.T) {
	e := newDLQEnv(t)
	ctx := context.Background()
	other, err := e.rn.Queues.CreateQueue(ctx, "elsewhere", nil)
	if err != nil {
		t.Fatal(err)
	}
	e.deadLetter(t, "a", "b", "c")
	var progress []int64
	res, err := recovery.Redrive(ctx, e.rn.Queues, "work-dlq", recovery.RedriveOptions{To: "elsewhere", Rate: 100, Poll: time.Millisecond,
		Progress: func(moved, total int64) { progress = append(progress, moved) }})
	if err != nil || res.ApproximateNumberOfMessagesMoved != 3 || res.To != "elsewhere" {
		t.Fatalf("Redrive = %+v, %v", res, err)
	}
	if len(progress) == 0 || progress[len(progress)-1] != 3 {
		t.Errorf("progress = %v", progress)
	}
	if got := bodies(t, e.rn, other); fmt.Sprint(got) != "[a b c]" {
		t.Fatalf("elsewhere holds %v", got)
	}
	if v, _ := depth(t, e.rn, e.src); v != 0 {
		t.Fatalf("source got %d", v)
	}
}

func TestPurge(t *testing.T) {
	e := newDLQEnv(t)
	e.deadLetter(t, "a", "b")
	res, err := recovery.Purge(context.Background(), e.rn.Queues, "work-dlq")
	if err != nil || res.Messages != 2 {
		t.Fatalf("Purge = %+v, %v", res, err)
	}
	if v, f := depth(t, e.rn, e.dlq); v+f != 0 {
		t.Fatalf("after purge: %d", v+f)
	}
}

func TestArchiveThenDeleteOnlyArchived(t *testing.T) {
	e := newDLQEnv(t)
	ctx := context.Background()
	e.deadLetter(t, e.pointer(0, 2, "RetryAttemptsExhausted"), asyncBody, "plain-1", "plain-2")
	dir := t.TempDir()

	// Archive without delete: the file has everything, the queue too.
	keep := filepath.Join(dir, "keep.jsonl")
	res, err := recovery.Archive(ctx, e.rn.Queues, e.rn.Streams, "work-dlq", recovery.ArchiveOptions{Out: keep})
	if err != nil || res.Archived != 4 || res.Resolved != 2 || res.Deleted != 0 {
		t.Fatalf("Archive = %+v, %v", res, err)
	}
	if v, f := depth(t, e.rn, e.dlq); v != 4 || f != 0 {
		t.Fatalf("after archive without delete: visible %d in flight %d", v, f)
	}
	lines, err := recovery.ReadArchive(keep)
	if err != nil || len(lines) != 4 {
		t.Fatalf("ReadArchive = %d lines, %v", len(lines), err)
	}
	var ptr *recovery.ArchivedMessage
	for i := range lines {
		if lines[i].Kind == recovery.KindStreamBatch {
			ptr = &lines[i]
		}
		if lines[i].Attributes[queue.MsgAttrDeadLetterQueueSourceArn] == "" || lines[i].MD5OfBody != queue.MD5OfBody(lines[i].Body) {
			t.Errorf("line %d lacks attributes: %+v", i, lines[i])
		}
	}
	if ptr == nil || ptr.Resolved == nil || len(ptr.Resolved.Records) != 3 || string(ptr.Resolved.Records[2].Kinesis.Data) != "r2" || ptr.Note != "" {
		t.Fatalf("pointer line = %+v", ptr)
	}
	// An existing file is never overwritten.
	if _, err := recovery.Archive(ctx, e.rn.Queues, e.rn.Streams, "work-dlq", recovery.ArchiveOptions{Out: keep}); !os.IsExist(err) {
		t.Fatalf("archive over an existing file: %v", err)
	}

	// Records past retention: the pointer is kept with a note.
	e.clock.Advance(25 * time.Hour)
	if _, err := e.rn.Streams.TrimExpired(ctx); err != nil {
		t.Fatal(err)
	}
	// A message that arrives during the archive is not deleted: simulate
	// it by a message received (in flight) elsewhere, which the archive
	// cannot see.
	e.deadLetter(t, "late")
	ms, err := e.rn.Queues.ReceiveMessage(ctx, e.dlq, queue.ReceiveMessageInput{MaxNumberOfMessages: 10, VisibilityTimeout: new(int(600))})
	if err != nil {
		t.Fatal(err)
	}
	var lateHandle string
	for _, m := range ms {
		if m.Body == "late" {
			lateHandle = m.ReceiptHandle
		} else {
			e.rn.Queues.ChangeMessageVisibility(ctx, e.dlq, m.ReceiptHandle, 0)
		}
	}
	if lateHandle == "" {
		t.Fatal("late message not received")
	}
	out := filepath.Join(dir, "deleted.jsonl")
	res, err = recovery.Archive(ctx, e.rn.Queues, e.rn.Streams, "work-dlq", recovery.ArchiveOptions{Out: out, Delete: true})
	if err != nil || res.Archived != 4 || res.Deleted != 4 || res.Unresolved != 1 {
		t.Fatalf("Archive --delete = %+v, %v", res, err)
	}
	lines, _ = recovery.ReadArchive(out)
	for _, l := range lines {
		if l.Kind == recovery.KindStreamBatch && (l.Note == "" || l.Resolved == nil || l.Resolved.Missing != 3) {
			t.Errorf("past-retention pointer line = %+v", l)
		}
	}
	if v, f := depth(t, e.rn, e.dlq); v != 0 || f != 1 {
		t.Fatalf("after archive --delete: visible %d in flight %d; want only the late message", v, f)
	}
}

func TestResolveCLIFormatsInLibrary(t *testing.T) {
	// Classify reads both failure formats without the stream.
	v := recovery.Classify(queue.Message{Body: asyncBody})
	if v.Kind != recovery.KindAsync || v.ErrorType != "OrderError" || v.ErrorMessage != "boom" || v.Condition != "RetriesExhausted" {
		t.Fatalf("Classify(async) = %+v", v)
	}
	s := "Function.Timeout"
	v = recovery.Classify(queue.Message{Body: `{"k":1}`, MessageAttributes: map[string]queue.MessageAttributeValue{"ErrorCode": {DataType: "String", StringValue: &s}}})
	if v.Kind != recovery.KindLegacyDLQ || v.ErrorType != s {
		t.Fatalf("Classify(legacy) = %+v", v)
	}
}

// TestArchivingAFIFOQueueTakesEveryGroupWhole: a FIFO group's later
// messages cannot be received while its first ones are held. Before,
// Archive stopped after a group's first ten, deleted those, and reported
// success: a purge after it lost the rest. With Delete it now takes each
// batch out once written and goes on; without Delete it says what it
// could not take.
func TestArchivingAFIFOQueueTakesEveryGroupWhole(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	url, err := rn.Queues.CreateQueue(ctx, "dlq.fifo", map[string]string{"FifoQueue": "true"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		if _, err := rn.Queues.SendMessage(ctx, url, queue.SendMessageInput{MessageBody: fmt.Sprint("m", i), MessageGroupId: "g",
			MessageDeduplicationId: fmt.Sprint("d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	keep := filepath.Join(t.TempDir(), "keep.jsonl")
	res, err := recovery.Archive(ctx, rn.Queues, rn.Streams, "dlq.fifo", recovery.ArchiveOptions{Out: keep})
	if err == nil || !strings.Contains(err.Error(), "--delete") || res.Archived != 10 {
		t.Fatalf("archive without Delete: %+v, %v; want 10 written and an error saying why", res, err)
	}
	if v, _ := depth(t, rn, url); v != 25 {
		t.Fatalf("%d visible after the archive without Delete, want the 25", v)
	}
	all := filepath.Join(t.TempDir(), "all.jsonl")
	res, err = recovery.Archive(ctx, rn.Queues, rn.Streams, "dlq.fifo", recovery.ArchiveOptions{Out: all, Delete: true})
	if err != nil || res.Archived != 25 || res.Deleted != 25 {
		t.Fatalf("archive with Delete: %+v, %v; want 25 written and deleted", res, err)
	}
	lines, err := recovery.ReadArchive(all)
	if err != nil || len(lines) != 25 || lines[0].Body != "m0" || lines[24].Body != "m24" {
		t.Fatalf("the archive holds %d lines, %v", len(lines), err)
	}
	if v, f := depth(t, rn, url); v+f != 0 {
		t.Fatalf("%d visible, %d in flight after the archive with Delete, want none", v, f)
	}
}
