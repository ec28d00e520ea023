package queue_test

import (
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// TestANumberAttributeIsADecimalOfAtMost38DigitsWithinItsRange: "Number
// attributes can store positive or negative numerical values. A number
// can have up to 38 digits of precision, and it can be between 10^-128
// and 10^+126" (sqs-message-metadata, message attribute data types);
// leading and trailing zeroes are trimmed. Before, the value was checked
// with strconv.ParseFloat, which took NaN, Inf, -Infinity, hexadecimal
// (0x1p4) and 1e300 (SNS refuses the first four: decimalNumber).
func TestANumberAttributeIsADecimalOfAtMost38DigitsWithinItsRange(t *testing.T) {
	e := newEnv(t)
	q := e.create("q", nil)
	send := func(v string) error {
		_, err := e.svc.SendMessage(e.ctx, q, queue.SendMessageInput{MessageBody: "b",
			MessageAttributes: map[string]queue.MessageAttributeValue{"n": {DataType: "Number", StringValue: &v}}})
		return err
	}
	for _, v := range []string{"0", "-0.0", "42", "+3.14", "-1.5e10", ".5", "5.", "1E-128", "1e126", "-1e126", "0.000e999999999",
		strings.Repeat("9", 38), "1" + strings.Repeat("0", 60), "0.00" + strings.Repeat("7", 38) + "000", "1234567890123456789012345678901234567.8"} {
		if err := send(v); err != nil {
			t.Errorf("Number %q refused: %v", v, err)
		}
	}
	for _, v := range []string{"NaN", "Inf", "-Infinity", "0x1p4", "0x10", "1e300", "1e127", "2e126", "1.0000000001e126", "1e-129",
		"9.9e-129", strings.Repeat("9", 39), "1.234567890123456789012345678901234567891", "1e", "e5", "-", ".", "1_000", " 1", "1e99999999999"} {
		err := send(v)
		wantErr(t, err, awserr.ErrSQSInvalidParameterValue, "'n'", "38", "10^-128", "10^+126")
	}
}
