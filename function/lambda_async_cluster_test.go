package function_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// aliasNames lists the aliases a process knows of function name
// (ListAliases reads what the process knows; no read-through).
func aliasNames(t *testing.T, s *function.Service, name string) []string {
	t.Helper()
	as, err := s.ListAliases(name, "")
	if err != nil {
		return nil
	}
	var out []string
	for _, a := range as {
		out = append(out, a.Name+"->"+a.FunctionVersion)
	}
	return out
}

// versionNumbers lists the published versions a process knows of function
// name (ListVersions reads what the process knows; no read-through).
func versionNumbers(s *function.Service, name string) []string {
	cs, err := s.ListVersions(name)
	if err != nil {
		return nil
	}
	var out []string
	for _, c := range cs[1:] {
		out = append(out, c.Version)
	}
	return out
}

// docs/cluster.md: "Any node answers any call". A version published and
// an alias created, updated (a traffic shift, a rollback) or deleted
// through one node are seen by the other nodes sharing its JetStream, and
// so is a version deleted. Before, the versions and aliases buckets were
// read once, at a node's start (function/versions.go loadVersions), and
// only the functions' bucket was watched: on node B, h:1 and h:prod were
// ResourceNotFound (sync and Event invocations), and an UpdateAlias
// through A never reached B.
func TestAVersionOrAliasChangedThroughAnotherNodeIsSeenByThisOne(t *testing.T) {
	ctx := context.Background()
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	create(t, a.Functions, function.Config{FunctionName: "h", Environment: map[string]string{"COLOR": "red"}})
	testenv.Eventually(t, 10*time.Second, "node B sees h", func() bool { _, ok := listed(b.Functions, "h"); return ok })
	mustPublish(t, a.Functions, "h")
	if _, err := a.Functions.PutFunction(ctx, function.Config{FunctionName: "h", Handler: echoHandler, Environment: map[string]string{"COLOR": "blue"}}); err != nil {
		t.Fatal(err)
	}
	mustPublish(t, a.Functions, "h")
	// Read-through: a call on B resolves a version it has not seen yet.
	if c := colorOf(t, b.Functions, "h:2"); c != "blue" {
		t.Fatalf("node B: h:2 has COLOR %q, want blue", c)
	}
	testenv.Eventually(t, 10*time.Second, "node B lists versions 1 and 2", func() bool {
		return slices.Equal(versionNumbers(b.Functions, "h"), []string{"1", "2"})
	})
	if _, err := a.Functions.CreateAlias(ctx, "h", function.Alias{Name: "prod", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	if c := colorOf(t, b.Functions, "h:prod"); c != "red" {
		t.Fatalf("node B: h:prod has COLOR %q, want red (version 1)", c)
	}
	testenv.Eventually(t, 10*time.Second, "node B lists prod", func() bool {
		return slices.Equal(aliasNames(t, b.Functions, "h"), []string{"prod->1"})
	})
	// A traffic shift through A, then a rollback: B follows both.
	if _, err := a.Functions.UpdateAlias(ctx, "h", "prod", function.AliasUpdate{FunctionVersion: ptr("2")}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "node B routes prod to version 2", func() bool {
		f, err := b.Functions.GetFunction("h:prod")
		return err == nil && f.Config().Environment["COLOR"] == "blue"
	})
	if _, err := a.Functions.UpdateAlias(ctx, "h", "prod", function.AliasUpdate{FunctionVersion: ptr("1")}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "node B routes prod back to version 1", func() bool {
		f, err := b.Functions.GetFunction("h:prod")
		return err == nil && f.Config().Environment["COLOR"] == "red"
	})
	// Deletions: the alias, then version 2.
	if err := a.Functions.DeleteAlias(ctx, "h", "prod"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "node B forgets prod", func() bool {
		_, err := b.Functions.GetFunction("h:prod")
		return errors.Is(err, awserr.ErrResourceNotFound) && len(aliasNames(t, b.Functions, "h")) == 0
	})
	if err := a.Functions.DeleteVersion(ctx, "h", "2"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "node B forgets version 2", func() bool {
		_, err := b.Functions.GetFunction("h:2")
		return errors.Is(err, awserr.ErrResourceNotFound) && slices.Equal(versionNumbers(b.Functions, "h"), []string{"1"})
	})
	// B's own changes reach A the same way.
	if _, err := b.Functions.CreateAlias(ctx, "h", function.Alias{Name: "live", FunctionVersion: "1"}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "node A lists live", func() bool {
		return slices.Equal(aliasNames(t, a.Functions, "h"), []string{"live->1"})
	})
	// DeleteFunction removes every version and alias on the other node: a
	// new h of that name has none there.
	if err := a.Functions.DeleteFunction(ctx, "h"); err != nil {
		t.Fatal(err)
	}
	create(t, a.Functions, function.Config{FunctionName: "h", Environment: map[string]string{"COLOR": "green"}})
	testenv.Eventually(t, 10*time.Second, "node B: the new h without the old one's versions and aliases", func() bool {
		c, ok := listed(b.Functions, "h")
		_, err1 := b.Functions.GetFunction("h:1")
		_, errL := b.Functions.GetFunction("h:live")
		return ok && c.Environment["COLOR"] == "green" && errors.Is(err1, awserr.ErrResourceNotFound) &&
			errors.Is(errL, awserr.ErrResourceNotFound) && len(aliasNames(t, b.Functions, "h")) == 0
	})
}
