package sns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"maps"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// Subscription protocols runnel delivers to (application endpoints are
// recorded and counted as failed deliveries: runnel has no push
// platforms).
const (
	ProtocolSQS         = "sqs"
	ProtocolLambda      = "lambda"
	ProtocolHTTP        = "http"
	ProtocolHTTPS       = "https"
	ProtocolApplication = "application"
)

// Subscription attribute names (API_SetSubscriptionAttributes).
const (
	AttrRawMessageDelivery  = "RawMessageDelivery"
	AttrFilterPolicy        = "FilterPolicy"
	AttrFilterPolicyScope   = "FilterPolicyScope"
	AttrRedrivePolicy       = "RedrivePolicy"
	AttrSubscriptionRoleArn = "SubscriptionRoleArn"
	AttrReplayPolicy        = "ReplayPolicy"
)

// PendingConfirmation is the SubscriptionArn of a subscription that waits
// for its confirmation.
const PendingConfirmation = "pending confirmation"

// TokenValidity is how long a confirmation token is valid: 2 days.
const TokenValidity = 48 * time.Hour

// subMeta is what "runnel_sns_subscriptions" stores per subscription.
type subMeta struct {
	ID        string `json:"Id"`
	TopicName string `json:"TopicName"`
	Protocol  string `json:"Protocol"`
	Endpoint  string `json:"Endpoint"`
	Confirmed bool   `json:"Confirmed"`
	// ConfirmedAt (Unix ms, engine clock): messages published before it
	// are not delivered to the subscription.
	ConfirmedAt int64             `json:"ConfirmedAt"`
	Token       string            `json:"Token,omitempty"`
	TokenUntil  int64             `json:"TokenUntil,omitempty"` // Unix ms
	Attributes  map[string]string `json:"Attributes"`
}

// subscription is a loaded subscription with its compiled policies.
type subscription struct {
	meta     subMeta
	filter   *filterPolicy
	dlq      string // dead-letter queue name, "" for none
	retry    *httpRetryPolicy
	request  *requestPolicy
	throttle *throttlePolicy
}

func (sub *subscription) arn(s *Service) string {
	return s.TopicARN(sub.meta.TopicName) + ":" + sub.meta.ID
}

func (sub *subscription) raw() bool { return sub.meta.Attributes[AttrRawMessageDelivery] == "true" }

// newSubscription compiles m's attributes.
func newSubscription(m subMeta) (*subscription, error) {
	sub := &subscription{meta: m}
	var err error
	a := m.Attributes
	if sub.filter, err = compileFilterPolicy(a[AttrFilterPolicy], a[AttrFilterPolicyScope]); err != nil {
		return nil, err
	}
	if p := a[AttrRedrivePolicy]; p != "" {
		var rp struct{ DeadLetterTargetArn string }
		if json.Unmarshal([]byte(p), &rp) != nil {
			return nil, invalid("RedrivePolicy: Redrive policy is not a valid JSON")
		}
		name, ok := queue.NameFromARN(rp.DeadLetterTargetArn)
		if !ok {
			return nil, invalid("RedrivePolicy: deadLetterTargetArn is an invalid arn")
		}
		sub.dlq = name
	}
	if p := a[AttrDeliveryPolicy]; p != "" {
		var dp subDeliveryPolicy
		if err := decodePolicy(p, &dp); err != nil {
			return nil, err
		}
		sub.retry, sub.request, sub.throttle = dp.HealthyRetryPolicy, dp.RequestPolicy, dp.ThrottlePolicy
	}
	return sub, nil
}

// checkSubAttrs validates attributes for a subscription of protocol to a
// topic (fifo: a FIFO topic).
func checkSubAttrs(attrs map[string]string, protocol string, fifo bool) error {
	for k, v := range attrs {
		switch k {
		case AttrRawMessageDelivery:
			if v != "true" && v != "false" {
				return invalid("Attributes Reason: RawMessageDelivery: true or false, got %q", v)
			}
			if v == "true" && protocol != ProtocolSQS && protocol != ProtocolHTTP && protocol != ProtocolHTTPS {
				return invalid("Attributes Reason: Delivery protocol [%s] does not support raw message delivery.", protocol)
			}
		case AttrDeliveryPolicy:
			if protocol != ProtocolHTTP && protocol != ProtocolHTTPS {
				return invalid("Attributes Reason: DeliveryPolicy: Delivery protocol [%s] does not support delivery policies.", protocol)
			}
		case AttrRedrivePolicy:
			if v == "" {
				continue
			}
			var rp map[string]any
			if json.Unmarshal([]byte(v), &rp) != nil {
				return invalid("RedrivePolicy: Redrive policy is not a valid JSON")
			}
			arn, _ := rp["deadLetterTargetArn"].(string)
			if _, ok := queue.NameFromARN(arn); !ok {
				return invalid("RedrivePolicy: deadLetterTargetArn is an invalid arn")
			}
			if fifo && !strings.HasSuffix(arn, ".fifo") {
				return invalid("RedrivePolicy: must use a FIFO queue as DLQ for a FIFO Subscription to a FIFO Topic.")
			}
			// "FIFO topic subscriptions use FIFO queues, and standard
			// topic subscriptions use standard queues"
			// (sns-dead-letter-queues.html), as for their endpoints.
			if !fifo && strings.HasSuffix(arn, ".fifo") {
				return invalid("RedrivePolicy: must use a standard queue as DLQ for a Subscription to a standard Topic, got the FIFO queue %s.", arn)
			}
		case AttrFilterPolicyScope:
			if v != "" && v != ScopeMessageAttributes && v != ScopeMessageBody {
				return invalid("Attributes Reason: FilterPolicyScope: Invalid value [%s]. Please use either MessageBody or MessageAttributes", v)
			}
		case AttrFilterPolicy, AttrSubscriptionRoleArn, AttrReplayPolicy:
		default:
			return invalid("Attributes Reason: Unknown attribute %s", k)
		}
	}
	_, err := newSubscription(subMeta{Protocol: protocol, Attributes: attrs})
	return err
}

// SubscribeInput is the input of Subscribe (API_Subscribe).
type SubscribeInput struct {
	TopicArn string
	// Protocol: sqs (Endpoint a queue ARN), lambda (a function ARN),
	// http/https (a URL of that scheme; confirmed by the handshake),
	// application (a platform endpoint ARN; recorded only). FIFO topics
	// take sqs only.
	Protocol, Endpoint string
	// Attributes: RawMessageDelivery, FilterPolicy, FilterPolicyScope,
	// RedrivePolicy, DeliveryPolicy (http/https), SubscriptionRoleArn.
	Attributes map[string]string
	// ReturnSubscriptionArn returns the ARN even while the subscription
	// waits for its confirmation.
	ReturnSubscriptionArn bool
}

// Subscribe subscribes an endpoint to a topic and returns the
// subscription's ARN, or "pending confirmation" for an http/https
// endpoint (API_Subscribe), which is sent a SubscriptionConfirmation
// message with the token ConfirmSubscription takes (valid 2 days).
// Subscribing the same endpoint again returns the existing subscription
// (InvalidParameter if the given attributes differ from its own).
func (s *Service) Subscribe(ctx context.Context, in SubscribeInput) (string, error) {
	t, err := s.topicByARN(in.TopicArn)
	if err != nil {
		return "", err
	}
	if err := s.checkEndpoint(t.meta().FIFO, in.Protocol, in.Endpoint); err != nil {
		return "", err
	}
	if v, ok := in.Attributes[AttrFilterPolicy]; ok && isEmptyFilterPolicy(v) {
		in.Attributes = maps.Clone(in.Attributes)
		in.Attributes[AttrFilterPolicy] = "" // no policy: not stored, not counted
	}
	if err := checkSubAttrs(in.Attributes, in.Protocol, t.meta().FIFO); err != nil {
		return "", err
	}
	s.mu.Lock()
	for _, sub := range s.subs {
		if sub.meta.TopicName == t.meta().Name && sub.meta.Protocol == in.Protocol && sub.meta.Endpoint == in.Endpoint {
			for k, v := range in.Attributes {
				if sub.meta.Attributes[k] != v {
					s.mu.Unlock()
					return "", invalid("Attributes Reason: Subscription already exists with different attributes")
				}
			}
			arn := sub.arn(s)
			if !sub.meta.Confirmed && !in.ReturnSubscriptionArn {
				arn = PendingConfirmation
			}
			s.mu.Unlock()
			return arn, nil
		}
	}
	if in.Attributes[AttrFilterPolicy] != "" && s.policiesLocked(t.meta().Name) >= MaxFilterPoliciesPerTopic {
		s.mu.Unlock()
		return "", awserr.New(awserr.ErrSNSFilterPolicyLimitExceeded, "Filter policy limit exceeded (%d per topic)", MaxFilterPoliciesPerTopic)
	}
	s.mu.Unlock()
	m := subMeta{ID: uuid.NewString(), TopicName: t.meta().Name, Protocol: in.Protocol, Endpoint: in.Endpoint,
		Confirmed: true, ConfirmedAt: s.eng.Clock.Now().UnixMilli(), Attributes: maps.Clone(in.Attributes)}
	if m.Attributes == nil {
		m.Attributes = map[string]string{}
	}
	if m.Attributes[AttrFilterPolicy] == "" {
		delete(m.Attributes, AttrFilterPolicy)
	}
	web := in.Protocol == ProtocolHTTP || in.Protocol == ProtocolHTTPS
	if web {
		tok := make([]byte, 64)
		rand.Read(tok)
		m.Confirmed, m.Token = false, hex.EncodeToString(tok)
		m.TokenUntil = s.eng.Clock.Now().Add(TokenValidity).UnixMilli()
	}
	sub, err := s.putSub(ctx, m)
	if err != nil {
		return "", err
	}
	if web {
		s.sendConfirmation(*t.meta(), sub)
		if !in.ReturnSubscriptionArn {
			return PendingConfirmation, nil
		}
	}
	return sub.arn(s), nil
}

// policiesLocked counts the filter policies of a topic's subscriptions.
func (s *Service) policiesLocked(topicName string) int {
	n := 0
	for _, sub := range s.subs {
		if sub.meta.TopicName == topicName && sub.filter != nil {
			n++
		}
	}
	return n
}

// checkEndpoint checks a protocol and endpoint for a topic.
func (s *Service) checkEndpoint(fifo bool, protocol, endpoint string) error {
	if fifo && protocol != ProtocolSQS {
		return invalid("Invalid protocol type: %s", protocol)
	}
	switch protocol {
	case ProtocolSQS:
		name, ok := queue.NameFromARN(endpoint)
		if !ok {
			return invalid("SQS endpoint ARN")
		}
		if !fifo && strings.HasSuffix(name, ".fifo") {
			return invalid("Invalid parameter: Endpoint Reason: FIFO SQS Queues can not be subscribed to standard SNS topics")
		}
	case ProtocolLambda:
		if _, ok := functionRef(endpoint); !ok {
			return invalid("Lambda endpoint ARN")
		}
	case ProtocolHTTP, ProtocolHTTPS:
		u, err := url.Parse(endpoint)
		if err != nil || u.Scheme != protocol || u.Host == "" {
			return invalid("Endpoint Reason: An endpoint URL of scheme %s is required, got %q", protocol, endpoint)
		}
	case ProtocolApplication:
		if !strings.HasPrefix(endpoint, "arn:aws:sns:") {
			return invalid("Endpoint Reason: An application endpoint ARN is required, got %q", endpoint)
		}
	case "":
		return invalid("Protocol")
	default:
		return invalid("Protocol Reason: runnel does not deliver to %s endpoints (sqs, lambda, http, https, application)", protocol)
	}
	return nil
}

// functionRef is what a Lambda function ARN
// (arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>])
// invokes: the name, or name:qualifier for a version or an alias, so that
// a subscription to fn:1 or fn:prod runs that version or alias, not
// $LATEST.
func functionRef(arn string) (string, bool) {
	p := strings.Split(arn, ":")
	if len(p) < 7 || len(p) > 8 || p[0] != "arn" || p[2] != "lambda" || p[5] != "function" || p[6] == "" {
		return "", false
	}
	if len(p) == 8 {
		if p[7] == "" {
			return "", false
		}
		return p[6] + ":" + p[7], true
	}
	return p[6], true
}

// putSub stores m and loads it.
func (s *Service) putSub(ctx context.Context, m subMeta) (*subscription, error) {
	sub, err := newSubscription(m)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(m)
	rev, err := s.subsKV.Put(ctx, m.ID, b)
	if err != nil {
		return nil, awserr.New(awserr.ErrInternal, "store subscription %s: %v", m.ID, err)
	}
	s.mu.Lock()
	if s.newerLocked("s."+m.ID, rev) {
		s.subs[m.ID] = sub
	}
	s.mu.Unlock()
	return sub, nil
}

// ConfirmSubscription confirms an http/https subscription by the token
// it was sent (API_ConfirmSubscription) and returns its ARN. An unknown
// or expired token is InvalidParameter ("Invalid token").
func (s *Service) ConfirmSubscription(ctx context.Context, topicArn, token string) (string, error) {
	t, err := s.topicByARN(topicArn)
	if err != nil {
		return "", err
	}
	now := s.eng.Clock.Now().UnixMilli()
	s.mu.Lock()
	var found *subscription
	for _, sub := range s.subs {
		if sub.meta.TopicName == t.meta().Name && sub.meta.Token == token && token != "" {
			found = sub
		}
	}
	s.mu.Unlock()
	if found == nil || (!found.meta.Confirmed && now > found.meta.TokenUntil) {
		return "", invalid("Token")
	}
	if !found.meta.Confirmed {
		m := found.meta
		m.Confirmed, m.ConfirmedAt = true, now
		if found, err = s.putSub(ctx, m); err != nil {
			return "", err
		}
	}
	return found.arn(s), nil
}

// subByARN returns the subscription of arn, or NotFound.
func (s *Service) subByARN(arn string) (*subscription, error) {
	i := strings.LastIndexByte(arn, ':')
	if i < 0 || !strings.HasPrefix(arn, "arn:aws:sns:") {
		return nil, invalid("SubscriptionArn")
	}
	s.mu.Lock()
	sub := s.subs[arn[i+1:]]
	s.mu.Unlock()
	if sub == nil || sub.arn(s) != arn {
		return nil, notFound("Subscription")
	}
	return sub, nil
}

// Unsubscribe deletes a subscription (API_Unsubscribe); an http/https
// endpoint is then sent an UnsubscribeConfirmation (once, best effort:
// sendUnsubscribeConfirmation). Errors: InvalidParameter (not a
// subscription ARN), NotFound.
func (s *Service) Unsubscribe(ctx context.Context, arn string) error {
	sub, err := s.subByARN(arn)
	if err != nil {
		return err
	}
	if err := s.subsKV.Delete(ctx, sub.meta.ID); err != nil {
		return awserr.New(awserr.ErrInternal, "delete subscription %s: %v", sub.meta.ID, err)
	}
	s.mu.Lock()
	delete(s.subs, sub.meta.ID)
	t := s.topics[sub.meta.TopicName]
	var meta topicMeta
	if t != nil {
		meta = *t.meta()
	}
	s.mu.Unlock()
	s.throttles.Delete(sub.meta.ID)
	if t != nil && (sub.meta.Protocol == ProtocolHTTP || sub.meta.Protocol == ProtocolHTTPS) {
		s.sendUnsubscribeConfirmation(meta, sub)
	}
	return nil
}

// Subscription is an entry of ListSubscriptions (API_Subscription).
type Subscription struct {
	SubscriptionArn, Owner, Protocol, Endpoint, TopicArn string
}

// SubscriptionSortKey is the key ListSubscriptions sorts by: topic ARN,
// protocol, endpoint, unique as Subscribe subscribes an endpoint to a
// topic once; a page token of ListSubscriptions resumes after it.
func SubscriptionSortKey(sub Subscription) string {
	return sub.TopicArn + "\x00" + sub.Protocol + "\x00" + sub.Endpoint
}

// ListSubscriptions returns the subscriptions of one topic (topicArn not
// empty: NotFound if it does not exist) or of all, by topic then
// protocol and endpoint. A pending subscription's ARN is
// "PendingConfirmation".
func (s *Service) ListSubscriptions(topicArn string) ([]Subscription, error) {
	name := ""
	if topicArn != "" {
		t, err := s.topicByARN(topicArn)
		if err != nil {
			return nil, err
		}
		name = t.meta().Name
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Subscription
	for _, sub := range s.subs {
		if name != "" && sub.meta.TopicName != name {
			continue
		}
		arn := sub.arn(s)
		if !sub.meta.Confirmed {
			arn = "PendingConfirmation"
		}
		out = append(out, Subscription{SubscriptionArn: arn, Owner: s.eng.AccountID(), Protocol: sub.meta.Protocol,
			Endpoint: sub.meta.Endpoint, TopicArn: s.TopicARN(sub.meta.TopicName)})
	}
	slices.SortFunc(out, func(a, b Subscription) int { return strings.Compare(SubscriptionSortKey(a), SubscriptionSortKey(b)) })
	return out, nil
}

// GetSubscriptionAttributes returns a subscription's attributes
// (API_GetSubscriptionAttributes): those set, and SubscriptionArn,
// TopicArn, Owner, Protocol, Endpoint, PendingConfirmation,
// ConfirmationWasAuthenticated, RawMessageDelivery (default false),
// FilterPolicyScope when there is a FilterPolicy, and for http/https
// EffectiveDeliveryPolicy.
func (s *Service) GetSubscriptionAttributes(arn string) (map[string]string, error) {
	sub, err := s.subByARN(arn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m := sub.meta
	a := maps.Clone(m.Attributes)
	a["SubscriptionArn"], a[AttrTopicArn], a[AttrOwner] = arn, s.TopicARN(m.TopicName), s.eng.AccountID()
	a["Protocol"], a["Endpoint"] = m.Protocol, m.Endpoint
	a["PendingConfirmation"], a["ConfirmationWasAuthenticated"] = boolStr(!m.Confirmed), "true"
	a["SubscriptionPrincipal"] = "arn:aws:iam::" + s.eng.AccountID() + ":root"
	if a[AttrRawMessageDelivery] == "" {
		a[AttrRawMessageDelivery] = "false"
	}
	if a[AttrFilterPolicy] != "" && a[AttrFilterPolicyScope] == "" {
		a[AttrFilterPolicyScope] = ScopeMessageAttributes
	}
	if m.Protocol == ProtocolHTTP || m.Protocol == ProtocolHTTPS {
		var topicPolicy string
		if t := s.topics[m.TopicName]; t != nil {
			topicPolicy = t.meta().Attributes[AttrDeliveryPolicy]
		}
		a[AttrEffectiveDeliveryPolicy] = effectiveSubPolicy(topicPolicy, sub)
	}
	return a, nil
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// SetSubscriptionAttributes sets one attribute of a subscription
// (API_SetSubscriptionAttributes): RawMessageDelivery, FilterPolicy,
// FilterPolicyScope, RedrivePolicy, DeliveryPolicy,
// SubscriptionRoleArn. An empty value removes it, and so does a
// FilterPolicy of {} (an empty JSON object).
func (s *Service) SetSubscriptionAttributes(ctx context.Context, arn, name, value string) error {
	sub, err := s.subByARN(arn)
	if err != nil {
		return err
	}
	if name == AttrFilterPolicy && isEmptyFilterPolicy(value) {
		value = "" // removes the policy
	}
	s.mu.Lock()
	m := sub.meta
	fifo := s.topics[m.TopicName] != nil && s.topics[m.TopicName].meta().FIFO
	over := name == AttrFilterPolicy && value != "" && sub.filter == nil && s.policiesLocked(m.TopicName) >= MaxFilterPoliciesPerTopic
	s.mu.Unlock()
	if over {
		return awserr.New(awserr.ErrSNSFilterPolicyLimitExceeded, "Filter policy limit exceeded (%d per topic)", MaxFilterPoliciesPerTopic)
	}
	m.Attributes = maps.Clone(m.Attributes)
	if value == "" {
		delete(m.Attributes, name)
	} else {
		m.Attributes[name] = value
	}
	// The attributes as they will be, checked together: a FilterPolicy
	// is read under the stored FilterPolicyScope (a nested policy after
	// FilterPolicyScope MessageBody, the flow AWS documents), and the
	// other way round.
	if err := checkSubAttrs(m.Attributes, m.Protocol, fifo); err != nil {
		return err
	}
	_, err = s.putSub(ctx, m)
	return err
}
