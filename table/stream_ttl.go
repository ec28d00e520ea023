package table

// UpdateTable's StreamSpecification, and a table's time to live
// (UpdateTimeToLive, DescribeTimeToLive).

import (
	"context"
	"time"

	"github.com/runnel-dev/runnel/lease"
)

// UpdateStream turns the table's change stream on (with a view type) or
// off (UpdateTable's StreamSpecification). Turning it on gives the stream
// a new label and ARN; changes written while it is off belong to no
// stream. Errors: ValidationException if the stream is already in the
// asked state, as DynamoDB.
func (s *Service) UpdateStream(ctx context.Context, name string, spec StreamSpecification) (*TableDescription, error) {
	return s.UpdateTable(ctx, name, UpdateTableInput{StreamSpecification: &spec})
}

// streamApplied is st with its stream turned on or off at now
// (UpdateTable).
func streamApplied(st stored, spec StreamSpecification, now time.Time) (stored, error) {
	on := st.StreamSpecification != nil && st.StreamSpecification.StreamEnabled
	switch {
	case spec.StreamEnabled && on:
		return st, validation("Table already has an enabled stream: %s", st.LatestStreamArn)
	case !spec.StreamEnabled && !on:
		return st, validation("Table already has no enabled stream: %s", st.TableName)
	case spec.StreamEnabled:
		if err := checkView(spec.StreamViewType); err != nil {
			return st, err
		}
		st.StreamSpecification = &StreamSpecification{StreamEnabled: true, StreamViewType: spec.StreamViewType}
		st.LatestStreamLabel = streamLabel(now)
		st.LatestStreamArn = st.TableArn + "/stream/" + st.LatestStreamLabel
	default:
		// The disabled stream keeps its view type: it stays readable for
		// 24 hours under its ARN.
		st.StreamSpecification = &StreamSpecification{StreamEnabled: false, StreamViewType: st.StreamSpecification.StreamViewType}
	}
	return st, nil
}

// TTLChangeInterval is how long after a change of a table's TTL setting
// UpdateTimeToLive refuses another (DynamoDB: one hour).
const TTLChangeInterval = time.Hour

// UpdateTimeToLive sets the table's TTL attribute (API_UpdateTimeToLive).
// The attribute holds epoch seconds as a Number; items whose value is in
// the past are deleted by the sweeper (every Options.TTLInterval, default
// 30 s: much sooner than DynamoDB's "typically within a few days"), and
// until then Get, Query and Scan still return them, as in DynamoDB. Items
// whose value is more than five years in the past are not deleted (the
// DynamoDB rule for values that are probably not epoch seconds).
//
// As on DynamoDB, a call that would change nothing is refused with a
// ValidationException: "TimeToLive is already enabled" (or disabled);
// while TTL is enabled on one attribute, enabling or disabling another is
// refused with "TimeToLive is active on a different AttributeName: current
// AttributeName is <name>"; and a change within an hour
// (TTLChangeInterval, by the engine's clock) of the last one is refused
// with "Time to live has been modified multiple times within a fixed
// interval" (API_UpdateTimeToLive: "Any additional UpdateTimeToLive calls
// for the same table during this one hour duration result in a
// ValidationException").
func (s *Service) UpdateTimeToLive(ctx context.Context, name string, spec TimeToLiveSpecification) (*TimeToLiveSpecification, error) {
	if remote, out, err := forwardOut[TimeToLiveSpecification](ctx, s, "UpdateTimeToLive", lease.Pair(name, spec)); remote {
		return out, err
	}
	if spec.AttributeName == "" {
		return nil, validation("1 validation error detected: Value null at 'timeToLiveSpecification.attributeName' failed to satisfy constraint: Member must not be null")
	}
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	st := t.st
	switch {
	case st.TTL.Enabled && spec.AttributeName != st.TTL.AttributeName:
		return nil, validation("TimeToLive is active on a different AttributeName: current AttributeName is %s", st.TTL.AttributeName)
	case st.TTL.Enabled == spec.Enabled && spec.Enabled:
		return nil, validation("TimeToLive is already enabled")
	case st.TTL.Enabled == spec.Enabled:
		return nil, validation("TimeToLive is already disabled")
	}
	now := s.eng.Clock.Now()
	if st.TTLChangedMs != 0 && now.Before(time.UnixMilli(st.TTLChangedMs).Add(TTLChangeInterval)) {
		return nil, validation("Time to live has been modified multiple times within a fixed interval")
	}
	st.TTLChangedMs = now.UnixMilli()
	if spec.AttributeName != st.TTL.AttributeName {
		t.idxMu.RLock()
		held := t.idx.Len() > 0
		t.idxMu.RUnlock()
		if held { // the log's expiries so far are now stale
			st.TTLVersion++
		}
	}
	st.TTL = spec
	t.ttlVersion.Store(-1) // a snapshot taken from here until the refresh ends says so
	if err := s.saveMeta(ctx, st); err != nil {
		return nil, err
	}
	t.st = st
	t.metaMu.Unlock()
	err = t.refreshTTL(ctx)
	t.metaMu.Lock()
	if err != nil {
		return nil, err
	}
	t.ttlVersion.Store(int64(st.TTLVersion))
	return &spec, nil
}

// DescribeTimeToLive returns the table's TTL setting.
func (s *Service) DescribeTimeToLive(ctx context.Context, name string) (TimeToLiveSpecification, error) {
	var spec TimeToLiveSpecification
	if remote, err := s.forward(ctx, "DescribeTimeToLive", name, &spec); remote {
		return spec, err
	}
	t, err := s.table(name)
	if err != nil {
		return TimeToLiveSpecification{}, err
	}
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	return t.st.TTL, nil
}
