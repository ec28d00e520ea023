package function

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// TestMarshalEventIsJSONMarshal: the event a function that reads JSON is
// given is json.Marshal's bytes, for a DynamoDB event (written by
// wire/ddbjson), by pointer or by value, and for any other event.
func TestMarshalEventIsJSONMarshal(t *testing.T) {
	ev := events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{AWSRegion: "us-east-1", EventName: "INSERT",
		Change: events.DynamoDBStreamRecord{ApproximateCreationDateTime: events.SecondsEpochTime{Time: time.Unix(1767323045, 0)},
			NewImage: map[string]events.DynamoDBAttributeValue{"a": events.NewStringAttribute("<&>")}, SequenceNumber: "1", StreamViewType: "NEW_IMAGE"}}}}
	for _, event := range []any{&ev, ev, (*events.DynamoDBEvent)(nil), events.DynamoDBEvent{}, map[string]any{"k": "<v>"}, "text"} {
		want, werr := json.Marshal(event)
		got, err := marshalEvent(event)
		if !bytes.Equal(got, want) || (err == nil) != (werr == nil) {
			t.Errorf("%T: got %s (%v), want %s (%v)", event, got, err, want, werr)
		}
	}
}
