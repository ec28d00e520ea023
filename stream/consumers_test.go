package stream_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

func register(t testing.TB, rn *runnel.Runnel, streamName, name string) *stream.Consumer {
	t.Helper()
	c, err := rn.Streams.RegisterStreamConsumer(t.Context(), streamName, name, nil)
	if err != nil {
		t.Fatalf("RegisterStreamConsumer %s: %v", name, err)
	}
	return c
}

func consumerStatus(t testing.TB, rn *runnel.Runnel, arn string) string {
	t.Helper()
	c, err := rn.Streams.DescribeStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: arn})
	if err != nil {
		t.Fatalf("DescribeStreamConsumer %s: %v", arn, err)
	}
	return c.ConsumerStatus
}

// A consumer is CREATING, then ACTIVE ConsumerStatusDelay later on the
// engine clock; deregistered, DELETING, then gone; its ARN is AWS's form
// with the creation time in epoch seconds.
func TestConsumerLifecycle(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "s", 1)
	c := register(t, rn, "s", "app.v1")
	want := fmt.Sprintf("arn:aws:kinesis:us-east-1:000000000000:stream/s/consumer/app.v1:%d", epoch0.Unix())
	if c.ConsumerARN != want || c.ConsumerStatus != stream.ConsumerCreating || c.StreamARN != rn.Streams.ARN("s") {
		t.Fatalf("registered %+v, want ARN %s CREATING", c, want)
	}
	clk.Advance(stream.ConsumerStatusDelay - time.Millisecond)
	if s := consumerStatus(t, rn, c.ConsumerARN); s != stream.ConsumerCreating {
		t.Fatalf("status %s just before %s, want CREATING", s, stream.ConsumerStatusDelay)
	}
	clk.Advance(time.Millisecond)
	if s := consumerStatus(t, rn, c.ConsumerARN); s != stream.ConsumerActive {
		t.Fatalf("status %s after %s, want ACTIVE", s, stream.ConsumerStatusDelay)
	}
	// By stream and name too.
	byName, err := rn.Streams.DescribeStreamConsumer(t.Context(), stream.ConsumerRef{StreamName: "s", ConsumerName: "app.v1"})
	if err != nil || byName.ConsumerARN != c.ConsumerARN {
		t.Fatalf("DescribeStreamConsumer by name: %+v, %v", byName, err)
	}
	// A name is unique while the consumer exists, DELETING included.
	_, err = rn.Streams.RegisterStreamConsumer(t.Context(), "s", "app.v1", nil)
	wantErr(t, err, awserr.ErrResourceInUse, "app.v1")
	if err := rn.Streams.DeregisterStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN}); err != nil {
		t.Fatal(err)
	}
	if s := consumerStatus(t, rn, c.ConsumerARN); s != stream.ConsumerDeleting {
		t.Fatalf("status %s after deregistering, want DELETING", s)
	}
	_, err = rn.Streams.RegisterStreamConsumer(t.Context(), "s", "app.v1", nil)
	wantErr(t, err, awserr.ErrResourceInUse)
	clk.Advance(stream.ConsumerStatusDelay)
	_, err = rn.Streams.DescribeStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN})
	wantErr(t, err, awserr.ErrResourceNotFound, "app.v1")
	// Registered again a second later: a new ARN; the old one names nothing.
	clk.Advance(time.Second)
	c2 := register(t, rn, "s", "app.v1")
	if c2.ConsumerARN == c.ConsumerARN {
		t.Fatalf("re-registered consumer has the old ARN %s", c.ConsumerARN)
	}
	_, err = rn.Streams.DescribeStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN})
	wantErr(t, err, awserr.ErrResourceNotFound)
	// API_DeleteStream: a stream with registered consumers is refused
	// unless EnforceConsumerDeletion (before, it was deleted with them).
	wantErr(t, rn.Streams.DeleteStream(t.Context(), "s"), awserr.ErrResourceInUse, "EnforceConsumerDeletion")
	if _, err := rn.Streams.DescribeStream(t.Context(), "s"); err != nil {
		t.Fatalf("the stream after a refused DeleteStream: %v", err)
	}
	// Deleting the stream so deletes its consumers: a new stream of the name has none.
	if err := rn.Streams.DeleteStreamEnforce(t.Context(), "s", true); err != nil {
		t.Fatal(err)
	}
	createStream(t, rn, "s", 1)
	o, err := rn.Streams.ListStreamConsumers(t.Context(), "s", "", 0, time.Time{})
	if err != nil || len(o.Consumers) != 0 {
		t.Fatalf("consumers of a re-created stream: %+v, %v", o, err)
	}
}

// A consumer ARN ends in its creation time in whole seconds. Before the
// fix a name deregistered and registered again within one second got the
// old consumer's ARN, so a client holding the old ARN reached the new
// consumer; AWS gives each registration a new ARN. The deregistered
// consumer now stays DELETING until its creation second has ended.
func TestAConsumerRegisteredAgainWithinItsSecondGetsANewARN(t *testing.T) {
	clk := clockwork.NewFakeClockAt(epoch0.Truncate(time.Second))
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "s", 1)
	c := register(t, rn, "s", "app")
	if err := rn.Streams.DeregisterStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(stream.ConsumerStatusDelay + 100*time.Millisecond)
	if s := consumerStatus(t, rn, c.ConsumerARN); s != stream.ConsumerDeleting {
		t.Fatalf("status %s within the creation second, want DELETING", s)
	}
	_, err := rn.Streams.RegisterStreamConsumer(t.Context(), "s", "app", nil)
	wantErr(t, err, awserr.ErrResourceInUse, "app")
	clk.Advance(time.Second - stream.ConsumerStatusDelay - 100*time.Millisecond)
	c2 := register(t, rn, "s", "app")
	if c2.ConsumerARN == c.ConsumerARN {
		t.Fatalf("registered again: the old ARN %s", c.ConsumerARN)
	}
	_, err = rn.Streams.DescribeStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN})
	wantErr(t, err, awserr.ErrResourceNotFound)
}

// AWS's limits: names of [a-zA-Z0-9_.-]{1,128}, 5 CREATING at once, 20 a
// stream; ListStreamConsumers pages in registration order.
func TestConsumerLimitsAndPaging(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "s", 1)
	for _, bad := range []string{"", "a b", strings.Repeat("x", 129)} {
		_, err := rn.Streams.RegisterStreamConsumer(t.Context(), "s", bad, nil)
		wantErr(t, err, awserr.ErrInvalidArgument, "ConsumerName", "1..128")
	}
	_, err := rn.Streams.RegisterStreamConsumer(t.Context(), "nope", "c", nil)
	wantErr(t, err, awserr.ErrResourceNotFound, "nope")
	for i := range stream.MaxCreatingConsumers {
		register(t, rn, "s", fmt.Sprintf("c%02d", i))
	}
	_, err = rn.Streams.RegisterStreamConsumer(t.Context(), "s", "one-too-many-creating", nil)
	wantErr(t, err, awserr.ErrLimitExceeded, "CREATING")
	for i := stream.MaxCreatingConsumers; i < stream.MaxConsumersPerStream; i++ {
		if i%stream.MaxCreatingConsumers == 0 {
			clk.Advance(stream.ConsumerStatusDelay)
		}
		register(t, rn, "s", fmt.Sprintf("c%02d", i))
	}
	clk.Advance(stream.ConsumerStatusDelay)
	_, err = rn.Streams.RegisterStreamConsumer(t.Context(), "s", "the-21st", nil)
	wantErr(t, err, awserr.ErrLimitExceeded, "20")

	var names []string
	token := ""
	for page := 0; ; page++ {
		o, err := rn.Streams.ListStreamConsumers(t.Context(), "s", token, 7, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		if len(o.Consumers) > 7 {
			t.Fatalf("page %d has %d consumers, MaxResults 7", page, len(o.Consumers))
		}
		for _, c := range o.Consumers {
			names = append(names, c.ConsumerName)
		}
		if token = o.NextToken; token == "" {
			break
		}
	}
	if len(names) != stream.MaxConsumersPerStream || names[0] != "c00" || names[19] != "c19" {
		t.Fatalf("listed %v", names)
	}
	o, err := rn.Streams.ListStreamConsumers(t.Context(), "s", "", 1, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(stream.NextTokenLifetime + time.Second)
	_, err = rn.Streams.ListStreamConsumers(t.Context(), "s", o.NextToken, 1, time.Time{})
	wantErr(t, err, awserr.ErrExpiredNextToken)
	_, err = rn.Streams.ListStreamConsumers(t.Context(), "s", "", stream.MaxListConsumersResults+1, time.Time{})
	wantErr(t, err, awserr.ErrInvalidArgument, "MaxResults")
}

// activeConsumer starts a runnel on a fake clock with stream name of
// shards shards and an ACTIVE consumer of it.
func activeConsumer(t testing.TB, name string, shards int) (*runnel.Runnel, *clockwork.FakeClock, *stream.Consumer) {
	t.Helper()
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, name, shards)
	c := register(t, rn, name, "efo")
	clk.Advance(stream.ConsumerStatusDelay)
	return rn, clk, c
}

func subscribe(t testing.TB, rn *runnel.Runnel, arn, shard string, pos stream.StartingPosition) *stream.Subscription {
	t.Helper()
	sub, err := rn.Streams.SubscribeToShard(t.Context(), arn, shard, pos)
	if err != nil {
		t.Fatalf("SubscribeToShard %s %s: %v", shard, pos.Type, err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// nextEvent returns the subscription's next event, or false once it ended.
func nextEvent(t testing.TB, sub *stream.Subscription) (stream.SubscribeToShardEvent, bool) {
	t.Helper()
	select {
	case ev, ok := <-sub.Events():
		return ev, ok
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return stream.SubscribeToShardEvent{}, false
}

// heartbeatEvent advances the clock by SubscriptionHeartbeat until the
// subscription sends an event. The subscription re-arms its heartbeat
// after it sent its previous event, which may be after the test went on:
// an advance before the re-arm fires nothing (CI's race run waited 10 s
// for that event). At most 10 advances: 50 s of the 5-minute lifetime.
func heartbeatEvent(t testing.TB, clk *clockwork.FakeClock, sub *stream.Subscription) (stream.SubscribeToShardEvent, bool) {
	t.Helper()
	for range 10 {
		clk.Advance(stream.SubscriptionHeartbeat)
		select {
		case ev, ok := <-sub.Events():
			return ev, ok
		case <-time.After(time.Second):
		}
	}
	t.Fatal("no heartbeat event after 10 advances of SubscriptionHeartbeat")
	return stream.SubscribeToShardEvent{}, false
}

// collect reads events until it has n records (or more); it checks that each
// event's ContinuationSequenceNumber is its last record's.
func collect(t testing.TB, sub *stream.Subscription, n int) (recs []stream.Record, cont string) {
	t.Helper()
	for len(recs) < n {
		ev, ok := nextEvent(t, sub)
		if !ok {
			t.Fatalf("subscription ended after %d of %d records: %v", len(recs), n, sub.Err())
		}
		if len(ev.Records) > 0 && ev.ContinuationSequenceNumber != ev.Records[len(ev.Records)-1].SequenceNumber {
			t.Fatalf("ContinuationSequenceNumber %s, want the event's last record's %s", ev.ContinuationSequenceNumber, ev.Records[len(ev.Records)-1].SequenceNumber)
		}
		recs, cont = append(recs, ev.Records...), ev.ContinuationSequenceNumber
	}
	return recs, cont
}

func putN(t testing.TB, rn *runnel.Runnel, name string, from, n int) {
	t.Helper()
	for i := from; i < from+n; {
		var entries []stream.PutRecordsRequestEntry
		for ; i < from+n && len(entries) < stream.MaxPutRecords; i++ {
			entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint("k", i%7), Data: []byte(fmt.Sprint(i))})
		}
		o, err := rn.Streams.PutRecords(t.Context(), name, entries)
		if err != nil || o.FailedRecordCount != 0 {
			t.Fatalf("PutRecords: %+v, %v", o, err)
		}
	}
}

func wantData(t testing.TB, recs []stream.Record, from int) {
	t.Helper()
	for i, r := range recs {
		if string(r.Data) != fmt.Sprint(from+i) {
			t.Fatalf("record %d is %q, want %d (in put order)", i, r.Data, from+i)
		}
	}
}

// Every record in order, the ones put during the subscription too; then
// AFTER_SEQUENCE_NUMBER the continuation goes on with the next record,
// none repeated (a second later: one call per second); the other starting
// positions start where GetShardIterator's do.
func TestSubscribeToShardDeliversEveryRecordInOrder(t *testing.T) {
	rn, clk, c := activeConsumer(t, "s", 1)
	sh := stream.ShardID(0)
	putN(t, rn, "s", 0, 1200)
	sub := subscribe(t, rn, c.ConsumerARN, sh, stream.StartingPosition{Type: stream.TrimHorizon})
	recs, _ := collect(t, sub, 1200)
	wantData(t, recs, 0)
	putN(t, rn, "s", 1200, 3)
	more, cont := collect(t, sub, 3)
	wantData(t, more, 1200)
	if len(recs) != 1200 || len(more) != 3 {
		t.Fatalf("got %d and %d records, want 1200 and 3", len(recs), len(more))
	}
	sub.Close()

	putN(t, rn, "s", 1203, 2)
	// One SubscribeToShard per second per consumer and shard.
	after := stream.StartingPosition{Type: stream.AfterSequenceNumber, SequenceNumber: cont}
	_, err := rn.Streams.SubscribeToShard(t.Context(), c.ConsumerARN, sh, after)
	wantErr(t, err, awserr.ErrLimitExceeded, "Rate exceeded")
	clk.Advance(stream.SubscribeInterval)
	sub = subscribe(t, rn, c.ConsumerARN, sh, after)
	next, _ := collect(t, sub, 2)
	wantData(t, next, 1203)
	if len(next) != 2 {
		t.Fatalf("after the continuation: %d records, want the 2 new ones", len(next))
	}
	// An event without records still carries the continuation: a
	// heartbeat after SubscriptionHeartbeat of silence.
	ev, ok := heartbeatEvent(t, clk, sub)
	if !ok || len(ev.Records) != 0 || ev.ContinuationSequenceNumber != next[1].SequenceNumber || ev.MillisBehindLatest != 0 {
		t.Fatalf("heartbeat event %+v (open %v), want no records and continuation %s", ev, ok, next[1].SequenceNumber)
	}
	sub.Close()

	clk.Advance(stream.SubscribeInterval)
	sub = subscribe(t, rn, c.ConsumerARN, sh, stream.StartingPosition{Type: stream.AtSequenceNumber, SequenceNumber: recs[5].SequenceNumber})
	at, _ := collect(t, sub, 1)
	wantData(t, at[:1], 5)
	sub.Close()

	clk.Advance(stream.SubscribeInterval)
	sub = subscribe(t, rn, c.ConsumerARN, sh, stream.StartingPosition{Type: stream.Latest})
	putN(t, rn, "s", 1205, 1)
	latest, _ := collect(t, sub, 1)
	wantData(t, latest, 1205)
	sub.Close()

	_, err = rn.Streams.SubscribeToShard(t.Context(), c.ConsumerARN, sh, stream.StartingPosition{Type: "NEWEST"})
	wantErr(t, err, awserr.ErrInvalidArgument, "ShardIteratorType")
	_, err = rn.Streams.SubscribeToShard(t.Context(), c.ConsumerARN, stream.ShardID(7), stream.StartingPosition{Type: stream.TrimHorizon})
	wantErr(t, err, awserr.ErrResourceNotFound)
}

// No reads before ACTIVE; one subscription per consumer and shard: a
// second within 5 s is ResourceInUseException, one 5 s later takes over
// (the first ends with ResourceInUseException); deregistering the
// consumer ends its subscriptions with ResourceNotFoundException.
func TestSubscribeToShardOneSubscriptionPerConsumerAndShard(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	createStream(t, rn, "s", 2)
	c := register(t, rn, "s", "efo")
	th := stream.StartingPosition{Type: stream.TrimHorizon}
	_, err := rn.Streams.SubscribeToShard(t.Context(), c.ConsumerARN, stream.ShardID(0), th)
	wantErr(t, err, awserr.ErrResourceInUse, "CREATING")
	clk.Advance(stream.ConsumerStatusDelay)

	first := subscribe(t, rn, c.ConsumerARN, stream.ShardID(0), th)
	clk.Advance(stream.SubscriptionTakeoverAfter - time.Millisecond)
	_, err = rn.Streams.SubscribeToShard(t.Context(), c.ConsumerARN, stream.ShardID(0), th)
	wantErr(t, err, awserr.ErrResourceInUse, "Another active subscription")
	// Another shard, or another consumer of the shard, is not in use.
	other := subscribe(t, rn, c.ConsumerARN, stream.ShardID(1), th)
	c2 := register(t, rn, "s", "efo2")
	clk.Advance(stream.ConsumerStatusDelay)
	subscribe(t, rn, c2.ConsumerARN, stream.ShardID(0), th)

	takeover := subscribe(t, rn, c.ConsumerARN, stream.ShardID(0), th) // 5 s after the first
	drain(t, first)
	wantErr(t, first.Err(), awserr.ErrResourceInUse, "took over")

	if err := rn.Streams.DeregisterStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN}); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []*stream.Subscription{takeover, other} {
		drain(t, sub)
		wantErr(t, sub.Err(), awserr.ErrResourceNotFound, "deregistered")
	}
}

// drain reads a subscription until it ends.
func drain(t testing.TB, sub *stream.Subscription) {
	t.Helper()
	for {
		if _, ok := nextEvent(t, sub); !ok {
			return
		}
	}
}

// At the end of a closed shard the last event has ChildShards and no
// ContinuationSequenceNumber, and the subscription ends; the children go
// on with the records put after the split.
func TestSubscribeToShardEndsWithChildShards(t *testing.T) {
	rn, _, c := activeConsumer(t, "s", 1)
	putN(t, rn, "s", 0, 40)
	sub := subscribe(t, rn, c.ConsumerARN, stream.ShardID(0), stream.StartingPosition{Type: stream.TrimHorizon})
	recs, _ := collect(t, sub, 40)
	wantData(t, recs, 0)
	if _, err := rn.Streams.SplitShard(t.Context(), "s", stream.ShardID(0), "170141183460469231731687303715884105728"); err != nil {
		t.Fatal(err)
	}
	ev, ok := nextEvent(t, sub)
	if !ok || len(ev.Records) != 0 || ev.ContinuationSequenceNumber != "" || len(ev.ChildShards) != 2 ||
		ev.ChildShards[0].ShardID != stream.ShardID(1) || ev.ChildShards[1].ShardID != stream.ShardID(2) ||
		ev.ChildShards[0].ParentShards[0] != stream.ShardID(0) {
		t.Fatalf("last event %+v (open %v), want ChildShards 1 and 2 and no continuation", ev, ok)
	}
	if _, ok := nextEvent(t, sub); ok || sub.Err() != nil {
		t.Fatalf("the subscription goes on after the shard's end (err %v)", sub.Err())
	}
	putN(t, rn, "s", 40, 20)
	n := 0
	for _, child := range ev.ChildShards {
		csub := subscribe(t, rn, c.ConsumerARN, child.ShardID, stream.StartingPosition{Type: stream.TrimHorizon})
		first, _ := nextEvent(t, csub)
		n += len(first.Records)
	}
	if n == 0 {
		t.Fatal("the children delivered nothing")
	}
}

// MillisBehindLatest: how far behind the tip an event is, 0 once the
// subscription has caught up.
func TestSubscribeToShardMillisBehindLatest(t *testing.T) {
	rn, clk, c := activeConsumer(t, "s", 1)
	putN(t, rn, "s", 0, 12000)
	clk.Advance(time.Minute)
	sub := subscribe(t, rn, c.ConsumerARN, stream.ShardID(0), stream.StartingPosition{Type: stream.TrimHorizon})
	ev, _ := nextEvent(t, sub)
	if ev.MillisBehindLatest != time.Minute.Milliseconds() {
		t.Fatalf("first event of %d records: MillisBehindLatest %d, want %d", len(ev.Records), ev.MillisBehindLatest, time.Minute.Milliseconds())
	}
	n := len(ev.Records)
	for n < 12000 {
		ev, _ = nextEvent(t, sub)
		n += len(ev.Records)
	}
	if ev.MillisBehindLatest != 0 {
		t.Fatalf("the event that caught up: MillisBehindLatest %d, want 0", ev.MillisBehindLatest)
	}
}

// A subscription lasts SubscriptionLifetime on the engine clock, then
// ends without an error.
func TestSubscriptionLastsFiveMinutes(t *testing.T) {
	rn, clk, c := activeConsumer(t, "s", 1)
	sub := subscribe(t, rn, c.ConsumerARN, stream.ShardID(0), stream.StartingPosition{Type: stream.Latest})
	// The first heartbeat proves the subscription's timers run.
	clk.Advance(stream.SubscriptionHeartbeat)
	if _, ok := nextEvent(t, sub); !ok {
		t.Fatalf("ended at the first heartbeat: %v", sub.Err())
	}
	clk.Advance(stream.SubscriptionLifetime - stream.SubscriptionHeartbeat - time.Millisecond)
	select {
	case _, ok := <-sub.Events():
		if !ok {
			t.Fatalf("ended before %s: %v", stream.SubscriptionLifetime, sub.Err())
		}
	case <-time.After(200 * time.Millisecond):
	}
	clk.Advance(time.Millisecond)
	drain(t, sub)
	if err := sub.Err(); err != nil {
		t.Fatalf("ended with %v, want nil", err)
	}
}
