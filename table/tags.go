package table

import (
	"context"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// MaxTags is the most tags a table may have (DynamoDB's quota, 50 per
// resource: https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Tagging.html).
const MaxTags = 50

// Tag is a table's tag: Key 1..128 characters, Value 0..256 (checked
// against AWS's model by the endpoint).
type Tag struct {
	Key   string `json:"Key"`
	Value string `json:"Value"`
}

// tooManyTags is the error of a table given more than MaxTags tags:
// LimitExceededException, as DynamoDB's quota error (the message is
// runnel's: AWS's text was not found).
func tooManyTags(arn string) error {
	return awserr.New(awserr.ErrLimitExceeded, "The number of tags on resource %s exceeds the limit of %d", arn, MaxTags)
}

// tableByARN returns the table an ARN names. Errors as DynamoDB's:
// ValidationException "Invalid TableArn: Invalid ResourceArn provided as
// input <arn>" for anything but a table ARN of this region and account
// (an index's ARN too), ResourceNotFoundException for a missing table.
func (s *Service) tableByARN(arn string) (*Table, error) {
	m := tableARNRE.FindStringSubmatch(arn)
	if m == nil || s.ARN(m[1]) != arn {
		return nil, validation("Invalid TableArn: Invalid ResourceArn provided as input %s", arn)
	}
	t, err := s.table(m[1])
	if err != nil {
		return nil, awserr.New(awserr.ErrResourceNotFound, "Requested resource not found: ResourcArn: %s not found", arn)
	}
	return t, nil
}

// TagResource adds tags to the table arn names, replacing the value of a
// key it has already (API_TagResource,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TagResource.html).
// Errors: ValidationException for no tags ("Atleast one Tag needs to be
// provided") or more than 50 in all; see tableByARN.
func (s *Service) TagResource(ctx context.Context, arn string, tags []Tag) error {
	if remote, err := s.forward(ctx, "TagResource", lease.Pair(arn, tags), nil); remote {
		return err
	}
	if len(tags) == 0 {
		return validation("Atleast one Tag needs to be provided")
	}
	return s.editTags(ctx, arn, func(m map[string]string) error {
		for _, tg := range tags {
			m[tg.Key] = tg.Value
		}
		if len(m) > MaxTags {
			return tooManyTags(arn)
		}
		return nil
	})
}

// UntagResource removes the tags of the given keys from the table arn
// names; a key it does not have is ignored (API_UntagResource). Errors:
// ValidationException for no keys ("Atleast one Tag Key needs to be
// provided"); see tableByARN.
func (s *Service) UntagResource(ctx context.Context, arn string, keys []string) error {
	if remote, err := s.forward(ctx, "UntagResource", lease.Pair(arn, keys), nil); remote {
		return err
	}
	if len(keys) == 0 {
		return validation("Atleast one Tag Key needs to be provided")
	}
	return s.editTags(ctx, arn, func(m map[string]string) error {
		for _, k := range keys {
			delete(m, k)
		}
		return nil
	})
}

// editTags applies edit to a copy of the table's tags and stores them.
func (s *Service) editTags(ctx context.Context, arn string, edit func(map[string]string) error) error {
	t, err := s.tableByARN(arn)
	if err != nil {
		return err
	}
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	st := t.st
	st.Tags = make(map[string]string, len(t.st.Tags))
	for k, v := range t.st.Tags {
		st.Tags[k] = v
	}
	if err := edit(st.Tags); err != nil {
		return err
	}
	if err := s.saveMeta(ctx, st); err != nil {
		return err
	}
	t.st = st
	return nil
}

// ListTagsOfResource returns the tags of the table arn names, sorted by
// key, all in one page (a table has at most 50), as []: never nil
// (API_ListTagsOfResource). Errors: see tableByARN.
func (s *Service) ListTagsOfResource(ctx context.Context, arn string) ([]Tag, error) {
	var tags []Tag
	if remote, err := s.forward(ctx, "ListTagsOfResource", arn, &tags); remote {
		return tags, err
	}
	t, err := s.tableByARN(arn)
	if err != nil {
		return nil, err
	}
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	out := []Tag{}
	for _, k := range sortedKeys(t.st.Tags) {
		out = append(out, Tag{Key: k, Value: t.st.Tags[k]})
	}
	return out, nil
}

// ContinuousBackupsDescription is DescribeContinuousBackups' answer:
// ContinuousBackupsStatus ENABLED, as DynamoDB describes every table from
// its creation; point-in-time recovery DISABLED (runnel has none).
type ContinuousBackupsDescription struct {
	ContinuousBackupsStatus        string                         `json:"ContinuousBackupsStatus"`
	PointInTimeRecoveryDescription PointInTimeRecoveryDescription `json:"PointInTimeRecoveryDescription"`
}

// PointInTimeRecoveryDescription says whether point-in-time recovery is
// on: always DISABLED in runnel (UpdateContinuousBackups is not served).
type PointInTimeRecoveryDescription struct {
	PointInTimeRecoveryStatus string `json:"PointInTimeRecoveryStatus"`
}

// DescribeContinuousBackups reports the table's backup settings
// (API_DescribeContinuousBackups,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_DescribeContinuousBackups.html):
// ContinuousBackupsStatus ENABLED ("Continuous backups are ENABLED on all
// tables at table creation"; runnel answered DISABLED before) and
// PointInTimeRecoveryStatus DISABLED, so that infrastructure tools that
// read them work. Errors: TableNotFoundException ("Table not found:
// <name>") for a missing table.
func (s *Service) DescribeContinuousBackups(ctx context.Context, name string) (*ContinuousBackupsDescription, error) {
	if remote, out, err := forwardOut[ContinuousBackupsDescription](ctx, s, "DescribeContinuousBackups", name); remote {
		return out, err
	}
	if _, err := s.table(name); err != nil {
		return nil, awserr.New(awserr.ErrTableNotFound, "Table not found: %s", name)
	}
	return &ContinuousBackupsDescription{ContinuousBackupsStatus: "ENABLED",
		PointInTimeRecoveryDescription: PointInTimeRecoveryDescription{PointInTimeRecoveryStatus: "DISABLED"}}, nil
}

// msgDeletionProtected is DynamoDB's refusal of DeleteTable on a table
// with DeletionProtectionEnabled, as recorded against AWS (the API
// reference gives no text).
const msgDeletionProtected = "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first."

// deletable is DeleteTable's check of table name (the caller holds s.mu):
// the table, its description as DELETING, and whether its change log is
// kept as a deleted stream (a table that had a stream keeps its log,
// readable for 24 hours: deleted_streams.go; one that never had one
// loses it); the table's indexes are marked gone. Errors:
// ResourceNotFoundException for no such table;
// ValidationException msgDeletionProtected while the table's
// DeletionProtectionEnabled is true (CreateTable's or UpdateTable's
// DeletionProtectionEnabled; default false), before anything is changed.
// Before, the flag was ignored and a protected table was deleted.
func (s *Service) deletable(ctx context.Context, name string) (*Table, *TableDescription, bool, error) {
	t, ok := s.tables[name]
	if !ok {
		return nil, nil, false, tableNotFound(name)
	}
	d := t.describe()
	if d.DeletionProtectionEnabled {
		return nil, nil, false, validation(msgDeletionProtected)
	}
	d.TableStatus = "DELETING"
	kept, err := s.keepDeletedStream(ctx, t)
	if err == nil {
		// A backfill of the table's writes nothing more (Table.kept),
		// none of its keys after DeleteTable clears the table's: a
		// deletion failing after this leaves such an index CREATING until
		// the tables' next load builds it.
		for _, x := range t.indexes() {
			x.gone.Store(true)
		}
	}
	return t, d, kept, err
}
