package nodeset

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
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
	// MetaLeader kills the JetStream meta leader's node instead; the
	// failover then covers every lease it held (but its own node lease).
	MetaLeader bool

	mu       sync.Mutex // guards started and done: Start may run in its own goroutine
	started  bool
	done     chan struct{}
	kills    int
	failed   error
	killedAt time.Time
	failover time.Duration // 0: not measured (no lease held, or not moved within moveWait)
}

// moveWait bounds how long the Killer watches for the killed node's
// leases to be held again.
const moveWait = 2 * time.Minute

// Start starts the kill and the restart in the background, once.
func (k *Killer) Start(ctx context.Context) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.started {
		return
	}
	k.started, k.done = true, make(chan struct{})
	go func() {
		defer close(k.done)
		cl := k.Set.Proc
		i, held := k.target(ctx)
		if k.Say != nil {
			what := "it runs " + k.What
			if k.MetaLeader {
				what = "the JetStream meta leader"
			}
			k.Say("killing %s with SIGKILL (%s; %d leases)", cl.Nodes[i].Name, what, len(held))
		}
		cl.Kill(i)
		k.killedAt = time.Now()
		k.kills++
		var wg sync.WaitGroup
		wg.Go(func() { k.watchMoves(ctx, held) })
		defer wg.Wait()
		if err := cl.Start(ctx, i); err != nil {
			k.failed = err
			return
		}
		if k.Say != nil {
			k.Say("%s restarted and serving again", cl.Nodes[i].Name)
		}
	}()
}

// watchMoves measures the failover: how long after the kill every lease
// of held (lease key -> the killed node's holder name) is held by another
// holder (a survivor, or the restarted node under its new name). It polls
// the leases every 100 ms, at most moveWait.
func (k *Killer) watchMoves(ctx context.Context, held map[string]string) {
	if len(held) == 0 {
		return
	}
	for time.Since(k.killedAt) < moveWait && ctx.Err() == nil {
		now, err := k.Set.RN.Engine.LeaseHolders(ctx)
		moved := err == nil
		for key, old := range held {
			if h := now[key]; h == "" || h == old {
				moved = false
			}
		}
		if moved {
			k.failover = time.Since(k.killedAt)
			if k.Say != nil {
				k.Say("the killed node's %d leases held again %.1f s after the kill", len(held), k.failover.Seconds())
			}
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// KilledAt is when the node was killed (zero without a kill); read it
// once Finished.
func (k *Killer) KilledAt() time.Time { return k.killedAt }

// Failover is how long after the kill the killed node's leases of Keys
// were all held again (false: it held none, or they were not within 2
// minutes); read it once Finished.
func (k *Killer) Failover() (time.Duration, bool) { return k.failover, k.failover > 0 }

// Started reports whether Start was called.
func (k *Killer) Started() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.started
}

// StartAt starts the kill once at() reports true, polling it every 10 ms
// in its own goroutine until then or until ctx ends: the kill comes when
// the run reaches its point, whatever the caller's loop is waiting on.
func (k *Killer) StartAt(ctx context.Context, at func() bool) {
	go func() {
		for ctx.Err() == nil && !k.Started() {
			if at() {
				k.Start(ctx)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
}

// Kills is the number of nodes killed; read it once Finished.
func (k *Killer) Kills() int { return k.kills }

// target is the node holding the most leases of Keys: a key itself, or
// one of its per-shard leases ("<key>.<shardId>", a stream mapping's
// shards); a tie goes to the holder of the earlier key. It also returns
// those leases of the node (lease key -> its holder name).
func (k *Killer) target(ctx context.Context) (int, map[string]string) {
	i := -1
	if k.MetaLeader {
		i = k.metaLeader(ctx)
	}
	if i < 0 {
		i = k.pick(ctx)
	}
	held, _ := k.Set.RN.Engine.LeaseHolders(ctx)
	mine := map[string]string{}
	for lk, holder := range held {
		if !strings.HasPrefix(holder, k.Set.Proc.Nodes[i].Name+"-") {
			continue
		}
		if k.MetaLeader && !strings.HasPrefix(lk, "node.") {
			mine[lk] = holder
		}
		for _, key := range k.Keys {
			if lk == key || strings.HasPrefix(lk, key+".") {
				mine[lk] = holder
			}
		}
	}
	return i, mine
}

// metaLeader is the index of the JetStream meta leader's node, or -1
// (logged) when it cannot be told.
func (k *Killer) metaLeader(ctx context.Context) int {
	info, err := k.Set.RN.Engine.MetaLeader(ctx)
	for i, n := range k.Set.Proc.Nodes {
		if err == nil && n.Name == info.Leader {
			return i
		}
	}
	if k.Log != nil {
		k.Log.Warn("demo: the JetStream meta leader is not known; killing the node running the work", "leader", info.Leader, "err", err)
	}
	return -1
}

func (k *Killer) pick(ctx context.Context) int {
	held, err := k.Set.RN.Engine.LeaseHolders(ctx)
	if err == nil {
		nodes := k.Set.Proc.Nodes
		count := make([]int, len(nodes))
		first := make([]int, len(nodes)) // the index in Keys of the node's earliest key, +1
		for lk, holder := range held {
			for ki, key := range k.Keys {
				if lk != key && !strings.HasPrefix(lk, key+".") {
					continue
				}
				for i, n := range nodes {
					if strings.HasPrefix(holder, n.Name+"-") {
						count[i]++
						if first[i] == 0 || ki+1 < first[i] {
							first[i] = ki + 1
						}
					}
				}
			}
		}
		best := -1
		for i := range nodes {
			if count[i] > 0 && (best < 0 || count[i] > count[best] || count[i] == count[best] && first[i] < first[best]) {
				best = i
			}
		}
		if best >= 0 {
			return best
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
	k.mu.Lock()
	done := k.done
	k.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return true
	default:
		return false
	}
}

// Err is the restart's error, once Finished.
func (k *Killer) Err() error {
	if k.Finished(k.Started()) {
		return k.failed
	}
	return nil
}
