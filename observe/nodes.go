package observe

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runnel-dev/runnel"
)

// Nodes is the runnel processes sharing this JetStream (their presence
// leases) and the work each runs (the other leases it holds): GET
// /api/nodes and the page's "Nodes" card.
type Nodes struct {
	Time  time.Time   `json:"time"`
	Nodes []NodeState `json:"nodes"`
}

// NodeState is one node and its work.
type NodeState struct {
	Node string `json:"node"`
	// Self is the process answering.
	Self bool `json:"self"`
	// Serves names the in-memory state it serves for every node ("queues",
	// "tables") and the timers it runs ("scheduler", "eventbridge-schedules", "eventbridge-replays").
	Serves []string `json:"serves"`
	// Mappings are the event source mappings it runs (a queue mapping,
	// or at least one shard of a stream mapping): "<function> <uuid>",
	// each once, sorted.
	Mappings []string `json:"mappings"`
	// Shards are the shards of stream mappings it runs, one lease each
	// ("esm.<uuid>.<shardId>"): "<function> <uuid> <shardId>", sorted.
	Shards []string `json:"shards"`
}

// leaseWork names what each non-mapping lease means.
var leaseWork = map[string]string{"sqs": "queues", "dynamodb": "tables"}

// TakeNodes reads the leases bucket: one KV read per lease.
func TakeNodes(ctx context.Context, rn *runnel.Runnel) (*Nodes, error) {
	m, err := rn.Engine.Leases(ctx)
	if err != nil {
		return nil, err
	}
	held, err := m.Holders(ctx)
	if err != nil {
		return nil, err
	}
	fn := map[string]string{}
	for _, c := range rn.Mappings.ListEventSourceMappings() {
		fn[c.UUID] = c.FunctionName
	}
	byNode := map[string]*NodeState{}
	node := func(id string) *NodeState {
		if byNode[id] == nil {
			byNode[id] = &NodeState{Node: id, Self: id == m.Node(), Serves: []string{}, Mappings: []string{}, Shards: []string{}}
		}
		return byNode[id]
	}
	for key, holder := range held {
		switch {
		case strings.HasPrefix(key, "node."):
			node(holder)
		case strings.HasPrefix(key, "esm."):
			id, shard, isShard := strings.Cut(strings.TrimPrefix(key, "esm."), ".")
			n := node(holder)
			if !slices.Contains(n.Mappings, fn[id]+" "+id) {
				n.Mappings = append(n.Mappings, fn[id]+" "+id)
			}
			if isShard {
				n.Shards = append(n.Shards, fn[id]+" "+id+" "+shard)
			}
		default:
			work := leaseWork[key]
			if work == "" {
				work = key
			}
			node(holder).Serves = append(node(holder).Serves, work)
		}
	}
	out := &Nodes{Time: time.Now(), Nodes: []NodeState{}}
	for _, n := range byNode {
		sort.Strings(n.Serves)
		sort.Strings(n.Mappings)
		sort.Strings(n.Shards)
		out.Nodes = append(out.Nodes, *n)
	}
	sort.Slice(out.Nodes, func(i, j int) bool { return out.Nodes[i].Node < out.Nodes[j].Node })
	return out, nil
}

func (w *web) nodes(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	n, err := TakeNodes(ctx, w.rn)
	if err != nil {
		writeError(rw, http.StatusServiceUnavailable, err)
		return
	}
	writeJSON(rw, http.StatusOK, n)
}
