package demo_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/runnel-dev/runnel/demo"
)

// The demo's reconciliation on the first 20,000 flights, with a high
// failure rate: every record is processed or in the failure destination,
// the poison records are exactly what reached the destination, and the
// statistics equal the independent computation from the parquet file.
func TestDemoReconciles(t *testing.T) {
	res, err := demo.Run(context.Background(), demo.Config{
		DataPath:      "../data/flights-3m.parquet",
		Records:       20000,
		DataDir:       t.TempDir(),
		FailureRate:   0.1,
		PoisonRecords: 7,
		BatchSize:     200,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsIn != 20000 || res.Lost != 0 || !res.StatsMatch {
		t.Fatalf("records in %d, lost %d, stats match %v (%s)", res.RecordsIn, res.Lost, res.StatsMatch, res.StatsDiff)
	}
	if res.ProcessedUnique+res.ToFailureDestination != res.RecordsIn {
		t.Fatalf("processed %d + failure destination %d != records in %d", res.ProcessedUnique, res.ToFailureDestination, res.RecordsIn)
	}
	if res.PoisonInjected != 7 || res.PoisonInFailDest != 7 {
		t.Fatalf("poison injected %d, in the failure destination %d", res.PoisonInjected, res.PoisonInFailDest)
	}
	if res.FailedInvokes == 0 || res.Deliveries <= res.ProcessedUnique {
		t.Fatalf("no failure was injected: %+v", res)
	}
}
