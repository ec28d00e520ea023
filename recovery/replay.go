package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// Services are what Replay reads from and writes to. Functions and Queues
// may be nil when the target does not need them.
type Services struct {
	Streams   *stream.Service
	Queues    *queue.Service
	Functions *function.Service
}

// ReplayRange chooses records of a stream: a sequence-number range of one
// shard (FromSeq..ToSeq, both inclusive), or a time range (FromTime..ToTime,
// both inclusive, by ApproximateArrivalTimestamp with AT_TIMESTAMP
// semantics: the first record at or after FromTime) of one shard or, with
// Shard empty, of every shard.
type ReplayRange struct {
	Stream string
	// Shard is a shard id; with sequence numbers it may be empty (a
	// sequence number names its shard).
	Shard            string
	FromSeq, ToSeq   string
	FromTime, ToTime time.Time
	// Now is when the retention horizon of a time range is measured (the
	// engine clock's now); zero means time.Now(). Only whether records may
	// be missing depends on it.
	Now time.Time
}

// ReplayTarget is where replayed records go: exactly one of a function
// (invoked with a Kinesis event, as a mapping builds it), a queue (one
// message per record: the Kinesis event record as JSON) or a stream
// (PutRecords with the same partition keys and data).
type ReplayTarget struct {
	Function string
	Queue    string
	Stream   string
}

func (t ReplayTarget) String() string {
	switch {
	case t.Function != "":
		return "function " + t.Function
	case t.Queue != "":
		return "queue " + t.Queue
	default:
		return "stream " + t.Stream
	}
}

func (t ReplayTarget) validate() error {
	n := 0
	for _, s := range []string{t.Function, t.Queue, t.Stream} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return awserr.New(awserr.ErrInvalidParameterValue, "replay: give exactly one target (a function, a queue or a stream)")
	}
	return nil
}

// ShardPlan is the part of a replay range in one shard, in positions (stream.Position)
// (From..To inclusive) and sequence numbers.
type ShardPlan struct {
	ShardID string
	From    uint64
	To      uint64
	// FromSequenceNumber and ToSequenceNumber are the range asked for.
	FromSequenceNumber string `json:",omitempty"`
	ToSequenceNumber   string `json:",omitempty"`
	// Available is how many records of the range are still in the stream.
	Available uint64
	// MissingMessages is how many stored messages of the range are gone
	// (trimmed by retention). A stored message held the 1..500 records
	// one PutRecords call put into the shard, and how many is gone with
	// it, so what is gone is counted in messages (at least that many
	// records). For a sequence range every one of them was in the range
	// (MissingExact true); for a time range their times are no longer
	// known, so it is every message trimmed before the first retained
	// record, of which some or all were in the range (MissingExact false).
	MissingMessages uint64
	MissingExact    bool
	// FirstAvailableSequenceNumber is the shard's trim horizon, set when
	// messages are missing.
	FirstAvailableSequenceNumber string `json:",omitempty"`
	// NotWritten is true when the range reaches past the shard's last
	// record (a sequence number not issued yet).
	NotWritten bool `json:",omitempty"`

	readFrom uint64 // first retained position of the range
}

// ReplayPlan is what a replay will read.
type ReplayPlan struct {
	Stream    string
	StreamArn string
	Target    string
	Shards    []ShardPlan
	// Available and MissingMessages total the shards'.
	Available       uint64
	MissingMessages uint64
	// PastRetention is true when part of the range is gone.
	PastRetention bool
}

// PlanReplay works out which records a range holds and which are gone. A
// range reaching past retention is reported (Missing, PastRetention,
// FirstAvailableSequenceNumber), never silently shortened.
func PlanReplay(ctx context.Context, streams *stream.Service, r ReplayRange) (*ReplayPlan, error) {
	if r.Stream == "" {
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "replay: no stream")
	}
	d, err := streams.DescribeStream(ctx, r.Stream)
	if err != nil {
		return nil, err
	}
	p := &ReplayPlan{Stream: r.Stream, StreamArn: d.StreamARN}
	bySeq := r.FromSeq != "" || r.ToSeq != ""
	byTime := !r.FromTime.IsZero() || !r.ToTime.IsZero()
	switch {
	case bySeq && byTime:
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "replay: give a sequence range or a time range, not both")
	case bySeq:
		if r.FromSeq == "" || r.ToSeq == "" {
			return nil, awserr.New(awserr.ErrInvalidParameterValue, "replay: a sequence range needs both ends (from and to)")
		}
		numbering, err := streams.Numbering(ctx, r.Stream)
		if err != nil {
			return nil, err
		}
		fsh, from, err := stream.DecodeSequenceNumber(numbering, r.FromSeq)
		if err != nil {
			return nil, awserr.New(awserr.ErrInvalidArgument, "replay: from sequence number %q is not one of stream %s", r.FromSeq, r.Stream)
		}
		tsh, to, err := stream.DecodeSequenceNumber(numbering, r.ToSeq)
		if err != nil {
			return nil, awserr.New(awserr.ErrInvalidArgument, "replay: to sequence number %q is not one of stream %s", r.ToSeq, r.Stream)
		}
		if fsh != tsh {
			return nil, awserr.New(awserr.ErrInvalidArgument, "replay: from and to are in different shards (%s, %s)", stream.ShardID(fsh), stream.ShardID(tsh))
		}
		shard := stream.ShardID(fsh)
		if r.Shard != "" && r.Shard != shard {
			return nil, awserr.New(awserr.ErrInvalidArgument, "replay: the sequence numbers are of %s, not of %s", shard, r.Shard)
		}
		if from > to {
			return nil, awserr.New(awserr.ErrInvalidArgument, "replay: from sequence number is after to")
		}
		sp, err := planShard(ctx, streams, r.Stream, shard, from, to, true)
		if err != nil {
			return nil, err
		}
		p.add(sp)
	case byTime:
		if r.FromTime.IsZero() || r.ToTime.IsZero() {
			return nil, awserr.New(awserr.ErrInvalidParameterValue, "replay: a time range needs both ends (from and to)")
		}
		if r.ToTime.Before(r.FromTime) {
			return nil, awserr.New(awserr.ErrInvalidArgument, "replay: from time is after to time")
		}
		shards := []string{r.Shard}
		if r.Shard == "" {
			shards = nil
			for _, s := range d.Shards {
				shards = append(shards, s.ShardID)
			}
		}
		// Arrival times have millisecond precision: "at or before ToTime"
		// is "before the next millisecond".
		end := r.ToTime.Truncate(time.Millisecond).Add(time.Millisecond)
		for _, sh := range shards {
			first, last, err := streams.ShardBounds(ctx, r.Stream, sh)
			if err != nil {
				return nil, err
			}
			from, err := streams.PositionAtTime(ctx, r.Stream, sh, r.FromTime)
			if err != nil {
				return nil, err
			}
			to, err := streams.PositionAtTime(ctx, r.Stream, sh, end)
			if err != nil {
				return nil, err
			}
			sp := ShardPlan{ShardID: sh, From: from, To: to - 1, MissingExact: true}
			if to > from {
				c, err := streams.CountRange(ctx, r.Stream, sh, from, to-1)
				if err != nil {
					return nil, err
				}
				sp.Available = c.Records
			}
			// Records before the trim horizon are gone and their times
			// unknown: if the range starts at or before the first retained
			// record, any of them may have been in it.
			sp.readFrom = max(from, first)
			// Trimmed records arrived before the horizon (now - retention)
			// and no later than the first retained record.
			now := r.Now
			if now.IsZero() {
				now = time.Now()
			}
			horizon := now.Add(-time.Duration(d.RetentionPeriodHours) * time.Hour)
			if firstMsg, _ := stream.MessageOf(first); from == first && firstMsg > 1 && r.FromTime.Before(horizon) {
				startsBefore := true
				if first <= last {
					if rec, err := streams.GetRecord(ctx, r.Stream, sh, first); err == nil {
						startsBefore = !r.FromTime.After(rec.ApproximateArrivalTimestamp)
					}
				}
				if startsBefore {
					sp.MissingMessages, sp.MissingExact = firstMsg-1, false
					sp.FirstAvailableSequenceNumber, _ = streams.SequenceNumber(ctx, r.Stream, sh, first)
				}
			}
			sp.FromSequenceNumber, _ = streams.SequenceNumber(ctx, r.Stream, sh, max(sp.From, stream.FirstPosition))
			if sp.To >= stream.FirstPosition {
				sp.ToSequenceNumber, _ = streams.SequenceNumber(ctx, r.Stream, sh, sp.To)
			}
			p.add(sp)
		}
	default:
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "replay: give a sequence range (from/to sequence numbers) or a time range (from/to times)")
	}
	return p, nil
}

func (p *ReplayPlan) add(sp ShardPlan) {
	p.Shards = append(p.Shards, sp)
	p.Available += sp.Available
	p.MissingMessages += sp.MissingMessages
	if sp.MissingMessages > 0 {
		p.PastRetention = true
	}
}

func planShard(ctx context.Context, streams *stream.Service, name, shard string, from, to uint64, exact bool) (ShardPlan, error) {
	sp := ShardPlan{ShardID: shard, From: from, To: to, MissingExact: exact}
	sp.FromSequenceNumber, _ = streams.SequenceNumber(ctx, name, shard, from)
	sp.ToSequenceNumber, _ = streams.SequenceNumber(ctx, name, shard, to)
	first, last, err := streams.ShardBounds(ctx, name, shard)
	if err != nil {
		return sp, err
	}
	c, err := streams.CountRange(ctx, name, shard, from, to)
	if err != nil {
		return sp, err
	}
	sp.Available, sp.MissingMessages = c.Records, c.MissingMessages
	if sp.MissingMessages > 0 {
		sp.FirstAvailableSequenceNumber, _ = streams.SequenceNumber(ctx, name, shard, first)
	}
	sp.NotWritten = to > last
	sp.readFrom = max(from, first)
	return sp, nil
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	Range  ReplayRange
	Target ReplayTarget
	// BatchSize is records per invocation (function, default 100), per
	// PutRecords (stream, default 500); a queue always gets batches of 10.
	BatchSize int
	// Skip, if set, is asked about each record; records it returns true for
	// are not sent and are counted in Skipped (an idempotency store: the
	// records already processed).
	Skip func(rec events.KinesisEventRecord) bool
	// AllowPastRetention replays what is left of a range that reaches past
	// retention; without it such a range is refused (ErrPastRetention,
	// with the plan) before anything is sent.
	AllowPastRetention bool
	// Progress, if set, is called with the records handled so far (sent,
	// skipped or failed) and the records available.
	Progress func(done, total int64)
	// Logger logs each part of the range trimmed by retention between the
	// plan and its read (default slog.Default()).
	Logger *slog.Logger
}

// ReplayResult is what Replay did.
type ReplayResult struct {
	Plan *ReplayPlan
	// Read is the records read from the stream; Sent those the target
	// accepted (a function: processed without error); Skipped those Skip
	// refused; Failed those the target rejected.
	Read, Sent, Skipped, Failed int64
	// TrimmedMessages is how many stored messages (1..500 records each)
	// of the plan's available records retention removed before Replay
	// read them: not sent, each part logged (WARN "replay: records
	// trimmed by retention after the plan") with its shard and positions.
	// Before, they were skipped without a trace.
	TrimmedMessages uint64 `json:",omitempty"`
	// ResumeSequenceNumber is, after a failure, the first record of the
	// failing shard not sent, and ResumeShardID that shard. With a time
	// range over several shards it is not all that is left: see Resume.
	ResumeSequenceNumber string `json:",omitempty"`
	ResumeShardID        string `json:",omitempty"`
	// Resume is set when Replay stops early (a batch the target rejects,
	// a read that fails, a cancelled context): one entry per shard of the
	// plan, in plan order, saying whether the shard is done, where it
	// stopped, or that it was never read, with the sequence range left to
	// replay. Replaying every range it lists (a sequence range each:
	// replay --from-seq F --to-seq T) replays everything not replayed.
	// Before, only the failing shard's resume point was given, and the
	// later shards of a time range were never replayed.
	Resume []ShardResume `json:",omitempty"`
	// Error describes the failure, if any.
	Error string `json:",omitempty"`
}

// States of a ShardResume.
const (
	ResumeDone    = "done"     // every record of the shard's range was handled (or it had none)
	ResumeStopped = "stopped"  // Replay stopped in this shard
	ResumeNotRead = "not read" // Replay stopped before this shard
)

// ShardResume is where one shard of a plan stands after a Replay that
// stopped early.
type ShardResume struct {
	ShardID string
	// State is ResumeDone, ResumeStopped or ResumeNotRead.
	State string
	// FromSequenceNumber..ToSequenceNumber (both inclusive) is the part of
	// the shard's range left to replay (a stopped shard: from the first
	// record not sent; a shard not read: its whole range), to give as
	// --from-seq/--to-seq (ReplayRange.FromSeq/ToSeq). Empty when done.
	FromSequenceNumber string `json:",omitempty"`
	ToSequenceNumber   string `json:",omitempty"`
}

// resumeList is Resume for a Replay that stopped in shard i of plan at
// from (a sequence number of that shard).
func resumeList(plan *ReplayPlan, numbering stream.Numbering, i int, from string) []ShardResume {
	out := make([]ShardResume, len(plan.Shards))
	for j, sp := range plan.Shards {
		out[j] = ShardResume{ShardID: sp.ShardID, State: ResumeDone}
		switch {
		case j == i:
			out[j].State, out[j].FromSequenceNumber, out[j].ToSequenceNumber = ResumeStopped, from, sp.ToSequenceNumber
		case j > i && sp.Available > 0:
			out[j].State, out[j].FromSequenceNumber, out[j].ToSequenceNumber = ResumeNotRead, seqAt(numbering, sp.ShardID, max(sp.From, sp.readFrom)), sp.ToSequenceNumber
		}
	}
	return out
}

// seqAt is the sequence number of position pos of shard.
func seqAt(numbering stream.Numbering, shard string, pos uint64) string {
	idx, _ := stream.ShardIndex(shard)
	return stream.FormatSequenceNumber(numbering, idx, max(pos, stream.FirstPosition))
}

// readChunk is how many positions Replay reads at a time: 16 stored
// messages (see stream.Position).
const readChunk = 16 << stream.PositionBits

// Replay puts exactly the records of a range through a target, in shard
// order, shard after shard. A range reaching past retention is reported in
// the plan (and refused unless AllowPastRetention). On the first batch the
// target rejects, or a read that fails (a cancelled context), Replay stops
// and returns an error with the result: what was sent stays sent, Resume
// says, for every shard of the plan, what is left to replay
// (ResumeSequenceNumber: where the stopped shard starts again).
func Replay(ctx context.Context, svc Services, o ReplayOptions) (*ReplayResult, error) {
	if err := o.Target.validate(); err != nil {
		return nil, err
	}
	plan, err := PlanReplay(ctx, svc.Streams, o.Range)
	if err != nil {
		return nil, err
	}
	plan.Target = o.Target.String()
	res := &ReplayResult{Plan: plan}
	if plan.PastRetention && !o.AllowPastRetention {
		return res, fmt.Errorf("%w: %d stored messages of the range (1..500 records each) are gone (first available %s); replay what is left explicitly", ErrPastRetention, plan.MissingMessages, firstAvailable(plan))
	}
	send, err := newSender(ctx, svc, o, plan.StreamArn)
	if err != nil {
		return res, err
	}
	total := int64(plan.Available)
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	progress := func() {
		if o.Progress != nil {
			o.Progress(res.Sent+res.Skipped+res.Failed, total)
		}
	}
	progress()
	numbering, err := svc.Streams.Numbering(ctx, plan.Stream)
	if err != nil {
		return res, err
	}
	for i, sp := range plan.Shards {
		if sp.Available == 0 {
			continue
		}
		var pending []events.KinesisEventRecord
		stop := func(from string, err error) {
			res.ResumeShardID, res.ResumeSequenceNumber = sp.ShardID, from
			res.Resume = resumeList(plan, numbering, i, from)
			res.Error = err.Error()
		}
		flush := func() error {
			if len(pending) == 0 {
				return nil
			}
			done, err := send.send(ctx, pending)
			res.Sent += int64(done)
			if err != nil {
				res.Failed += int64(len(pending) - done)
				stop(pending[done].Kinesis.SequenceNumber, err)
				progress()
				return err
			}
			pending = pending[:0]
			progress()
			return nil
		}
		for pos := max(sp.From, sp.readFrom); pos <= sp.To; pos += readChunk {
			end := min(sp.To, pos+readChunk-1)
			recs, gone, err := svc.Streams.ReadRange(ctx, plan.Stream, sp.ShardID, pos, end)
			if err != nil {
				// The records read but not sent yet (pending) come first.
				from := seqAt(numbering, sp.ShardID, pos)
				if len(pending) > 0 {
					from = pending[0].Kinesis.SequenceNumber
				}
				stop(from, fmt.Errorf("replay: read %s of %s: %w", sp.ShardID, plan.Stream, err))
				return res, err
			}
			if gone > 0 {
				res.TrimmedMessages += gone
				log.Warn("replay: records trimmed by retention after the plan; they are not sent",
					"stream", plan.Stream, "shard", sp.ShardID, "fromPosition", pos, "toPosition", end, "storedMessages", gone)
			}
			for _, r := range recs {
				res.Read++
				ev := send.record(r)
				if o.Skip != nil && o.Skip(ev) {
					res.Skipped++
					continue
				}
				pending = append(pending, ev)
				if len(pending) >= send.batch {
					if err := flush(); err != nil {
						return res, err
					}
				}
			}
			progress()
			if end == sp.To {
				break
			}
		}
		if err := flush(); err != nil {
			return res, err
		}
	}
	return res, nil
}

func firstAvailable(p *ReplayPlan) string {
	var out []string
	for _, s := range p.Shards {
		if s.FirstAvailableSequenceNumber != "" {
			out = append(out, s.ShardID+" "+s.FirstAvailableSequenceNumber)
		}
	}
	return strings.Join(out, ", ")
}

// sender puts batches of records through a target.
type sender struct {
	batch     int
	region    string
	role      string
	streamARN string
	send      func(ctx context.Context, recs []events.KinesisEventRecord) (int, error)
}

func newSender(ctx context.Context, svc Services, o ReplayOptions, streamARN string) (*sender, error) {
	s := &sender{streamARN: streamARN}
	// arn:aws:kinesis:<region>:<account>:stream/<name>
	if parts := strings.Split(streamARN, ":"); len(parts) >= 6 {
		s.region = parts[3]
		s.role = "arn:aws:iam::" + parts[4] + ":role/runnel-event-source-mapping"
	}
	t := o.Target
	switch {
	case t.Function != "":
		if svc.Functions == nil {
			return nil, errors.New("replay: no function service")
		}
		fn, err := svc.Functions.GetFunction(t.Function)
		if err != nil {
			return nil, err
		}
		s.batch = o.BatchSize
		if s.batch <= 0 {
			s.batch = 100
		}
		s.send = func(ctx context.Context, recs []events.KinesisEventRecord) (int, error) {
			return invokeBatch(ctx, fn, recs)
		}
	case t.Queue != "":
		if svc.Queues == nil {
			return nil, errors.New("replay: no queue service")
		}
		url, err := svc.Queues.GetQueueURL(ctx, queueName(t.Queue))
		if err != nil {
			return nil, err
		}
		attrs, err := svc.Queues.GetQueueAttributes(ctx, url, []string{queue.AttrMaximumMessageSize})
		if err != nil {
			return nil, err
		}
		maxSize, _ := strconv.Atoi(attrs[queue.AttrMaximumMessageSize])
		s.batch = queue.MaxBatchEntries
		s.send = func(ctx context.Context, recs []events.KinesisEventRecord) (int, error) {
			return sendToQueue(ctx, svc.Queues, url, recs, maxSize)
		}
	default:
		if _, err := svc.Streams.DescribeStream(ctx, t.Stream); err != nil {
			return nil, err
		}
		s.batch = o.BatchSize
		if s.batch <= 0 || s.batch > stream.MaxPutRecords {
			s.batch = stream.MaxPutRecords
		}
		s.send = func(ctx context.Context, recs []events.KinesisEventRecord) (int, error) {
			return putToStream(ctx, svc.Streams, t.Stream, recs)
		}
	}
	return s, nil
}

// record builds the event record of r as an event source mapping does.
func (s *sender) record(r stream.Record) events.KinesisEventRecord {
	ev := KinesisEventRecord(s.streamARN, r)
	ev.AwsRegion = s.region
	ev.InvokeIdentityArn = s.role
	return ev
}

// invokeBatch invokes fn with one Kinesis event and returns how many
// records (a prefix of recs) were processed.
func invokeBatch(ctx context.Context, fn *function.Function, recs []events.KinesisEventRecord) (int, error) {
	ev := &events.KinesisEvent{Records: recs}
	delay := 50 * time.Millisecond
	for {
		res, err := fn.Invoke(ctx, ev)
		if errors.Is(err, awserr.ErrTooManyRequests) {
			select { // throttled: the function's concurrency is in use
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(delay):
			}
			delay = min(2*delay, 2*time.Second)
			continue
		}
		if err != nil {
			return 0, err
		}
		if res.Failed() {
			msg := "function error"
			if res.Error != nil {
				msg = res.Error.Type + ": " + res.Error.Message
			}
			return 0, fmt.Errorf("replay: %s failed on the batch %s..%s: %s", fn.Config().FunctionName,
				recs[0].Kinesis.SequenceNumber, recs[len(recs)-1].Kinesis.SequenceNumber, msg)
		}
		// A partial batch response: the records before the lowest reported
		// failure are processed.
		var failures []events.KinesisBatchItemFailure
		switch r := res.Response.(type) {
		case *events.KinesisEventResponse:
			failures = r.BatchItemFailures
		case events.KinesisEventResponse:
			failures = r.BatchItemFailures
		default:
			var kr events.KinesisEventResponse
			if len(res.Payload) > 0 && json.Unmarshal(res.Payload, &kr) == nil {
				failures = kr.BatchItemFailures
			}
		}
		if len(failures) == 0 {
			return len(recs), nil
		}
		lowest := len(recs)
		for _, f := range failures {
			found := false
			for i, r := range recs {
				if r.Kinesis.SequenceNumber == f.ItemIdentifier {
					lowest, found = min(lowest, i), true
				}
			}
			if !found {
				lowest = 0
			}
		}
		return lowest, fmt.Errorf("replay: %s reported %d failed records in the batch, the first at %s", fn.Config().FunctionName,
			len(failures), recs[lowest].Kinesis.SequenceNumber)
	}
}

// sendToQueue sends the records to a queue, in batches that SQS takes
// (10 entries, 1 MiB in all), sending entries that failed again (a few
// times), and returns how many records (a prefix of recs) are stored. A
// record over the queue's MaximumMessageSize (maxSize; 0: not checked)
// ends the prefix before anything after it is sent. Before, the whole
// batch was sent at once: the entries after one the queue refused for
// good were stored too, and a replay resumed at that one sent them again.
func sendToQueue(ctx context.Context, queues *queue.Service, url string, recs []events.KinesisEventRecord, maxSize int) (int, error) {
	bodies := make([]string, len(recs))
	for i, r := range recs {
		b, err := json.Marshal(r)
		if err != nil {
			return 0, err
		}
		if maxSize > 0 && len(b) > maxSize {
			n, err := sendPrefix(ctx, queues, url, recs[:i], bodies[:i])
			if err != nil {
				return n, err
			}
			return i, fmt.Errorf("replay: record %s is %d bytes as a queue message, over the queue's MaximumMessageSize %d", r.EventID, len(b), maxSize)
		}
		bodies[i] = string(b)
	}
	return sendPrefix(ctx, queues, url, recs, bodies)
}

// sendPrefix sends bodies in sub-batches of at most 1 MiB, in order,
// stopping at the first sub-batch with an entry that keeps failing; it
// returns how many of the first records are stored.
func sendPrefix(ctx context.Context, queues *queue.Service, url string, recs []events.KinesisEventRecord, bodies []string) (int, error) {
	done := 0
	for done < len(bodies) {
		end, size := done, 0
		for end < len(bodies) && (end == done || size+len(bodies[end]) <= queue.MaxBatchSize) {
			size += len(bodies[end])
			end++
		}
		n, err := sendBatch(ctx, queues, url, recs[done:end], bodies[done:end])
		if err != nil {
			return done + n, err
		}
		done = end
	}
	return done, nil
}

// sendBatch sends one batch, the failed entries again a few times, and
// returns how many of its first records are stored (entries after one
// that keeps failing may be stored too: that is a queue's transient
// failure, the only one left once the sizes are checked).
func sendBatch(ctx context.Context, queues *queue.Service, url string, recs []events.KinesisEventRecord, bodies []string) (int, error) {
	entries := make([]queue.SendMessageBatchRequestEntry, len(bodies))
	for i, b := range bodies {
		entries[i] = queue.SendMessageBatchRequestEntry{Id: strconv.Itoa(i), SendMessageInput: queue.SendMessageInput{MessageBody: b}}
	}
	for attempt := 0; ; attempt++ {
		out, err := queues.SendMessageBatch(ctx, url, entries)
		if err != nil {
			return 0, err
		}
		if len(out.Failed) == 0 {
			return len(recs), nil
		}
		// Standard queues keep no order anyway; send the failed ones again
		// a few times before giving up.
		failedIdx := map[int]bool{}
		var retry []queue.SendMessageBatchRequestEntry
		for _, f := range out.Failed {
			failedIdx[atoi(f.Id)] = true
			if f.SenderFault || attempt >= 3 {
				first := len(recs)
				for i := range failedIdx {
					first = min(first, i)
				}
				return first, fmt.Errorf("replay: queue refused %s: %s %s", recs[atoi(f.Id)].EventID, f.Code, f.Message)
			}
		}
		for _, e := range entries {
			if failedIdx[atoi(e.Id)] {
				retry = append(retry, e)
			}
		}
		entries = retry
	}
}

// putToStream puts the records into a stream with their partition keys,
// putting entries that failed again (a few times), and returns how many
// records (a prefix of recs) are stored. Entries after one that keeps
// failing may be stored too: a replay resumed at it puts them again.
func putToStream(ctx context.Context, streams *stream.Service, name string, recs []events.KinesisEventRecord) (int, error) {
	todo := make([]int, len(recs))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; ; attempt++ {
		entries := make([]stream.PutRecordsRequestEntry, len(todo))
		for j, i := range todo {
			entries[j] = stream.PutRecordsRequestEntry{PartitionKey: recs[i].Kinesis.PartitionKey, Data: recs[i].Kinesis.Data}
		}
		out, err := streams.PutRecords(ctx, name, entries)
		if err != nil {
			return todo[0], err
		}
		if out.FailedRecordCount == 0 {
			return len(recs), nil
		}
		var again []int
		for j, r := range out.Records {
			if r.ErrorCode != "" {
				again = append(again, todo[j])
			}
		}
		if attempt >= 3 {
			i := again[0]
			j := 0
			for todo[j] != i {
				j++
			}
			return i, fmt.Errorf("replay: stream %s refused %s: %s %s", name, recs[i].EventID, out.Records[j].ErrorCode, out.Records[j].ErrorMessage)
		}
		todo = again
	}
}
