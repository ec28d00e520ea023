package demo_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// `runnel demo --external` with a relative --data-dir (the default is
// ./runnel-data): the function's work directory below it is relative, and
// its bootstrap must still be found, every record processed rather than
// sent to the on-failure queue.
func TestDemoExternalRelativeDataDir(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the function with go build")
	}
	if _, err := exec.LookPath("go"); err != nil {
		testenv.MissingTool(t, "go is not on PATH")
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, t.TempDir())
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("relative data dir: %q, %v", rel, err)
	}
	res, err := demo.RunExternal(context.Background(), demo.Config{
		DataPath:      "../data/flights-3m.parquet",
		Records:       1000,
		DataDir:       rel,
		PoisonRecords: -1,
		Logger:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsIn != 1000 || res.ProcessedUnique != 1000 || res.Unrecoverable != 0 || res.Lost != 0 {
		t.Fatalf("records in %d, processed %d, in the on-failure queue %d, lost %d; want all 1000 processed",
			res.RecordsIn, res.ProcessedUnique, res.Unrecoverable, res.Lost)
	}
}
