package expr

import (
	"testing"

	"github.com/aws/aws-lambda-go/events"
)

// TestArithmeticPast38DigitsIsAnOverflow: a SET's sum or difference
// needing more than 38 significant digits (1e50 + 1) is refused as
// DynamoDB refuses it: "Number overflow. Attempting to store a number
// with magnitude larger than supported range" (ScyllaDB's test_number.py
// test_update_expression_plus_imprecise, run against DynamoDB, quotes
// it). Before, it said "Attempting to store more than 38 significant
// digits in a Number", the message of a number sent with too many digits
// (which keeps it).
func TestArithmeticPast38DigitsIsAnOverflow(t *testing.T) {
	vals := map[string]events.DynamoDBAttributeValue{":a": events.NewNumberAttribute("1e50"), ":b": events.NewNumberAttribute("1")}
	for _, e := range []string{"SET b = :a + :b", "SET b = :a - :b"} {
		u, err := ParseUpdate(e, &Context{Values: vals})
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.Apply(Item{})
		wantValidation(t, err, msgOverflow)
	}
	_, err := ParseNumber("100000000000000000000000000000000000000000000000001")
	wantValidation(t, err, msgTooManyDigits)
}
