package sns

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/queue"
)

// Topic attribute names (API_GetTopicAttributes, API_SetTopicAttributes).
const (
	AttrTopicArn                  = "TopicArn"
	AttrOwner                     = "Owner"
	AttrPolicy                    = "Policy"
	AttrDisplayName               = "DisplayName"
	AttrDeliveryPolicy            = "DeliveryPolicy"
	AttrEffectiveDeliveryPolicy   = "EffectiveDeliveryPolicy"
	AttrFifoTopic                 = "FifoTopic"
	AttrContentBasedDeduplication = "ContentBasedDeduplication"
	AttrFifoThroughputScope       = "FifoThroughputScope"
	AttrSignatureVersion          = "SignatureVersion"
	AttrSubscriptionsConfirmed    = "SubscriptionsConfirmed"
	AttrSubscriptionsPending      = "SubscriptionsPending"
	AttrSubscriptionsDeleted      = "SubscriptionsDeleted"
)

// settableTopicAttrs are the attributes CreateTopic and SetTopicAttributes
// take; the others are stored as given and not acted on (KmsMasterKeyId,
// TracingConfig, ArchivePolicy, DataProtectionPolicy).
var settableTopicAttrs = map[string]bool{
	AttrPolicy: true, AttrDisplayName: true, AttrDeliveryPolicy: true, AttrFifoTopic: true,
	AttrContentBasedDeduplication: true, AttrFifoThroughputScope: true, AttrSignatureVersion: true,
	"KmsMasterKeyId": true, "TracingConfig": true, "ArchivePolicy": true, "DataProtectionPolicy": true,
}

// MaxTags is the most tags a topic may have.
const MaxTags = 50

var topicNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

// topicMeta is what "runnel_sns_topics" stores per topic.
type topicMeta struct {
	Name       string            `json:"Name"`
	ID         string            `json:"RunnelID"` // names the internal queue
	FIFO       bool              `json:"FifoTopic"`
	Attributes map[string]string `json:"Attributes"`
	Tags       map[string]string `json:"Tags,omitempty"`
}

// topic is a loaded topic. Its metadata is replaced whole, never changed
// in place, so a reader may keep the pointer meta returns.
type topic struct {
	m    atomic.Pointer[topicMeta]
	c    *counters
	stop func() // stops the worker
}

func newTopic(m topicMeta) *topic {
	t := &topic{c: &counters{}}
	t.m.Store(&m)
	return t
}

// meta is the topic's current metadata (not to be modified).
func (t *topic) meta() *topicMeta { return t.m.Load() }

// queueName is the topic's internal queue.
func (m *topicMeta) queueName() string {
	n := QueuePrefix + m.ID
	if m.FIFO {
		n += ".fifo"
	}
	return n
}

func (m *topicMeta) contentDedup() bool { return m.Attributes[AttrContentBasedDeduplication] == "true" }

// checkTopicAttrs validates attributes for a topic (fifo: of a FIFO topic).
func checkTopicAttrs(attrs map[string]string, fifo bool) error {
	for k, v := range attrs {
		if !settableTopicAttrs[k] {
			return invalid("Attributes Reason: Unknown attribute %s", k)
		}
		switch k {
		case AttrFifoTopic:
			if v != "true" && v != "false" {
				return invalid("Attributes Reason: FifoTopic: true or false, got %q", v)
			}
		case AttrContentBasedDeduplication:
			if v != "true" && v != "false" {
				return invalid("Attributes Reason: ContentBasedDeduplication: true or false, got %q", v)
			}
			if !fifo && v == "true" {
				return invalid("Attributes Reason: Content based deduplication can only be set for FIFO topics")
			}
		case AttrFifoThroughputScope:
			if !fifo {
				return invalid("Attributes Reason: FifoThroughputScope can only be set for FIFO topics")
			}
			if v != "Topic" && v != "MessageGroup" {
				return invalid("Attributes Reason: FifoThroughputScope: Topic or MessageGroup, got %q", v)
			}
		case AttrSignatureVersion:
			if v != "1" && v != "2" {
				return invalid("Attributes Reason: SignatureVersion: 1 or 2, got %q", v)
			}
		case AttrDeliveryPolicy:
			if _, err := parseTopicDeliveryPolicy(v); err != nil {
				return err
			}
		case AttrPolicy:
			if !json.Valid([]byte(v)) {
				return invalid("Attributes Reason: Policy: not a JSON document")
			}
		}
	}
	return nil
}

// CreateTopic creates a topic and returns its ARN (API_CreateTopic). name:
// 1..256 characters of [A-Za-z0-9_-], ending in ".fifo" exactly when
// attributes has FifoTopic "true". attributes: DisplayName, Policy,
// DeliveryPolicy, SignatureVersion (1 or 2), FifoTopic,
// ContentBasedDeduplication and FifoThroughputScope (Topic or
// MessageGroup; FIFO only); KmsMasterKeyId, TracingConfig, ArchivePolicy
// and DataProtectionPolicy are stored only. tags: at most 50. It is
// idempotent by name: an existing topic with the same attributes returns
// its ARN; different attributes are InvalidParameter ("Topic already
// exists with different attributes").
func (s *Service) CreateTopic(ctx context.Context, name string, attributes, tags map[string]string) (string, error) {
	fifo := attributes[AttrFifoTopic] == "true"
	base, isFifoName := strings.CutSuffix(name, ".fifo")
	if !topicNameRE.MatchString(base) || len(name) > 256 {
		return "", invalid("Topic Name")
	}
	if fifo != isFifoName {
		return "", invalid("Topic Name Reason: Fifo Topic names must end with .fifo and Standard Topic cannot end with .fifo")
	}
	if err := checkTopicAttrs(attributes, fifo); err != nil {
		return "", err
	}
	if len(tags) > MaxTags {
		return "", awserr.New(awserr.ErrSNSTagLimitExceeded, "Could not complete request: tag quota of per resource exceeded (%d tags, at most %d)", len(tags), MaxTags)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.topics[name]; t != nil {
		for k, v := range attributes {
			if k != AttrFifoTopic && t.meta().Attributes[k] != v {
				return "", invalid("Attributes Reason: Topic already exists with different attributes")
			}
		}
		return s.TopicARN(name), nil
	}
	m := topicMeta{Name: name, ID: nuid.Next(), FIFO: fifo, Attributes: map[string]string{}, Tags: maps.Clone(tags)}
	for k, v := range attributes {
		if k != AttrFifoTopic {
			m.Attributes[k] = v
		}
	}
	if _, err := s.queues.EnsureQueue(ctx, m.queueName(), internalQueueAttrs(&m)); err != nil {
		return "", awserr.New(awserr.ErrInternal, "create the internal queue of topic %s: %v", name, err)
	}
	rev, err := s.putTopic(ctx, &m)
	if err != nil {
		return "", err
	}
	s.newerLocked("t."+name, rev)
	t := newTopic(m)
	s.topics[name] = t
	s.startWorker(t)
	return s.TopicARN(name), nil
}

// internalQueueRetention is a topic's internal queue's
// MessageRetentionPeriod: SQS's longest, 14 days.
const internalQueueRetention = 14 * 24 * time.Hour

// internalQueueAttrs are the attributes of a topic's internal queue: 14
// days' retention, 1 MiB messages; for a FIFO topic a FIFO queue whose
// deduplication scope follows FifoThroughputScope.
func internalQueueAttrs(m *topicMeta) map[string]string {
	a := map[string]string{queue.AttrMessageRetentionPeriod: strconv.Itoa(int(internalQueueRetention / time.Second)), queue.AttrMaximumMessageSize: "1048576"}
	if m.FIFO {
		a[queue.AttrFifoQueue] = "true"
		if m.Attributes[AttrFifoThroughputScope] == "MessageGroup" { // else SQS's default, queue-wide
			a[queue.AttrDeduplicationScope], a[queue.AttrFifoThroughputLimit] = "messageGroup", "perMessageGroupId"
		}
	}
	return a
}

// putTopic stores m and returns its revision; the caller records it
// (newerLocked) when it sets the topic here.
func (s *Service) putTopic(ctx context.Context, m *topicMeta) (uint64, error) {
	b, _ := json.Marshal(m)
	rev, err := s.topicsKV.Put(ctx, m.Name, b)
	if err != nil {
		return 0, awserr.New(awserr.ErrInternal, "store topic %s: %v", m.Name, err)
	}
	return rev, nil
}

// DeleteTopic deletes a topic, its subscriptions and its undelivered
// messages (API_DeleteTopic). Deleting a topic that does not exist
// succeeds, as in AWS.
func (s *Service) DeleteTopic(ctx context.Context, arn string) error {
	name, err := s.topicName(arn)
	if err != nil {
		return err
	}
	s.mu.Lock()
	t := s.topics[name]
	delete(s.topics, name)
	var subs []string
	for id, sub := range s.subs {
		if sub.meta.TopicName == name {
			subs = append(subs, id)
			delete(s.subs, id)
		}
	}
	s.mu.Unlock()
	if t == nil {
		return nil
	}
	if t.stop != nil {
		t.stop()
	}
	for _, id := range subs {
		if err := s.subsKV.Delete(ctx, id); err != nil {
			return awserr.New(awserr.ErrInternal, "delete subscription %s: %v", id, err)
		}
	}
	// AWS drops a deleted topic's undelivered messages too; runnel says
	// how many (nothing is lost silently): those waiting for a delivery or
	// a retry in the topic's internal queue.
	if a, err := s.queues.GetQueueAttributes(ctx, t.meta().queueName(), []string{queue.AttrAll}); err == nil {
		n := atoiOr0(a[queue.AttrApproximateNumberOfMessages]) + atoiOr0(a[queue.AttrApproximateNumberOfMessagesNotVisible]) + atoiOr0(a[queue.AttrApproximateNumberOfMessagesDelayed])
		if n > 0 {
			s.log.Warn("sns: topic deleted with messages not yet delivered to all its subscriptions; dropped with it, as AWS does",
				"topic", name, "messages", n, "subscriptions", len(subs))
		}
	}
	if err := s.queues.DeleteQueue(ctx, t.meta().queueName()); err != nil && !errors.Is(err, awserr.ErrQueueDoesNotExist) {
		return awserr.New(awserr.ErrInternal, "delete the internal queue of %s: %v", name, err)
	}
	if err := s.topicsKV.Delete(ctx, name); err != nil {
		return awserr.New(awserr.ErrInternal, "delete topic %s: %v", name, err)
	}
	return nil
}

// ListTopics returns the ARNs of every topic, in name order.
func (s *Service) ListTopics() []string {
	s.mu.Lock()
	names := slices.Sorted(maps.Keys(s.topics))
	s.mu.Unlock()
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = s.TopicARN(n)
	}
	return out
}

// GetTopicAttributes returns a topic's attributes (API_GetTopicAttributes):
// those set, and TopicArn, Owner, Policy (a default one), DisplayName,
// SignatureVersion (default 1), EffectiveDeliveryPolicy, the
// subscription counts, and for FIFO topics FifoTopic,
// ContentBasedDeduplication and FifoThroughputScope.
func (s *Service) GetTopicAttributes(arn string) (map[string]string, error) {
	t, err := s.topicByARN(arn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := maps.Clone(t.meta().Attributes)
	a[AttrTopicArn], a[AttrOwner] = arn, s.eng.AccountID()
	if a[AttrPolicy] == "" {
		a[AttrPolicy] = `{"Version":"2008-10-17","Id":"__default_policy_ID","Statement":[{"Sid":"__default_statement_ID","Effect":"Allow","Principal":{"AWS":"*"},"Action":["SNS:Publish","SNS:Subscribe"],"Resource":"` + arn + `"}]}`
	}
	if _, ok := a[AttrDisplayName]; !ok {
		a[AttrDisplayName] = ""
	}
	if a[AttrSignatureVersion] == "" {
		a[AttrSignatureVersion] = "1"
	}
	a[AttrEffectiveDeliveryPolicy] = effectiveDeliveryPolicy(a[AttrDeliveryPolicy])
	confirmed, pending := 0, 0
	for _, sub := range s.subs {
		if sub.meta.TopicName == t.meta().Name {
			if sub.meta.Confirmed {
				confirmed++
			} else {
				pending++
			}
		}
	}
	a[AttrSubscriptionsConfirmed], a[AttrSubscriptionsPending], a[AttrSubscriptionsDeleted] = strconv.Itoa(confirmed), strconv.Itoa(pending), "0"
	if t.meta().FIFO {
		a[AttrFifoTopic] = "true"
		if a[AttrContentBasedDeduplication] == "" {
			a[AttrContentBasedDeduplication] = "false"
		}
		if a[AttrFifoThroughputScope] == "" {
			a[AttrFifoThroughputScope] = "Topic"
		}
	}
	return a, nil
}

// SetTopicAttributes sets one attribute of a topic
// (API_SetTopicAttributes); FifoTopic cannot change. An empty value
// removes an optional attribute.
func (s *Service) SetTopicAttributes(ctx context.Context, arn, name, value string) error {
	t, err := s.topicByARN(arn)
	if err != nil {
		return err
	}
	if name == AttrFifoTopic {
		return invalid("AttributeName Reason: FifoTopic cannot be changed")
	}
	if value != "" || name == AttrDisplayName {
		if err := checkTopicAttrs(map[string]string{name: value}, t.meta().FIFO); err != nil {
			return err
		}
	} else if !settableTopicAttrs[name] {
		return invalid("AttributeName")
	}
	return s.updateTopic(ctx, t, func(m *topicMeta) error {
		m.Attributes = maps.Clone(m.Attributes)
		if value == "" && name != AttrDisplayName {
			delete(m.Attributes, name)
		} else {
			m.Attributes[name] = value
		}
		if name != AttrFifoThroughputScope {
			return nil
		}
		qa := map[string]string{queue.AttrDeduplicationScope: "queue", queue.AttrFifoThroughputLimit: "perQueue"}
		if value == "MessageGroup" {
			qa[queue.AttrDeduplicationScope], qa[queue.AttrFifoThroughputLimit] = "messageGroup", "perMessageGroupId"
		}
		if err := s.queues.SetQueueAttributes(ctx, m.queueName(), qa); err != nil {
			return awserr.New(awserr.ErrInternal, "set the deduplication scope of %s: %v", m.Name, err)
		}
		return nil
	})
}

// updateTopic applies change to a copy of t's metadata, stores it and
// makes it t's.
func (s *Service) updateTopic(ctx context.Context, t *topic, change func(m *topicMeta) error) error {
	s.mu.Lock()
	m := *t.meta()
	s.mu.Unlock()
	if err := change(&m); err != nil {
		return err
	}
	rev, err := s.putTopic(ctx, &m)
	if err != nil {
		return err
	}
	s.mu.Lock()
	if s.newerLocked("t."+m.Name, rev) {
		t.m.Store(&m)
	}
	s.mu.Unlock()
	return nil
}

// TagResource adds or overwrites tags of a topic (API_TagResource): at
// most 50 in all (TagLimitExceeded); an unknown topic is ResourceNotFound.
func (s *Service) TagResource(ctx context.Context, arn string, tags map[string]string) error {
	return s.retag(ctx, arn, func(m map[string]string) error {
		maps.Copy(m, tags)
		if len(m) > MaxTags {
			return awserr.New(awserr.ErrSNSTagLimitExceeded, "Could not complete request: tag quota of per resource exceeded (%d tags, at most %d)", len(m), MaxTags)
		}
		return nil
	})
}

// UntagResource removes tags of a topic by key (API_UntagResource).
func (s *Service) UntagResource(ctx context.Context, arn string, keys []string) error {
	return s.retag(ctx, arn, func(m map[string]string) error {
		for _, k := range keys {
			delete(m, k)
		}
		return nil
	})
}

// ListTagsForResource returns a topic's tags (API_ListTagsForResource).
func (s *Service) ListTagsForResource(arn string) (map[string]string, error) {
	t, err := s.tagged(arn)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(t.meta().Tags), nil
}

func (s *Service) tagged(arn string) (*topic, error) {
	t, err := s.topicByARN(arn)
	if errors.Is(err, awserr.ErrSNSNotFound) {
		return nil, awserr.New(awserr.ErrSNSResourceNotFound, "Resource does not exist")
	}
	return t, err
}

func (s *Service) retag(ctx context.Context, arn string, change func(map[string]string) error) error {
	t, err := s.tagged(arn)
	if err != nil {
		return err
	}
	return s.updateTopic(ctx, t, func(m *topicMeta) error {
		m.Tags = maps.Clone(m.Tags)
		if m.Tags == nil {
			m.Tags = map[string]string{}
		}
		return change(m.Tags)
	})
}

func atoiOr0(v string) int {
	n, _ := strconv.Atoi(v)
	return n
}
