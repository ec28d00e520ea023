package logs_test

import (
	"context"
	"testing"

	"github.com/runnel-dev/runnel/function/logs"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// An invocation's log lines never wait for the log store: with the writer
// stalled (as while the logs' stream has no leader after a node died),
// PutLogEvent returns at once, and the lines are stored in order once it
// goes on. Before, each line was a synchronous publish that held the
// invocation up to 30 s.
func TestALogLineDoesNotWaitForAStalledStore(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	s, err := logs.Open(ctx, rn.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	logs.SetGate(s, gate)
	for _, line := range []string{"START", "hello", "END", "REPORT"} {
		s.PutLogEvent("/aws/lambda/f", "s", line) // would block here on a synchronous write
	}
	// Returned before any was written: the store holds none of them (the
	// read waits settleWait, 5 s, for the stalled writer, then reads).
	n := 0
	if err := s.Read(ctx, "/aws/lambda/f", "s", 0, func(logs.Event) bool { n++; return true }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d events stored while the writer was stalled: PutLogEvent wrote them itself", n)
	}
	for range 4 {
		gate <- struct{}{}
	}
	var got []string
	if err := s.Read(ctx, "/aws/lambda/f", "s", 0, func(e logs.Event) bool { got = append(got, e.Message); return true }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[0] != "START" || got[1] != "hello" || got[2] != "END" || got[3] != "REPORT" {
		t.Fatalf("stored %q, want START hello END REPORT in order", got)
	}
	if s.Dropped() != 0 {
		t.Fatalf("%d events dropped", s.Dropped())
	}
}
