package demo_test

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/demo"
	"github.com/runnel-dev/runnel/demo/fanout"
	"github.com/runnel-dev/runnel/demo/trades"
	"github.com/runnel-dev/runnel/engine"
)

// TestDemoRefusesAJetStreamAnotherRunnelServes: the demo registers its
// function's handler in its own process, so a mapping shard another
// runnel process (a `runnel serve` on the same JetStream, holding a
// presence lease node.<id>) takes could never run it (README: the demo
// reconciles every record put). `demo --nats-url` pointed at a serving
// JetStream used to panic on the queue mapping's nil Queue status, miscount
// the Retry-DLQ and leave its functions and mappings behind, polling
// deleted sources; now it refuses with an error saying why. Against a
// JetStream no runnel serves it runs, reconciles, counts the Retry-DLQ from
// the queue's messages, and deletes everything it created (mappings,
// function, stream, queues).
func TestDemoRefusesAJetStreamAnotherRunnelServes(t *testing.T) {
	srv, err := engine.StartServer(engine.ServerConfig{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	url := srv.ClientURL()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := demo.Config{DataPath: "../data/flights-3m.parquet", Records: 5000, DataDir: t.TempDir(), NATSURL: url,
		PoisonRecords: 3, FlakyRecords: 2, FailureRate: 0.05, BatchSize: 200, Logger: quiet}

	serving, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{NATSURL: url, DataDir: t.TempDir(), Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = demo.Run(ctx, cfg)
	_, terr := trades.Run(ctx, trades.Config{DataDir: t.TempDir(), NATSURL: url, Logger: quiet})
	_, ferr := fanout.Run(ctx, fanout.Config{DataDir: t.TempDir(), NATSURL: url, Logger: quiet})
	serving.Close()
	for what, err := range map[string]error{"demo": err, "demo trades": terr, "demo fanout": ferr} {
		if err == nil || !strings.Contains(err.Error(), "another runnel process is serving") {
			t.Fatalf("%s against a served JetStream: err %v, want the refusal", what, err)
		}
	}

	res, err := demo.Run(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := res.Check(); err != nil {
		t.Fatal(err)
	}
	if res.ToFailureDestination < res.Unrecoverable {
		t.Fatalf("sent to the Retry-DLQ %d < unrecoverable %d (which all went through it)", res.ToFailureDestination, res.Unrecoverable)
	}

	// demo trades deletes what it created too: a second run creates it
	// again (it used to fail: Stream trades already exists).
	for i := range 2 {
		if _, err := trades.Run(ctx, trades.Config{Messages: 3000, Rate: -1, DataDir: t.TempDir(), NATSURL: url, Logger: quiet}); err != nil {
			t.Fatalf("demo trades run %d: %v", i+1, err)
		}
	}

	after, err := runnel.Open(ctx, runnel.Config{Engine: engine.Config{NATSURL: url, DataDir: t.TempDir(), Logger: quiet}})
	if err != nil {
		t.Fatal(err)
	}
	defer after.Close()
	streams, _ := after.Streams.ListStreams(ctx)
	queues, _ := after.Queues.ListQueues(ctx, "flights-")
	tables := after.Tables.ListTables(ctx)
	if ms, fns := after.Mappings.ListEventSourceMappings(), after.Functions.ListFunctions(); len(ms)+len(fns)+len(streams)+len(queues)+len(tables) != 0 {
		t.Fatalf("left behind: mappings %d, functions %d, streams %v, queues %v, tables %v", len(ms), len(fns), streams, queues, tables)
	}
}
