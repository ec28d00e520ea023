package awsapi

import (
	"encoding/json"
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

// formValue reads a form as the JSON body it stands for: IAM's lists as
// Name.member.N, SQS's flattened lists and maps by their singular names
// (Attribute.N.Name/Value, Tag.N.Key/Value, entries by their shape's
// name), numbers as numbers, and a number that does not read as one
// left out for the input's readForm to report.
func TestFormValue(t *testing.T) {
	for _, tt := range []struct {
		svc  Service
		op   string
		form string
		want string
	}{
		{IAM, "CreateRole", "RoleName=r&MaxSessionDuration=3600&Tags.member.2.Key=b&Tags.member.1.Key=a&Tags.member.1.Value=1",
			`{"MaxSessionDuration":3600,"RoleName":"r","Tags":[{"Key":"a","Value":"1"},{"Key":"b"}]}`},
		{SQS, "CreateQueue", "QueueName=q&Attribute.1.Name=DelaySeconds&Attribute.1.Value=5&Tag.1.Key=team&Tag.1.Value=data",
			`{"Attributes":{"DelaySeconds":"5"},"QueueName":"q","tags":{"team":"data"}}`},
		{SQS, "SendMessageBatch", "QueueUrl=u&SendMessageBatchRequestEntry.1.Id=a&SendMessageBatchRequestEntry.1.MessageAttribute.1.Name=n&SendMessageBatchRequestEntry.1.MessageAttribute.1.Value.DataType=String&SendMessageBatchRequestEntry.1.DelaySeconds=x",
			`{"Entries":[{"Id":"a","MessageAttributes":{"n":{"DataType":"String"}}}],"QueueUrl":"u"}`},
		{SQS, "AddPermission", "QueueUrl=u&Label=l&AWSAccountId.1=111122223333&ActionName.1=SendMessage&ActionName.2=ReceiveMessage",
			`{"AWSAccountIds":["111122223333"],"Actions":["SendMessage","ReceiveMessage"],"Label":"l","QueueUrl":"u"}`},
		{SQS, "UntagQueue", "QueueUrl=u&TagKey.1=a", `{"QueueUrl":"u","TagKeys":["a"]}`},
	} {
		form, _ := url.ParseQuery(tt.form)
		v, _ := formValue(tt.svc, inputShape(lookup(tt.svc, tt.op)), form, "")
		got, _ := json.Marshal(v)
		if string(got) != tt.want {
			t.Errorf("%s %s:\n got %s\nwant %s", tt.svc, tt.op, got, tt.want)
		}
	}
}
