package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
)

// A JetStream API request sent while its stream has no leader (the
// leader's node just died) is never answered, not even after a new leader
// is elected; AskAgain, which asks again every AskEvery, gets the new
// leader's answer. Seen as PutRecords calls and shard readers that waited
// the 30 s cluster API timeout after a node's SIGKILL (issue 13).
func TestARequestToAStreamWhoseLeaderDiedIsAnsweredWhenAskedAgain(t *testing.T) {
	es, ctx := cluster3(t)
	st, err := es[0].EnsureStream(ctx, jetstream.StreamConfig{Name: "ASK", Subjects: []string{"ask.>"}, Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	var leader string
	for leader == "" {
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.Cluster != nil {
			leader = info.Cluster.Leader
		}
	}
	dead := int(leader[strings.LastIndexByte(leader, '-')+1] - '0')
	live := (dead + 1) % 3
	es[dead].Crash()

	once := make(chan error, 1)
	go func() {
		c, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		_, err := es[live].JS.Stream(c, "ASK")
		once <- err
	}()
	start := time.Now()
	got, err := engine.AskAgain(ctx, func(c context.Context) (jetstream.Stream, error) { return es[live].JS.Stream(c, "ASK") })
	if err != nil {
		t.Fatalf("AskAgain after the leader's node died: %v", err)
	}
	t.Logf("answered %v after the kill, by leader %s", time.Since(start).Round(time.Millisecond), got.CachedInfo().Cluster.Leader)
	if l := got.CachedInfo().Cluster.Leader; l == leader || l == "" {
		t.Errorf("answer names leader %q; want a new one (the dead was %s)", l, leader)
	}
	// The premise: the same request asked once, at the same moment, is
	// still unanswered 20 s later (an election takes 5 to 15 s).
	if err := <-once; !errors.Is(err, context.DeadlineExceeded) {
		t.Logf("the request asked once was answered too (%v): this server version answers it", err)
	}
}
