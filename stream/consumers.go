package stream

// Enhanced fan-out consumers (RegisterStreamConsumer,
// DescribeStreamConsumer, ListStreamConsumers, DeregisterStreamConsumer;
// https://docs.aws.amazon.com/streams/latest/dev/enhanced-consumers.html,
// https://docs.aws.amazon.com/kinesis/latest/APIReference/API_RegisterStreamConsumer.html).
// A stream's consumers are one JSON value in the key-value bucket
// "runnel_stream_consumers" under the stream's id, changed by
// compare-and-set on its revision, so the limits (20 a stream, 5 CREATING)
// hold across processes and a re-created stream starts with none.
//
// Statuses follow the engine clock: a consumer is CREATING for
// ConsumerStatusDelay after it is registered, then ACTIVE; a deregistered
// one is DELETING for ConsumerStatusDelay, then gone. AWS documents no
// figure for either; runnel takes kinesis-mock's default (500 ms, its
// CREATE_STREAM_CONSUMER_DURATION and DELETE_STREAM_CONSUMER_DURATION),
// so a client that waits for ACTIVE, as the KCL does, is exercised
// without slowing anyone down.

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
)

const consumersBucket = "runnel_stream_consumers"

// Consumer limits (API_RegisterStreamConsumer, API_ListStreamConsumers;
// Kinesis quotas, service-sizes-and-limits.html).
const (
	// MaxConsumersPerStream is how many consumers a stream may have
	// registered (DELETING ones count until they are gone).
	MaxConsumersPerStream = 20
	// MaxCreatingConsumers is how many of a stream's consumers may be
	// CREATING at once: "You can register up to 5 consumers per stream
	// in CREATING state at a time".
	MaxCreatingConsumers = 5
	// DefaultListConsumersResults is ListStreamConsumers' MaxResults when
	// not given, and the most consumers one call returns.
	DefaultListConsumersResults = 100
	// MaxListConsumersResults is the largest MaxResults accepted.
	MaxListConsumersResults = 10000
	// ConsumerStatusDelay is how long a consumer stays CREATING after
	// RegisterStreamConsumer, and DELETING after DeregisterStreamConsumer,
	// on the engine clock.
	ConsumerStatusDelay = 500 * time.Millisecond
)

// Consumer statuses (API_Consumer.ConsumerStatus).
const (
	ConsumerCreating = "CREATING"
	ConsumerActive   = "ACTIVE"
	ConsumerDeleting = "DELETING"
)

var consumerNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// consumerARNRE: arn:aws:kinesis:<region>:<account>:stream/<stream>/consumer/<name>:<creation epoch s>.
var consumerARNRE = regexp.MustCompile(`^arn:aws:kinesis:[^:]*:[^:]*:stream/([a-zA-Z0-9_.-]{1,128})/consumer/([a-zA-Z0-9_.-]{1,128}):([0-9]+)$`)

// Consumer is a registered enhanced fan-out consumer
// (API_ConsumerDescription).
type Consumer struct {
	ConsumerName string
	ConsumerARN  string
	// ConsumerStatus is CREATING, ACTIVE or DELETING, by the engine clock.
	ConsumerStatus            string
	ConsumerCreationTimestamp time.Time
	StreamARN                 string
	// StreamName is the stream's name (not part of the AWS shape).
	StreamName string `json:"-"`
	// ID names the consumer's subscription leases (not part of the AWS
	// shape).
	ID   string `json:"-"`
	tags map[string]string
}

// storedConsumer is a consumer as the bucket holds it.
type storedConsumer struct {
	Name       string            `json:"n"`
	ID         string            `json:"i"`
	CreatedMs  int64             `json:"c"`
	DeletingMs int64             `json:"d,omitempty"`
	Tags       map[string]string `json:"t,omitempty"`
}

type storedConsumers struct {
	Consumers []storedConsumer `json:"c"`
}

// gone reports whether a deregistered consumer has finished DELETING:
// ConsumerStatusDelay after DeregisterStreamConsumer, and not within the
// second it was created in. The trap: a consumer ARN carries its creation
// time in whole seconds, so a name registered again within that second
// would get the old consumer's ARN, and a client holding the old ARN
// would reach the new consumer; AWS gives every registration a new ARN.
func (c storedConsumer) gone(now time.Time) bool {
	return c.DeletingMs != 0 && now.UnixMilli() >= c.DeletingMs+ConsumerStatusDelay.Milliseconds() &&
		now.Unix() > time.UnixMilli(c.CreatedMs).Unix()
}

func (c storedConsumer) status(now time.Time) string {
	switch {
	case c.DeletingMs != 0:
		return ConsumerDeleting
	case now.UnixMilli() < c.CreatedMs+ConsumerStatusDelay.Milliseconds():
		return ConsumerCreating
	}
	return ConsumerActive
}

// ConsumerARN returns a consumer's ARN:
// arn:aws:kinesis:<region>:<account>:stream/<stream>/consumer/<name>:<creation epoch seconds>.
func (s *Service) ConsumerARN(streamName, consumerName string, created time.Time) string {
	return fmt.Sprintf("%s/consumer/%s:%d", s.ARN(streamName), consumerName, created.Unix())
}

// ParseConsumerARN returns the stream name, consumer name and creation
// time (epoch seconds) of a consumer ARN, or false.
func ParseConsumerARN(arn string) (streamName, consumerName string, created int64, ok bool) {
	m := consumerARNRE.FindStringSubmatch(arn)
	if m == nil {
		return "", "", 0, false
	}
	created, err := strconv.ParseInt(m[3], 10, 64)
	return m[1], m[2], created, err == nil
}

// SourceOfARN returns the stream that a stream ARN or a consumer ARN
// names, and for a consumer ARN the ARN itself: the consumer an event
// source mapping reads through (ReadShardOptions.ConsumerARN).
func SourceOfARN(arn string) (streamName, consumerARN string, ok bool) {
	if n, ok := NameFromARN(arn); ok {
		return n, "", true
	}
	if n, _, _, ok := ParseConsumerARN(arn); ok {
		return n, arn, true
	}
	return "", "", false
}

func (s *Service) consumerOut(d *StreamDescription, c storedConsumer, now time.Time) Consumer {
	created := time.UnixMilli(c.CreatedMs).UTC()
	return Consumer{ConsumerName: c.Name, ConsumerARN: s.ConsumerARN(d.StreamName, c.Name, created), ConsumerStatus: c.status(now),
		ConsumerCreationTimestamp: created, StreamARN: d.StreamARN, StreamName: d.StreamName, ID: c.ID, tags: c.Tags}
}

// loadConsumers returns a stream's stored consumers, without the gone
// ones, and the key's revision (0: no key yet).
func (s *Service) loadConsumers(ctx context.Context, d *StreamDescription, now time.Time) ([]storedConsumer, uint64, error) {
	if s.consumers == nil {
		return nil, 0, awserr.New(awserr.ErrInvalidArgument, "stream %s has no consumers: these streams are internal logs", d.StreamName)
	}
	e, err := s.consumers.Get(ctx, d.ID)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, 0, nil
	}
	if err != nil {
		return nil, 0, awserr.New(awserr.ErrService, "consumers of %s: %v", d.StreamName, err)
	}
	var sc storedConsumers
	if err := json.Unmarshal(e.Value(), &sc); err != nil {
		return nil, 0, awserr.New(awserr.ErrService, "consumers of %s: %v", d.StreamName, err)
	}
	live := slices.DeleteFunc(sc.Consumers, func(c storedConsumer) bool { return c.gone(now) })
	return live, e.Revision(), nil
}

// changeConsumers applies change to a stream's consumers by
// compare-and-set, again on a concurrent change.
func (s *Service) changeConsumers(ctx context.Context, d *StreamDescription, change func(cs []storedConsumer, now time.Time) ([]storedConsumer, error)) error {
	for attempt := 0; ; attempt++ {
		now := s.eng.Clock.Now()
		cs, rev, err := s.loadConsumers(ctx, d, now)
		if err != nil {
			return err
		}
		if cs, err = change(cs, now); err != nil {
			return err
		}
		b, _ := json.Marshal(storedConsumers{Consumers: cs})
		if rev == 0 {
			_, err = s.consumers.Create(ctx, d.ID, b)
		} else {
			_, err = s.consumers.Update(ctx, d.ID, b, rev)
		}
		if err == nil {
			return nil
		}
		if attempt == casRetries || ctx.Err() != nil {
			return awserr.New(awserr.ErrResourceInUse, "consumers of stream %s changed concurrently: %v", d.StreamName, err)
		}
	}
}

// RegisterStreamConsumer registers a consumer of a stream
// (API_RegisterStreamConsumer): ConsumerName 1..128 characters of
// [a-zA-Z0-9_.-], unique among the stream's consumers. The consumer is
// CREATING, then ACTIVE after ConsumerStatusDelay. Errors:
// InvalidArgumentException (the name), ResourceNotFoundException (the
// stream), ResourceInUseException (a consumer of that name exists, also
// while it is DELETING), LimitExceededException (20 consumers, or 5
// CREATING). Tags (up to 50, as AddTagsToStream takes them) are the
// consumer's (TagConsumer).
func (s *Service) RegisterStreamConsumer(ctx context.Context, streamName, consumerName string, tags map[string]string) (*Consumer, error) {
	if !consumerNameRE.MatchString(consumerName) {
		return nil, invalidArg("ConsumerName: %q must be 1..128 characters of [a-zA-Z0-9_.-]", consumerName)
	}
	if err := validateTags("Tags", tags); err != nil {
		return nil, err
	}
	d, err := s.DescribeStream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	var out Consumer
	err = s.changeConsumers(ctx, d, func(cs []storedConsumer, now time.Time) ([]storedConsumer, error) {
		creating := 0
		for _, c := range cs {
			if c.Name == consumerName {
				return nil, awserr.New(awserr.ErrResourceInUse, "Consumer %s under stream %s already exists for account %s.", consumerName, streamName, s.eng.AccountID())
			}
			if c.status(now) == ConsumerCreating {
				creating++
			}
		}
		if len(cs) >= MaxConsumersPerStream {
			return nil, awserr.New(awserr.ErrLimitExceeded, "Stream %s under account %s already has %d registered consumers, the maximum.", streamName, s.eng.AccountID(), len(cs))
		}
		if creating >= MaxCreatingConsumers {
			return nil, awserr.New(awserr.ErrLimitExceeded, "Stream %s under account %s has %d consumers in CREATING state; at most %d may be at a time.", streamName, s.eng.AccountID(), creating, MaxCreatingConsumers)
		}
		c := storedConsumer{Name: consumerName, ID: nuid.Next(), CreatedMs: now.UnixMilli(), Tags: tags}
		out = s.consumerOut(d, c, now)
		return append(cs, c), nil
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// ConsumerRef names a consumer: by ConsumerARN, or by StreamName (or a
// stream ARN resolved to it) and ConsumerName.
type ConsumerRef struct {
	ConsumerARN  string
	StreamName   string
	ConsumerName string
}

// DescribeStreamConsumer returns a consumer (API_DescribeStreamConsumer).
// An ARN whose creation time is not the consumer's (an earlier
// registration of the name) is ResourceNotFoundException, as a name no
// consumer has.
func (s *Service) DescribeStreamConsumer(ctx context.Context, ref ConsumerRef) (*Consumer, error) {
	var created int64 = -1
	if ref.ConsumerARN != "" {
		var ok bool
		if ref.StreamName, ref.ConsumerName, created, ok = ParseConsumerARN(ref.ConsumerARN); !ok {
			return nil, invalidArg("ConsumerARN: %q is not a consumer ARN (arn:aws:kinesis:<region>:<account>:stream/<stream>/consumer/<name>:<creation timestamp>)", ref.ConsumerARN)
		}
	} else if ref.StreamName == "" || ref.ConsumerName == "" {
		return nil, invalidArg("Either ConsumerARN or both StreamARN and ConsumerName must be provided.")
	}
	d, err := s.DescribeStream(ctx, ref.StreamName)
	if err != nil {
		return nil, err
	}
	now := s.eng.Clock.Now()
	cs, _, err := s.loadConsumers(ctx, d, now)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		if c.Name == ref.ConsumerName && (created < 0 || time.UnixMilli(c.CreatedMs).Unix() == created) {
			out := s.consumerOut(d, c, now)
			return &out, nil
		}
	}
	return nil, awserr.New(awserr.ErrResourceNotFound, "Consumer %s under stream %s not found for account %s.", ref.ConsumerName, ref.StreamName, s.eng.AccountID())
}

// DeregisterStreamConsumer deregisters a consumer
// (API_DeregisterStreamConsumer): it is DELETING for ConsumerStatusDelay,
// and at least until the second it was registered in has ended (so that
// its name registered again gets a new ARN), then gone, and its subscriptions end at once. Deregistering a DELETING
// consumer again changes nothing.
func (s *Service) DeregisterStreamConsumer(ctx context.Context, ref ConsumerRef) error {
	c, err := s.DescribeStreamConsumer(ctx, ref)
	if err != nil {
		return err
	}
	d, err := s.DescribeStream(ctx, c.StreamName)
	if err != nil {
		return err
	}
	err = s.changeConsumers(ctx, d, func(cs []storedConsumer, now time.Time) ([]storedConsumer, error) {
		for i := range cs {
			if cs[i].ID == c.ID && cs[i].DeletingMs == 0 {
				cs[i].DeletingMs = now.UnixMilli()
			}
		}
		return cs, nil
	})
	if err != nil {
		return err
	}
	// End the consumer's subscriptions: each watches its lease.
	for _, sh := range d.Shards {
		_ = s.consumers.Delete(ctx, leaseKey(c.ID, sh.ShardID))
	}
	return nil
}

// changeConsumer applies change to the consumer consumerARN names.
func (s *Service) changeConsumer(ctx context.Context, consumerARN string, change func(c *storedConsumer) error) error {
	c, err := s.DescribeStreamConsumer(ctx, ConsumerRef{ConsumerARN: consumerARN})
	if err != nil {
		return err
	}
	d, err := s.DescribeStream(ctx, c.StreamName)
	if err != nil {
		return err
	}
	return s.changeConsumers(ctx, d, func(cs []storedConsumer, now time.Time) ([]storedConsumer, error) {
		for i := range cs {
			if cs[i].ID == c.ID {
				return cs, change(&cs[i])
			}
		}
		return nil, awserr.New(awserr.ErrResourceNotFound, "Consumer %s not found.", consumerARN)
	})
}

// TagConsumer adds or overwrites tags of a consumer (API_TagResource with
// a consumer ARN), under AddTagsToStream's rules.
func (s *Service) TagConsumer(ctx context.Context, consumerARN string, tags map[string]string) error {
	if err := checkTagsToAdd(tags); err != nil {
		return err
	}
	return s.changeConsumer(ctx, consumerARN, func(c *storedConsumer) error {
		var err error
		c.Tags, err = mergeTags(c.Tags, tags, "consumer", consumerARN, s.eng.AccountID())
		return err
	})
}

// UntagConsumer removes tags of a consumer by key (API_UntagResource).
func (s *Service) UntagConsumer(ctx context.Context, consumerARN string, tagKeys []string) error {
	if err := checkTagKeys(tagKeys); err != nil {
		return err
	}
	return s.changeConsumer(ctx, consumerARN, func(c *storedConsumer) error { return deleteKeys(c.Tags, tagKeys) })
}

// ConsumerTags returns a consumer's tags sorted by key
// (API_ListTagsForResource).
func (s *Service) ConsumerTags(ctx context.Context, consumerARN string) ([]Tag, error) {
	c, err := s.DescribeStreamConsumer(ctx, ConsumerRef{ConsumerARN: consumerARN})
	if err != nil {
		return nil, err
	}
	return sortedTags(c.tags), nil
}

// ListStreamConsumersOutput is a page of ListStreamConsumers.
type ListStreamConsumersOutput struct {
	Consumers []Consumer
	// NextToken continues the listing (valid NextTokenLifetime); empty
	// after the last page.
	NextToken string
}

type consumersToken struct {
	Stream string `json:"s"`
	ID     string `json:"i"`
	After  int64  `json:"a"` // creation ms of the last consumer returned
	Name   string `json:"n"`
	Issued int64  `json:"t"`
}

// ListStreamConsumers lists a stream's consumers in registration order,
// at most maxResults (1..10000, 0 means 100; a page holds at most 100),
// from nextToken on (API_ListStreamConsumers). streamCreation, when not
// zero, must be the stream's creation time. Errors:
// InvalidArgumentException, ResourceNotFoundException,
// ExpiredNextTokenException (a token older than 300 s).
func (s *Service) ListStreamConsumers(ctx context.Context, streamName, nextToken string, maxResults int, streamCreation time.Time) (*ListStreamConsumersOutput, error) {
	if maxResults == 0 {
		maxResults = DefaultListConsumersResults
	}
	if maxResults < 1 || maxResults > MaxListConsumersResults {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "MaxResults", maxResults, 1, MaxListConsumersResults)
	}
	now := s.eng.Clock.Now()
	var tok consumersToken
	if nextToken != "" {
		raw, err := base64.RawURLEncoding.DecodeString(nextToken)
		if err == nil {
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil || tok.Stream != streamName {
			return nil, invalidArg("NextToken: not a valid ListStreamConsumers NextToken for stream %s", streamName)
		}
		if now.Sub(time.UnixMilli(tok.Issued)) > NextTokenLifetime {
			return nil, awserr.New(ErrExpiredNextToken, "The timestamp of the last NextToken (%s) is older than the allowed duration of 300 seconds.", time.UnixMilli(tok.Issued).UTC().Format(time.RFC3339))
		}
	}
	d, err := s.DescribeStream(ctx, streamName)
	if err != nil {
		return nil, err
	}
	if (tok.ID != "" && tok.ID != d.ID) || (!streamCreation.IsZero() && streamCreation.UnixMilli() != d.StreamCreationTimestamp.UnixMilli()) {
		return nil, notFound(streamName, s.eng.AccountID())
	}
	cs, _, err := s.loadConsumers(ctx, d, now)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(cs, func(a, b storedConsumer) int {
		return cmp.Or(cmp.Compare(a.CreatedMs, b.CreatedMs), cmp.Compare(a.Name, b.Name))
	})
	out := &ListStreamConsumersOutput{Consumers: []Consumer{}}
	for _, c := range cs {
		if tok.Issued != 0 && (c.CreatedMs < tok.After || (c.CreatedMs == tok.After && c.Name <= tok.Name)) {
			continue
		}
		if len(out.Consumers) == min(maxResults, DefaultListConsumersResults) {
			last := out.Consumers[len(out.Consumers)-1]
			b, _ := json.Marshal(consumersToken{Stream: streamName, ID: d.ID, After: last.ConsumerCreationTimestamp.UnixMilli(), Name: last.ConsumerName, Issued: now.UnixMilli()})
			out.NextToken = base64.RawURLEncoding.EncodeToString(b)
			break
		}
		out.Consumers = append(out.Consumers, s.consumerOut(d, c, now))
	}
	return out, nil
}

// ConsumerCount is the number of a stream's registered consumers
// (DescribeStreamSummary's ConsumerCount).
func (s *Service) ConsumerCount(ctx context.Context, d *StreamDescription) (int, error) {
	cs, _, err := s.loadConsumers(ctx, d, s.eng.Clock.Now())
	return len(cs), err
}

// deleteConsumers drops a deleted stream's consumers and their leases
// (their subscriptions end).
func (s *Service) deleteConsumers(ctx context.Context, d *StreamDescription) error {
	if s.consumers == nil {
		return nil
	}
	cs, _, err := s.loadConsumers(ctx, d, s.eng.Clock.Now())
	if err != nil {
		return err
	}
	for _, c := range cs {
		for _, sh := range d.Shards {
			_ = s.consumers.Purge(ctx, leaseKey(c.ID, sh.ShardID))
		}
	}
	if err := s.consumers.Purge(ctx, d.ID); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return awserr.New(awserr.ErrService, "delete consumers of %s: %v", d.StreamName, err)
	}
	return nil
}
