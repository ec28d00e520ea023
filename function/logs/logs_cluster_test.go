package logs_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function/logs"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A log group deleted through one node is created again by the next
// event another node writes to it, with the event's stream, as Lambda
// creates a function's log group and stream again when it writes after
// DeleteLogGroup (monitoring-cloudwatchlogs: Lambda creates the group
// /aws/lambda/<function> and a stream per environment when they do not
// exist). Each process used to remember the groups and streams it had
// created, and only the deleting process forgot: the other node kept
// writing under a group that no longer existed (GroupExists false on
// both nodes, Streams empty) and nobody saw those events.
func TestALogGroupDeletedOnOneNodeIsCreatedAgainByAnother(t *testing.T) {
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	ctx := context.Background()
	sa, err := logs.Open(ctx, a.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := logs.Open(ctx, b.Engine, nil)
	if err != nil {
		t.Fatal(err)
	}
	const g = "/aws/lambda/cl"
	if err := sb.Put(ctx, g, "s1", "first"); err != nil {
		t.Fatal(err)
	}
	if ok, err := sa.DeleteGroup(ctx, g); !ok || err != nil {
		t.Fatalf("DeleteGroup through A: %v %v", ok, err)
	}
	testenv.Eventually(t, 10*time.Second, "node B to learn that the group was deleted", func() bool { return !logs.Knows(sb, g) })
	if err := sb.Put(ctx, g, "s1", "after the delete, same environment"); err != nil {
		t.Fatal(err)
	}
	if err := sb.Put(ctx, g, "s2", "after the delete, new environment"); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]*logs.Store{"A": sa, "B": sb} {
		if ok, err := s.GroupExists(ctx, g); !ok || err != nil {
			t.Fatalf("node %s: the group written after its deletion does not exist (%v)", name, err)
		}
		streams, err := s.Streams(ctx, g, "")
		if err != nil || len(streams) != 2 {
			t.Fatalf("node %s: streams %+v (%v), want s1 and s2", name, streams, err)
		}
		var msgs []string
		s.Read(ctx, g, "", 0, func(ev logs.Event) bool { msgs = append(msgs, ev.Message); return true })
		if len(msgs) != 2 || msgs[0] != "after the delete, same environment" {
			t.Fatalf("node %s: events %q, want the 2 written after the delete", name, msgs)
		}
	}
}
