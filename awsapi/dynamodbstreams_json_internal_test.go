package awsapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestGetRecordsAnswerIsWhatJSONMarshalWrites: GetRecords' answer is
// written by its AppendJSON; its bytes must be json.Marshal's of the same
// answer (images, keys, a TTL deletion's identity, no next iterator, no
// records).
func TestGetRecordsAnswerIsWhatJSONMarshalWrites(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	image := func() map[string]events.DynamoDBAttributeValue {
		if r.IntN(3) == 0 {
			return nil
		}
		return map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute(fmt.Sprint("k<", r.IntN(9), ">")),
			"n": events.NewNumberAttribute(fmt.Sprint(r.IntN(1e6))), "l": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewNullAttribute()})}
	}
	for i := range 300 {
		out := &streamsGetRecordsOutput{}
		if i%3 > 0 {
			out.NextShardIterator = fmt.Sprint("iterator/", i, "+&=")
		}
		if i%20 != 0 {
			out.Records = []streamsRecord{}
		}
		for k := range r.IntN(4) * min(1, i%20) {
			rec := streamsRecord{AWSRegion: "us-east-1", EventID: fmt.Sprint("e", k), EventName: "REMOVE", EventSource: "aws:dynamodb", EventVersion: "1.1",
				Dynamodb: events.DynamoDBStreamRecord{ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(1767323045+int64(k), 0)},
					Keys: image(), NewImage: image(), OldImage: image(), SequenceNumber: fmt.Sprint(r.Uint64()), SizeBytes: int64(r.IntN(500)), StreamViewType: "NEW_AND_OLD_IMAGES"}}
			if r.IntN(3) == 0 {
				rec.UserIdentity = &streamsIdentity{PrincipalID: "dynamodb.amazonaws.com", Type: "Service"}
			}
			out.Records = append(out.Records, rec)
		}
		type plain streamsGetRecordsOutput // json.Marshal of the members
		want, err := json.Marshal((*plain)(out))
		if err != nil {
			t.Fatal(err)
		}
		got, err := out.AppendJSON(nil)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("answer %d:\n got %s (%v)\nwant %s", i, got, err, want)
		}
	}
}
