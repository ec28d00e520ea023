package stream

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

// The rules of a reshard against the other writes of a stream's
// description: tags, retention, settings. The steps between are reached
// through Service.hook (at), so every interleaving here is exact.

// newHookedService opens a real engine (fake clock: nothing goes stale)
// and the streams service on it, with hook called at the steps of at.
func newHookedService(t *testing.T, hook func(step string)) *Service {
	t.Helper()
	ctx := t.Context()
	clk := clockwork.NewFakeClockAt(time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	eng, err := engine.Open(ctx, engine.Config{DataDir: t.TempDir(), Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	s, err := New(ctx, eng)
	if err != nil {
		t.Fatal(err)
	}
	s.hook = hook
	return s
}

// checkResharded fails unless stream name is ACTIVE with open open shards,
// every closed shard sealed (EndingSequenceNumber), and scalings
// UpdateShardCount calls counted.
func checkResharded(t *testing.T, s *Service, name string, open, scalings int) *StreamDescription {
	t.Helper()
	d, err := s.DescribeStream(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if d.StreamStatus != StatusActive || d.OpenShardCount() != open || len(d.Scalings) != scalings {
		t.Errorf("after the reshard: StreamStatus %s, %d open shards, %d scalings counted; want ACTIVE, %d, %d",
			d.StreamStatus, d.OpenShardCount(), len(d.Scalings), open, scalings)
	}
	for _, sh := range d.Shards {
		if !sh.Open() && sh.SequenceNumberRange.EndingSequenceNumber == "" {
			t.Errorf("closed shard %s has no EndingSequenceNumber", sh.ShardID)
		}
	}
	return d
}

// wantNotActive fails unless err is ResourceInUseException in Kinesis's
// words for a stream in state UPDATING.
func wantNotActive(t *testing.T, s *Service, op string, err error) {
	t.Helper()
	want := "Stream r under account " + s.eng.AccountID() + " not ACTIVE, instead in state UPDATING"
	if !awserrIs(err, awserr.ErrResourceInUse) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s while the stream is UPDATING: %v, want ResourceInUseException %q", op, err, want)
	}
}

// TestADescriptionWriteIsRefusedWhileTheStreamIsUpdating: AddTagsToStream,
// RemoveTagsFromStream, Increase/DecreaseStreamRetentionPeriod,
// Enable/DisableEnhancedMonitoring, Start/StopStreamEncryption and
// UpdateStreamMode list ResourceInUseException: "For successful
// operation, the resource must be in the ACTIVE state" (Kinesis model,
// awsapi/models/kinesis-2013-12-02.json.gz), and UpdateShardCount keeps
// the stream UPDATING until it is done (API_UpdateShardCount). Each is
// tried between the rounds of an UpdateShardCount (4 to 6: splits, then
// merges); each is refused, and the reshard ends ACTIVE with 6 open
// shards, all closed ones sealed. Before, a tag or retention write
// between rounds succeeded and broke the reshard's compare-and-set: it
// failed with "was changed by another request", leaving the stream
// UPDATING with the rounds' shards open and the parents unsealed.
func TestADescriptionWriteIsRefusedWhileTheStreamIsUpdating(t *testing.T) {
	var s *Service
	rounds := 0
	s = newHookedService(t, func(step string) {
		if step != "round" {
			return
		}
		rounds++
		ctx := context.Background()
		wantNotActive(t, s, "AddTagsToStream", s.AddTagsToStream(ctx, "r", map[string]string{"team": "a"}))
		wantNotActive(t, s, "RemoveTagsFromStream", s.RemoveTagsFromStream(ctx, "r", []string{"keep"}))
		wantNotActive(t, s, "UpdateRetentionPeriod", s.UpdateRetentionPeriod(ctx, "r", 48))
		_, err := s.EnableEnhancedMonitoring(ctx, "r", []string{"ALL"})
		wantNotActive(t, s, "EnableEnhancedMonitoring", err)
		_, err = s.DisableEnhancedMonitoring(ctx, "r", []string{"ALL"})
		wantNotActive(t, s, "DisableEnhancedMonitoring", err)
		wantNotActive(t, s, "StartStreamEncryption", s.StartStreamEncryption(ctx, "r", EncryptionKMS, "alias/k"))
		wantNotActive(t, s, "StopStreamEncryption", s.StopStreamEncryption(ctx, "r", EncryptionKMS, "alias/k"))
		wantNotActive(t, s, "UpdateStreamMode", s.UpdateStreamMode(ctx, "r", StreamModeOnDemand))
		_, err = s.UpdateShardCount(ctx, "r", 8, UniformScaling)
		wantNotActive(t, s, "UpdateShardCount", err)
	})
	ctx := t.Context()
	if _, err := s.CreateStream(ctx, CreateStreamInput{StreamName: "r", ShardCount: 4, Tags: map[string]string{"keep": "1"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.UpdateShardCount(ctx, "r", 6, UniformScaling); err != nil {
		t.Fatalf("UpdateShardCount(4 to 6): %v", err)
	}
	if rounds < 2 {
		t.Errorf("%d rounds, want at least 2", rounds)
	}
	d := checkResharded(t, s, "r", 6, 1)
	if len(d.Tags) != 1 || d.Tags["keep"] != "1" || d.RetentionPeriodHours != DefaultRetentionPeriodHours ||
		d.ShardLevelMetrics != nil || d.EncryptionType != "" || d.Mode() != StreamModeProvisioned {
		t.Errorf("a refused write changed the stream: %+v", d)
	}
	if err := s.AddTagsToStream(ctx, "r", map[string]string{"team": "a"}); err != nil {
		t.Errorf("AddTagsToStream once ACTIVE again: %v", err)
	}
}

// TestAReshardOutlivesAWriteThatReadBeforeIt: a reshard, once accepted,
// is not undone or left half-done by a concurrent write of the stream's
// description (API_UpdateShardCount: the stream is UPDATING until the
// update is complete, then ACTIVE). A tag written after the reshard read
// the description but before it marked the stream UPDATING wins; the
// reshard reads again, plans again and completes, the tag kept. A write
// prepared from the description as it was before the reshard (read while
// ACTIVE) and stored between the rounds fails its compare-and-set on the
// revision. Before, the first case failed UpdateShardCount with
// ResourceInUseException "was changed by another request" every time a
// tagger wrote steadily.
func TestAReshardOutlivesAWriteThatReadBeforeIt(t *testing.T) {
	var s *Service
	var stale []byte
	var staleRev uint64
	tagged, lateTried := false, false
	s = newHookedService(t, func(step string) {
		ctx := context.Background()
		switch {
		case step == "planned" && !tagged:
			tagged = true
			e, err := s.meta.Get(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			stale, staleRev = e.Value(), e.Revision()
			if err := s.AddTagsToStream(ctx, "r", map[string]string{"team": "a"}); err != nil {
				t.Errorf("AddTagsToStream while still ACTIVE: %v", err)
			}
		case step == "round" && !lateTried:
			lateTried = true
			if _, err := s.meta.Update(ctx, "r", stale, staleRev); err == nil {
				t.Error("a write that read the description before the reshard was stored between its rounds")
			}
		}
	})
	ctx := t.Context()
	if _, err := s.CreateStream(ctx, CreateStreamInput{StreamName: "r", ShardCount: 4}); err != nil {
		t.Fatal(err)
	}
	out, err := s.UpdateShardCount(ctx, "r", 6, UniformScaling)
	if err != nil {
		t.Fatalf("UpdateShardCount(4 to 6) after a tag write: %v", err)
	}
	if out.CurrentShardCount != 4 || out.TargetShardCount != 6 || !lateTried {
		t.Errorf("UpdateShardCount = %+v (late write tried: %v)", out, lateTried)
	}
	d := checkResharded(t, s, "r", 6, 1)
	if d.Tags["team"] != "a" {
		t.Errorf("the tag written before the reshard is lost: %v", d.Tags)
	}
}

// TestARetentionChangeAndAReshardDoNotOverlap: IncreaseStreamRetentionPeriod
// and DecreaseStreamRetentionPeriod need the stream ACTIVE (Kinesis model:
// ResourceInUseException) and the stream is UPDATING while its shards
// take the new retention (terraform-provider-aws waits for ACTIVE after
// IncreaseStreamRetentionPeriod, waitStreamUpdated). The retention change
// rewrites each shard's JetStream config with the metadata it read; a
// reshard sealing a shard in between would lose its seal. So while the
// retention change updates the shards, SplitShard is refused
// (ResourceInUseException, UPDATING), and the shard sealed by an earlier
// split keeps its seal and subjects. Before, the stream stayed ACTIVE
// during the rewrite, and a reshard could start and seal a shard whose
// config the retention change then wrote back without the seal.
func TestARetentionChangeAndAReshardDoNotOverlap(t *testing.T) {
	var s *Service
	seen := false
	s = newHookedService(t, func(step string) {
		if step != "retention" || seen {
			return
		}
		seen = true
		ctx := context.Background()
		d, err := s.DescribeStream(ctx, "r")
		if err != nil || d.StreamStatus != StatusUpdating || d.RetentionPeriodHours != 48 {
			t.Errorf("during the retention change: %+v %v, want UPDATING with 48 hours", d, err)
		}
		_, err = s.SplitShard(ctx, "r", ShardID(1), "200000000000000000000000000000000000000")
		wantNotActive(t, s, "SplitShard", err)
		wantNotActive(t, s, "UpdateRetentionPeriod", s.UpdateRetentionPeriod(ctx, "r", 72))
	})
	ctx := t.Context()
	d, err := s.CreateStream(ctx, CreateStreamInput{StreamName: "r", ShardCount: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SplitShard(ctx, "r", ShardID(0), "85070591730234615865843651857942052864"); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateRetentionPeriod(ctx, "r", 48); err != nil {
		t.Fatalf("UpdateRetentionPeriod(48): %v", err)
	}
	if !seen {
		t.Fatal("the retention change never reached its shard updates")
	}
	nd := checkResharded(t, s, "r", 3, 0)
	if nd.RetentionPeriodHours != 48 || len(nd.Shards) != 4 {
		t.Errorf("after: %d hours, %d shards; want 48, 4", nd.RetentionPeriodHours, len(nd.Shards))
	}
	js, err := s.eng.JS.Stream(ctx, jsName(d.ID, 0))
	if err != nil {
		t.Fatal(err)
	}
	cfg := js.CachedInfo().Config
	if cfg.Metadata[metaSeal] == "" || cfg.Metadata[metaClosing] == "" || len(cfg.Subjects) != 1 || cfg.MaxAge != 48*time.Hour {
		t.Errorf("sealed shard after the retention change: metadata %v, subjects %v, MaxAge %v", cfg.Metadata, cfg.Subjects, cfg.MaxAge)
	}
	if _, err := s.SplitShard(ctx, "r", ShardID(1), "200000000000000000000000000000000000000"); err != nil {
		t.Errorf("SplitShard once ACTIVE again: %v", err)
	}
}
