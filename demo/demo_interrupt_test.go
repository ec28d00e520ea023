package demo_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// cancelOnWrite cancels its context at its first write (the run's first
// progress line): an interrupt mid-run, at a point the run reached.
type cancelOnWrite struct {
	once   sync.Once
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.once.Do(w.cancel)
	return len(p), nil
}

// TestDemoInterruptedSaysSoWithWhatWasDone: a Ctrl-C (the command's
// context ending) stops the demo with an *demo.Interrupted error, saying
// "interrupted" and the records put and resolved so far (the command
// exits non-zero with it), wrapping context.Canceled; the cancellation
// is not logged as a retryable error to wait through. It used to finish
// the progress bar at 100%, print no summary, and log "waiting through a
// retryable error err=... context canceled".
func TestDemoInterruptedSaysSoWithWhatWasDone(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logs testenv.LogBuffer
	_, err := demo.Run(ctx, demo.Config{
		DataPath: "../data/flights-3m.parquet",
		Records:  200000,
		DataDir:  t.TempDir(),
		Progress: &cancelOnWrite{cancel: cancel},
		Logger:   slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	var in *demo.Interrupted
	if !errors.As(err, &in) || !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v (%T), want a *demo.Interrupted wrapping context.Canceled", err, err)
	}
	if in.Total != 200000 || in.Put > in.Total || in.Resolved > in.Put || !strings.Contains(err.Error(), "interrupted:") {
		t.Fatalf("interrupted: %+v: %v", in, err)
	}
	if l := logs.String(); strings.Contains(l, "retryable") {
		t.Fatalf("the interrupt was logged as a retryable error:\n%s", l)
	}
}
