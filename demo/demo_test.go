package demo_test

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/runnel-dev/runnel/demo"
)

// The demo's reconciliation on the first 20,000 flights, with a high
// failure rate: every record is processed or unrecoverable, the flaky
// records recover through the Retry-DLQ, the poison records are exactly
// what reached the Unrecoverable-DLQ, and the statistics equal the
// independent computation from the parquet file.
func TestDemoReconciles(t *testing.T) {
	res, err := demo.Run(context.Background(), demo.Config{
		DataPath:      "../data/flights-3m.parquet",
		Records:       20000,
		DataDir:       t.TempDir(),
		FailureRate:   0.1,
		PoisonRecords: 7,
		FlakyRecords:  5,
		BatchSize:     200,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsIn != 20000 || res.Lost != 0 || !res.StatsMatch {
		t.Fatalf("records in %d, lost %d, stats match %v (%s)", res.RecordsIn, res.Lost, res.StatsMatch, res.StatsDiff)
	}
	if res.ProcessedUnique+res.Unrecoverable != res.RecordsIn {
		t.Fatalf("processed %d + unrecoverable %d != records in %d", res.ProcessedUnique, res.Unrecoverable, res.RecordsIn)
	}
	// The unrecoverable records are exactly the poison records: every
	// poison record, and no good one (a good record fails at most once on
	// the Retry-DLQ, well within its attempts).
	if res.PoisonInjected != 7 || res.PoisonInFailDest != 7 || res.Unrecoverable != 7 {
		t.Fatalf("poison injected %d, unrecoverable %d (poison among them %d)", res.PoisonInjected, res.Unrecoverable, res.PoisonInFailDest)
	}
	if res.FlakyInjected != 5 || res.FlakyProcessed != 5 {
		t.Fatalf("flaky injected %d, processed %d", res.FlakyInjected, res.FlakyProcessed)
	}
	// The same verdict fails `runnel demo`.
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	// A flaky record fails its first two invocations; the third succeeds,
	// whether it is a bisect split of the stream batch or a retry from the
	// Retry-DLQ (which depends on how the batches formed). Either way it is
	// processed: the reconciliation above counts it.
	if res.FlakyInjected != 5 || res.ToFailureDestination < 7 || res.Recovered > res.ToFailureDestination {
		t.Fatalf("flaky %d, recovered through the Retry-DLQ %d, sent to the Retry-DLQ %d", res.FlakyInjected, res.Recovered, res.ToFailureDestination)
	}
	if res.FailedInvokes == 0 || res.Deliveries <= res.ProcessedUnique {
		t.Fatalf("no failure was injected: %+v", res)
	}
}
