package stream

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"sort"
	"unicode/utf8"

	"github.com/runnel-dev/runnel/awserr"
)

// Tag limits (API_AddTagsToStream, API_Tag, API_ListTagsForStream; Kinesis
// developer guide, tagging.html: "up to 50 tags" per stream).
const (
	MaxTagsPerStream   = 50
	MaxTagKeyLength    = 128
	MaxTagValueLength  = 256
	MaxListTagsResults = 50
)

// Tag is one tag of a stream (API_Tag).
type Tag struct {
	Key   string
	Value string
}

// tagCharsRE: Unicode letters, digits, white space and _ . / = + - % @ :
// (the characters AWS documents for tags).
var tagCharsRE = regexp.MustCompile(`^[\p{L}\p{Z}\p{N}_.:/=+\-@%]*$`)

func validateTags(field string, tags map[string]string) error {
	for k, v := range tags {
		if n := utf8.RuneCountInString(k); n < 1 || n > MaxTagKeyLength {
			return invalidArg("%s: tag key %q must be 1..%d characters", field, k, MaxTagKeyLength)
		}
		if n := utf8.RuneCountInString(v); n > MaxTagValueLength {
			return invalidArg("%s: the value of tag %q must be 0..%d characters", field, k, MaxTagValueLength)
		}
		if !tagCharsRE.MatchString(k) || !tagCharsRE.MatchString(v) {
			return invalidArg("%s: tag %q contains invalid characters. Valid characters: Unicode letters, digits, white space, _ . / = + - %% @ :", field, k)
		}
	}
	if len(tags) > MaxTagsPerStream {
		return invalidArg("%s: %d tags; a stream has at most %d", field, len(tags), MaxTagsPerStream)
	}
	return nil
}

// AddTagsToStream adds or overwrites tags of a stream
// (API_AddTagsToStream): 1..50 tags per call, keys 1..128 and values
// 0..256 characters of Unicode letters, digits, white space and
// _ . / = + - % @ :. A stream holds at most 50 tags: more is
// InvalidArgumentException, as is bad input (naming the field); a missing
// stream is ResourceNotFoundException; a stream that is not ACTIVE (a
// reshard or retention change running) is ResourceInUseException.
func (s *Service) AddTagsToStream(ctx context.Context, streamName string, tags map[string]string) error {
	if err := checkTagsToAdd(tags); err != nil {
		return err
	}
	return s.updateDesc(ctx, streamName, func(d *StreamDescription) error {
		merged, err := mergeTags(d.Tags, tags, "stream", streamName, s.eng.AccountID())
		d.Tags = merged
		return err
	})
}

// checkTagsToAdd checks the Tags of an AddTagsToStream or TagResource
// call: 1..50 valid tags.
func checkTagsToAdd(tags map[string]string) error {
	if len(tags) < 1 {
		return awserr.OutOfRange(awserr.ErrInvalidArgument, "Tags", len(tags), 1, MaxTagsPerStream)
	}
	return validateTags("Tags", tags)
}

// mergeTags returns old with tags added or overwritten, or
// InvalidArgumentException when that is more than MaxTagsPerStream
// (then old unchanged).
func mergeTags(old, tags map[string]string, kind, name, account string) (map[string]string, error) {
	merged := map[string]string{}
	for k, v := range old {
		merged[k] = v
	}
	for k, v := range tags {
		merged[k] = v
	}
	if len(merged) > MaxTagsPerStream {
		return old, invalidArg("Failed to add tags to %s %s under account %s because a given %s cannot have more than %d tags associated with it.", kind, name, account, kind, MaxTagsPerStream)
	}
	return merged, nil
}

// checkTagKeys checks the TagKeys of a RemoveTagsFromStream or
// UntagResource call: 1..50 keys of 1..128 characters.
func checkTagKeys(tagKeys []string) error {
	if len(tagKeys) < 1 || len(tagKeys) > MaxTagsPerStream {
		return awserr.OutOfRange(awserr.ErrInvalidArgument, "TagKeys", len(tagKeys), 1, MaxTagsPerStream)
	}
	for _, k := range tagKeys {
		if n := utf8.RuneCountInString(k); n < 1 || n > MaxTagKeyLength {
			return invalidArg("TagKeys: tag key %q must be 1..%d characters", k, MaxTagKeyLength)
		}
	}
	return nil
}

// RemoveTagsFromStream removes the tags with the given keys (1..50 keys;
// keys the stream does not have are ignored) (API_RemoveTagsFromStream).
// Errors as AddTagsToStream.
func (s *Service) RemoveTagsFromStream(ctx context.Context, streamName string, tagKeys []string) error {
	if err := checkTagKeys(tagKeys); err != nil {
		return err
	}
	return s.updateDesc(ctx, streamName, func(d *StreamDescription) error { return deleteKeys(d.Tags, tagKeys) })
}

// deleteKeys deletes keys from tags.
func deleteKeys(tags map[string]string, keys []string) error {
	for _, k := range keys {
		delete(tags, k)
	}
	return nil
}

// ListTagsForStream returns a stream's tags sorted by key, from after
// exclusiveStartTagKey, at most limit (1..50; 0 means 50), and whether more
// remain (API_ListTagsForStream).
func (s *Service) ListTagsForStream(ctx context.Context, streamName, exclusiveStartTagKey string, limit int) ([]Tag, bool, error) {
	if limit == 0 {
		limit = MaxListTagsResults
	}
	if limit < 1 || limit > MaxListTagsResults {
		return nil, false, awserr.OutOfRange(awserr.ErrInvalidArgument, "Limit", limit, 1, MaxListTagsResults)
	}
	d, err := s.DescribeStream(ctx, streamName)
	if err != nil {
		return nil, false, err
	}
	out := []Tag{}
	for _, t := range sortedTags(d.Tags) {
		if exclusiveStartTagKey != "" && t.Key <= exclusiveStartTagKey {
			continue
		}
		if len(out) == limit {
			return out, true, nil
		}
		out = append(out, t)
	}
	return out, false, nil
}

// sortedTags returns tags as a list sorted by key.
func sortedTags(tags map[string]string) []Tag {
	out := make([]Tag, 0, len(tags))
	for k, v := range tags {
		out = append(out, Tag{Key: k, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// updateDesc applies change to a stream's stored description, again on a
// concurrent update (compare-and-set on the key's revision). A stream
// that is not ACTIVE is ResourceInUseException (active) before change is
// called: AddTagsToStream, RemoveTagsFromStream, the settings and
// UpdateStreamMode list it, "For successful operation, the resource must
// be in the ACTIVE state", and a write between a reshard's rounds would
// break its compare-and-set.
func (s *Service) updateDesc(ctx context.Context, name string, change func(d *StreamDescription) error) error {
	_, _, err := s.changeDesc(ctx, name, change)
	return err
}

// changeDesc is updateDesc, returning the description written and its
// revision.
func (s *Service) changeDesc(ctx context.Context, name string, change func(d *StreamDescription) error) (*StreamDescription, uint64, error) {
	for attempt := 0; ; attempt++ {
		if !streamNameRE.MatchString(name) {
			return nil, 0, notFound(name, s.eng.AccountID())
		}
		e, err := s.meta.Get(ctx, name)
		if err != nil {
			return nil, 0, notFound(name, s.eng.AccountID())
		}
		var d StreamDescription
		if err := json.Unmarshal(e.Value(), &d); err != nil {
			return nil, 0, awserr.New(awserr.ErrService, "stream %s: bad description: %v", name, err)
		}
		if err := s.active(&d); err != nil {
			return nil, 0, err
		}
		if err := change(&d); err != nil {
			return nil, 0, err
		}
		rev, err := s.writeDesc(ctx, &d, e.Revision())
		if err == nil {
			return &d, rev, nil
		}
		if attempt == casRetries || !errors.Is(err, awserr.ErrResourceInUse) || ctx.Err() != nil {
			return nil, 0, err
		}
	}
}
