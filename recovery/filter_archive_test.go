package recovery_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/recovery"
)

// TestAnArchivedPointerHoldsOnlyTheRecordsItsMappingDelivered: `runnel dlq
// archive` writes, with each on-failure pointer, the records it stands
// for, as its function saw them. A pointer's range also holds the records
// its mapping's FilterCriteria filtered out (Lambda discards them,
// invocation-eventfiltering.html); the archive listed them among the
// failed batch's records. With ArchiveOptions.Mappings (the CLI gives its
// mappings) the mapping's FilterCriteria apply, as in the Retry-DLQ flows
// (TestARecordTheMappingFilteredOutNeverReachesTheRecordHandlerThroughTheRetryDLQ).
func TestAnArchivedPointerHoldsOnlyTheRecordsItsMappingDelivered(t *testing.T) {
	s := twoTier(t, "")
	filteredPointer(t, s)
	out := filepath.Join(t.TempDir(), "a.jsonl")
	if _, err := recovery.Archive(context.Background(), s.rn.Queues, s.rn.Streams, "retry-dlq", recovery.ArchiveOptions{Out: out, Mappings: s.rn.Mappings}); err != nil {
		t.Fatal(err)
	}
	lines, err := recovery.ReadArchive(out)
	if err != nil || len(lines) != 1 || lines[0].Resolved == nil {
		t.Fatalf("archive = %+v, %v; want one resolved pointer", lines, err)
	}
	r := lines[0].Resolved
	if got := strings.Join(datas(r.Records), " "); len(r.Records) != 2 || strings.Contains(got, "FILTERED") || r.Filtered != 1 {
		t.Fatalf("the archived pointer holds %d records: %s (filtered %d); want k1 and k2, 1 filtered", len(r.Records), got, r.Filtered)
	}
}
