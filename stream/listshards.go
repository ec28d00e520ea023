package stream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// ShardFilter types (API_ShardFilter.Type).
const (
	AfterShardID    = "AFTER_SHARD_ID"
	AtTrimHorizon   = "AT_TRIM_HORIZON"
	FromTrimHorizon = "FROM_TRIM_HORIZON"
	AtLatest        = "AT_LATEST"
	FilterAtTime    = "AT_TIMESTAMP"
	FromTimestamp   = "FROM_TIMESTAMP"
)

// ListShards limits (API_ListShards).
const (
	// DefaultListShardsResults is MaxResults when not given, and the most
	// shards one call returns.
	DefaultListShardsResults = 1000
	// MaxListShardsResults is the largest MaxResults accepted.
	MaxListShardsResults = 10000
	// NextTokenLifetime is how long a ListShards NextToken stays valid.
	NextTokenLifetime = 300 * time.Second
)

// ErrExpiredNextToken is the error of a ListShards NextToken older than
// NextTokenLifetime (awserr.ErrExpiredNextToken).
var ErrExpiredNextToken = awserr.ErrExpiredNextToken

// ShardFilter selects the shards ListShardsPage returns (API_ShardFilter).
// Start and end times of a shard are when it was created and closed.
type ShardFilter struct {
	// Type is required: AFTER_SHARD_ID (the shards after ShardId),
	// AT_TRIM_HORIZON (the shards open at the trim horizon),
	// FROM_TRIM_HORIZON (every shard within the retention period, the
	// default), AT_LATEST (the open shards), AT_TIMESTAMP (the shards
	// started at or before Timestamp and ended at or after it, or still
	// open), FROM_TIMESTAMP (the closed shards ended at or after Timestamp,
	// clamped to the trim horizon, and every open shard).
	Type string
	// ShardID is required with AFTER_SHARD_ID and refused otherwise.
	ShardID string
	// Timestamp is required with AT_TIMESTAMP and FROM_TIMESTAMP and
	// refused otherwise.
	Timestamp time.Time
}

// ListShardsInput is the input of ListShardsPage (API_ListShards). Either
// StreamName or NextToken is given, not both.
type ListShardsInput struct {
	StreamName string
	// NextToken continues a listing; it may not come with StreamName,
	// ExclusiveStartShardID, StreamCreationTimestamp or ShardFilter.
	NextToken string
	// ExclusiveStartShardID lists the shards after this one.
	ExclusiveStartShardID string
	// StreamCreationTimestamp, when set, must be the stream's.
	StreamCreationTimestamp time.Time
	// MaxResults: 1..10000, default 1000; a page holds at most 1000.
	MaxResults int
	// ShardFilter: nil means FROM_TRIM_HORIZON.
	ShardFilter *ShardFilter
}

// ListShardsOutput is a page of shards in ShardId order; NextToken is
// empty on the last page.
type ListShardsOutput struct {
	Shards    []Shard
	NextToken string
}

// listToken is the decoded NextToken.
type listToken struct {
	Stream string       `json:"s"`
	ID     string       `json:"i"`
	After  string       `json:"a"`
	Filter *ShardFilter `json:"f,omitempty"`
	Max    int          `json:"m"`
	Issued int64        `json:"t"`
}

// nextTokenConflict is the first parameter given with NextToken that may
// not come with it, "" for none: Kinesis refuses each in its own words,
// "NextToken and StreamName cannot be provided together." (likewise
// ExclusiveStartShardId, StreamCreationTimestamp, ShardFilter; quoted in
// erlcloud#595, amazon-kinesis-scaling-utils#82, apache/beam#33478).
func nextTokenConflict(in ListShardsInput) string {
	switch {
	case in.StreamName != "":
		return "StreamName"
	case in.ExclusiveStartShardID != "":
		return "ExclusiveStartShardId"
	case !in.StreamCreationTimestamp.IsZero():
		return "StreamCreationTimestamp"
	case in.ShardFilter != nil:
		return "ShardFilter"
	}
	return ""
}

// ListShardsPage lists a stream's shards with ShardFilter and paging
// (API_ListShards). Errors: InvalidArgumentException naming the field
// (NextToken with another parameter that names the stream or the start:
// "NextToken and <parameter> cannot be provided together."),
// ResourceNotFoundException, ExpiredNextTokenException.
func (s *Service) ListShardsPage(ctx context.Context, in ListShardsInput) (*ListShardsOutput, error) {
	now := s.eng.Clock.Now()
	tok := listToken{Stream: in.StreamName, After: in.ExclusiveStartShardID, Filter: in.ShardFilter, Max: in.MaxResults}
	if in.NextToken != "" {
		if other := nextTokenConflict(in); other != "" {
			return nil, invalidArg("NextToken and %s cannot be provided together.", other)
		}
		raw, err := base64.RawURLEncoding.DecodeString(in.NextToken)
		if err == nil {
			tok = listToken{}
			err = json.Unmarshal(raw, &tok)
		}
		if err != nil || tok.Stream == "" {
			return nil, invalidArg("NextToken: not a valid ListShards NextToken")
		}
		if now.Sub(time.UnixMilli(tok.Issued)) > NextTokenLifetime {
			return nil, awserr.New(ErrExpiredNextToken, "The timestamp of the last NextToken (%s) is older than the allowed duration of 300 seconds.", time.UnixMilli(tok.Issued).UTC().Format(time.RFC3339))
		}
		if in.MaxResults != 0 {
			tok.Max = in.MaxResults
		}
	} else if in.StreamName == "" {
		return nil, invalidArg("StreamName: either StreamName (or StreamARN) or NextToken is required")
	}
	if tok.Max == 0 {
		tok.Max = DefaultListShardsResults
	}
	if tok.Max < 1 || tok.Max > MaxListShardsResults {
		return nil, awserr.OutOfRange(awserr.ErrInvalidArgument, "MaxResults", tok.Max, 1, MaxListShardsResults)
	}
	if err := validateFilter(tok.Filter); err != nil {
		return nil, err
	}
	d, err := s.DescribeStream(ctx, tok.Stream)
	if err != nil {
		return nil, err
	}
	if tok.ID != "" && tok.ID != d.ID {
		return nil, awserr.New(awserr.ErrResourceNotFound, "NextToken: stream %s was deleted", tok.Stream)
	}
	if !in.StreamCreationTimestamp.IsZero() && in.StreamCreationTimestamp.UnixMilli() != d.StreamCreationTimestamp.UnixMilli() {
		return nil, notFound(tok.Stream, s.eng.AccountID())
	}
	shards := FilterShards(d, tok.Filter, now)
	out := &ListShardsOutput{Shards: []Shard{}}
	for _, sh := range shards {
		if tok.After != "" && !idAfter(sh.ShardID, tok.After) {
			continue
		}
		if len(out.Shards) == min(tok.Max, DefaultListShardsResults) {
			tok.ID, tok.After, tok.Issued = d.ID, out.Shards[len(out.Shards)-1].ShardID, now.UnixMilli()
			b, _ := json.Marshal(tok)
			out.NextToken = base64.RawURLEncoding.EncodeToString(b)
			break
		}
		out.Shards = append(out.Shards, sh)
	}
	return out, nil
}

// idAfter reports whether shard id a comes after b (ids compare by index;
// a malformed b compares as text).
func idAfter(a, b string) bool {
	ia, err1 := ShardIndex(a)
	ib, err2 := ShardIndex(b)
	if err1 != nil || err2 != nil {
		return a > b
	}
	return ia > ib
}

func validateFilter(f *ShardFilter) error {
	if f == nil {
		return nil
	}
	switch f.Type {
	case AfterShardID:
		if f.ShardID == "" {
			return invalidArg("ShardFilter.ShardId: required with ShardFilter.Type AFTER_SHARD_ID")
		}
	case AtTrimHorizon, FromTrimHorizon, AtLatest, FilterAtTime, FromTimestamp:
		if f.ShardID != "" {
			return invalidArg("ShardFilter.ShardId: only allowed with ShardFilter.Type AFTER_SHARD_ID, not %s", f.Type)
		}
	default:
		return invalidArg("ShardFilter.Type: %q must be one of AFTER_SHARD_ID, AT_TRIM_HORIZON, FROM_TRIM_HORIZON, AT_LATEST, AT_TIMESTAMP, FROM_TIMESTAMP", f.Type)
	}
	timed := f.Type == FilterAtTime || f.Type == FromTimestamp
	if timed && f.Timestamp.IsZero() {
		return invalidArg("ShardFilter.Timestamp: required with ShardFilter.Type %s", f.Type)
	}
	if !timed && !f.Timestamp.IsZero() {
		return invalidArg("ShardFilter.Timestamp: only allowed with ShardFilter.Type AT_TIMESTAMP or FROM_TIMESTAMP, not %s", f.Type)
	}
	return nil
}

// FilterShards returns the shards of d that filter selects at time now,
// in ShardId order (see ShardFilter; nil is FROM_TRIM_HORIZON). A closed
// shard whose close is older than the retention period holds no record
// any more: it is expired and never returned.
func FilterShards(d *StreamDescription, f *ShardFilter, now time.Time) []Shard {
	trim := now.Add(-time.Duration(d.RetentionPeriodHours) * time.Hour).UnixMilli()
	created := d.StreamCreationTimestamp.UnixMilli()
	start := func(sh *Shard) int64 {
		if sh.CreatedMs == 0 {
			return created
		}
		return sh.CreatedMs
	}
	// at: open at time t (started at or before it, not closed before it).
	at := func(sh *Shard, t int64) bool { return start(sh) <= t && (sh.Open() || sh.ClosedMs >= t) }
	typ := FromTrimHorizon
	if f != nil {
		typ = f.Type
	}
	var out []Shard
	for i := range d.Shards {
		sh := &d.Shards[i]
		if !sh.Open() && sh.ClosedMs < trim {
			continue // expired
		}
		keep := true
		switch typ {
		case AfterShardID:
			keep = idAfter(sh.ShardID, f.ShardID)
		case AtTrimHorizon:
			keep = at(sh, max(trim, created))
		case AtLatest:
			keep = sh.Open()
		case FilterAtTime:
			keep = at(sh, f.Timestamp.UnixMilli())
		case FromTimestamp:
			keep = sh.Open() || sh.ClosedMs >= max(f.Timestamp.UnixMilli(), trim)
		}
		if keep {
			out = append(out, *sh)
		}
	}
	sortByID(out)
	return out
}

func sortByID(shards []Shard) {
	for i := 1; i < len(shards); i++ {
		for j := i; j > 0 && idAfter(shards[j-1].ShardID, shards[j].ShardID); j-- {
			shards[j-1], shards[j] = shards[j], shards[j-1]
		}
	}
}
