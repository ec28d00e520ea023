package table

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
)

// The change stream of a deleted table stays readable for 24 hours:
// "If you disable a stream on a table, the data in the stream continues
// to be readable for 24 hours ... this also applies if you delete the
// table" (DynamoDB Streams developer guide, Streams.html; SPEC 5). Before,
// DeleteTable deleted the table's change log at once, and a consumer lost
// every change it had not read yet.
//
// DeleteTable of a table that ever had a stream keeps its log and writes
// a DeletedStream record (bucket runnel_table_deleted_streams); the TTL
// loop of the process serving the tables deletes the log and the record
// StreamRetention after the deletion (sweepDeletedStreams).

const deletedStreamsBucket = "runnel_table_deleted_streams"

// DeletedStream is the change stream of a deleted table, readable
// (DISABLED, its shards closed) until StreamRetention after DeletedAt.
type DeletedStream struct {
	TableName         string
	TableArn          string
	Log               string // the change log kept
	Shards            int
	KeySchema         []KeySchemaElement
	CreationDateTime  float64 // the table's, Unix seconds
	LatestStreamLabel string
	// StreamViewType is the view of the stream when the table was
	// deleted; "" if the stream was off then.
	StreamViewType string `json:",omitempty"`
	DeletedAt      int64  // Unix ms, engine clock
}

// Covers reports whether label is one of the deleted table's stream
// labels: its latest, or an earlier one of its lifetime.
func (d *DeletedStream) Covers(label string) bool {
	created := time.UnixMilli(int64(d.CreationDateTime * 1000)).UTC().Format("2006-01-02T15:04:05.000")
	return label != "" && label <= d.LatestStreamLabel && label >= created
}

// deletedStreamKey is the record's key: the table's name, then its latest
// label as one token (a KV key has no ':'; '.' separates tokens, which
// the name may have: readers check the record's TableName).
func deletedStreamKey(name, label string) string {
	return name + "." + strings.NewReplacer(":", "-", ".", "-").Replace(label)
}

func (s *Service) deletedStreams(ctx context.Context) (jetstream.KeyValue, error) {
	return s.eng.Bucket(ctx, deletedStreamsBucket)
}

// keepDeletedStream writes t's DeletedStream record if t ever had a
// stream, and reports whether it did (then its log is kept).
func (s *Service) keepDeletedStream(ctx context.Context, t *Table) (bool, error) {
	d := t.describe()
	if d.LatestStreamLabel == "" {
		return false, nil
	}
	rec := DeletedStream{TableName: d.TableName, TableArn: d.TableArn, Log: t.logName, Shards: t.st.Shards,
		KeySchema: d.KeySchema, CreationDateTime: d.CreationDateTime, LatestStreamLabel: d.LatestStreamLabel,
		DeletedAt: s.eng.Clock.Now().UnixMilli()}
	if sp := d.StreamSpecification; sp != nil && sp.StreamEnabled {
		rec.StreamViewType = sp.StreamViewType
	}
	kv, err := s.deletedStreams(ctx)
	if err != nil {
		return false, err
	}
	b, _ := json.Marshal(&rec)
	if _, err := kv.Put(ctx, deletedStreamKey(rec.TableName, rec.LatestStreamLabel), b); err != nil {
		return false, awserr.New(awserr.ErrService, "delete table %s: keep its stream: %v", rec.TableName, err)
	}
	return true, nil
}

// DeletedStreams returns the change streams of deleted tables still
// readable, name given: only that table's ("" for all).
func (s *Service) DeletedStreams(ctx context.Context, name string) ([]DeletedStream, error) {
	if name != "" && !tableNameRE.MatchString(name) {
		return nil, nil // no table ever had that name (and it is no key filter)
	}
	kv, err := s.deletedStreams(ctx)
	if err != nil {
		return nil, err
	}
	// A filter over names: for a name with an empty token (".ab", "ab.",
	// "a..b", stored escaped) the bucket's nameKeys matches it itself.
	filter := ">"
	if name != "" {
		filter = name + ".>"
	}
	lister, err := kv.ListKeysFiltered(ctx, filter)
	if err != nil {
		return nil, err
	}
	horizon := s.eng.Clock.Now().Add(-StreamRetention).UnixMilli()
	var out []DeletedStream
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue // swept meanwhile
		}
		var d DeletedStream
		if json.Unmarshal(e.Value(), &d) != nil || d.DeletedAt < horizon || (name != "" && d.TableName != name) {
			continue
		}
		out = append(out, d)
	}
	return out, nil
}

// DeletedStreamOf returns the deleted table name's stream that label
// belongs to, or ErrResourceNotFound.
func (s *Service) DeletedStreamOf(ctx context.Context, name, label string) (*DeletedStream, error) {
	ds, err := s.DeletedStreams(ctx, name)
	if err != nil {
		return nil, err
	}
	for i := range ds {
		if ds[i].TableName == name && ds[i].Covers(label) {
			return &ds[i], nil
		}
	}
	return nil, awserr.New(awserr.ErrResourceNotFound, "no stream %s of deleted table %s", label, name)
}

// sweepDeletedStreams deletes the logs and records of deleted tables'
// streams past StreamRetention, and returns how many.
func (s *Service) sweepDeletedStreams(ctx context.Context) (int, error) {
	kv, err := s.deletedStreams(ctx)
	if err != nil {
		return 0, err
	}
	lister, err := kv.ListKeys(ctx)
	if err != nil {
		return 0, err
	}
	horizon := s.eng.Clock.Now().Add(-StreamRetention).UnixMilli()
	n := 0
	var errs []error
	for key := range lister.Keys() {
		e, err := kv.Get(ctx, key)
		if err != nil {
			continue
		}
		var d DeletedStream
		if json.Unmarshal(e.Value(), &d) == nil && d.DeletedAt >= horizon {
			continue
		}
		if d.Log != "" {
			if err := s.logs.DeleteStream(ctx, d.Log); err != nil && !errors.Is(err, awserr.ErrResourceNotFound) {
				errs = append(errs, err)
				continue
			}
		}
		if err := kv.Purge(ctx, key); err != nil {
			errs = append(errs, err)
			continue
		}
		s.eng.Logger.Info("the change stream of a deleted table expired (24 hours)", "table", d.TableName, "label", d.LatestStreamLabel, "log", d.Log)
		n++
	}
	return n, errors.Join(errs...)
}
