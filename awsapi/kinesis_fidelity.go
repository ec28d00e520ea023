package awsapi

// Kinesis's own wording and order where they differ from the other JSON
// services', as Kinesis answers (the responses kinesalite's tests record,
// written against AWS):
//
//   - a value of the wrong JSON type is a SerializationException worded
//     by Kinesis's JSON reader ("class java.lang.Boolean can not be
//     converted to an String", "Expected list or null"), its text under
//     "Message", not "message" (errors.go);
//   - a blob that is not canonical base64 is one too ("'23456' can not be
//     converted to a Blob: Base64 encoded length is expected a multiple of
//     4 bytes but found: 5");
//   - a number too large for an Integer is truncated to one, as Java's
//     intValue does, not refused;
//   - a string's pattern is reported before its length, and an input's
//     members in the order Kinesis reports them (kinesisMemberOrder), not
//     the model's;
//   - a shard ID is read leniently: "shardId-5", "shard-5", "x-00005" and
//     "5" all name shardId-000000000005 (kinesisShardID).

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/big"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
)

// kinesisMismatch is Kinesis's message for a value v of the wrong JSON
// type for shape s.
func kinesisMismatch(s *shape, v any) string {
	switch s.Type {
	case "structure":
		if _, ok := v.([]any); ok {
			return "Start of list found where not expected"
		}
		return "Expected null"
	case "list":
		if _, ok := v.(map[string]any); ok {
			return "Start of structure or map found where not expected."
		}
		return "Expected list or null"
	case "map":
		if _, ok := v.([]any); ok {
			return "Start of list found where not expected"
		}
		return "Expected map or null"
	}
	to := "an " + javaType(s)
	if s.Type == "blob" {
		to = "a Blob"
	}
	switch t := v.(type) {
	case map[string]any:
		return "Start of structure or map found where not expected."
	case []any:
		return "Start of list found where not expected"
	case string:
		if s.Type == "boolean" {
			return fmt.Sprintf("'%s' can not be converted to %s", t, to)
		}
		return "class java.lang.String can not be converted to " + to
	case bool:
		return "class java.lang.Boolean can not be converted to " + to
	case json.Number:
		return "class com.amazon.coral.value.json.numbers.TruncatingBigNumber can not be converted to " + to
	}
	return fmt.Sprintf("%T can not be converted to %s", v, to)
}

const base64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

// kinesisBase64 is why str is not a blob as Kinesis reads one (padded,
// canonical base64), or "" when it is.
func kinesisBase64(str string) string {
	if len(str)%4 != 0 {
		return fmt.Sprintf("Base64 encoded length is expected a multiple of 4 bytes but found: %d", len(str))
	}
	body := str
	pad := 0
	for pad < 2 && strings.HasSuffix(body, "=") {
		body, pad = body[:len(body)-1], pad+1
	}
	for i := 0; i < len(body); i++ {
		if strings.IndexByte(base64Alphabet, body[i]) < 0 {
			return fmt.Sprintf("Invalid Base64 character: '%c'", body[i])
		}
	}
	if pad > 0 {
		// The last character's bits past the last whole byte must be 0.
		last := strings.IndexByte(base64Alphabet, body[len(body)-1])
		if mask := []int{0, 0x3, 0xF}[pad]; last&mask != 0 {
			return "Invalid last non-pad Base64 character dectected"
		}
	}
	return ""
}

// kinesisTruncate is n as Java's intValue (integer) or longValue (long)
// reads a number too large for the type: its low 32 or 64 bits.
func kinesisTruncate(f *big.Float, typ string) *big.Float {
	i, _ := f.Int(nil)
	lo := new(big.Int).And(i, new(big.Int).SetUint64(^uint64(0))).Uint64()
	if typ == "integer" {
		return new(big.Float).SetInt64(int64(int32(uint32(lo))))
	}
	return new(big.Float).SetInt64(int64(lo))
}

// kinesisMemberOrder is the order Kinesis reports an input's failed
// members in, by input shape; members not listed (those added to the API
// since: StreamARN, StreamId, ...) follow, in the model's order.
var kinesisMemberOrder = map[string][]string{
	"AddTagsToStreamInput":               {"Tags", "StreamName"},
	"CreateStreamInput":                  {"ShardCount", "StreamName"},
	"DecreaseStreamRetentionPeriodInput": {"RetentionPeriodHours", "StreamName"},
	"DescribeStreamInput":                {"Limit", "ExclusiveStartShardId", "StreamName"},
	"GetRecordsInput":                    {"Limit", "ShardIterator"},
	"GetShardIteratorInput":              {"ShardId", "ShardIteratorType", "StartingSequenceNumber", "StreamName"},
	"IncreaseStreamRetentionPeriodInput": {"RetentionPeriodHours", "StreamName"},
	"ListShardsInput":                    {"MaxResults", "ExclusiveStartShardId", "StreamName"},
	"ListStreamsInput":                   {"Limit", "ExclusiveStartStreamName"},
	"ListTagsForStreamInput":             {"Limit", "ExclusiveStartTagKey", "StreamName"},
	"MergeShardsInput":                   {"ShardToMerge", "AdjacentShardToMerge", "StreamName"},
	"PutRecordInput":                     {"SequenceNumberForOrdering", "PartitionKey", "ExplicitHashKey", "Data", "StreamName"},
	"PutRecordsInput":                    {"Records", "StreamName"},
	"RemoveTagsFromStreamInput":          {"TagKeys", "StreamName"},
	"SplitShardInput":                    {"NewStartingHashKey", "StreamName", "ShardToSplit"},
	"UpdateShardCountInput":              {"ScalingType", "StreamName", "TargetShardCount"},
}

// reorderMembers puts the members of m's shapes in the order given by
// shape (kinesisMemberOrder, dynamoMemberOrder).
func reorderMembers(m *model, orders map[string][]string) {
	for name, order := range orders {
		s := m.Shapes[name]
		if s == nil {
			continue
		}
		rank := func(r *memberRef) int {
			if i := slices.Index(order, r.name); i >= 0 {
				return i
			}
			return len(order)
		}
		slices.SortStableFunc(s.Members, func(a, b *memberRef) int { return rank(a) - rank(b) })
	}
}

// maxShardIndex is the largest shard index a shard ID can name (a Java
// int).
const maxShardIndex = 1<<31 - 1

// kinesisShardID reads a shard ID as Kinesis does: the digits after its
// last "-" (or all of it without one) are the shard's index, whatever
// comes before, so "shardId-5", "shard-5", "x-00005" and "5" are all
// shardId-000000000005. An ID whose index is not digits, or is larger
// than a Java int, names no shard: ResourceNotFoundException "Could not
// find shard <id> in stream <stream> under account <account>.", which
// Kinesis answers before it looks the stream up.
func kinesisShardID(rq *request, id, stream string) (string, error) {
	digits := id[strings.LastIndexByte(id, '-')+1:]
	n, err := strconv.ParseUint(digits, 10, 64)
	if digits == "" || strings.TrimLeft(digits, "0123456789") != "" || err != nil || n > maxShardIndex {
		return "", awserr.New(awserr.ErrResourceNotFound, "Could not find shard %s in stream %s under account %s.", id, stream, rq.h.rn.Engine.AccountID())
	}
	return fmt.Sprintf("shardId-%012d", n), nil
}

// kinesisErrorBody is a JSON 1.1 error body: {"__type", "message"}, but
// Kinesis's SerializationException has "Message", or no text at all when
// the body is not JSON.
//
// A JSON 1.1 request without a target gets a bare UnknownOperationException,
// as from Kinesis.
func kinesisErrorBody(rq *request, we wireError) map[string]string {
	if rq.proto == protoKinesis && we.shape == "UnknownOperationException" && rq.r.Header.Get("X-Amz-Target") == "" &&
		rq.r.Header.Get("Content-Type") == "application/x-amz-json-1.1" {
		return map[string]string{"__type": we.shape}
	}
	if rq.proto != protoKinesis || we.shape != "SerializationException" {
		return map[string]string{"__type": we.shape, "message": we.e.Message}
	}
	if we.e.Message == "" {
		return map[string]string{"__type": we.shape}
	}
	return map[string]string{"__type": we.shape, "Message": we.e.Message}
}

// tagKeyChars are the characters Kinesis takes in a tag key: letters,
// digits, spaces and _ . / = + - % @ : (not tabs or line breaks).
var tagKeyChars = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_./=+\-%@:]*$`)

// kinesisTagKeys refuses the tag keys RemoveTagsFromStream does not
// take, in Kinesis's words: a character outside tagKeyChars, then a "%"
// (which it lists as valid in the first message but refuses in the
// second).
func kinesisTagKeys(rq *request, stream string, keys []string) error {
	for _, k := range keys {
		if !tagKeyChars.MatchString(k) {
			return awserr.New(awserr.ErrInvalidArgument, "Some tags contain invalid characters. Valid characters: Unicode letters, digits, white space, _ . / = + - %% @ :.")
		}
	}
	for _, k := range keys {
		if strings.Contains(k, "%") {
			return awserr.New(awserr.ErrInvalidArgument, "Failed to remove tags from stream %s under account %s because some tags contained illegal characters. "+
				"The allowed characters are Unicode letters, white-spaces, '_',',','/','=','+','-','@',':'.", stream, rq.h.rn.Engine.AccountID())
		}
	}
	return nil
}

// kinesisID2 is an x-amz-id-2 header's value, which Kinesis sends with
// every response: 72 random bytes in base64.
func kinesisID2() string {
	var b [72]byte
	for i := 0; i < len(b); i += 8 {
		binary.LittleEndian.PutUint64(b[i:], rand.Uint64())
	}
	return base64.StdEncoding.EncodeToString(b[:])
}

// kinesisBodyError refuses a Kinesis (or DynamoDB) JSON request without
// a body as Kinesis (and DynamoDB) does: a SerializationException without a message (as one whose
// body is not JSON, validateJSONValue).
func kinesisBodyError(rq *request) error {
	if (rq.proto == protoKinesis || rq.proto == protoDynamoDB) && len(bytes.TrimSpace(rq.body)) == 0 {
		return awserr.New(awserr.ErrSerialization, "")
	}
	return nil
}

// kinesisStringList checks a list of strings as Kinesis does: an element
// out of the member's constraints fails the list as a whole, with every
// constraint of the member listed ("Value '[a, b]' at 'tagKeys' failed to
// satisfy constraint: Member must satisfy constraint: [Member must have
// length less than or equal to 128, Member must have length greater than
// or equal to 1]").
func (vd *validation) kinesisStringList(s *shape, arr []any) {
	ms := s.Member.shape
	failed := false
	for _, e := range arr {
		str, ok := e.(string)
		if !ok {
			if e != nil {
				vd.mismatch(ms, e)
				return
			}
			continue
		}
		n := javaLength(str)
		if (ms.Min != nil && float64(n) < *ms.Min) || (ms.Max != nil && float64(n) > *ms.Max) ||
			(ms.re != nil && !ms.re.MatchString(str)) || (len(ms.Enum) > 0 && !slices.Contains(ms.Enum, str)) {
			failed = true
		}
	}
	if !failed {
		return
	}
	var cs []string
	if ms.Max != nil {
		cs = append(cs, "Member must have length less than or equal to "+bound(*ms.Max))
	}
	if ms.Min != nil {
		cs = append(cs, "Member must have length greater than or equal to "+bound(*ms.Min))
	}
	if ms.Pattern != "" {
		cs = append(cs, "Member must satisfy regular expression pattern: "+ms.Pattern)
	}
	if len(ms.Enum) > 0 {
		cs = append(cs, "Member must satisfy enum value set: ["+strings.Join(ms.Enum, ", ")+"]")
	}
	vd.fail(arr, "satisfy constraint: [%s]", strings.Join(cs, ", "))
}

// kinesisLegacyJSON answers a request for Kinesis (its X-Amz-Target, or
// none, posted to "/") of content type application/json, which Kinesis
// reads as its legacy JSON 1.0 protocol, where no operation of this API
// exists: HTTP 200 with an UnknownOperationException in that protocol's
// envelope, or a SerializationException when the body is not JSON. It
// reports whether it answered.
//
// Trap: a 200 is a success to every SDK. Only a request that is
// Kinesis's gets it: another service's target (one runnel does not
// serve) and a REST call to another path (unknownPath) are refused with
// a 4xx, else a call runnel does not serve would seem done.
func (rq *request) kinesisLegacyJSON() bool {
	if rq.proto != protoKinesis || rq.r.Header.Get("Content-Type") != "application/json" {
		return false
	}
	if target := rq.r.Header.Get("X-Amz-Target"); !strings.HasPrefix(target, "Kinesis_20131202.") && (target != "" || rq.r.URL.Path != "/") {
		return false
	}
	body := `{"Output":{"__type":"com.amazon.coral.service#UnknownOperationException","message":null},"Version":"1.0"}`
	if b := bytes.TrimSpace(rq.body); len(b) > 0 && !json.Valid(b) {
		body = `{"Output":{"__type":"com.amazon.coral.service#SerializationException","Message":null},"Version":"1.0"}`
	}
	h := rq.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("x-amzn-RequestId", rq.reqID)
	h.Set("x-amz-id-2", kinesisID2())
	rq.w.Write([]byte(body))
	return true
}
