package table

import (
	"context"
	"testing"

	"github.com/runnel-dev/runnel/stream"
)

// PlantChange appends to the table's change log the record a write of nw
// (an insert under nw's key) would append, bypassing every check of the
// write path and leaving the index as it is (a test of what an open makes
// of records written before a check existed); data, when not nil,
// replaces the record's encoded change (a malformed record).
func PlantChange(t testing.TB, s *Service, tableName string, nw Item, data []byte) {
	t.Helper()
	tb, k := tableKey(t, s, tableName, nw, false)
	p := tb.newChange(k, nil, nw, false)
	e, err := p.logEntry()
	if err != nil {
		t.Fatal(err)
	}
	if data != nil {
		e.Data = data
	}
	out, err := s.logs.PutRecords(context.Background(), tb.logName, []stream.PutRecordsRequestEntry{e})
	if err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("plant a change record: %v %+v", err, out)
	}
}

// SkippedAtOpen is how many change records the table's open left out of
// its index, unable to decode them.
func SkippedAtOpen(t testing.TB, s *Service, tableName string) int64 {
	t.Helper()
	tb, err := s.table(tableName)
	if err != nil {
		t.Fatal(err)
	}
	return tb.skippedAtOpen.Load()
}
