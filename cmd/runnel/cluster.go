package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/runnel-dev/runnel"
)

func clusterCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{Use: "cluster", Short: "The runnel nodes sharing this JetStream and the work each runs"}
	status := &cobra.Command{
		Use:   "status",
		Short: "Nodes, the leases each holds (queues, mappings) with their lag, and the JetStream leaders",
		RunE: g.with(func(cmd *cobra.Command, args []string, rn *runnel.Runnel) error {
			return printCluster(cmd.Context(), cmd.OutOrStdout(), rn)
		}),
	}
	cmd.AddCommand(status)
	return cmd
}

// printCluster writes the nodes (presence leases), the work each holds,
// and each runnel stream's JetStream leader and replicas.
func printCluster(ctx context.Context, w io.Writer, rn *runnel.Runnel) error {
	held, err := rn.Engine.LeaseHolders(ctx)
	if err != nil {
		return err
	}
	work := map[string][]string{}
	for k, node := range held {
		if !strings.HasPrefix(k, "node.") {
			work[node] = append(work[node], k)
		}
	}
	var nodes []string
	for k, node := range held {
		if strings.HasPrefix(k, "node.") {
			nodes = append(nodes, node)
		}
	}
	sort.Strings(nodes)
	fmt.Fprintf(w, "%d runnel nodes\n", len(nodes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "node\tleases\twork")
	for _, n := range nodes {
		sort.Strings(work[n])
		fmt.Fprintf(tw, "%s\t%d\t%s\n", n, len(work[n]), strings.Join(work[n], " "))
	}
	tw.Flush()
	if mi, err := rn.Engine.MetaLeader(ctx); err == nil {
		fmt.Fprintf(w, "\nJetStream meta leader: %s (as seen by %s, %d peers)\n", cmp.Or(mi.Leader, "none (an election is under way)"), mi.Node, mi.Peers)
	} else {
		fmt.Fprintln(w, "\nJetStream meta leader: unknown (no embedded cluster node answered)")
	}
	fmt.Fprintln(w, "\nmappings")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mapping\tfunction\tstate\tnodes\tmax iterator age")
	for _, c := range rn.Mappings.ListEventSourceMappings() {
		var age int64
		if st, err := rn.Mappings.Status(c.UUID); err == nil {
			for _, s := range st.Shards {
				age = max(age, s.IteratorAgeMs)
			}
		}
		node := mappingNodes(held, c.UUID)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d ms\n", c.UUID, c.FunctionName, c.State, node, age)
	}
	tw.Flush()
	fmt.Fprintln(w, "\nJetStream streams")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "stream\tleader\treplicas (current)")
	names := rn.Engine.JS.StreamNames(ctx)
	for name := range names.Name() {
		st, err := rn.Engine.JS.Stream(ctx, name)
		if err != nil {
			continue
		}
		info := st.CachedInfo()
		leader, reps := "-", "-"
		if ci := info.Cluster; ci != nil {
			leader = ci.Leader
			reps = replicaList(ci.Replicas)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", name, leader, reps)
	}
	tw.Flush()
	return names.Err()
}

// mappingNodes names the nodes running mapping id: the holder of its
// lease "esm.<uuid>" (a queue mapping), or of its shards' leases
// "esm.<uuid>.<shardId>" with how many each holds; "-" for none.
func mappingNodes(held map[string]string, id string) string {
	shards := map[string]int{}
	var nodes []string
	for k, node := range held {
		if k == "esm."+id {
			nodes = append(nodes, node)
		} else if strings.HasPrefix(k, "esm."+id+".") {
			if shards[node] == 0 {
				nodes = append(nodes, node)
			}
			shards[node]++
		}
	}
	if len(nodes) == 0 {
		return "-"
	}
	sort.Strings(nodes)
	for i, n := range nodes {
		if k := shards[n]; k > 0 {
			nodes[i] = fmt.Sprintf("%s (%d shard%s)", n, k, map[bool]string{true: "s"}[k > 1])
		}
	}
	return strings.Join(nodes, ", ")
}

func replicaList(rs []*jetstream.PeerInfo) string {
	var out []string
	for _, r := range rs {
		s := r.Name
		if r.Current {
			s += " (current)"
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return "-"
	}
	return strings.Join(out, ", ")
}
