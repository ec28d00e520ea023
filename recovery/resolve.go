// Package recovery turns failure records back into the events that
// failed, and carries the two flows of the Kinesis–Lambda reliability
// whitepaper (../shared/seeds/000): a Retry-DLQ queue consumed by the same
// function that consumes the stream, and an Unrecoverable-DLQ behind it.
//
// Three formats reach a Retry-DLQ (their shapes are in package wire), and
// Resolve handles them all:
//
//   - a stream on-failure record (KinesisBatchInfo): pointers to a
//     sequence-number range of a shard. Resolve reads that range back from
//     the stream. If part of it has aged past the stream's retention,
//     Resolve says so (ErrPastRetention) and returns what remains: the
//     caller keeps the pointer message in the DLQ rather than drop it.
//   - an asynchronous-invocation failure record ("requestPayload"): the
//     original event is inside, Resolve returns it.
//   - a record a handler inserted itself (InsertRetry): a retry envelope
//     around one Kinesis event record.
//   - an SNS notification a subscription's RedrivePolicy dead-lettered:
//     the published message and its envelope (a raw-delivery
//     subscription's dead letters are the bare message: not recognized).
//
// An EventBridge rule target's dead-letter message is the event itself
// (KindEvent): Resolve returns it as the Payload.
package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/wire"
	"github.com/runnel-dev/runnel/wire/ddbjson"
)

// Kinds of failure record.
const (
	KindStreamBatch = "stream-batch" // a stream on-failure record (KinesisBatchInfo)
	KindAsync       = "async"        // an async invocation record (requestPayload)
	KindInserted    = "inserted"     // a record inserted by InsertRetry
	KindSNS         = "sns"          // an SNS notification a subscription dead-lettered
	// KindDDBStreamBatch is a DynamoDB stream on-failure record
	// (DDBStreamBatchInfo): its records are read from the table's change
	// log (Sources.Tables).
	KindDDBStreamBatch = "ddb-stream-batch"
)

// ErrPastRetention is returned (wrapped) by Resolve when records a
// KinesisBatchInfo points at are no longer in the stream.
var ErrPastRetention = errors.New("recovery: the records are past the stream's retention")

// ErrUnknownFormat is returned by Resolve for a body that is none of the
// three formats.
var ErrUnknownFormat = errors.New("recovery: not a failure record runnel knows")

// Resolved is what a failure record stands for.
type Resolved struct {
	Kind string
	// Records are the stream records (KindStreamBatch, KindInserted), in
	// shard order, as a function would see them in a Kinesis event: a
	// pointer's range without the records its mapping's FilterCriteria
	// filtered out, when the mapping is known (see Unfiltered). A
	// pointer's records carry the awsRegion and invokeIdentityArn the
	// mapping sent (mappingIdentity).
	Records []events.KinesisEventRecord
	// Payload is the original event of an async invocation (KindAsync)
	// or of an EventBridge dead letter (KindEvent), or the published
	// message of an SNS notification (KindSNS): the message itself when
	// it is JSON, else the message as a JSON string.
	Payload json.RawMessage
	// SNS is the notification of a KindSNS message (its MessageId,
	// TopicArn, Subject, attributes).
	SNS *wire.SNSEnvelope
	// Info is the pointer of a KindStreamBatch or KindDDBStreamBatch
	// record.
	Info *wire.KinesisBatchInfo
	// DynamoDB are the records of a KindDDBStreamBatch, as a DynamoDB
	// event carries them.
	DynamoDB []events.DynamoDBEventRecord `json:",omitempty"`
	// Condition is why the records failed (RetryAttemptsExhausted, ...).
	Condition string
	// Attempt and InitialTimestamp come from a retry envelope (KindInserted):
	// the attempt this delivery is, and the first attempt's time (Unix s).
	Attempt          int
	InitialTimestamp int64
	// Missing counts records of the range that are gone (with ErrPastRetention).
	Missing uint64
	// Mapping is the UUID of the event source mapping that wrote a
	// KindStreamBatch or KindDDBStreamBatch pointer (its streamArn and
	// requestContext.functionArn), found through Sources.Mappings; its
	// FilterCriteria were applied to Records (DynamoDB). Empty when
	// Resolve did not know the mapping: see Unfiltered.
	Mapping string
	// Filtered counts the records of a pointer's range that the
	// mapping's FilterCriteria filtered out (Lambda discards them: they
	// were never in the batch), and so are not in Records (DynamoDB).
	Filtered int
	// Unfiltered, for a pointer record, says why no FilterCriteria
	// were applied: "" when the mapping was found (with or without
	// FilterCriteria); else the reason (no Sources.Mappings given, or no
	// mapping of that stream and function any more). Records then hold
	// every record of the range (DynamoDB: of the stream), records the
	// mapping filtered out included.
	Unfiltered string
}

// Resolve turns a failure record into what failed. With ParallelizationFactor
// above 1 a KinesisBatchInfo range may also hold records of other partition
// keys that were processed; Resolve returns the whole range (processing them
// again is a duplicate, which idempotent handlers absorb).
//
// Resolve does not know the mappings, so it cannot apply a mapping's
// FilterCriteria: a KinesisBatchInfo range then also holds the records the
// mapping filtered out between the batch's first and last record, and
// Resolved.Unfiltered says so. Use ResolveFrom with Sources.Mappings to get
// the records as the function saw them.
func Resolve(ctx context.Context, streams *stream.Service, body []byte) (*Resolved, error) {
	return ResolveFrom(ctx, Sources{Streams: streams}, body)
}

// Sources are what ResolveFrom reads pointer records from: Streams for a
// KinesisBatchInfo, Tables for a DDBStreamBatchInfo (nil: such a record
// is not resolved; ErrNoSource). Mappings, when given, is where a
// KinesisBatchInfo's mapping is found (by its streamArn and
// requestContext.functionArn) so that its FilterCriteria are applied: the
// records of the range that the mapping filtered out are not returned, as
// Lambda discards them (invocation-eventfiltering.html); nil returns the
// whole range and says so (Resolved.Unfiltered).
type Sources struct {
	Streams  *stream.Service
	Tables   *table.Service
	Mappings *mapping.Service
}

// ErrNoSource is returned (wrapped) by ResolveFrom for a pointer record
// whose service was not given.
var ErrNoSource = errors.New("recovery: the service the pointer reads from was not given")

// ResolveFrom is Resolve reading from src: it also resolves the
// on-failure records of DynamoDB stream mappings (DDBStreamBatchInfo),
// from the table's change log. Before, Resolve, Classify and Archive did
// not recognise them.
func ResolveFrom(ctx context.Context, src Sources, body []byte) (*Resolved, error) {
	streams := src.Streams
	if env, ok := wire.UnwrapRetry(body); ok {
		var rec events.KinesisEventRecord
		if err := json.Unmarshal(env.OriginalPayload, &rec); err != nil || rec.EventSource != "aws:kinesis" {
			return nil, fmt.Errorf("%w: a retry envelope without a Kinesis record", ErrUnknownFormat)
		}
		return &Resolved{Kind: KindInserted, Records: []events.KinesisEventRecord{rec}, Attempt: env.Metadata.Attempt,
			InitialTimestamp: env.Metadata.InitialTimestamp, Condition: "Inserted"}, nil
	}
	var f wire.OnFailureRecord
	if err := json.Unmarshal(body, &f); err == nil && f.KinesisBatchInfo != nil {
		if streams == nil {
			return &Resolved{Kind: KindStreamBatch, Info: f.KinesisBatchInfo, Condition: f.RequestContext.Condition}, fmt.Errorf("%w: the stream service", ErrNoSource)
		}
		return resolveBatch(ctx, streams, src.Mappings, &f)
	}
	if err := json.Unmarshal(body, &f); err == nil && f.DDBStreamBatchInfo != nil {
		return resolveDDBBatch(ctx, src.Tables, src.Mappings, &f)
	}
	if env, ok := wire.UnwrapSNS(body); ok {
		payload := json.RawMessage(env.Message)
		if !json.Valid(payload) {
			payload, _ = json.Marshal(env.Message)
		}
		return &Resolved{Kind: KindSNS, Payload: payload, SNS: env}, nil
	}
	var a wire.InvocationRecord
	if err := json.Unmarshal(body, &a); err == nil && len(a.RequestPayload) > 0 {
		return &Resolved{Kind: KindAsync, Payload: a.RequestPayload, Condition: a.RequestContext.Condition}, nil
	}
	if r, ok := resolveEvent(body); ok {
		return r, nil
	}
	return nil, ErrUnknownFormat
}

func resolveBatch(ctx context.Context, streams *stream.Service, mappings *mapping.Service, f *wire.OnFailureRecord) (*Resolved, error) {
	bi := f.KinesisBatchInfo
	res := &Resolved{Kind: KindStreamBatch, Info: bi, Condition: f.RequestContext.Condition}
	name, ok := stream.NameFromARN(bi.StreamArn)
	if !ok {
		return nil, fmt.Errorf("%w: streamArn %q", ErrUnknownFormat, bi.StreamArn)
	}
	matcher, err := pointerFilter(mappings, bi.StreamArn, f.RequestContext.FunctionArn, res)
	if err != nil {
		return nil, err
	}
	numbering, err := streams.Numbering(ctx, name)
	if err != nil {
		return nil, err
	}
	sh, err := stream.ShardIndex(bi.ShardID)
	if err != nil {
		return nil, err
	}
	from, err := stream.ParseSequenceNumber("startSequenceNumber", numbering, sh, bi.StartSequenceNumber)
	if err != nil {
		return nil, err
	}
	to, err := stream.ParseSequenceNumber("endSequenceNumber", numbering, sh, bi.EndSequenceNumber)
	if err != nil {
		return nil, err
	}
	recs, missing, err := streams.ReadRange(ctx, name, bi.ShardID, from, to)
	if err != nil {
		return nil, err
	}
	region, role := mappingIdentity(bi.StreamArn)
	for _, r := range recs {
		if !matcher.MatchKinesis(r.PartitionKey, r.SequenceNumber, r.Data) {
			res.Filtered++
			continue
		}
		ev := KinesisEventRecord(bi.StreamArn, r)
		ev.AwsRegion, ev.InvokeIdentityArn = region, role
		res.Records = append(res.Records, ev)
	}
	if missing > 0 {
		// The pointer says how many records the batch held; the stored
		// messages that are gone do not.
		res.Missing = uint64(max(1, int64(bi.BatchSize)-int64(len(res.Records))))
		return res, fmt.Errorf("%w: %d of the %d records of %s %s..%s are gone", ErrPastRetention, res.Missing, bi.BatchSize, bi.ShardID, bi.StartSequenceNumber, bi.EndSequenceNumber)
	}
	return res, nil
}

// mappingIdentity returns the awsRegion and invokeIdentityArn an event
// source mapping of streamARN (arn:aws:kinesis:<region>:<account>:stream/<name>)
// puts in each Kinesis event record: the stream's region, and the role
// arn:aws:iam::<account>:role/runnel-event-source-mapping. runnel's
// mappings send that one role, whatever the function's Role (mapping's
// kinesisEvent), so the resolved records are the ones the function saw;
// replay's records carry the same (newSender). Both empty for an ARN of
// another shape.
func mappingIdentity(streamARN string) (region, role string) {
	parts := strings.Split(streamARN, ":")
	if len(parts) < 6 {
		return "", ""
	}
	return parts[3], "arn:aws:iam::" + parts[4] + ":role/runnel-event-source-mapping"
}

// pointerFilter finds the mapping that wrote a KinesisBatchInfo pointer
// (the one of streamARN, or of a consumer of it, and functionARN: a pair
// has one mapping) and compiles its FilterCriteria; the nil Matcher (every
// record passes) when it has none. When mappings is nil or holds no such
// mapping, it says so in res.Unfiltered and returns the nil Matcher. The
// mapping's FilterCriteria now are applied: an UpdateEventSourceMapping
// that changed them since the pointer was written changes what passes.
func pointerFilter(mappings *mapping.Service, streamARN, functionARN string, res *Resolved) (*filter.Matcher, error) {
	if mappings == nil {
		res.Unfiltered = "the mappings were not given (Sources.Mappings): the mapping's FilterCriteria are not applied"
		return nil, nil
	}
	for _, c := range mappings.ListEventSourceMappings() {
		if c.FunctionArn != functionARN || (c.EventSourceArn != streamARN && !strings.HasPrefix(c.EventSourceArn, streamARN+"/consumer/")) {
			continue
		}
		m, err := filter.Compile(c.FilterCriteria)
		if err != nil {
			return nil, fmt.Errorf("recovery: the FilterCriteria of mapping %s: %w", c.UUID, err)
		}
		res.Mapping = c.UUID
		return m, nil
	}
	res.Unfiltered = fmt.Sprintf("no event source mapping of %s and function %q: its FilterCriteria (if it had any) are not applied", streamARN, functionARN)
	return nil, nil
}

// resolveDDBBatch reads the records of a DDBStreamBatchInfo from the
// table's change log (a deleted table's too, while its stream is kept),
// the stream's own records only (its label), as a DynamoDB event carries
// them, without those the mapping's FilterCriteria filter out (matched as
// the mapping matches them: {"eventName":...,"dynamodb":{"NewImage":...}})
// when mappings knows the mapping.
func resolveDDBBatch(ctx context.Context, tables *table.Service, mappings *mapping.Service, f *wire.OnFailureRecord) (*Resolved, error) {
	bi := f.DDBStreamBatchInfo
	res := &Resolved{Kind: KindDDBStreamBatch, Info: bi, Condition: f.RequestContext.Condition}
	if tables == nil {
		return res, fmt.Errorf("%w: the tables service", ErrNoSource)
	}
	name, label, ok := table.ParseStreamARN(bi.StreamArn)
	if !ok {
		return nil, fmt.Errorf("%w: streamArn %q", ErrUnknownFormat, bi.StreamArn)
	}
	matcher, err := pointerFilter(mappings, bi.StreamArn, f.RequestContext.FunctionArn, res)
	if err != nil {
		return nil, err
	}
	var logName string
	if ds, err := tables.DeletedStreamOf(ctx, name, label); err == nil {
		logName = ds.Log
	} else if t, err := tables.Table(name); err == nil {
		logName = t.LogName()
	} else {
		return nil, err
	}
	i := strings.LastIndexByte(bi.ShardID, '-')
	sh, err := strconv.ParseUint(bi.ShardID[i+1:], 16, 31)
	if i < 0 || err != nil {
		return nil, fmt.Errorf("%w: shardId %q", ErrUnknownFormat, bi.ShardID)
	}
	logs := tables.Logs()
	numbering, err := logs.Numbering(ctx, logName)
	if err != nil {
		return nil, err
	}
	from, err := stream.ParseSequenceNumber("startSequenceNumber", numbering, int(sh), bi.StartSequenceNumber)
	if err != nil {
		return nil, err
	}
	to, err := stream.ParseSequenceNumber("endSequenceNumber", numbering, int(sh), bi.EndSequenceNumber)
	if err != nil {
		return nil, err
	}
	recs, missing, err := logs.ReadRange(ctx, logName, stream.ShardID(int(sh)), from, to)
	if err != nil {
		return nil, err
	}
	region := ""
	if parts := strings.Split(bi.StreamArn, ":"); len(parts) > 3 {
		region = parts[3]
	}
	for k := range recs {
		c, err := table.DecodeChange(recs[k].Data)
		if err != nil {
			return nil, fmt.Errorf("recovery: change record %s of %s: %w", recs[k].SequenceNumber, bi.StreamArn, err)
		}
		if !c.InStream(label) {
			continue
		}
		er := table.EventRecord(&recs[k], c, region, bi.StreamArn)
		if !matcher.Empty() {
			var ev map[string]any
			if json.Unmarshal(ddbjson.AppendEventRecord(nil, &er), &ev) != nil || !matcher.Match(ev) {
				res.Filtered++
				continue
			}
		}
		res.DynamoDB = append(res.DynamoDB, er)
	}
	if missing > 0 {
		res.Missing = uint64(max(1, int64(bi.BatchSize)-int64(len(res.DynamoDB))))
		return res, fmt.Errorf("%w: %d of the %d records of %s %s..%s are gone", ErrPastRetention, res.Missing, bi.BatchSize, bi.ShardID, bi.StartSequenceNumber, bi.EndSequenceNumber)
	}
	return res, nil
}

// KinesisEventRecord is a stream record in the shape a Kinesis event
// carries it (see stream.Record.KinesisEventRecord).
func KinesisEventRecord(streamARN string, r stream.Record) events.KinesisEventRecord {
	return r.KinesisEventRecord(streamARN)
}
