package demo_test

import (
	"context"
	"io"
	"log/slog"
	"os/exec"
	"testing"

	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// The external demo on the first 5,000 flights: the producer on
// aws-sdk-go-v2, the function an aws-lambda-go binary; every record is
// processed or, for the poison ones, in the on-failure queue, and the
// statistics equal the computation from the parquet file.
func TestDemoExternalReconciles(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function with go build")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testenv.MissingTool(t, "go is not on PATH")
	}
	res, err := demo.RunExternal(context.Background(), demo.Config{
		DataPath:      "../data/flights-3m.parquet",
		Records:       5000,
		DataDir:       t.TempDir(),
		PoisonRecords: 3,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsIn != 5000 || res.Lost != 0 || !res.StatsMatch {
		t.Fatalf("records in %d, lost %d, stats match %v (%s)", res.RecordsIn, res.Lost, res.StatsMatch, res.StatsDiff)
	}
	if res.ProcessedUnique+res.Unrecoverable != res.RecordsIn {
		t.Fatalf("processed %d + in the on-failure queue %d != records in %d", res.ProcessedUnique, res.Unrecoverable, res.RecordsIn)
	}
	if res.PoisonInjected != 3 || res.PoisonInFailDest != 3 || res.Unrecoverable != 3 {
		t.Fatalf("poison injected %d, in the on-failure queue %d (poison among them %d)", res.PoisonInjected, res.Unrecoverable, res.PoisonInFailDest)
	}
}
