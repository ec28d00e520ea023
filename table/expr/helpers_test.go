package expr

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// item parses an item in DynamoDB JSON; "" is no item (nil).
func item(t *testing.T, js string) Item {
	t.Helper()
	if js == "" {
		return nil
	}
	var it Item
	if err := json.Unmarshal([]byte(js), &it); err != nil {
		t.Fatalf("item %s: %v", js, err)
	}
	return it
}

// values parses ExpressionAttributeValues in DynamoDB JSON.
func values(t *testing.T, js string) map[string]events.DynamoDBAttributeValue {
	t.Helper()
	if js == "" {
		return nil
	}
	var v map[string]events.DynamoDBAttributeValue
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatalf("values %s: %v", js, err)
	}
	return v
}

// text renders an item as DynamoDB JSON with sorted keys.
func text(t *testing.T, it Item) string {
	t.Helper()
	if it == nil {
		return ""
	}
	b, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// same compares two DynamoDB JSON texts structurally.
func same(t *testing.T, got Item, want string) bool {
	t.Helper()
	return text(t, got) == text(t, item(t, want))
}

// wantValidation checks that err is a *ValidationError with message msg.
func wantValidation(t *testing.T, err error, msg string) {
	t.Helper()
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error = %v, want ValidationError %q", err, msg)
	}
	if ve.Message != msg {
		t.Fatalf("error = %q\n          want %q", ve.Message, msg)
	}
}

func names(kv ...string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
