package idempotency_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/idempotency"
	"github.com/runnel-dev/runnel/idempotency/tablestore"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestAResultTooLargeToStoreNeverRunsTheHandlerTwice: Do "runs fn at most
// once per payload", and a table item is at most 400 KB (DynamoDB's item
// size limit; runnel's tables refuse a larger one with a
// ValidationException). Before, a 500,000-byte result made the COMPLETED
// update fail: the call returned ErrPersistence, the record stayed
// INPROGRESS (as in Powertools), and a repeat after the in-progress
// expiry (35 s later) ran the handler a second time. Now the record is
// stored COMPLETED without the result: the first call returns the result
// (with a WARN naming the key and size), a repeat returns
// ErrResultNotStored and does not run the handler.
func TestAResultTooLargeToStoreNeverRunsTheHandlerTwice(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := clockwork.NewFakeClockAt(start)
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	s, err := tablestore.CreateTable(ctx, rn.Tables, "idem")
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	cfg := idempotency.Config{FunctionName: "fn", Name: "charge", EventKeyJMESPath: "order", Clock: clock,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	runs := 0
	big := strings.Repeat("x", 500_000)
	fn := func(context.Context) (string, error) { runs++; return big, nil }
	payload := map[string]string{"order": "o-1"}
	for i, step := range []time.Duration{0, 10 * time.Second, 25 * time.Second} {
		clock.Advance(step)
		dctx, cancel := clockwork.WithTimeout(ctx, clock, 30*time.Second)
		v, err := idempotency.Do(dctx, s, cfg, payload, fn)
		cancel()
		switch {
		case i == 0 && (err != nil || v != big):
			t.Fatalf("first call: %d bytes, %v; want the handler's result", len(v), err)
		case i > 0 && !errors.Is(err, idempotency.ErrResultNotStored):
			t.Errorf("call %d at +%v: %d bytes, %v; want ErrResultNotStored", i+1, clock.Since(start), len(v), err)
		}
	}
	if runs != 1 {
		t.Errorf("the handler succeeded and ran %d times for one key; want once", runs)
	}
	h, _ := idempotency.Hash("o-1")
	r, err := s.Get(ctx, "fn.charge#"+h)
	if err != nil || r.Status != idempotency.StatusCompleted {
		t.Errorf("stored record = %+v, %v; want it COMPLETED", r, err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "fn.charge#"+h) || !strings.Contains(logs.String(), "resultBytes=500002") {
		t.Errorf("no WARN naming the key and the size; logs:\n%s", logs.String())
	}
}
