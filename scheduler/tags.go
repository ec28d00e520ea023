package scheduler

// Tags of schedule groups: TagResource, UntagResource,
// ListTagsForResource, and CreateScheduleGroup's Tags. Scheduler tags
// schedule groups only, never schedules ("You can only assign tags to
// schedule groups", API_TagResource.html). The tags are stored in the
// group's entry of the bucket runnel_schedule_groups, so they survive a
// restart and every node reads them.
//
// AWS: https://docs.aws.amazon.com/scheduler/latest/APIReference/API_TagResource.html,
// API_UntagResource.html, API_ListTagsForResource.html, API_Tag.html
// (Key 1..128 characters, Value 1..256), at most 200 tags or keys a
// request (the model's list bounds), at most 50 tags a group (AWS's
// tagging limit for a resource, docs.aws.amazon.com/general/latest/gr/aws_tagging.html,
// to which managing-schedule-group.html refers).

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// Tag is a schedule group's tag (API_Tag): Key 1..128 characters, Value
// 1..256 (Scheduler's Value has a minimum of 1, unlike EventBridge's).
type Tag struct {
	Key   string
	Value string
}

const (
	// MaxTags is how many tags a schedule group holds at most.
	MaxTags = 50
	// maxTagsPerRequest bounds the Tags and TagKeys of one request (the
	// model's list length, 0..200).
	maxTagsPerRequest = 200
)

// groupARNRE is API_TagResource's ResourceArn pattern (1..1011
// characters): a schedule group's ARN, never a schedule's.
var groupARNRE = regexp.MustCompile(`^arn:aws(-[a-z]+)?:scheduler:[a-z0-9\-]+:\d{12}:schedule-group/([0-9a-zA-Z\-_.]+)$`)

// checkTags validates the Tags of a request: at most 200, each Key 1..128 characters and Value
// 1..256. Errors: ErrValidation naming the member and its range.
func checkTags(tags []Tag) error {
	if len(tags) > maxTagsPerRequest {
		return invalid("Tags: %d tags, the range is 0..%d a request.", len(tags), maxTagsPerRequest)
	}
	for i, t := range tags {
		if n := utf8.RuneCountInString(t.Key); n < 1 || n > 128 {
			return invalid("Tags.%d.Key: length %d is out of the range 1..128.", i+1, n)
		}
		if n := utf8.RuneCountInString(t.Value); n < 1 || n > 256 {
			return invalid("Tags.%d.Value: length %d is out of the range 1..256.", i+1, n)
		}
	}
	return nil
}

// tagMap merges tags into m (a later tag of a key replaces an earlier
// one) and refuses a result of more than MaxTags.
func tagMap(m map[string]string, tags []Tag) (map[string]string, error) {
	if m == nil && len(tags) > 0 {
		m = map[string]string{}
	}
	for _, t := range tags {
		m[t.Key] = t.Value
	}
	if len(m) > MaxTags {
		return nil, invalid("Tags: a schedule group has at most %d tags; this request would leave it %d.", MaxTags, len(m))
	}
	return m, nil
}

// groupOfARN returns the group an ARN names. Errors: ErrValidation for
// an ARN that is not a schedule group's (a schedule's among them);
// ErrResourceNotFound for a group of another account or Region, or one
// that does not exist (checked by the caller).
func (s *Service) groupOfARN(arn string) (string, error) {
	m := groupARNRE.FindStringSubmatch(arn)
	if m == nil || len(arn) > 1011 || len(m[2]) > 64 {
		return "", invalid("ResourceArn: %q is not the ARN of a schedule group (arn:aws:scheduler:<region>:<account>:schedule-group/<name>, 1..1011 characters); only schedule groups have tags.", arn)
	}
	if arn != s.arn("schedule-group", m[2]) {
		return "", awserr.New(awserr.ErrResourceNotFound, "Schedule group %s does not exist.", m[2])
	}
	return m[2], nil
}

// updateGroup applies change to the stored group name with a
// compare-and-set, again when another writer came first. Errors:
// ErrResourceNotFound (no such group), change's.
func (s *Service) updateGroup(ctx context.Context, name string, change func(*ScheduleGroup) error) error {
	for range 10 {
		e, err := s.groups.Get(ctx, name)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return awserr.New(awserr.ErrResourceNotFound, "Schedule group %s does not exist.", name)
		}
		if err != nil {
			return awserr.New(awserr.ErrService, "reading schedule group %s: %v", name, err)
		}
		var g ScheduleGroup
		if err := json.Unmarshal(e.Value(), &g); err != nil {
			return awserr.New(awserr.ErrService, "reading schedule group %s: %v", name, err)
		}
		if err := change(&g); err != nil {
			return err
		}
		data, _ := json.Marshal(g)
		_, err = s.groups.Update(ctx, name, data, e.Revision())
		var apiErr *jetstream.APIError
		if errors.As(err, &apiErr) && apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence {
			continue // changed meanwhile: read it again
		}
		if err != nil {
			return awserr.New(awserr.ErrService, "storing schedule group %s: %v", name, err)
		}
		return nil
	}
	return awserr.New(awserr.ErrConflict, "Schedule group %s changed during the request; try again.", name)
}

// TagResource adds tags to the schedule group arn names, replacing the
// value of a key it has. Errors: ErrValidation (an ARN that is not a
// schedule group's; Tags out of range; more than MaxTags on the group
// after the change), ErrResourceNotFound (no such group).
func (s *Service) TagResource(ctx context.Context, arn string, tags []Tag) error {
	name, err := s.groupOfARN(arn)
	if err != nil {
		return err
	}
	if err := checkTags(tags); err != nil {
		return err
	}
	return s.updateGroup(ctx, name, func(g *ScheduleGroup) error {
		m, err := tagMap(g.Tags, tags)
		g.Tags = m
		return err
	})
}

// UntagResource removes the tags of keys (1..128 characters each, at
// most 200) from the schedule group arn names; a key it does not have is
// no error. Errors: ErrValidation, ErrResourceNotFound.
func (s *Service) UntagResource(ctx context.Context, arn string, keys []string) error {
	name, err := s.groupOfARN(arn)
	if err != nil {
		return err
	}
	if len(keys) > maxTagsPerRequest {
		return invalid("TagKeys: %d keys, the range is 0..%d a request.", len(keys), maxTagsPerRequest)
	}
	for i, k := range keys {
		if n := utf8.RuneCountInString(k); n < 1 || n > 128 {
			return invalid("TagKeys.%d: length %d is out of the range 1..128.", i+1, n)
		}
	}
	return s.updateGroup(ctx, name, func(g *ScheduleGroup) error {
		for _, k := range keys {
			delete(g.Tags, k)
		}
		if len(g.Tags) == 0 {
			g.Tags = nil
		}
		return nil
	})
}

// ListTagsForResource returns the tags of the schedule group arn names,
// in key order (empty, not nil, when it has none). Errors: ErrValidation,
// ErrResourceNotFound.
func (s *Service) ListTagsForResource(ctx context.Context, arn string) ([]Tag, error) {
	name, err := s.groupOfARN(arn)
	if err != nil {
		return nil, err
	}
	g, err := s.GetScheduleGroup(ctx, name)
	if err != nil {
		return nil, err
	}
	out := make([]Tag, 0, len(g.Tags))
	for k, v := range g.Tags {
		out = append(out, Tag{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// newGroupTags is CreateScheduleGroup's Tags as stored (nil for none).
func newGroupTags(tags []Tag) (map[string]string, error) {
	if err := checkTags(tags); err != nil {
		return nil, err
	}
	return tagMap(nil, tags)
}
