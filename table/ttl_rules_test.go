package table_test

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/table"
)

// TestUpdateTimeToLiveRefusesAnotherAttributeAndASecondChangeWithinAnHour:
// API_UpdateTimeToLive's rules. While TTL is enabled on one attribute,
// enabling or disabling another is a ValidationException "TimeToLive is
// active on a different AttributeName: current AttributeName is <name>";
// and "Any additional UpdateTimeToLive calls for the same table during
// this one hour duration result in a ValidationException", by the
// engine's clock, across a restart. It used to check only Enabled: a
// disable naming another attribute turned TTL off and stored the new
// name, enabling another attribute said "TimeToLive is already enabled",
// and a second change within the hour was accepted.
func TestUpdateTimeToLiveRefusesAnotherAttributeAndASecondChangeWithinAnHour(t *testing.T) {
	dir := t.TempDir()
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	tb := rn.Tables
	createTable(t, tb, "ttlt", "", "")
	update := func(name string, on bool) error {
		_, err := tb.UpdateTimeToLive(ctx, "ttlt", table.TimeToLiveSpecification{AttributeName: name, Enabled: on})
		return err
	}
	refused := func(step, name string, on bool, msg string) {
		t.Helper()
		err := update(name, on)
		if !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), msg) {
			t.Fatalf("%s: UpdateTimeToLive(%q, %v) = %v, want ValidationException %q", step, name, on, err, msg)
		}
		if d, _ := tb.DescribeTimeToLive(ctx, "ttlt"); d != (table.TimeToLiveSpecification{AttributeName: "ttl", Enabled: true}) {
			t.Fatalf("%s: a refused call changed the setting to %+v", step, d)
		}
	}
	if err := update("ttl", true); err != nil {
		t.Fatal(err)
	}
	const other = "TimeToLive is active on a different AttributeName: current AttributeName is ttl"
	refused("enable another attribute", "other", true, other)
	refused("disable another attribute", "other", false, other)
	refused("enable it again", "ttl", true, "TimeToLive is already enabled")
	const soon = "Time to live has been modified multiple times within a fixed interval"
	refused("disable within the hour", "ttl", false, soon)

	rn.Crash()
	clock.Advance(table.TTLChangeInterval - time.Millisecond)
	rn = testenv.Start(t, testenv.Options{Dir: dir, Clock: clock})
	tb = rn.Tables
	refused("disable within the hour, after a restart", "ttl", false, soon)
	clock.Advance(time.Millisecond)
	if err := update("ttl", false); err != nil {
		t.Fatalf("disable an hour after enabling: %v", err)
	}
	if err := update("other", true); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), soon) {
		t.Fatalf("enable another attribute right after disabling: %v, want %q", err, soon)
	}
	clock.Advance(table.TTLChangeInterval)
	if err := update("other", false); !errors.Is(err, awserr.ErrValidation) || !strings.Contains(err.Error(), "TimeToLive is already disabled") {
		t.Fatalf("disable while disabled: %v", err)
	}
	if err := update("other", true); err != nil {
		t.Fatalf("enable another attribute an hour after disabling: %v", err)
	}
	if d, _ := tb.DescribeTimeToLive(ctx, "ttlt"); d != (table.TimeToLiveSpecification{AttributeName: "other", Enabled: true}) {
		t.Fatalf("DescribeTimeToLive = %+v, want other, enabled", d)
	}
}

// TestATTLSweepLetsWritesThroughWhileItWalks: DynamoDB deletes expired
// items "on a best-effort basis to ensure availability of throughput for
// other data operations" (developer guide, "How it works: DynamoDB Time to
// Live"). The sweep used to walk the whole index under its read lock, so
// every write waited for it: 25-50 ms of stalled PutItems at 200,000
// items, longer at millions. It now copies the index a chunk at a time
// and lets go between chunks; items written during the walk are kept and
// every expired item is still deleted once.
func TestATTLSweepLetsWritesThroughWhileItWalks(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC))
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	tb := rn.Tables
	createTable(t, tb, "swept", "", "")
	if _, err := tb.UpdateTimeToLive(ctx, "swept", table.TimeToLiveSpecification{AttributeName: "ttl", Enabled: true}); err != nil {
		t.Fatal(err)
	}
	now := clock.Now().Unix()
	putSwept := func(pk string, exp int64) {
		if _, err := tb.PutItem(ctx, table.PutItemInput{TableName: "swept", Item: table.Item{"pk": S(pk), "ttl": N(fmt.Sprint(exp))}}); err != nil {
			t.Fatal(err)
		}
	}
	const items = 100
	for i := range items {
		exp := now + 3600
		if i%2 == 0 {
			exp = now - 60
		}
		putSwept(fmt.Sprint("k", i), exp)
	}
	chunks, written := 0, 0
	table.OnIndexWalkChunk(t, 8, func(indexFree bool) {
		chunks++
		if !indexFree {
			t.Errorf("chunk %d: the sweep holds the index between chunks", chunks)
			return
		}
		written++
		putSwept(fmt.Sprint("during", chunks), now+3600)
	})
	n, err := tb.SweepExpired(ctx)
	if err != nil || n != items/2 {
		t.Fatalf("SweepExpired = %d, %v; want %d", n, err, items/2)
	}
	if chunks < items/8 {
		t.Fatalf("the sweep walked %d items in %d chunks; want chunks of at most 8", items, chunks)
	}
	out, err := tb.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: "swept"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := items/2 + written; len(out.Items) != want {
		t.Fatalf("after the sweep the table holds %d items; want %d (the unexpired and the %d written during it)", len(out.Items), want, written)
	}
	for _, it := range out.Items {
		if exp, _ := strconv.ParseInt(it["ttl"].Number(), 10, 64); exp < now {
			t.Fatalf("expired item %v survived the sweep", it["pk"])
		}
	}
}
