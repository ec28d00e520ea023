package awsapi

import (
	"net/url"
	"reflect"
	"sort"
	"testing"
)

// FuzzSQSQueryForm reads fuzzed forms as every SQS operation's request,
// as the query protocol does: the model's validation (validate_query.go)
// and the input's readForm return, whatever the form, and never panic.
// (FuzzSQS fuzzes SQS's JSON protocol through the endpoint; FuzzIAM and
// FuzzSTS fuzz forms through it.)
func FuzzSQSQueryForm(f *testing.F) {
	var ops []*Operation
	for _, op := range operations[SQS] {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].Name < ops[j].Name })
	for i := range ops {
		for _, form := range []string{
			"QueueUrl=q&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=5&Tag.1.Key=k&Tag.1.Value=v",
			"QueueUrl=q&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageBody=b&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String",
			"QueueUrl=q&Label=l&AWSAccountId.1=111122223333&ActionName.1=SendMessage&TagKey.1=k&MaxResults=x&AttributeName.1=Bogus",
			"Attribute.0.Name=&Attribute.-1.Value=&Tag.99999999999999999999.Key=&member.1=&.1.=",
		} {
			f.Add(uint8(i), form)
		}
	}
	f.Fuzz(func(t *testing.T, i uint8, body string) {
		form, err := url.ParseQuery(body)
		if err != nil {
			return
		}
		op := ops[int(i)%len(ops)]
		_ = validateForm(op, form)
		if op.Input != nil && op.Input.Kind() == reflect.Struct {
			_ = decodeForm(form, reflect.New(op.Input).Interface())
		}
	})
}
