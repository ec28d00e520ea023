package awsapi

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/stream"
)

// epoch is a timestamp on the wire of the JSON protocols: epoch seconds
// with a fraction.
type epoch time.Time

func (t epoch) MarshalJSON() ([]byte, error) {
	ms := time.Time(t).UnixMilli()
	return []byte(json.Number(formatSeconds(ms))), nil
}

func formatSeconds(ms int64) string {
	b, _ := json.Marshal(float64(ms) / 1000)
	return string(b)
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
		recs := o.Records
		if recs == nil {
			recs = []stream.PutRecordsResultEntry{}
		}
		out = map[string]any{"FailedRecordCount": o.FailedRecordCount, "Records": recs, "EncryptionType": "NONE"}
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
		type record struct {
			SequenceNumber              string
			ApproximateArrivalTimestamp epoch
			Data                        []byte
			PartitionKey                string
			EncryptionType              string
		}
		recs := make([]record, len(o.Records))
		for i, r := range o.Records {
			data := r.Data
			if data == nil {
				data = []byte{}
			}
			recs[i] = record{r.SequenceNumber, epoch(r.ApproximateArrivalTimestamp), data, r.PartitionKey, "NONE"}
		}
		res := map[string]any{"Records": recs, "MillisBehindLatest": o.MillisBehindLatest}
		if o.NextShardIterator != "" {
			res["NextShardIterator"] = o.NextShardIterator
		}
		out = res
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
