package awsapi

import (
	"fmt"
	"strings"
	"testing"
)

// TestValidationReportsMapEntriesInKeyOrder: a map's entries are checked
// as Go's map gives them, and again in key order only when something
// failed (validation.value): the failures, their paths and the first
// DynamoDB rule broken are those of the keys in order, every time.
func TestValidationReportsMapEntriesInKeyOrder(t *testing.T) {
	batch := `{"RequestItems":{"zzz":[{"PutRequest":{}}],"aaa":[{"PutRequest":{"Item":{"pk":{"S":"x"}}}},{"PutRequest":{}}],"mmm":[{"DeleteRequest":{}}]}}`
	// Ten attributes that break a rule, each its own way: the first in
	// key order ("a0") is the one reported.
	var bad []string
	for i := 9; i >= 0; i-- {
		v := `{}`
		if i == 0 {
			v = `{"S":"x","N":"1"}`
		}
		bad = append(bad, fmt.Sprintf(`"a%d":%s`, i, v))
	}
	put := `{"TableName":"ttt","Item":{"pk":{"S":"x"},` + strings.Join(bad, ",") + `}}`
	for _, c := range []struct{ op, body, want string }{
		{"BatchWriteItem", batch, "ValidationException: 3 validation errors detected: " +
			"Value null at 'requestItems.aaa.member.2.member.putRequest.item' failed to satisfy constraint: Member must not be null; " +
			"Value null at 'requestItems.mmm.member.1.member.deleteRequest.key' failed to satisfy constraint: Member must not be null; " +
			"Value null at 'requestItems.zzz.member.1.member.putRequest.item' failed to satisfy constraint: Member must not be null"},
		{"PutItem", put, "ValidationException: Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes"},
	} {
		for range 30 {
			err := validateJSON(lookup(DynamoDB, c.op), []byte(c.body), nil)
			if err == nil || err.Error() != c.want {
				t.Fatalf("%s: %v\nwant %s", c.op, err, c.want)
			}
		}
	}
}
