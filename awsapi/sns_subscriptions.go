package awsapi

// SNS (query protocol, XML): subscriptions. sqs, lambda, http/https
// (confirmed by the handshake: ConfirmSubscription, also reachable as the
// GET SubscribeURL) and application endpoints (recorded, never
// delivered); email, sms and firehose are refused.

import (
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/sns"
)

type snsSubscribeInput struct {
	TopicArn, Protocol, Endpoint string
	Attributes                   map[string]string
	ReturnSubscriptionArn        bool
}

func (in *snsSubscribeInput) readForm(f *qform) {
	in.TopicArn, in.Protocol, in.Endpoint = f.get("TopicArn"), f.get("Protocol"), f.get("Endpoint")
	in.Attributes = snsEntries(f, "Attributes", "key", "value")
	in.ReturnSubscriptionArn = f.get("ReturnSubscriptionArn") == "true"
}

type snsSubscriptionArnResult struct{ SubscriptionArn string }

func subscriptionArn(arn string) snsSubscriptionArnResult { return snsSubscriptionArnResult{arn} }

func snsSubscribe(rq *request, in *snsSubscribeInput) (any, error) {
	return answer(subscriptionArn)(rq.h.rn.SNS.Subscribe(rq.ctx, sns.SubscribeInput{TopicArn: in.TopicArn, Protocol: in.Protocol,
		Endpoint: in.Endpoint, Attributes: in.Attributes, ReturnSubscriptionArn: in.ReturnSubscriptionArn}))
}

type snsConfirmInput struct{ TopicArn, Token string }

func (in *snsConfirmInput) readForm(f *qform) {
	in.TopicArn, in.Token = f.get("TopicArn"), f.get("Token")
}

func snsConfirmSubscription(rq *request, in *snsConfirmInput) (any, error) {
	return answer(subscriptionArn)(rq.h.rn.SNS.ConfirmSubscription(rq.ctx, in.TopicArn, in.Token))
}

type snsSubscriptionInput struct{ SubscriptionArn string }

func (in *snsSubscriptionInput) readForm(f *qform) { in.SubscriptionArn = f.get("SubscriptionArn") }

func snsUnsubscribe(rq *request, in *snsSubscriptionInput) (any, error) {
	return nil, rq.h.rn.SNS.Unsubscribe(rq.ctx, in.SubscriptionArn)
}

type snsListSubscriptionsResult struct {
	Subscriptions []sns.Subscription `xml:"Subscriptions>member"`
	NextToken     string             `xml:",omitempty" json:",omitempty"`
}

func snsListSubscriptions(rq *request, in *snsListInput) (any, error) {
	in.TopicArn = "" // ListSubscriptions takes no topic
	return snsListSubs(rq, in)
}

func snsListSubs(rq *request, in *snsListInput) (any, error) {
	all, err := rq.h.rn.SNS.ListSubscriptions(in.TopicArn)
	if err != nil {
		return nil, err
	}
	page, next, err := snsPage(all, in.NextToken, "subscriptions", sns.SubscriptionSortKey)
	if err != nil {
		return nil, err
	}
	return snsListSubscriptionsResult{Subscriptions: page, NextToken: next}, nil
}

func snsListSubscriptionsByTopic(rq *request, in *snsListInput) (any, error) {
	if in.TopicArn == "" {
		return nil, awserr.New(awserr.ErrSNSInvalidParameter, "Invalid parameter: TopicArn")
	}
	return snsListSubs(rq, in)
}

func snsGetSubscriptionAttributes(rq *request, in *snsSubscriptionInput) (any, error) {
	a, err := rq.h.rn.SNS.GetSubscriptionAttributes(in.SubscriptionArn)
	if err != nil {
		return nil, err
	}
	return snsAttributesResult{a}, nil
}

func snsSetSubscriptionAttributes(rq *request, in *snsSetAttributeInput) (any, error) {
	return nil, rq.h.rn.SNS.SetSubscriptionAttributes(rq.ctx, in.SubscriptionArn, in.AttributeName, in.AttributeValue)
}
