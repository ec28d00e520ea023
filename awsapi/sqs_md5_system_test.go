package awsapi_test

import (
	"context"
	"crypto/md5"
	"encoding/binary"
	"encoding/hex"
	"sort"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	stypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/runnel-dev/runnel/awsapi"
)

// md5OfStringAttributes is SQS's digest of attributes that are all
// Strings, written here from its documentation (sqs-message-metadata,
// "Calculating the MD5 message digest for message attributes"): for each
// name in order, the name's length (4 bytes, big-endian) and bytes, the
// data type's, the transport type 1, the value's length and bytes.
func md5OfStringAttributes(attrs map[string]string) string {
	names := make([]string, 0, len(attrs))
	for n := range attrs {
		names = append(names, n)
	}
	sort.Strings(names)
	h := md5.New()
	field := func(s string) {
		binary.Write(h, binary.BigEndian, uint32(len(s)))
		h.Write([]byte(s))
	}
	for _, n := range names {
		field(n)
		field("String")
		h.Write([]byte{1})
		field(attrs[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestSendReturnsMD5OfMessageSystemAttributes: SendMessage and
// SendMessageBatch return MD5OfMessageSystemAttributes, the digest of the
// AWSTraceHeader sent (API_SendMessage), and none when no system
// attribute was sent.
func TestSendReturnsMD5OfMessageSystemAttributes(t *testing.T) {
	ctx := context.Background()
	e := start(t, awsapi.Options{})
	sc := e.sqs()
	url := must(sc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("traced")})).QueueUrl
	trace := "Root=1-5759e988-bd862e3fe1be46a994272793;Sampled=1"
	sys := map[string]stypes.MessageSystemAttributeValue{"AWSTraceHeader": {DataType: aws.String("String"), StringValue: aws.String(trace)}}
	want := md5OfStringAttributes(map[string]string{"AWSTraceHeader": trace})
	out := must(sc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("x"), MessageSystemAttributes: sys}))
	if got := aws.ToString(out.MD5OfMessageSystemAttributes); got != want {
		t.Fatalf("SendMessage MD5OfMessageSystemAttributes = %q, want %q", got, want)
	}
	bo := must(sc.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: url, Entries: []stypes.SendMessageBatchRequestEntry{
		{Id: aws.String("a"), MessageBody: aws.String("x"), MessageSystemAttributes: sys},
		{Id: aws.String("b"), MessageBody: aws.String("y")},
	}}))
	for _, s := range bo.Successful {
		got, w := aws.ToString(s.MD5OfMessageSystemAttributes), want
		if aws.ToString(s.Id) == "b" {
			w = ""
		}
		if got != w {
			t.Fatalf("SendMessageBatch entry %s: MD5OfMessageSystemAttributes = %q, want %q", aws.ToString(s.Id), got, w)
		}
	}
	plain := must(sc.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: url, MessageBody: aws.String("z")}))
	if plain.MD5OfMessageSystemAttributes != nil {
		t.Fatalf("a send without system attributes: MD5OfMessageSystemAttributes %q", aws.ToString(plain.MD5OfMessageSystemAttributes))
	}
}
