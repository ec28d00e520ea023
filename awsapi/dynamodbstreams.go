package awsapi

// DynamoDB Streams: the API (JSON 1.0, X-Amz-Target
// "DynamoDBStreams_20120810.<Op>") over the tables' change logs
// (table.Service.Logs(), one log stream per table).
//
// A table's stream is its change log seen through a label: a stream ARN
// ends in /stream/<label>, and GetRecords returns only the changes written
// under that label (table.Change.InStream) and at most 24 hours old
// (table.StreamRetention, by the engine clock). The log's shards are the
// stream's shards, named as DynamoDB names them
// (shardId-<20 digits>-<8 hex>, the AWS CLI checks the length): the stream
// label's time in ms, then the log shard's index. An enabled stream's
// shards stay open. A disabled stream (turned off, or its table deleted)
// is readable for 24 hours with its shards closed: each ends at the
// stream's last change in it (DescribeStream's EndingSequenceNumber), and
// GetRecords gives no NextShardIterator once a reader is past it
// (dynamodbstreams_ends.go finds it). A record older than 24 hours is
// trimmed: an iterator that would read it answers
// TrimmedDataAccessException.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
	"github.com/runnel-dev/runnel/wire/ddbjson"
	"github.com/runnel-dev/runnel/wire/jsonstr"
)

// labelLayout is the form of a stream label (table.streamLabel).
const labelLayout = "2006-01-02T15:04:05.000"

// maxStreamRecords is GetRecords' largest Limit in DynamoDB Streams.
const maxStreamRecords = 1000

// maxStreamBytes is the most a GetRecords answers: "a maximum of 1 MB of
// data or 1000 stream records, whichever comes first"
// (API_streams_GetRecords), counted by the records' SizeBytes; a record
// alone over it is answered alone.
const maxStreamBytes = 1 << 20

// ddbStream is a resolved stream ARN.
type ddbStream struct {
	arn, label string
	log        string // the table's change log
	shards     int
	tableName  string
	keySchema  []table.KeySchemaElement
	// enabled: the table's current stream, turned on; view its view type
	// ("" when not known: a stream that was turned off).
	enabled bool
	view    string
	labelMs int64
	// deleted: the stream of a deleted table, readable for 24 hours with
	// its shards closed (table.DeletedStream).
	deleted bool
}

// real checks that a label that is not the table's latest was one of its
// streams: the table's creation time (a stream given at CreateTable), or
// a label with changes (labelIsReal). A label made up between the table's
// creation and its latest stream is ResourceNotFoundException.
func (rq *request) real(ctx context.Context, s *ddbStream, created float64) (*ddbStream, error) {
	if s.labelMs == epochSeconds(created).UnixMilli() {
		return s, nil
	}
	ok, err := rq.labelIsReal(ctx, s)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, streamNotFound(s.arn)
	}
	return s, nil
}

func streamNotFound(arn string) error {
	return awserr.New(awserr.ErrResourceNotFound, "Requested resource not found: Stream: %s not found", arn)
}

// resolveStream finds the table and label of a stream ARN. A label is
// valid if it is the table's latest, or an earlier one from the table's
// lifetime (a stream turned off and on again: the old stream stays
// readable, DISABLED; known by the table's creation time or by its
// changes, see real), or one of a deleted table whose
// stream is kept for 24 hours (table.DeletedStreamOf). Any other label:
// ResourceNotFoundException "Requested resource not found: Stream: <arn>
// not found".
func (rq *request) resolveStream(ctx context.Context, arn string) (*ddbStream, error) {
	if arn == "" {
		return nil, awserr.New(awserr.ErrValidation, "1 validation error detected: Value null at 'streamArn' failed to satisfy constraint: Member must not be null")
	}
	name, label, ok := table.ParseStreamARN(arn)
	if !ok {
		return nil, awserr.New(awserr.ErrValidation, "Invalid StreamArn: %s", arn)
	}
	lt, err := time.Parse(labelLayout, label)
	if err != nil {
		return nil, streamNotFound(arn)
	}
	deleted := func() (*ddbStream, error) {
		ds, err := rq.h.rn.Tables.DeletedStreamOf(ctx, name, label)
		if err != nil || !strings.HasPrefix(arn, ds.TableArn+"/stream/") {
			return nil, streamNotFound(arn)
		}
		s := &ddbStream{arn: arn, label: label, log: ds.Log, shards: ds.Shards, tableName: ds.TableName, keySchema: ds.KeySchema,
			labelMs: lt.UnixMilli(), deleted: true}
		if label == ds.LatestStreamLabel {
			s.view = ds.StreamViewType
			return s, nil
		}
		return rq.real(ctx, s, ds.CreationDateTime)
	}
	t, err := rq.h.rn.Tables.Table(name)
	if err != nil {
		return deleted()
	}
	d, err := rq.h.rn.Tables.DescribeTable(ctx, name)
	if err != nil {
		return deleted()
	}
	created := epochSeconds(d.CreationDateTime).UTC().Format(labelLayout)
	if label < created {
		return deleted() // a table of the name deleted before this one was created
	}
	if !strings.HasPrefix(arn, d.TableArn+"/stream/") || d.LatestStreamLabel == "" || label > d.LatestStreamLabel {
		return nil, streamNotFound(arn)
	}
	s := &ddbStream{arn: arn, label: label, log: t.LogName(), shards: d.Shards, tableName: d.TableName, keySchema: d.KeySchema,
		labelMs: lt.UnixMilli()}
	if label == d.LatestStreamLabel && d.StreamSpecification != nil {
		// A stream turned off keeps its view type (StreamViewType shown
		// for the DISABLED stream, as DynamoDB does).
		s.enabled, s.view = d.StreamSpecification.StreamEnabled, d.StreamSpecification.StreamViewType
	}
	if label != d.LatestStreamLabel {
		return rq.real(ctx, s, d.CreationDateTime)
	}
	return s, nil
}

func (s *ddbStream) shardID(i int) string { return fmt.Sprintf("shardId-%020d-%08x", s.labelMs, i) }

// shardIndex parses a shard id of this stream; -1 if it is not one.
func (s *ddbStream) shardIndex(id string) int {
	prefix := fmt.Sprintf("shardId-%020d-", s.labelMs)
	rest, ok := strings.CutPrefix(id, prefix)
	if !ok || len(rest) != 8 {
		return -1
	}
	i, err := strconv.ParseUint(rest, 16, 31)
	if err != nil || int(i) >= s.shards {
		return -1
	}
	return int(i)
}

// streamIterator is the Streams API's shard iterator: the stream ARN (for
// the label) around the log's own iterator, with the shard and the trim
// horizon when the iterator's position was taken.
type streamIterator struct {
	ARN   string `json:"a"`
	Inner string `json:"i"`
	// Shard is the log shard's index plus 1 (0: not known, an iterator
	// of an earlier runnel).
	Shard int `json:"s,omitempty"`
	// Horizon is the trim horizon (engine clock, Unix ms: 24 hours before)
	// when GetShardIterator placed the iterator; its continuations keep
	// it. A change of the stream older than Horizon was trimmed before the
	// iterator's position (a TRIM_HORIZON iterator starts at the oldest
	// untrimmed record) and is skipped; one newer than Horizon but older
	// than the horizon now was trimmed while the iterator was held:
	// TrimmedDataAccessException.
	Horizon int64 `json:"h,omitempty"`
}

func (it streamIterator) encode() string {
	b, _ := json.Marshal(it)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeStreamIterator(s string) (streamIterator, bool) {
	var it streamIterator
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &it) != nil || it.ARN == "" || it.Inner == "" {
		return it, false
	}
	return it, true
}

// streamsRecord is a Records entry of GetRecords: the shape of
// events.DynamoDBEventRecord, except userIdentity, whose members are
// capitalized in the Streams API.
type streamsRecord struct {
	AWSRegion    string                      `json:"awsRegion"`
	Dynamodb     events.DynamoDBStreamRecord `json:"dynamodb"`
	EventID      string                      `json:"eventID"`
	EventName    string                      `json:"eventName"`
	EventSource  string                      `json:"eventSource"`
	EventVersion string                      `json:"eventVersion"`
	UserIdentity *streamsIdentity            `json:"userIdentity,omitempty"`
}

type streamsIdentity struct {
	PrincipalID string `json:"PrincipalId"`
	Type        string
}

// logNotFound turns the log's "not found" into the stream's.
func logNotFound(err error, arn string) error {
	if errors.Is(err, awserr.ErrResourceNotFound) {
		return streamNotFound(arn)
	}
	return err
}

// shardNotFound is the error for a shard id that is not one of the
// stream's.
func shardNotFound(shard, arn string) error {
	return awserr.New(awserr.ErrResourceNotFound, "Requested resource not found: Shard: %s in Stream: %s not found", shard, arn)
}

type streamsDescribeStreamInput struct {
	StreamArn, ExclusiveStartShardId string
	Limit                            *int
}

func streamsDescribeStream(rq *request, in *streamsDescribeStreamInput) (any, error) {
	limit, err := limit("limit", in.Limit, 100, 100, awserr.ErrValidation)
	if err != nil {
		return nil, err
	}
	s, err := rq.resolveStream(rq.ctx, in.StreamArn)
	if err != nil {
		return nil, err
	}
	ld, err := rq.h.rn.Tables.Logs().DescribeStream(rq.ctx, s.log)
	if err != nil {
		return nil, logNotFound(err, in.StreamArn)
	}
	type seqRange struct {
		StartingSequenceNumber string
		EndingSequenceNumber   string `json:",omitempty"`
	}
	type shardOut struct {
		ShardId             string
		SequenceNumberRange seqRange
	}
	shards := []shardOut{}
	start := -1
	if in.ExclusiveStartShardId != "" {
		if start = s.shardIndex(in.ExclusiveStartShardId); start < 0 {
			return nil, shardNotFound(in.ExclusiveStartShardId, in.StreamArn)
		}
	}
	var last string
	for i, sh := range ld.Shards {
		if i <= start {
			continue
		}
		if len(shards) == limit {
			last = shards[len(shards)-1].ShardId
			break
		}
		r := seqRange{StartingSequenceNumber: sh.SequenceNumberRange.StartingSequenceNumber}
		if !s.enabled {
			// A disabled stream's shards (a deleted table's, or a stream
			// turned off) take no more records: closed, ending at the
			// stream's last change in the shard (at their start when
			// they have none), whatever the log takes after it (changes
			// while off, a later stream's). A log too long to read to
			// the end here (describePages) gives the last change found
			// so far.
			end, err := rq.streamEnd(rq.ctx, s, i, describePages)
			if err != nil {
				return nil, err
			}
			r.EndingSequenceNumber = end.lastSeq
			if r.EndingSequenceNumber == "" {
				r.EndingSequenceNumber = r.StartingSequenceNumber
			}
		}
		shards = append(shards, shardOut{ShardId: s.shardID(i), SequenceNumberRange: r})
	}
	status := "DISABLED"
	if s.enabled {
		status = "ENABLED"
	}
	desc := map[string]any{
		"StreamArn": s.arn, "StreamLabel": s.label, "StreamStatus": status, "TableName": s.tableName,
		"KeySchema": s.keySchema, "Shards": shards, "CreationRequestDateTime": epoch(time.UnixMilli(s.labelMs)),
	}
	if s.view != "" {
		desc["StreamViewType"] = s.view
	}
	if last != "" {
		desc["LastEvaluatedShardId"] = last
	}
	return map[string]any{"StreamDescription": desc}, nil
}

// describePages bounds the log pages DescribeStream reads per shard to
// find a disabled stream's end (streamEnd).
const describePages = 100

type streamsGetShardIteratorInput struct {
	StreamArn         string
	ShardId           string
	ShardIteratorType string
	SequenceNumber    string
}

func streamsGetShardIterator(rq *request, in *streamsGetShardIteratorInput) (any, error) {
	s, err := rq.resolveStream(rq.ctx, in.StreamArn)
	if err != nil {
		return nil, err
	}
	i := s.shardIndex(in.ShardId)
	if i < 0 {
		return nil, shardNotFound(in.ShardId, in.StreamArn)
	}
	gi := stream.GetShardIteratorInput{StreamName: s.log, ShardID: stream.ShardID(i), ShardIteratorType: in.ShardIteratorType, StartingSequenceNumber: in.SequenceNumber}
	switch in.ShardIteratorType {
	case stream.TrimHorizon:
		// The log is never trimmed; the stream's horizon is 24 hours back.
		gi.ShardIteratorType, gi.Timestamp = stream.AtTimestamp, rq.h.rn.Engine.Clock.Now().Add(-table.StreamRetention)
	case stream.Latest:
	case stream.AtSequenceNumber, stream.AfterSequenceNumber:
		if in.SequenceNumber == "" {
			return nil, awserr.New(awserr.ErrValidation, "SequenceNumber is required with ShardIteratorType %s", in.ShardIteratorType)
		}
		if err := rq.checkNotTrimmed(s, i, in.SequenceNumber); err != nil {
			return nil, err
		}
	default:
		return nil, awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%s' at 'shardIteratorType' failed to satisfy constraint: Member must satisfy enum value set: [TRIM_HORIZON, LATEST, AT_SEQUENCE_NUMBER, AFTER_SEQUENCE_NUMBER]", in.ShardIteratorType)
	}
	inner, err := rq.h.rn.Tables.Logs().GetShardIterator(rq.ctx, gi)
	if err != nil {
		return nil, logNotFound(err, in.StreamArn)
	}
	horizon := rq.h.rn.Engine.Clock.Now().Add(-table.StreamRetention).UnixMilli()
	return map[string]string{"ShardIterator": streamIterator{ARN: s.arn, Inner: inner, Shard: i + 1, Horizon: horizon}.encode()}, nil
}

// checkNotTrimmed refuses a sequence number of shard i whose record is
// older than the stream's 24 hours: "TrimmedDataAccessException ... You
// request a shard iterator with a sequence number older than the trim
// point (24 hours)" (API_streams_GetShardIterator). The log itself is
// never trimmed, so the record's own time decides. A sequence number
// that names no record is left to the log's own answer.
func (rq *request) checkNotTrimmed(s *ddbStream, i int, seq string) error {
	logs := rq.h.rn.Tables.Logs()
	numbering, err := logs.Numbering(rq.ctx, s.log)
	if err != nil {
		return nil
	}
	sh, pos, err := stream.DecodeSequenceNumber(numbering, seq)
	if err != nil || sh != i {
		return nil
	}
	rec, err := logs.GetRecord(rq.ctx, s.log, stream.ShardID(i), pos)
	if err != nil {
		return nil
	}
	c, err := table.DecodeChange(rec.Data)
	if err != nil {
		return nil
	}
	if horizon := rq.h.rn.Engine.Clock.Now().Add(-table.StreamRetention); time.UnixMilli(c.TimeMs).Before(horizon) {
		return awserr.New(awserr.ErrTrimmedDataAccess, "The operation attempted to read past the oldest stream record in a shard: sequence number %s is older than the stream's 24 hours", seq)
	}
	return nil
}

type streamsGetRecordsInput struct {
	ShardIterator string
	Limit         *int
}

func streamsGetRecords(rq *request, in *streamsGetRecordsInput) (any, error) {
	limit, err := limit("limit", in.Limit, maxStreamRecords, maxStreamRecords, awserr.ErrValidation)
	if err != nil {
		return nil, err
	}
	it, ok := decodeStreamIterator(in.ShardIterator)
	if !ok {
		return nil, awserr.New(awserr.ErrValidation, "Invalid ShardIterator")
	}
	s, err := rq.resolveStream(rq.ctx, it.ARN)
	if err != nil {
		return nil, err
	}
	return rq.streamRecords(rq.ctx, s, it, limit)
}

// endPages bounds how many log pages a GetRecords of a disabled stream
// reads to find the stream's end in its shard (streamEnd); a call that
// did not get there keeps the shard open, and the next goes on.
const endPages = 10

// streamRecords reads the log from iterator it and keeps the stream's
// records. When a whole read is filtered out and more is waiting, it
// reads on (a few times) rather than answer with nothing ("it might take
// multiple calls to get to a portion of the shard that contains stream
// records", API_streams_GetRecords). A disabled stream's shard closes (no
// NextShardIterator) only once the read is past the stream's last change
// in it, or at the log's end with none left (streamEnd), never because a
// log page came back short: the log cuts its pages at 10 MiB. A change of
// the stream that passed the 24 hours since the iterator was placed is
// TrimmedDataAccessException (API_streams_GetRecords: "a stream record in
// the shard exceeds the 24 hour period and is trimmed").
func (rq *request) streamRecords(ctx context.Context, s *ddbStream, it streamIterator, limit int) (any, error) {
	logs := rq.h.rn.Tables.Logs()
	horizon := rq.h.rn.Engine.Clock.Now().Add(-table.StreamRetention).UnixMilli()
	// An iterator of an earlier runnel carries neither its shard nor its
	// horizon: the shard is the inner iterator's, and its position is
	// taken as placed now (older changes skipped, as that runnel did).
	// Without the shard, a disabled stream's shard never closed for it.
	if it.Shard == 0 {
		if i, ok := stream.IteratorShardIndex(it.Inner); ok {
			it.Shard = i + 1
		}
	}
	if it.Horizon == 0 {
		it.Horizon = horizon
	}
	var end shardEnd
	if !s.enabled && it.Shard > 0 {
		var err error
		if end, err = rq.streamEnd(ctx, s, it.Shard-1, endPages); err != nil {
			return nil, err
		}
	}
	inner := it.Inner
	recs := []streamsRecord{}
	size := int64(0)
	closed := false
	for round := 0; !closed; round++ {
		o, err := logs.GetRecords(ctx, inner, limit)
		if err != nil {
			return nil, logNotFound(err, s.arn)
		}
		for i := range o.Records {
			rec := &o.Records[i]
			if end.done && (!end.has || rec.Seq > end.last) {
				closed = true // past the disabled stream's last change
				break
			}
			c, err := table.DecodeChange(rec.Data)
			if err != nil {
				return nil, awserr.New(awserr.ErrService, "stream %s: bad change record %s: %v", s.arn, rec.SequenceNumber, err)
			}
			if !c.InStream(s.label) || c.TimeMs < it.Horizon {
				continue // not the stream's, or trimmed before the iterator's start
			}
			cut := c.TimeMs < horizon // trimmed while the iterator was held
			var ev events.DynamoDBEventRecord
			if !cut {
				ev = table.EventRecordShared(rec, c, rq.h.opts.Region, s.arn) // c is freshly decoded and only encoded here
				ev.Change.SizeBytes = table.StreamSizeBytes(c)
				cut = len(recs) > 0 && size+ev.Change.SizeBytes > maxStreamBytes
			}
			if cut {
				if len(recs) == 0 {
					return nil, awserr.New(awserr.ErrTrimmedDataAccess, "The operation attempted to read past the oldest stream record in a shard: record %s is older than the stream's 24 hours", rec.SequenceNumber)
				}
				// 1 MB answered, or a trimmed record next: the next read
				// starts after the record before this one, not at the end
				// of the log's page.
				last := recs[len(recs)-1].Dynamodb.SequenceNumber
				if i > 0 {
					last = o.Records[i-1].SequenceNumber // read, maybe left out
				}
				return rq.streamRecordsFrom(ctx, s, it, recs, last)
			}
			out := streamsRecord{AWSRegion: ev.AWSRegion, Dynamodb: ev.Change, EventID: ev.EventID, EventName: ev.EventName,
				EventSource: ev.EventSource, EventVersion: ev.EventVersion}
			if u := ev.UserIdentity; u != nil {
				out.UserIdentity = &streamsIdentity{PrincipalID: u.PrincipalID, Type: u.Type}
			}
			recs = append(recs, out)
			size += ev.Change.SizeBytes
		}
		inner = o.NextShardIterator
		if end.done && len(o.Records) == 0 {
			closed = true // the log's end, the stream's changes all read
		}
		if len(recs) > 0 || len(o.Records) < limit || round >= 9 {
			break
		}
	}
	out := &streamsGetRecordsOutput{Records: recs}
	if inner != "" && !closed {
		out.NextShardIterator = streamIterator{ARN: s.arn, Inner: inner, Shard: it.Shard, Horizon: it.Horizon}.encode()
	}
	return out, nil
}

// streamRecordsFrom answers recs with a NextShardIterator after the log
// record last (a GetRecords cut at maxStreamBytes, or before a trimmed
// record), keeping its shard and horizon.
func (rq *request) streamRecordsFrom(ctx context.Context, s *ddbStream, it streamIterator, recs []streamsRecord, last string) (any, error) {
	logs := rq.h.rn.Tables.Logs()
	numbering, err := logs.Numbering(ctx, s.log)
	if err != nil {
		return nil, logNotFound(err, s.arn)
	}
	sh, _, err := stream.DecodeSequenceNumber(numbering, last)
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "stream %s: sequence number %s: %v", s.arn, last, err)
	}
	next, err := logs.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: s.log, ShardID: stream.ShardID(sh),
		ShardIteratorType: stream.AfterSequenceNumber, StartingSequenceNumber: last})
	if err != nil {
		return nil, logNotFound(err, s.arn)
	}
	nit := streamIterator{ARN: s.arn, Inner: next, Shard: it.Shard, Horizon: it.Horizon}
	return &streamsGetRecordsOutput{Records: recs, NextShardIterator: nit.encode()}, nil
}

// streamsGetRecordsOutput is GetRecords' answer. Its AppendJSON writes
// what json.Marshal writes for it, with the records' images written by
// wire/ddbjson (a thousand records with both images cost json.Marshal
// about 5 ms).
type streamsGetRecordsOutput struct {
	NextShardIterator string          `json:",omitempty"`
	Records           []streamsRecord `json:"Records"`
}

func (o *streamsGetRecordsOutput) AppendJSON(dst []byte) ([]byte, error) {
	dst = append(dst, '{')
	if o.NextShardIterator != "" {
		dst = append(jsonstr.Append(append(dst, `"NextShardIterator":`...), o.NextShardIterator), ',')
	}
	dst = append(dst, `"Records":`...)
	if o.Records == nil {
		return append(dst, "null}"...), nil
	}
	dst = append(dst, '[')
	for i := range o.Records {
		r := &o.Records[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = jsonstr.Append(append(dst, `{"awsRegion":`...), r.AWSRegion)
		dst = ddbjson.AppendStreamRecord(append(dst, `,"dynamodb":`...), &r.Dynamodb)
		dst = jsonstr.Append(append(dst, `,"eventID":`...), r.EventID)
		dst = jsonstr.Append(append(dst, `,"eventName":`...), r.EventName)
		dst = jsonstr.Append(append(dst, `,"eventSource":`...), r.EventSource)
		dst = jsonstr.Append(append(dst, `,"eventVersion":`...), r.EventVersion)
		if u := r.UserIdentity; u != nil {
			dst = jsonstr.Append(append(dst, `,"userIdentity":{"PrincipalId":`...), u.PrincipalID)
			dst = append(jsonstr.Append(append(dst, `,"Type":`...), u.Type), '}')
		}
		dst = append(dst, '}')
	}
	return append(dst, "]}"...), nil
}

type streamsListStreamsInput struct {
	TableName, ExclusiveStartStreamArn string
	Limit                              *int
}

// streamsListStreams serves ListStreams: the latest stream of each table
// (or of TableName) that ever had one, in table-name order.
func streamsListStreams(rq *request, in *streamsListStreamsInput) (any, error) {
	limit, err := limit("limit", in.Limit, 100, 100, awserr.ErrValidation)
	if err != nil {
		return nil, err
	}
	ctx, svc := rq.ctx, rq.h.rn.Tables
	names := svc.ListTables(ctx)
	// Deleted tables' streams are listed while they are readable.
	deleted, err := svc.DeletedStreams(ctx, tableName(in.TableName))
	if err != nil {
		return nil, err
	}
	if in.TableName != "" {
		n := tableName(in.TableName)
		if _, err := svc.Table(n); err != nil && len(deleted) == 0 {
			return nil, err
		} else if err != nil {
			names = nil
		} else {
			names = []string{n}
		}
	}
	type streamOut struct {
		StreamArn   string
		TableName   string
		StreamLabel string
	}
	all := []streamOut{}
	for _, n := range names {
		d, err := svc.DescribeTable(ctx, n)
		if err != nil || d.LatestStreamArn == "" {
			continue // deleted meanwhile, or never had a stream
		}
		all = append(all, streamOut{StreamArn: d.LatestStreamArn, TableName: d.TableName, StreamLabel: d.LatestStreamLabel})
	}
	for _, d := range deleted {
		all = append(all, streamOut{StreamArn: d.TableArn + "/stream/" + d.LatestStreamLabel, TableName: d.TableName, StreamLabel: d.LatestStreamLabel})
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].TableName < all[j].TableName || (all[i].TableName == all[j].TableName && all[i].StreamArn < all[j].StreamArn)
	})
	if in.ExclusiveStartStreamArn != "" {
		name, _, _ := table.ParseStreamARN(in.ExclusiveStartStreamArn)
		i := sort.Search(len(all), func(i int) bool {
			return all[i].TableName > name || (all[i].TableName == name && all[i].StreamArn > in.ExclusiveStartStreamArn)
		})
		all = all[i:]
	}
	out := map[string]any{}
	if len(all) > limit {
		all = all[:limit]
		out["LastEvaluatedStreamArn"] = all[limit-1].StreamArn
	}
	out["Streams"] = all
	return out, nil
}
