package nodeset

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/lease"
)

// RefuseShared returns an error when another runnel process is serving the
// JetStream at natsURL: one holding a presence lease "node.<id>" (every
// process that runs mappings holds one, `runnel serve` included). A demo
// registers its functions' handlers in its own process, so a mapping
// shard another process took could never run them: the demo must run
// embedded (no --nats-url) or against a JetStream no runnel serve uses.
// what names the demo in the error ("demo", "demo trades"). It opens a
// connection of its own and closes it; a nil error when natsURL is "".
func RefuseShared(ctx context.Context, natsURL, what string, log *slog.Logger) error {
	if natsURL == "" {
		return nil
	}
	e, err := engine.Open(ctx, engine.Config{NATSURL: natsURL, Logger: log})
	if err != nil {
		return err
	}
	defer e.Close()
	m, err := e.Leases(ctx)
	if err != nil {
		return err
	}
	held, err := m.HoldersOf(ctx, "node.")
	if err != nil {
		return err
	}
	var others []string
	for _, holder := range held {
		if holder != m.Node() && !slices.Contains(others, holder) {
			others = append(others, holder)
		}
	}
	if len(others) == 0 {
		return nil
	}
	slices.Sort(others)
	return fmt.Errorf("%s: another runnel process is serving %s (node %s): the %s runs its own pipeline, whose functions' handlers exist only in its own process, "+
		"so it cannot share mapping work with that process; run it embedded (without --nats-url) or against a JetStream no runnel serve uses "+
		"(a crashed process's presence lease expires after %s)",
		what, natsURL, strings.Join(others, ", "), what, lease.DefaultTTL)
}
