package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/schemas"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go/transport/http/protocol/awsquery"

	"github.com/runnel-dev/runnel/awsapi"
)

// bothProtocols runs fn with an SQS client of the JSON protocol and one
// of the query protocol, each on its own endpoint.
func bothProtocols(t *testing.T, fn func(t *testing.T, qc *sqs.Client)) {
	t.Run("json", func(t *testing.T) { fn(t, start(t, awsapi.Options{}).sqs()) })
	t.Run("query", func(t *testing.T) {
		fn(t, start(t, awsapi.Options{}).sqs(func(o *sqs.Options) { o.Protocol = awsquery.New(schemas.AmazonSQS) }))
	})
}

// Tags given to CreateQueue are kept (they were dropped), TagQueue adds
// and replaces, UntagQueue removes, and AWS's limits hold: 50 tags a
// queue, keys of 1..128 characters, values of at most 256.
func TestSQSQueueTags(t *testing.T) {
	bothProtocols(t, func(t *testing.T, qc *sqs.Client) {
		ctx := context.Background()
		u := must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("tagged"), Tags: map[string]string{"team": "data", "env": "dev"}})).QueueUrl
		tags := func() map[string]string {
			return must(qc.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: u})).Tags
		}
		if got := tags(); len(got) != 2 || got["team"] != "data" || got["env"] != "dev" {
			t.Fatalf("tags from CreateQueue: %v", got)
		}
		must(qc.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: u, Tags: map[string]string{"env": "prod", "cost": ""}}))
		if got := tags(); len(got) != 3 || got["env"] != "prod" || got["cost"] != "" {
			t.Fatalf("after TagQueue: %v", got)
		}
		must(qc.UntagQueue(ctx, &sqs.UntagQueueInput{QueueUrl: u, TagKeys: []string{"team", "absent"}}))
		if got := tags(); len(got) != 2 || got["team"] != "" {
			t.Fatalf("after UntagQueue: %v", got)
		}
		many := map[string]string{}
		for i := range 48 {
			many[fmt.Sprint("k", i)] = "v"
		}
		_, err := qc.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: u, Tags: many}) // 2 + 48 = 50
		if err != nil {
			t.Fatalf("50 tags: %v", err)
		}
		_, err = qc.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: u, Tags: map[string]string{"one-more": "v"}})
		if errCode(err) != "InvalidParameterValue" || !strings.Contains(err.Error(), "Too many tags added for queue tagged.") {
			t.Errorf("51st tag: %v", err)
		}
		for _, bad := range []map[string]string{{strings.Repeat("k", 129): "v"}, {"k": strings.Repeat("v", 257)}} {
			if _, err := qc.TagQueue(ctx, &sqs.TagQueueInput{QueueUrl: u, Tags: bad}); errCode(err) != "InvalidParameterValue" {
				t.Errorf("a key or value over its length: %v", err)
			}
		}
		many["k48"], many["k49"], many["k50"] = "v", "v", "v"
		_, err = qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("manytags"), Tags: many})
		if errCode(err) != "InvalidParameterValue" || !strings.Contains(err.Error(), "Too many tags added for queue manytags.") {
			t.Errorf("CreateQueue with 51 tags: %v", err)
		}
		_, err = qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("badtags"), Tags: map[string]string{"": "v"}})
		if errCode(err) != "InvalidParameterValue" {
			t.Errorf("CreateQueue with an empty tag key: %v", err)
		}
		_, err = qc.ListQueueTags(ctx, &sqs.ListQueueTagsInput{QueueUrl: aws.String(strings.Replace(*u, "tagged", "missing", 1))})
		var gone *types.QueueDoesNotExist
		if !errors.As(err, &gone) {
			t.Errorf("tags of a missing queue: %v", err)
		}
	})
}

// AddPermission writes the statement SQS writes into the queue's Policy,
// RemovePermission takes it out (and the Policy with the last one), with
// SQS's errors for a label twice, a label not there, more than 7 actions
// and an action a permission cannot grant.
func TestSQSPermissions(t *testing.T) {
	bothProtocols(t, func(t *testing.T, qc *sqs.Client) {
		ctx := context.Background()
		u := must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("shared")})).QueueUrl
		policy := func() string {
			a := must(qc.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: u, AttributeNames: []types.QueueAttributeName{"Policy"}}))
			return a.Attributes["Policy"]
		}
		must(qc.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: u, Label: aws.String("send"), AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage"}}))
		arn := "arn:aws:sqs:us-east-1:000000000000:shared"
		want := `{"Version":"2012-10-17","Id":"` + arn + `/SQSDefaultPolicy","Statement":[{"Sid":"send","Effect":"Allow","Principal":{"AWS":"arn:aws:iam::111122223333:root"},"Action":"SQS:SendMessage","Resource":"` + arn + `"}]}`
		if got := policy(); got != want {
			t.Fatalf("Policy after AddPermission:\n%s\nwant\n%s", got, want)
		}
		must(qc.AddPermission(ctx, &sqs.AddPermissionInput{QueueUrl: u, Label: aws.String("both"), AWSAccountIds: []string{"111122223333", "444455556666"}, Actions: []string{"ReceiveMessage", "DeleteMessage"}}))
		if got := policy(); !strings.Contains(got, `{"Sid":"both","Effect":"Allow","Principal":{"AWS":["arn:aws:iam::111122223333:root","arn:aws:iam::444455556666:root"]},"Action":["SQS:ReceiveMessage","SQS:DeleteMessage"]`) {
			t.Fatalf("second statement: %s", got)
		}
		for _, tt := range []struct {
			in   sqs.AddPermissionInput
			code string
			msg  string
		}{
			{sqs.AddPermissionInput{Label: aws.String("send"), AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage"}},
				"InvalidParameterValue", "Value send for parameter Label is invalid. Reason: Already exists."},
			{sqs.AddPermissionInput{Label: aws.String("many"), AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage", "ReceiveMessage", "DeleteMessage", "ChangeMessageVisibility", "GetQueueAttributes", "GetQueueUrl", "PurgeQueue", "ListDeadLetterSourceQueues"}},
				"OverLimit", "8 Actions were found, maximum allowed is 7."},
			{sqs.AddPermissionInput{Label: aws.String("owner"), AWSAccountIds: []string{"111122223333"}, Actions: []string{"DeleteQueue"}},
				"InvalidParameterValue", "Value SQS:DeleteQueue for parameter ActionName is invalid. Reason: Only the queue owner is allowed to invoke this action."},
			{sqs.AddPermissionInput{Label: aws.String("bad label"), AWSAccountIds: []string{"111122223333"}, Actions: []string{"SendMessage"}},
				"InvalidParameterValue", "Value bad label for parameter Label is invalid."},
			{sqs.AddPermissionInput{Label: aws.String("acct"), AWSAccountIds: []string{"12"}, Actions: []string{"SendMessage"}},
				"InvalidParameterValue", "Value [12] for parameter PrincipalId is invalid. Reason: Unable to verify."},
			{sqs.AddPermissionInput{Label: aws.String("noacct"), AWSAccountIds: []string{}, Actions: []string{"SendMessage"}},
				"MissingParameter", "The request must contain the parameter AWSAccountIds."},
		} {
			in := tt.in
			in.QueueUrl = u
			_, err := qc.AddPermission(ctx, &in)
			if errCode(err) != tt.code || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("AddPermission %s: %v, want %s %q", aws.ToString(tt.in.Label), err, tt.code, tt.msg)
			}
		}
		_, err := qc.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: u, Label: aws.String("nope")})
		if errCode(err) != "InvalidParameterValue" || !strings.Contains(err.Error(), "Value nope for parameter Label is invalid. Reason: can't find label on existing policy.") {
			t.Errorf("RemovePermission of a missing label: %v", err)
		}
		must(qc.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: u, Label: aws.String("send")}))
		if got := policy(); strings.Contains(got, `"send"`) || !strings.Contains(got, `"both"`) {
			t.Fatalf("after removing send: %s", got)
		}
		must(qc.RemovePermission(ctx, &sqs.RemovePermissionInput{QueueUrl: u, Label: aws.String("both")}))
		if got := policy(); got != "" {
			t.Fatalf("Policy after removing the last statement: %q", got)
		}
	})
}

// ListDeadLetterSourceQueues lists the queues whose RedrivePolicy targets
// a queue, in name order, a page of MaxResults at a time.
func TestSQSListDeadLetterSourceQueues(t *testing.T) {
	bothProtocols(t, func(t *testing.T, qc *sqs.Client) {
		ctx := context.Background()
		dlq := must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq")})).QueueUrl
		redrive := `{"deadLetterTargetArn":"arn:aws:sqs:us-east-1:000000000000:dlq","maxReceiveCount":3}`
		for _, n := range []string{"src-c", "src-a", "src-b"} {
			must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(n), Attributes: map[string]string{"RedrivePolicy": redrive}}))
		}
		must(qc.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("other")}))
		names := func(urls []string) string {
			var out []string
			for _, u := range urls {
				out = append(out, u[strings.LastIndexByte(u, '/')+1:])
			}
			return strings.Join(out, ",")
		}
		all := must(qc.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq}))
		if names(all.QueueUrls) != "src-a,src-b,src-c" || all.NextToken != nil {
			t.Fatalf("all sources: %v %v", all.QueueUrls, all.NextToken)
		}
		p1 := must(qc.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: aws.Int32(2)}))
		if names(p1.QueueUrls) != "src-a,src-b" || p1.NextToken == nil {
			t.Fatalf("page 1: %v %v", p1.QueueUrls, p1.NextToken)
		}
		p2 := must(qc.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: aws.Int32(2), NextToken: p1.NextToken}))
		if names(p2.QueueUrls) != "src-c" || p2.NextToken != nil {
			t.Fatalf("page 2: %v %v", p2.QueueUrls, p2.NextToken)
		}
		none := must(qc.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: aws.String(strings.Replace(*dlq, "dlq", "other", 1))}))
		if len(none.QueueUrls) != 0 {
			t.Fatalf("sources of a queue no queue targets: %v", none.QueueUrls)
		}
		_, err := qc.ListDeadLetterSourceQueues(ctx, &sqs.ListDeadLetterSourceQueuesInput{QueueUrl: dlq, MaxResults: aws.Int32(1001)})
		if errCode(err) != "InvalidParameterValue" {
			t.Errorf("MaxResults 1001: %v", err)
		}
	})
}
