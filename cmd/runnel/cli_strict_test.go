package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/engine"
)

// TestReadOnlyCommandsRefuseADataDirectoryThatDoesNotExist: the commands
// that read or act on what is stored (status, mappings, dlq, get, put,
// logs, resolve, replay, cluster status, streams describe/delete)
// refuse a --data-dir that does not exist, naming it and the two ways to
// reach a runnel (--data-dir, --nats-url), and create nothing; serve and
// streams create still creates it. AWS answers a request for a resource
// that is not there with an error (ResourceNotFoundException), never with
// an empty success. The embedded engine created the missing directory,
// so `cd /tmp/x && runnel status` or `runnel --data-dir typo status`
// printed "0 of 0 alarms" with exit status 0 and left an empty directory.
func TestReadOnlyCommandsRefuseADataDirectoryThatDoesNotExist(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "typo")
	for _, args := range [][]string{
		{"status"}, {"mappings"}, {"dlq", "list"}, {"dlq", "show", "q-dlq"}, {"dlq", "purge", "q-dlq", "--yes"},
		{"get", "--stream", "s", "--shard", "shardId-000000000000"}, {"put", "--stream", "s", "--partition-key", "k", "--data", "x"},
		{"logs", "fn"}, {"resolve", "-"}, {"cluster", "status"}, {"streams", "describe", "s"}, {"streams", "delete", "s"},
	} {
		_, _, err := runCLI(t, "", append([]string{"--data-dir", missing}, args...)...)
		if err == nil || !strings.Contains(err.Error(), missing) || !strings.Contains(err.Error(), "no such directory") || !strings.Contains(err.Error(), "--nats-url") {
			t.Errorf("runnel %s on a missing data directory: %v; want an error naming %s and --nats-url", strings.Join(args, " "), err, missing)
		}
		if _, err := os.Stat(missing); err == nil {
			t.Fatalf("runnel %s created the missing data directory %s", strings.Join(args, " "), missing)
		}
	}
	if _, _, err := runCLI(t, "", "--data-dir", missing, "streams", "create", "s"); err != nil {
		t.Fatalf("streams create on a new data directory: %v", err)
	}
	out, _, err := runCLI(t, "", "--data-dir", missing, "streams", "list")
	if err != nil || strings.TrimSpace(out) != "s" {
		t.Fatalf("streams list after streams create: %q, %v", out, err)
	}
}

// TestUnknownSubcommandsAndExtraArgumentsFail: a command line runnel does
// not understand exits non-zero with an error naming what it did not
// understand, as the AWS CLI does ("aws: error: argument operation:
// Invalid choice", exit status 252). `runnel dlq lsit` printed dlq's help
// with exit status 0, `runnel status extra` ran status, and `runnel bench
// extra` ran the whole benchmark.
func TestUnknownSubcommandsAndExtraArgumentsFail(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dlq", "lsit"}, `unknown command "lsit" for "runnel dlq"`},
		{[]string{"streams", "lst"}, `unknown command "lst" for "runnel streams"`},
		{[]string{"cluster", "stat"}, `unknown command "stat" for "runnel cluster"`},
		{[]string{"dlq"}, `missing subcommand for "runnel dlq": one of archive, list, purge, redrive, show`},
		{[]string{"streams"}, `missing subcommand for "runnel streams"`},
		{[]string{"cluster"}, `missing subcommand for "runnel cluster": one of status`},
		{[]string{"status", "extra"}, `unknown command "extra" for "runnel status"`},
		{[]string{"mappings", "extra"}, `unknown command "extra" for "runnel mappings"`},
		{[]string{"streams", "list", "extra"}, `unknown command "extra" for "runnel streams list"`},
		{[]string{"bench", "extra"}, `unknown command "extra" for "runnel bench"`},
		{[]string{"serve", "extra"}, `unknown command "extra" for "runnel serve"`},
	} {
		_, _, err := runCLI(t, "", append([]string{"--data-dir", dir}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("runnel %s: %v; want an error %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// TestBenchRefusesAJetStreamARunnelServeUses: bench's mapping scenario
// runs a handler that exists only in the bench process, so a `runnel
// serve` on the same JetStream (holding a presence lease node.<id>) that
// takes the mapping's shards can never run it: bench --nats-url refuses
// such a JetStream at once, as demo does (demo/nodeset.RefuseShared). It
// used to hang, the serve holding the bench's mapping.
func TestBenchRefusesAJetStreamARunnelServeUses(t *testing.T) {
	srv, err := engine.StartServer(engine.ServerConfig{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := srv.ClientURL()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	serving, err := runnel.Open(context.Background(), runnel.Config{Engine: engine.Config{NATSURL: url, DataDir: t.TempDir(), Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer serving.Close()
	_, _, err = runCLI(t, "", "--nats-url", url, "bench", "--records", "10", "--only", "runnel-mapping")
	if err == nil || !strings.Contains(err.Error(), "bench: another runnel process is serving") {
		t.Fatalf("bench against a served JetStream: %v; want the refusal", err)
	}
}
