package nodeset

import (
	"context"
	"log/slog"
	"strings"
)

// Killer kills one node with SIGKILL and starts it again on the same
// directory and ports, once, in the background. The node is the one
// holding the most of Keys (lease keys, as in `runnel cluster status`:
// "esm.<uuid>", "dynamodb"); a tie goes to the holder of the earlier key.
// When no node holds any of them now (a handover under way), node-0 is
// killed.
type Killer struct {
	Set  *Set
	Keys []string
	// What names the work in the progress line ("the flights mapping").
	What string
	Say  func(format string, args ...any)
	Log  *slog.Logger

	started bool
	kills   int
	done    chan struct{}
	failed  error
}

// Start starts the kill and the restart in the background.
func (k *Killer) Start(ctx context.Context) {
	k.started, k.done = true, make(chan struct{})
	go func() {
		defer close(k.done)
		cl := k.Set.Proc
		i := k.target(ctx)
		if k.Say != nil {
			k.Say("killing %s with SIGKILL (it runs %s)", cl.Nodes[i].Name, k.What)
		}
		cl.Kill(i)
		k.kills++
		if err := cl.Start(ctx, i); err != nil {
			k.failed = err
			return
		}
		if k.Say != nil {
			k.Say("%s restarted and serving again", cl.Nodes[i].Name)
		}
	}()
}

// Started reports whether Start was called.
func (k *Killer) Started() bool { return k.started }

// Kills is the number of nodes killed; read it once Finished.
func (k *Killer) Kills() int { return k.kills }

func (k *Killer) target(ctx context.Context) int {
	m, err := k.Set.RN.Engine.Leases(ctx)
	if err == nil {
		var held map[string]string
		if held, err = m.Holders(ctx); err == nil {
			best, most := -1, 0
			for _, key := range k.Keys {
				for i, n := range k.Set.Proc.Nodes {
					if !strings.HasPrefix(held[key], n.Name+"-") {
						continue
					}
					count := 0
					for _, other := range k.Keys {
						if strings.HasPrefix(held[other], n.Name+"-") {
							count++
						}
					}
					if count > most {
						best, most = i, count
					}
				}
			}
			if best >= 0 {
				return best
			}
		}
	}
	if k.Log != nil {
		k.Log.Warn("demo: no node holds the work now; killing node-0", "keys", k.Keys, "err", err)
	}
	return 0
}

// Finished reports whether the kill and the restart are over (true when
// none was asked for).
func (k *Killer) Finished(asked bool) bool {
	if !asked {
		return true
	}
	if !k.started {
		return false
	}
	select {
	case <-k.done:
		return true
	default:
		return false
	}
}

// Err is the restart's error, once Finished.
func (k *Killer) Err() error {
	if k.Finished(k.started) {
		return k.failed
	}
	return nil
}
