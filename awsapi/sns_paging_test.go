package awsapi_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"

	"github.com/runnel-dev/runnel/awsapi"
)

// TestSNSListPagesResumeAfterTheirLastItem: ListSubscriptionsByTopic,
// ListSubscriptions and ListTopics page tokens resume after the last item
// of the page, so a cleanup loop (list a page, delete each item, list the
// next page) reaches every item; a token that is not one of theirs is
// InvalidParameter naming NextToken. Before, a token was an offset
// ("100"): the loop saw 100 of 150 subscriptions and left 50 subscribed,
// and an unparsable token started at the first page again. AWS:
// NextToken is "Token returned by the previous ListSubscriptionsByTopic
// request" (API_ListSubscriptionsByTopic), an opaque cursor of 100 items
// a page.
func TestSNSListPagesResumeAfterTheirLastItem(t *testing.T) {
	e := start(t, awsapi.Options{})
	ctx := context.Background()
	sc := e.sns()
	topic := aws.ToString(must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String("t")})).TopicArn)
	for i := range 150 {
		must(sc.Subscribe(ctx, &sns.SubscribeInput{TopicArn: &topic, Protocol: aws.String("sqs"),
			Endpoint: aws.String(fmt.Sprintf("arn:aws:sqs:us-east-1:000000000000:q%03d", i))}))
	}
	// Malformed tokens, and a token of another list.
	topicsToken := func() *string {
		for i := range 101 {
			must(sc.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(fmt.Sprintf("x%03d", i))}))
		}
		return must(sc.ListTopics(ctx, &sns.ListTopicsInput{})).NextToken
	}()
	if topicsToken == nil {
		t.Fatal("102 topics: no NextToken")
	}
	for _, tok := range []string{"not a token!", "100", *topicsToken} {
		_, err := sc.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: &topic, NextToken: aws.String(tok)})
		if errCode(err) != "InvalidParameter" || !strings.Contains(err.Error(), "NextToken") {
			t.Errorf("ListSubscriptionsByTopic NextToken %q: %v; want InvalidParameter naming NextToken", tok, err)
		}
	}
	_, err := sc.ListTopics(ctx, &sns.ListTopicsInput{NextToken: aws.String("garbage")})
	if errCode(err) != "InvalidParameter" || !strings.Contains(err.Error(), "NextToken") {
		t.Errorf("ListTopics NextToken garbage: %v", err)
	}
	// The cleanup loops.
	seen := 0
	var token *string
	for {
		out := must(sc.ListSubscriptionsByTopic(ctx, &sns.ListSubscriptionsByTopicInput{TopicArn: &topic, NextToken: token}))
		for _, s := range out.Subscriptions {
			seen++
			must(sc.Unsubscribe(ctx, &sns.UnsubscribeInput{SubscriptionArn: s.SubscriptionArn}))
		}
		if token = out.NextToken; token == nil {
			break
		}
	}
	if left := must(sc.ListSubscriptions(ctx, &sns.ListSubscriptionsInput{})).Subscriptions; seen != 150 || len(left) != 0 {
		t.Errorf("paging while unsubscribing reached %d of 150 subscriptions; %d left", seen, len(left))
	}
	deleted := 0
	token = nil
	for {
		out := must(sc.ListTopics(ctx, &sns.ListTopicsInput{NextToken: token}))
		for _, tp := range out.Topics {
			deleted++
			must(sc.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: tp.TopicArn}))
		}
		if token = out.NextToken; token == nil {
			break
		}
	}
	if left := must(sc.ListTopics(ctx, &sns.ListTopicsInput{})).Topics; deleted != 102 || len(left) != 0 {
		t.Errorf("paging while deleting reached %d of 102 topics; %d left", deleted, len(left))
	}
}
