package function_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func mustPublish(t *testing.T, s *function.Service, name string) string {
	t.Helper()
	f, err := s.PublishVersion(context.Background(), name, nil)
	if err != nil {
		t.Fatalf("PublishVersion(%s): %v", name, err)
	}
	return f.Config().Version
}

func colorOf(t *testing.T, s *function.Service, ref string) string {
	t.Helper()
	f, err := s.GetFunction(ref)
	if err != nil {
		t.Fatalf("GetFunction(%s): %v", ref, err)
	}
	return f.Config().Environment["COLOR"]
}

// A published version is a snapshot: changing $LATEST does not change it,
// it survives a restart, and version numbers are never reused.
func TestPublishedVersionDoesNotChangeWithLatest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	s := rn.Functions
	create(t, s, function.Config{FunctionName: "f", Environment: map[string]string{"COLOR": "red"}})
	if v := mustPublish(t, s, "f"); v != "1" {
		t.Fatalf("first version %q, want 1", v)
	}
	if _, err := s.PutFunction(ctx, function.Config{FunctionName: "f", Handler: echoHandler, Environment: map[string]string{"COLOR": "blue"}}); err != nil {
		t.Fatal(err)
	}
	if c := colorOf(t, s, "f:1"); c != "red" {
		t.Fatalf("version 1 after $LATEST changed: COLOR %q, want red", c)
	}
	if c := colorOf(t, s, "f"); c != "blue" {
		t.Fatalf("$LATEST: COLOR %q, want blue", c)
	}
	if f, _ := s.GetFunction(arnPrefix + "f:1"); f == nil || f.Config().FunctionArn != arnPrefix+"f:1" || f.Config().ExecutedVersion() != "1" {
		t.Fatalf("version 1 by its ARN: %+v", f)
	}
	if _, err := s.GetFunction("f:7"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("GetFunction(f:7): %v, want ResourceNotFound", err)
	}
	if err := rn.Close(); err != nil {
		t.Fatal(err)
	}

	s = testenv.Start(t, testenv.Options{Dir: dir}).Functions
	if c := colorOf(t, s, "f:1"); c != "red" {
		t.Fatalf("version 1 after a restart: COLOR %q, want red", c)
	}
	if v := mustPublish(t, s, "f"); v != "2" {
		t.Fatalf("version after a restart %q, want 2", v)
	}
	if err := s.DeleteVersion(ctx, "f", "2"); err != nil {
		t.Fatal(err)
	}
	if v := mustPublish(t, s, "f"); v != "3" {
		t.Fatalf("version after deleting 2: %q, want 3 (numbers are not reused)", v)
	}
	if err := s.DeleteVersion(ctx, "f", function.Latest); !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Fatalf("DeleteVersion($LATEST): %v", err)
	}
	vs, err := s.ListVersions("f")
	if err != nil || len(vs) != 3 || vs[0].ExecutedVersion() != function.Latest || vs[1].Version != "1" || vs[2].Version != "3" {
		t.Fatalf("ListVersions: %+v, %v", vs, err)
	}
}

// An alias with RoutingConfig sends its weight's share of invocations to
// the additional version: 10,000 picks of a seeded source land within
// ±5% of the weights (deterministic: the seed fixes every pick).
func TestAliasRoutingSplitsByWeight(t *testing.T) {
	ctx := context.Background()
	s := startService(t, "")
	create(t, s, function.Config{FunctionName: "f"})
	mustPublish(t, s, "f")
	if _, err := s.PutFunction(ctx, function.Config{FunctionName: "f", Handler: echoHandler, Timeout: 9}); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, s, "f")
	s.SetRandom(rand.New(rand.NewPCG(1, 2)).Float64)
	a, err := s.CreateAlias(ctx, "f", function.Alias{Name: "live", FunctionVersion: "1",
		RoutingConfig: &function.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"2": 0.3}}})
	if err != nil || a.AliasArn != arnPrefix+"f:live" || a.RevisionId == "" {
		t.Fatalf("CreateAlias: %+v, %v", a, err)
	}
	count := map[string]int{}
	for range 10000 {
		f, err := s.GetFunction("f:live")
		if err != nil {
			t.Fatal(err)
		}
		if f.Config().FunctionArn != a.AliasArn {
			t.Fatalf("an alias's function has FunctionArn %s, want the alias's", f.Config().FunctionArn)
		}
		count[f.Config().Version]++
	}
	if count["2"] < 2500 || count["2"] > 3500 || count["1"]+count["2"] != 10000 {
		t.Fatalf("10,000 invocations of weight 0.3 for version 2: %v", count)
	}

	// Describe (GetFunction's view) gives the primary version, always.
	for range 20 {
		if f, _ := s.Describe("f:live"); f.Config().Version != "1" {
			t.Fatalf("Describe(f:live) gave version %s", f.Config().Version)
		}
	}

	// RoutingConfig {} clears the weights; the alias follows its version.
	if _, err := s.UpdateAlias(ctx, "f", "live", function.AliasUpdate{FunctionVersion: ptr("2"), RoutingConfig: &function.AliasRoutingConfiguration{}}); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if f, _ := s.GetFunction("f:live"); f.Config().Version != "2" {
			t.Fatalf("after UpdateAlias to 2 without weights: version %s", f.Config().Version)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// The alias rules of CreateAlias and UpdateAlias, with AWS's errors.
func TestAliasErrors(t *testing.T) {
	ctx := context.Background()
	s := startService(t, "")
	create(t, s, function.Config{FunctionName: "f"})
	mustPublish(t, s, "f")
	weights := func(w map[string]float64) *function.AliasRoutingConfiguration {
		return &function.AliasRoutingConfiguration{AdditionalVersionWeights: w}
	}
	for _, c := range []struct {
		what  string
		alias function.Alias
		want  error
	}{
		{"a version that does not exist", function.Alias{Name: "a", FunctionVersion: "9"}, awserr.ErrResourceNotFound},
		{"a name of digits", function.Alias{Name: "12", FunctionVersion: "1"}, awserr.ErrInvalidParameterValue},
		{"a weight above 1", function.Alias{Name: "a", FunctionVersion: "1", RoutingConfig: weights(map[string]float64{"2": 1.5})}, awserr.ErrInvalidParameterValue},
		{"routing on $LATEST", function.Alias{Name: "a", FunctionVersion: function.Latest, RoutingConfig: weights(map[string]float64{"1": 0.5})}, awserr.ErrInvalidParameterValue},
		{"routing to its own version", function.Alias{Name: "a", FunctionVersion: "1", RoutingConfig: weights(map[string]float64{"1": 0.5})}, awserr.ErrInvalidParameterValue},
		{"routing to a missing version", function.Alias{Name: "a", FunctionVersion: "1", RoutingConfig: weights(map[string]float64{"5": 0.5})}, awserr.ErrResourceNotFound},
		{"two additional versions", function.Alias{Name: "a", FunctionVersion: "1", RoutingConfig: weights(map[string]float64{"2": 0.1, "3": 0.1})}, awserr.ErrInvalidParameterValue},
	} {
		if _, err := s.CreateAlias(ctx, "f", c.alias); !errors.Is(err, c.want) {
			t.Errorf("CreateAlias with %s: %v, want %v", c.what, err, c.want)
		}
	}
	a, err := s.CreateAlias(ctx, "f", function.Alias{Name: "prod", FunctionVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateAlias(ctx, "f", function.Alias{Name: "prod", FunctionVersion: "1"}); !errors.Is(err, awserr.ErrResourceConflict) {
		t.Errorf("CreateAlias twice: %v", err)
	}
	if _, err := s.UpdateAlias(ctx, "f", "prod", function.AliasUpdate{Description: ptr("x"), RevisionId: "stale"}); !errors.Is(err, awserr.ErrPreconditionFailed) {
		t.Errorf("UpdateAlias with a stale RevisionId: %v", err)
	}
	if _, err := s.UpdateAlias(ctx, "f", "prod", function.AliasUpdate{Description: ptr("x"), RevisionId: a.RevisionId}); err != nil {
		t.Errorf("UpdateAlias with its RevisionId: %v", err)
	}
	if err := s.DeleteVersion(ctx, "f", "1"); !errors.Is(err, awserr.ErrResourceConflict) {
		t.Errorf("DeleteVersion of a version an alias references: %v", err)
	}
	if err := s.DeleteAlias(ctx, "f", "prod"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetFunction("f:prod"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("GetFunction of a deleted alias: %v", err)
	}
	if err := s.DeleteVersion(ctx, "f", "1"); err != nil {
		t.Errorf("DeleteVersion once no alias references it: %v", err)
	}
}

// Reserved concurrency is the function's, all versions included: an
// invocation of version 1 holds the one slot $LATEST would take, and a
// version reports the function's reservation as it is now.
func TestReservedConcurrencyCoversVersions(t *testing.T) {
	ctx := context.Background()
	s := startService(t, "")
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	s.Registry().Register("versions_test.block", func(ctx context.Context, _ json.RawMessage) error {
		started <- struct{}{}
		<-release
		return nil
	})
	one := 1
	create(t, s, function.Config{FunctionName: "f", Handler: "versions_test.block", ReservedConcurrentExecutions: &one})
	mustPublish(t, s, "f")
	v1, _ := s.GetFunction("f:1")
	done := make(chan error, 1)
	go func() {
		_, err := v1.Invoke(ctx, []byte(`{}`))
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("version 1 did not run: %v", err)
	}
	latest, _ := s.GetFunction("f")
	// (A guard, not a time rule: were it not throttled, the invocation
	// would wait for release; it is canceled instead of hanging the test.)
	guard, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := latest.Invoke(guard, []byte(`{}`)); !errors.Is(err, awserr.ErrTooManyRequests) {
		t.Fatalf("$LATEST while version 1 holds the reserved slot: %v, want TooManyRequests", err)
	}
	two := 2
	if _, err := s.PutFunction(ctx, function.Config{FunctionName: "f", Handler: "versions_test.block", ReservedConcurrentExecutions: &two}); err != nil {
		t.Fatal(err)
	}
	if v, _ := s.GetFunction("f:1"); v.Config().ReservedConcurrentExecutions == nil || *v.Config().ReservedConcurrentExecutions != 2 {
		t.Fatalf("version 1 reports reserved concurrency %v, want the function's 2", v.Config().ReservedConcurrentExecutions)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
