package demo

import (
	"cmp"
	"io"
	"log/slog"
	"os"

	"github.com/runnel-dev/runnel/engine"
)

// Config configures a demo run. The zero value runs on every record of
// data/flights-3m.parquet (the copy embedded in the binary) with the
// defaults below.
type Config struct {
	// DataPath is the parquet file. Default "" (flights.EmbeddedPath): the
	// copy of data/flights-3m.parquet embedded in the binary, so the demo
	// runs from any working directory.
	DataPath string
	// Records limits the run to the first N rows; 0 means all.
	Records int
	// DataDir is where the run's engine stores its data (a fresh
	// subdirectory is made and removed afterwards unless Keep).
	// Default ./runnel-data.
	DataDir string
	// NATSURL runs against an external JetStream instead of the embedded one.
	NATSURL string
	// Keep leaves the run's data directory in place.
	Keep bool
	// Shards of the flights stream. Default 4.
	Shards int
	// BatchSize of the mapping. Default 500.
	BatchSize int
	// ParallelizationFactor of the mapping. Default 1.
	ParallelizationFactor int
	// MaximumRetryAttempts of the stream mapping. Default 0: a record that
	// fails alone goes to the Retry-DLQ at once (negative values count as 0).
	MaximumRetryAttempts int
	// FlakyRecords is how many records fail their first FlakyFailures
	// attempts and then succeed: they recover through the Retry-DLQ.
	// Default 20; negative for none.
	FlakyRecords  int
	FlakyFailures int // default 2
	// RetryAttempts is the Retry-DLQ mapping's RetryPolicy.MaxAttempts:
	// receives before a message moves to the Unrecoverable-DLQ. Default 4.
	RetryAttempts int
	// FailureRate is the share of invocations that fail transiently
	// (before touching their records). Default 0.02; negative for none.
	FailureRate float64
	// PoisonRecords is how many records are marked poison: the function
	// always fails a batch holding one. Default 10; negative for none.
	PoisonRecords int
	// Producers is how many PutRecords calls run at once. Default 4.
	Producers int
	// Seed makes the injected failures and poison positions repeatable.
	Seed uint64
	// Progress, when set, receives a progress bar (a terminal) or progress
	// lines (anything else).
	Progress io.Writer
	// Logger for runnel's own logs. Default: warnings and errors to stderr.
	Logger *slog.Logger
	// Outage, when set, runs the incident story (incident.go): an induced
	// downstream outage, the alarm, the fix and the redrive.
	Outage *Outage
}

func (c *Config) setDefaults() {
	c.DataDir = cmp.Or(c.DataDir, engine.DefaultDataDir)
	c.Shards = cmp.Or(c.Shards, 4)
	c.BatchSize = cmp.Or(c.BatchSize, 500)
	c.ParallelizationFactor = cmp.Or(c.ParallelizationFactor, 1)
	c.MaximumRetryAttempts = max(c.MaximumRetryAttempts, 0)
	c.FlakyRecords = cmp.Or(c.FlakyRecords, 20)
	c.FlakyFailures = cmp.Or(c.FlakyFailures, 2)
	c.RetryAttempts = cmp.Or(c.RetryAttempts, 4)
	c.FailureRate = cmp.Or(c.FailureRate, 0.02)
	c.PoisonRecords = cmp.Or(c.PoisonRecords, 10)
	c.Producers = cmp.Or(c.Producers, 4)
	c.Seed = cmp.Or(c.Seed, 2001)
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}
}
