package demo_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"reflect"
	"testing"

	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/demo/flights"
	"github.com/runnel-dev/runnel/observe"
)

// The incident story on the first 20,000 flights: an outage over 1,000
// rows lands them in the Unrecoverable-DLQ, the dlq-depth alarm fires,
// and after the fix the redrive brings every one of them through exactly
// once: nothing lost, nothing counted twice, the statistics equal the
// parquet computation over every row.
func TestDemoIncident(t *testing.T) {
	res, err := demo.Run(context.Background(), demo.Config{
		DataPath:  "../data/flights-3m.parquet",
		Records:   20000,
		DataDir:   t.TempDir(),
		BatchSize: 200,
		Outage:    &demo.Outage{At: 5000, Records: 1000},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	inc := res.Incident
	if inc == nil {
		t.Fatal("no incident report")
	}
	b, _ := json.MarshalIndent(inc, "", "  ")
	t.Logf("incident: %s", b)
	if inc.OutageAt != 5000 || inc.OutageRecords != 1000 || inc.RetryAttempts != 2 {
		t.Fatalf("outage at %d, %d records, retry attempts %d", inc.OutageAt, inc.OutageRecords, inc.RetryAttempts)
	}
	// Detection: the Unrecoverable-DLQ's depth alarm, with every outage
	// record (one message each: bisect isolates them) in the queue.
	if !inc.AlarmFired || inc.Alarm.Rule != observe.RuleDLQDepth || inc.Alarm.Resource != inc.Unrecoverable || inc.Alarm.Value < 1000 {
		t.Fatalf("alarm fired %v: %+v", inc.AlarmFired, inc.Alarm)
	}
	if inc.OutageProcessedBeforeFix != 0 || inc.UnrecoverableBeforeFix < inc.OutageRecords {
		t.Fatalf("before the fix: %d outage records processed, %d records unrecoverable", inc.OutageProcessedBeforeFix, inc.UnrecoverableBeforeFix)
	}
	// Recovery: every outage record, and every other record that was in
	// the Unrecoverable-DLQ, processed after the fix.
	if inc.OutageRecovered != inc.OutageRecords || inc.RecoveredAfterFix != inc.UnrecoverableBeforeFix {
		t.Fatalf("recovered after the fix %d of %d (outage records %d of %d)", inc.RecoveredAfterFix, inc.UnrecoverableBeforeFix, inc.OutageRecovered, inc.OutageRecords)
	}
	if inc.Redriven < int64(inc.Alarm.Value) || inc.RedriveRounds < 1 || !inc.AlarmCleared {
		t.Fatalf("redriven %d in %d rounds, alarm after %+v", inc.Redriven, inc.RedriveRounds, inc.AlarmAfter)
	}
	if len(inc.ReplayAlternative) == 0 {
		t.Fatal("no replay alternative")
	}
	// Reconciliation: every record processed exactly once.
	if res.RecordsIn != 20000 || res.Lost != 0 || res.Unrecoverable != 0 || res.ProcessedUnique != res.RecordsIn {
		t.Fatalf("records in %d, processed %d, unrecoverable %d, lost %d", res.RecordsIn, res.ProcessedUnique, res.Unrecoverable, res.Lost)
	}
	if !res.StatsMatch {
		t.Fatalf("statistics differ from the parquet file: %s", res.StatsDiff)
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	// The report's top airports are those of the independent computation
	// from the parquet file over every row (none excluded: every record
	// was recovered).
	want, _, err := flights.ComputeStats("../data/flights-3m.parquet", 20000, nil)
	if err != nil {
		t.Fatal(err)
	}
	if top := want.Top(10); len(res.Top) != 10 || !reflect.DeepEqual(res.Top, top) {
		t.Fatalf("top airports %+v, want the parquet computation's %+v", res.Top, top)
	}
}
