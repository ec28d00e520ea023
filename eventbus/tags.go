package eventbus

// Tags of rules and event buses (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-tagging.html,
// API_TagResource, API_UntagResource, API_ListTagsForResource, API_Tag):
// TagResource adds tags or replaces the values of their keys,
// UntagResource removes keys (a key the resource has not is no error),
// ListTagsForResource answers them in key order, PutRule (when it
// creates the rule; on an existing rule its Tags are ignored, as on AWS)
// and CreateEventBus give a new resource its tags.
//
// Limits: at most 50 tags a resource; Key 1..128 characters, Value
// 0..256; a key starting with "aws:" (any case) is reserved to AWS and
// refused, in TagResource and UntagResource alike. Errors: ErrValidation
// naming the member and its range (or the ARN's shape),
// ErrResourceNotFound (no such bus or rule), ErrService (the store not
// answering).
//
// Storage: the KV bucket "runnel_event_tags", one entry a bus (key = bus
// name) holding the bus's tags and its rules', each with the Created time
// of the resource it belongs to: tags left by a deleted bus or rule are
// never shown for a new one of the same name. Every node reads the
// bucket, so tags put through one node are listed by all. A bus's entry
// is deleted when the bus is (by every node's watch of the buses,
// watch.go), a rule's tags when DeleteRuleAndTags deletes it, and tags of
// rules deleted otherwise at the bus's next tag write.

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// Tag is a rule's or event bus's tag (API_Tag): Key 1..128 characters,
// Value 0..256.
type Tag struct {
	Key   string
	Value string
}

const (
	tagBucket = "runnel_event_tags"
	// MaxTags is how many tags a rule or event bus holds at most.
	MaxTags = 50
)

// busTags is a bus's entry of the tags bucket.
type busTags struct {
	// Created is the bus's Created (Unix ms): an entry of an older bus
	// of the name holds no tag of this one.
	Created int64
	Tags    map[string]string    `json:",omitempty"`
	Rules   map[string]*ruleTags `json:",omitempty"`
}

// ruleTags are a rule's tags, with the rule's Created.
type ruleTags struct {
	Created int64
	Tags    map[string]string
}

// errTagsUnchanged: an edit that writes nothing.
var errTagsUnchanged = errors.New("tags unchanged")

// checkTags validates tags given in member (Tags): each Key 1..128
// characters not starting with "aws:", each Value 0..256.
func checkTags(member string, tags []Tag) error {
	for i, t := range tags {
		if n := utf8.RuneCountInString(t.Key); n < 1 || n > 128 {
			return invalid("1 validation error detected: Value at '%s.%d.member.key' failed to satisfy constraint: Member must have length between 1 and 128 (length %d).", member, i+1, n)
		}
		if reservedTagKey(t.Key) {
			return invalid("Invalid tag key %q at '%s.%d.member.key': the aws: prefix is reserved for AWS use.", t.Key, member, i+1)
		}
		if n := utf8.RuneCountInString(t.Value); n > 256 {
			return invalid("1 validation error detected: Value at '%s.%d.member.value' failed to satisfy constraint: Member must have length between 0 and 256 (length %d).", member, i+1, n)
		}
	}
	if len(tags) > MaxTags {
		return invalid("Parameter %s is not valid. Reason: a resource has at most %d tags; %d given.", member, MaxTags, len(tags))
	}
	return nil
}

func reservedTagKey(k string) bool { return strings.HasPrefix(strings.ToLower(k), "aws:") }

var taggableARNRE = regexp.MustCompile(`^arn:aws[a-z\-]*:events:[a-z0-9\-]+:\d{12}:(event-bus|rule)/.+$`)

// taggedResource resolves a bus's or rule's ARN to the bus, the rule
// ("" for the bus) and the resource's Created. Errors: ErrValidation (not
// an event bus's or rule's ARN), ErrResourceNotFound.
func (s *Service) taggedResource(arn string) (bus, rule string, created int64, err error) {
	m := taggableARNRE.FindStringSubmatch(arn)
	if m == nil || len(arn) > 1600 {
		return "", "", 0, invalid("Parameter ResourceARN is not valid. Reason: %q is not the ARN of an event bus (arn:aws:events:<region>:<account>:event-bus/<name>) or a rule (arn:aws:events:<region>:<account>:rule/[<bus>/]<name>), 1..1600 characters.", arn)
	}
	rest := arn[strings.Index(arn, m[1]+"/")+len(m[1])+1:]
	if m[1] == "event-bus" {
		st, err := s.busOf(rest)
		if err != nil || s.ARN(rest) != arn {
			return "", "", 0, notFound("Event bus %s does not exist.", rest)
		}
		return rest, "", st.b.Created, nil
	}
	bus, rule = DefaultBus, rest
	if i := strings.LastIndexByte(rest, '/'); i >= 0 {
		bus, rule = rest[:i], rest[i+1:]
	}
	r, err := s.rule(bus, rule)
	if err != nil || s.RuleARN(bus, rule) != arn {
		return "", "", 0, notFound("Rule %s does not exist on EventBus %s.", rule, bus)
	}
	return bus, rule, r.Created, nil
}

// editTags applies fn to the bus's entry of the tags bucket (a zero one
// when there is none, or when it is an older bus's) and stores it with a
// compare-and-set, trying again when another write came between; fn's
// errTagsUnchanged writes nothing, its other errors abort.
func (s *Service) editTags(ctx context.Context, bus string, busCreated int64, fn func(rec *busTags) error) error {
	kv, err := s.eng.Bucket(ctx, tagBucket)
	if err != nil {
		return awserr.New(awserr.ErrService, "opening the tags: %v", err)
	}
	for try := 0; ; try++ {
		var rec busTags
		var rev uint64
		e, err := kv.Get(ctx, bus)
		switch {
		case err == nil:
			rev = e.Revision()
			if json.Unmarshal(e.Value(), &rec) != nil {
				rec = busTags{}
			}
		case errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted):
		default:
			return awserr.New(awserr.ErrService, "reading the tags of event bus %s: %v", bus, err)
		}
		if rec.Created != busCreated {
			rec = busTags{Created: busCreated}
		}
		s.pruneRuleTags(bus, &rec)
		if err := fn(&rec); errors.Is(err, errTagsUnchanged) {
			return nil
		} else if err != nil {
			return err
		}
		data, _ := json.Marshal(&rec)
		if rev == 0 {
			_, err = kv.Create(ctx, bus, data)
		} else {
			_, err = kv.Update(ctx, bus, data, rev)
		}
		if err == nil {
			return nil
		}
		if try == 4 || ctx.Err() != nil {
			return awserr.New(awserr.ErrService, "storing the tags of event bus %s: %v", bus, err)
		}
	}
}

// pruneRuleTags drops the tags of rules that no longer exist (or were
// made again since).
func (s *Service) pruneRuleTags(bus string, rec *busTags) {
	st, err := s.busOf(bus)
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, rt := range rec.Rules {
		if err != nil || st.b.Rules[name] == nil || st.b.Rules[name].Created != rt.Created {
			delete(rec.Rules, name)
		}
	}
}

// ruleTagsOf returns the tags of a rule (or the bus's when rule is "")
// in rec, created at created.
func ruleTagsOf(rec *busTags, rule string, created int64, create bool) map[string]string {
	if rule == "" {
		if rec.Tags == nil && create {
			rec.Tags = map[string]string{}
		}
		return rec.Tags
	}
	rt := rec.Rules[rule]
	if rt == nil || rt.Created != created {
		if !create {
			return nil
		}
		if rec.Rules == nil {
			rec.Rules = map[string]*ruleTags{}
		}
		rt = &ruleTags{Created: created, Tags: map[string]string{}}
		rec.Rules[rule] = rt
	}
	if rt.Tags == nil && create {
		rt.Tags = map[string]string{}
	}
	return rt.Tags
}

// TagResource adds tags to a rule or event bus, by ARN, replacing the
// values of keys it has (API_TagResource). Errors: ErrValidation (the
// ARN's shape, a Key or Value out of range, an aws: key, more than 50
// tags on the resource), ErrResourceNotFound, ErrService.
func (s *Service) TagResource(ctx context.Context, arn string, tags []Tag) error {
	if err := checkTags("tags", tags); err != nil {
		return err
	}
	bus, rule, created, err := s.taggedResource(arn)
	if err != nil {
		return err
	}
	busCreated, _ := s.busCreated(bus)
	return s.editTags(ctx, bus, busCreated, func(rec *busTags) error {
		have := ruleTagsOf(rec, rule, created, true)
		for _, t := range tags {
			have[t.Key] = t.Value
		}
		if len(have) > MaxTags {
			return invalid("Parameter Tags is not valid. Reason: a resource has at most %d tags; it would have %d.", MaxTags, len(have))
		}
		return nil
	})
}

// UntagResource removes tag keys (each 1..128 characters, not aws:)
// from a rule or event bus, by ARN (API_UntagResource); a key it has not
// is no error. Errors as TagResource's.
func (s *Service) UntagResource(ctx context.Context, arn string, keys []string) error {
	for i, k := range keys {
		if n := utf8.RuneCountInString(k); n < 1 || n > 128 {
			return invalid("1 validation error detected: Value at 'tagKeys.%d.member' failed to satisfy constraint: Member must have length between 1 and 128 (length %d).", i+1, n)
		}
		if reservedTagKey(k) {
			return invalid("Invalid tag key %q at 'tagKeys.%d.member': the aws: prefix is reserved for AWS use.", k, i+1)
		}
	}
	bus, rule, created, err := s.taggedResource(arn)
	if err != nil {
		return err
	}
	busCreated, _ := s.busCreated(bus)
	return s.editTags(ctx, bus, busCreated, func(rec *busTags) error {
		have := ruleTagsOf(rec, rule, created, false)
		n := len(have)
		for _, k := range keys {
			delete(have, k)
		}
		if len(have) == n {
			return errTagsUnchanged
		}
		return nil
	})
}

// ListTagsForResource returns a rule's or event bus's tags, by ARN, in
// key order (an empty list when it has none). Errors: ErrValidation (the
// ARN's shape), ErrResourceNotFound, ErrService.
func (s *Service) ListTagsForResource(ctx context.Context, arn string) ([]Tag, error) {
	bus, rule, created, err := s.taggedResource(arn)
	if err != nil {
		return nil, err
	}
	busCreated, _ := s.busCreated(bus)
	kv, err := s.eng.Bucket(ctx, tagBucket)
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "opening the tags: %v", err)
	}
	out := []Tag{}
	e, err := kv.Get(ctx, bus)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return out, nil
	} else if err != nil {
		return nil, awserr.New(awserr.ErrService, "reading the tags of event bus %s: %v", bus, err)
	}
	var rec busTags
	if json.Unmarshal(e.Value(), &rec) != nil || rec.Created != busCreated {
		return out, nil
	}
	for k, v := range ruleTagsOf(&rec, rule, created, false) {
		out = append(out, Tag{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// busCreated returns a bus's Created (Unix ms).
func (s *Service) busCreated(bus string) (int64, bool) {
	st, err := s.busOf(bus)
	if err != nil {
		return 0, false
	}
	return st.b.Created, true
}

// setTags gives a new rule (or the bus, rule "") exactly tags, dropping
// whatever an older resource of the name left.
func (s *Service) setTags(ctx context.Context, bus, rule string, created int64, tags []Tag) error {
	busCreated, ok := s.busCreated(bus)
	if !ok {
		return notFound("Event bus %s does not exist.", bus)
	}
	return s.editTags(ctx, bus, busCreated, func(rec *busTags) error {
		if rule == "" {
			rec.Tags = nil
		} else if rec.Rules[rule] == nil && len(tags) == 0 {
			return errTagsUnchanged
		} else {
			delete(rec.Rules, rule)
		}
		have := ruleTagsOf(rec, rule, created, true)
		for _, t := range tags {
			have[t.Key] = t.Value
		}
		return nil
	})
}

// PutRuleTagged is PutRule with API_PutRule's Tags (checked first, as
// TagResource's): a rule it creates gets exactly these tags; on an
// existing rule they are ignored ("If you are updating an existing rule,
// any tags you specify in the PutRule operation are ignored",
// API_PutRule). A created rule whose tags could not be stored is deleted
// again and ErrService returned.
func (s *Service) PutRuleTagged(ctx context.Context, r Rule, tags []Tag) (string, error) {
	if err := checkTags("tags", tags); err != nil {
		return "", err
	}
	bus := BusName(r.EventBusName)
	_, err := s.rule(bus, r.Name)
	existed := err == nil
	arn, err := s.PutRule(ctx, r)
	if err != nil || existed {
		return arn, err
	}
	nr, err := s.rule(bus, r.Name)
	if err != nil {
		return arn, nil // deleted meanwhile
	}
	if err := s.setTags(ctx, bus, nr.Name, nr.Created, tags); err != nil {
		if derr := s.DeleteRule(ctx, bus, nr.Name, false); derr != nil {
			s.log.Warn("eventbridge: a rule whose tags were not stored is left without them", "rule", arn, "err", derr)
		}
		return "", err
	}
	return arn, nil
}

// CreateEventBusTagged is CreateEventBus with API_CreateEventBus's Tags
// (checked first, as TagResource's). A bus whose tags could not be stored
// is deleted again and ErrService returned.
func (s *Service) CreateEventBusTagged(ctx context.Context, name, description string, tags []Tag) (*EventBus, error) {
	if err := checkTags("tags", tags); err != nil {
		return nil, err
	}
	b, err := s.CreateEventBus(ctx, name, description)
	if err != nil {
		return nil, err
	}
	if err := s.setTags(ctx, name, "", 0, tags); err != nil {
		if derr := s.DeleteEventBus(ctx, name); derr != nil {
			s.log.Warn("eventbridge: a bus whose tags were not stored is left without them", "bus", name, "err", derr)
		}
		return nil, err
	}
	return b, nil
}

// DeleteRuleAndTags is DeleteRule, then drops the rule's tags.
func (s *Service) DeleteRuleAndTags(ctx context.Context, bus, name string, force bool) error {
	bus = BusName(bus)
	r, rerr := s.rule(bus, name)
	if err := s.DeleteRule(ctx, bus, name, force); err != nil || rerr != nil {
		return err
	}
	busCreated, ok := s.busCreated(bus)
	if !ok {
		return nil
	}
	if err := s.editTags(ctx, bus, busCreated, func(rec *busTags) error {
		if rt := rec.Rules[r.Name]; rt == nil || rt.Created != r.Created {
			return errTagsUnchanged
		}
		delete(rec.Rules, r.Name)
		return nil
	}); err != nil {
		// Not shown for a new rule of the name (its Created differs), and
		// dropped at the bus's next tag write.
		s.log.Warn("eventbridge: a deleted rule's tags were not dropped", "rule", r.Arn, "err", err)
	}
	return nil
}

// dropBusTags deletes a deleted bus's entry of the tags bucket, unless
// the bus was made again meanwhile. Every process's watch of the buses
// calls it for a bus's deletion.
func (s *Service) dropBusTags(ctx context.Context, bus string) {
	kv, err := s.eng.Bucket(ctx, tagBucket)
	if err != nil {
		return
	}
	e, err := kv.Get(ctx, bus)
	if err != nil {
		return // none
	}
	if _, err := s.buses.Get(ctx, bus); !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
		return // made again (its tags are its own), or the store not answering
	}
	err = kv.Delete(ctx, bus, jetstream.LastRevision(e.Revision()))
	if err != nil && ctx.Err() == nil {
		s.log.Debug("eventbridge: a deleted bus's tags not dropped here", "bus", bus, "err", err)
	}
}
