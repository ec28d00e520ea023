package awsapi

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// epoch is a timestamp on the wire of the JSON protocols: epoch seconds
// with a fraction.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	return appendSeconds(nil, time.Time(t).UnixMilli()), nil
}

// appendSeconds appends ms as epoch seconds with a fraction, exactly as
// encoding/json writes the float64 ms/1000: strconv's shortest 'f' form
// in the range where encoding/json uses it (every date from 1970 on),
// else encoding/json itself.
func appendSeconds(b []byte, ms int64) []byte {
	f := float64(ms) / 1000
	if a := math.Abs(f); a == 0 || (a >= 1e-6 && a < 1e21) {
		return strconv.AppendFloat(b, f, 'f', -1, 64)
	}
	j, _ := json.Marshal(f)
	return append(b, j...)
}

// appendJSONString appends s as a JSON string, byte for byte as
// encoding/json.Marshal writes it (HTML-safe escaping): strings of plain
// printable ASCII, like sequence numbers, shard ids and most partition
// keys, are copied as they are; any other is written by encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			j, _ := json.Marshal(s)
			return append(b, j...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendGetRecords appends GetRecords' response body: the bytes
// json.Marshal wrote for it (a map, so the keys in order; each record's
// fields in the order of the struct it used; Data in standard base64, ""
// for no data), without the reflection and the per-record copies.
func appendGetRecords(b []byte, o *stream.GetRecordsOutput) []byte {
	b = append(b, `{"MillisBehindLatest":`...)
	b = strconv.AppendInt(b, o.MillisBehindLatest, 10)
	if o.NextShardIterator != "" {
		b = append(b, `,"NextShardIterator":`...)
		b = appendJSONString(b, o.NextShardIterator)
	}
	b = append(b, `,"Records":[`...)
	for i := range o.Records {
		r := &o.Records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"SequenceNumber":`...)
		b = appendJSONString(b, r.SequenceNumber)
		b = append(b, `,"ApproximateArrivalTimestamp":`...)
		b = appendSeconds(b, r.ApproximateArrivalTimestamp.UnixMilli())
		b = append(b, `,"Data":"`...)
		b = base64.StdEncoding.AppendEncode(b, r.Data)
		b = append(b, `","PartitionKey":`...)
		b = appendJSONString(b, r.PartitionKey)
		b = append(b, `,"EncryptionType":"NONE"}`...)
	}
	return append(b, "]}"...)
}

// getRecordsSize is about the size of appendGetRecords' output.
func getRecordsSize(o *stream.GetRecordsOutput) int {
	n := 128 + len(o.NextShardIterator)
	for i := range o.Records {
		r := &o.Records[i]
		n += 128 + len(r.SequenceNumber) + base64.StdEncoding.EncodedLen(len(r.Data)) + len(r.PartitionKey)
	}
	return n
}

// appendPutRecords appends PutRecords' response body, the bytes
// json.Marshal wrote for it (a map, so the keys in order; each entry's
// fields in the order of stream.PutRecordsResultEntry, the empty ones
// left out).
func appendPutRecords(b []byte, o *stream.PutRecordsOutput) []byte {
	b = append(b, `{"EncryptionType":"NONE","FailedRecordCount":`...)
	b = strconv.AppendInt(b, int64(o.FailedRecordCount), 10)
	b = append(b, `,"Records":[`...)
	for i := range o.Records {
		r := &o.Records[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		sep := false
		for _, f := range [...]struct{ name, v string }{
			{`"SequenceNumber":`, r.SequenceNumber}, {`"ShardId":`, r.ShardId},
			{`"ErrorCode":`, r.ErrorCode}, {`"ErrorMessage":`, r.ErrorMessage},
		} {
			if f.v == "" {
				continue
			}
			if sep {
				b = append(b, ',')
			}
			b = append(b, f.name...)
			b = appendJSONString(b, f.v)
			sep = true
		}
		b = append(b, '}')
	}
	return append(b, "]}"...)
}

func (t *epoch) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		var s string
		if err2 := json.Unmarshal(b, &s); err2 != nil {
			return err
		}
		tt, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return err
		}
		*t = epoch(tt)
		return nil
	}
	sec, frac := math.Modf(f)
	*t = epoch(time.Unix(int64(sec), int64(math.Round(frac*1e9))))
	return nil
}

type streamModeDetails struct {
	StreamMode string `json:"StreamMode"`
}

var provisioned = &streamModeDetails{StreamMode: "PROVISIONED"}

type enhancedMetrics struct {
	ShardLevelMetrics []string `json:"ShardLevelMetrics"`
}

var noEnhancedMetrics = []enhancedMetrics{{ShardLevelMetrics: []string{}}}

// streamRef is the StreamName / StreamARN pair most Kinesis calls take.
type streamRef struct {
	StreamName string `json:"StreamName"`
	StreamARN  string `json:"StreamARN"`
}

func (s streamRef) name() (string, error) {
	if s.StreamName != "" {
		return s.StreamName, nil
	}
	if s.StreamARN != "" {
		if n, ok := stream.NameFromARN(s.StreamARN); ok {
			return n, nil
		}
		return "", awserr.New(awserr.ErrInvalidArgument, "StreamARN %q is not a Kinesis stream ARN", s.StreamARN)
	}
	return "", awserr.New(awserr.ErrInvalidArgument, "Either StreamName or StreamARN should be provided.")
}

type shardOut struct {
	ShardId             string `json:"ShardId"`
	HashKeyRange        any    `json:"HashKeyRange"`
	SequenceNumberRange any    `json:"SequenceNumberRange"`
}

func shardsOut(in []stream.Shard) []shardOut {
	out := make([]shardOut, 0, len(in))
	for _, s := range in {
		out = append(out, shardOut{ShardId: s.ShardID, HashKeyRange: s.HashKeyRange, SequenceNumberRange: s.SequenceNumberRange})
	}
	return out
}

// page cuts shards after exclusiveStart to at most limit.
func page(shards []stream.Shard, exclusiveStart string, limit int) ([]stream.Shard, bool) {
	if exclusiveStart != "" {
		i := sort.Search(len(shards), func(i int) bool { return shards[i].ShardID > exclusiveStart })
		shards = shards[i:]
	}
	if len(shards) > limit {
		return shards[:limit], true
	}
	return shards, false
}

func (rq *request) kinesis() {
	ctx := rq.r.Context()
	svc := rq.h.rn.Streams
	var out any
	var err error
	switch rq.op {
	case "CreateStream":
		var in struct {
			StreamName        string
			ShardCount        *int
			StreamModeDetails *streamModeDetails
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		ci := stream.CreateStreamInput{StreamName: in.StreamName}
		if in.ShardCount != nil {
			ci.ShardCount = *in.ShardCount
			if ci.ShardCount == 0 {
				err = awserr.OutOfRange(awserr.ErrInvalidArgument, "ShardCount", 0, 1, stream.MaxShardCount)
				break
			}
		} else if in.StreamModeDetails != nil && in.StreamModeDetails.StreamMode == "ON_DEMAND" {
			ci.ShardCount = 4 // what an on-demand stream starts with
		}
		_, err = svc.CreateStream(ctx, ci)
		out = struct{}{}
	case "DeleteStream":
		var in streamRef
		if err = rq.decode(&in); err != nil {
			break
		}
		var name string
		if name, err = in.name(); err == nil {
			err = svc.DeleteStream(ctx, name)
		}
		out = struct{}{}
	case "DescribeStream":
		var in struct {
			streamRef
			Limit                 *int
			ExclusiveStartShardId string
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		limit := 100
		if in.Limit != nil {
			limit = *in.Limit
			if limit < 1 || limit > 10000 {
				err = awserr.OutOfRange(awserr.ErrInvalidArgument, "limit", limit, 1, 10000)
				break
			}
		}
		var d *stream.StreamDescription
		if d, err = rq.describe(in.streamRef); err != nil {
			break
		}
		shards, more := page(d.Shards, in.ExclusiveStartShardId, limit)
		out = map[string]any{"StreamDescription": map[string]any{
			"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
			"StreamModeDetails": provisioned, "Shards": shardsOut(shards), "HasMoreShards": more,
			"RetentionPeriodHours": d.RetentionPeriodHours, "StreamCreationTimestamp": epoch(d.StreamCreationTimestamp),
			"EnhancedMonitoring": noEnhancedMetrics, "EncryptionType": "NONE",
		}}
	case "DescribeStreamSummary":
		var in streamRef
		if err = rq.decode(&in); err != nil {
			break
		}
		var d *stream.StreamDescription
		if d, err = rq.describe(in); err != nil {
			break
		}
		out = map[string]any{"StreamDescriptionSummary": map[string]any{
			"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
			"StreamModeDetails": provisioned, "RetentionPeriodHours": d.RetentionPeriodHours,
			"StreamCreationTimestamp": epoch(d.StreamCreationTimestamp), "EnhancedMonitoring": noEnhancedMetrics,
			"EncryptionType": "NONE", "OpenShardCount": len(d.Shards), "ConsumerCount": 0,
		}}
	case "ListStreams":
		out, err = rq.listStreams()
	case "ListShards":
		out, err = rq.listShards()
	case "PutRecord":
		var in struct {
			streamRef
			Data            []byte
			PartitionKey    string
			ExplicitHashKey string
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		var name string
		if name, err = in.name(); err != nil {
			break
		}
		var r stream.PutRecordsResultEntry
		r, err = svc.PutRecord(ctx, name, stream.PutRecordsRequestEntry{Data: in.Data, PartitionKey: in.PartitionKey, ExplicitHashKey: in.ExplicitHashKey})
		if err == nil && r.ErrorCode != "" {
			err = &awserr.Error{Code: r.ErrorCode, Message: r.ErrorMessage}
			if r.ErrorCode == "InternalFailure" {
				err = awserr.New(awserr.ErrService, "%s", r.ErrorMessage)
			}
		}
		out = map[string]any{"ShardId": r.ShardId, "SequenceNumber": r.SequenceNumber, "EncryptionType": "NONE"}
	case "PutRecords":
		// Decoded into the request's own shape, not into
		// stream.PutRecordsRequestEntry: that has fields (HashKey) a client
		// must not set.
		var in struct {
			streamRef
			Records []struct {
				Data            []byte
				PartitionKey    string
				ExplicitHashKey string
			}
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		var name string
		if name, err = in.name(); err != nil {
			break
		}
		entries := make([]stream.PutRecordsRequestEntry, len(in.Records))
		for i, r := range in.Records {
			entries[i] = stream.PutRecordsRequestEntry{Data: r.Data, PartitionKey: r.PartitionKey, ExplicitHashKey: r.ExplicitHashKey}
		}
		var o *stream.PutRecordsOutput
		if o, err = svc.PutRecords(ctx, name, entries); err != nil {
			break
		}
		buf := newJSONBuf(64 + len(o.Records)*96)
		buf.b = appendPutRecords(buf.b, o)
		out = buf
	case "GetShardIterator":
		var in struct {
			streamRef
			ShardId                string
			ShardIteratorType      string
			StartingSequenceNumber string
			Timestamp              *epoch
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		var name string
		if name, err = in.name(); err != nil {
			break
		}
		gi := stream.GetShardIteratorInput{StreamName: name, ShardID: in.ShardId, ShardIteratorType: in.ShardIteratorType, StartingSequenceNumber: in.StartingSequenceNumber}
		if in.Timestamp != nil {
			gi.Timestamp = time.Time(*in.Timestamp)
		}
		var it string
		if it, err = svc.GetShardIterator(ctx, gi); err == nil {
			out = map[string]string{"ShardIterator": it}
		}
	case "GetRecords":
		var in struct {
			ShardIterator string
			Limit         int
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		var o *stream.GetRecordsOutput
		if o, err = svc.GetRecords(ctx, in.ShardIterator, in.Limit); err != nil {
			break
		}
		buf := newJSONBuf(getRecordsSize(o))
		buf.b = appendGetRecords(buf.b, o)
		out = buf
	case "IncreaseStreamRetentionPeriod", "DecreaseStreamRetentionPeriod":
		var in struct {
			streamRef
			RetentionPeriodHours int
		}
		if err = rq.decode(&in); err != nil {
			break
		}
		var d *stream.StreamDescription
		if d, err = rq.describe(in.streamRef); err != nil {
			break
		}
		h := in.RetentionPeriodHours
		if rq.op == "IncreaseStreamRetentionPeriod" && h < d.RetentionPeriodHours {
			err = awserr.New(awserr.ErrInvalidArgument, "Requested retention period (%d hours) for stream %s can not be shorter than existing retention period (%d hours). Use DecreaseRetentionPeriod API.", h, d.StreamName, d.RetentionPeriodHours)
			break
		}
		if rq.op == "DecreaseStreamRetentionPeriod" && h > d.RetentionPeriodHours {
			err = awserr.New(awserr.ErrInvalidArgument, "Requested retention period (%d hours) for stream %s can not be longer than existing retention period (%d hours). Use IncreaseRetentionPeriod API.", h, d.StreamName, d.RetentionPeriodHours)
			break
		}
		if h != d.RetentionPeriodHours {
			err = svc.UpdateRetentionPeriod(ctx, d.StreamName, h)
		}
		out = struct{}{}
	default:
		err = badRequest("UnknownOperationException", "Kinesis operation %s is not supported by runnel", rq.op)
	}
	if err != nil {
		rq.fail(err)
		return
	}
	rq.reply(out)
}

func (rq *request) describe(ref streamRef) (*stream.StreamDescription, error) {
	name, err := ref.name()
	if err != nil {
		return nil, err
	}
	return rq.h.rn.Streams.DescribeStream(rq.r.Context(), name)
}

func (rq *request) listStreams() (any, error) {
	var in struct {
		Limit                    *int
		ExclusiveStartStreamName string
		NextToken                string
	}
	if err := rq.decode(&in); err != nil {
		return nil, err
	}
	limit := 100
	if in.Limit != nil {
		limit = *in.Limit
		if limit < 1 || limit > 10000 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "limit", limit, 1, 10000)
		}
	}
	start := in.ExclusiveStartStreamName
	if in.NextToken != "" {
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		if err != nil {
			return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken is not valid")
		}
		start = string(b)
	}
	ctx := rq.r.Context()
	names, err := rq.h.rn.Streams.ListStreams(ctx)
	if err != nil {
		return nil, err
	}
	if start != "" {
		names = names[sort.SearchStrings(names, start+"\x00"):]
	}
	more := len(names) > limit
	if more {
		names = names[:limit]
	}
	summaries := []map[string]any{}
	for _, n := range names {
		d, err := rq.h.rn.Streams.DescribeStream(ctx, n)
		if err != nil {
			continue // deleted meanwhile
		}
		summaries = append(summaries, map[string]any{
			"StreamName": d.StreamName, "StreamARN": d.StreamARN, "StreamStatus": d.StreamStatus,
			"StreamModeDetails": provisioned, "StreamCreationTimestamp": epoch(d.StreamCreationTimestamp),
		})
	}
	if names == nil {
		names = []string{}
	}
	out := map[string]any{"StreamNames": names, "HasMoreStreams": more, "StreamSummaries": summaries}
	if more {
		out["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte(names[len(names)-1]))
	}
	return out, nil
}

func (rq *request) listShards() (any, error) {
	var in struct {
		streamRef
		NextToken             string
		ExclusiveStartShardId string
		MaxResults            *int
	}
	if err := rq.decode(&in); err != nil {
		return nil, err
	}
	limit := 1000
	if in.MaxResults != nil {
		limit = *in.MaxResults
		if limit < 1 || limit > 10000 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "maxResults", limit, 1, 10000)
		}
	}
	start := in.ExclusiveStartShardId
	if in.NextToken != "" {
		if in.StreamName != "" || in.StreamARN != "" {
			return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken and StreamName cannot be provided together.")
		}
		b, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		name, shard, ok := strings.Cut(string(b), "\x00")
		if err != nil || !ok {
			return nil, awserr.New(awserr.ErrInvalidArgument, "NextToken is not valid")
		}
		in.StreamName, start = name, shard
	}
	d, err := rq.describe(in.streamRef)
	if err != nil {
		return nil, err
	}
	shards, more := page(d.Shards, start, limit)
	out := map[string]any{"Shards": shardsOut(shards)}
	if more {
		out["NextToken"] = base64.RawURLEncoding.EncodeToString([]byte(d.StreamName + "\x00" + shards[len(shards)-1].ShardID))
	}
	return out, nil
}
