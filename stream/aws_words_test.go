package stream_test

// Rules of GetRecords' copies, GetShardIterator's and ListShards' error
// words, each as AWS has them.

import (
	"errors"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// TestAGetRecordsCallerChangingDataChangesNoStoredRecord: a stored record
// never changes (API_GetRecords, API_Record: Data is the record's blob as
// put). GetRecords handed out the process's shared tail cache bytes, so a
// caller writing into Record.Data changed the record for every later
// reader in the process ("hello" read back as "XXXXX").
func TestAGetRecordsCallerChangingDataChangesNoStoredRecord(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "mut", 1)
	putRecord(t, rn, "mut", "k", "hello")
	it := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "mut", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
	for round := range 2 { // the same iterator again, then a new one
		o, err := rn.Streams.GetRecords(t.Context(), it, 0)
		if err != nil || len(o.Records) != 1 {
			t.Fatalf("GetRecords = %+v, %v; want one record", o, err)
		}
		if got := string(o.Records[0].Data); got != "hello" {
			t.Fatalf("round %d: Data = %q, want %q (a reader's write reached the store)", round, got, "hello")
		}
		copy(o.Records[0].Data, "XXXXX")
	}
	if got := dataOf(readShard(t, rn, "mut", 0)); got != "hello" {
		t.Errorf("a new iterator reads %q, want %q", got, "hello")
	}
}

// TestAStartingSequenceNumberOfAnotherStreamSaysItDidNotComeFromThisStream:
// GetShardIterator's StartingSequenceNumber errors are Kinesis's
// InvalidArgumentException words (kinesalite actions/getShardIterator.js,
// written against AWS): another shard's number "Invalid
// StartingSequenceNumber. It encodes shardId-..., while it was used in a
// call to a shard with shardId-..."; another stream's (also the deleted
// stream of the same name) "StartingSequenceNumber <n> used in
// GetShardIterator on shard <id> in stream <name> under account <acct> is
// invalid because it did not come from this stream." (clients match these
// words to reset a checkpoint); any other "... is invalid.". runnel
// answered in its own words ("StartingSequenceNumber: "..." is not a
// sequence number of this stream").
func TestAStartingSequenceNumberOfAnotherStreamSaysItDidNotComeFromThisStream(t *testing.T) {
	clk := newClock()
	rn := testenv.Start(t, testenv.Options{Clock: clk})
	acct := rn.Engine.AccountID()
	createStream(t, rn, "s", 2)
	old := putToShard(t, rn, "s", 0, "old")
	old1 := putToShard(t, rn, "s", 1, "old")
	if err := rn.Streams.DeleteStream(t.Context(), "s"); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Second)
	createStream(t, rn, "s", 2)
	own := putToShard(t, rn, "s", 0, "new")
	iter := func(shard int, seq string) error {
		_, err := rn.Streams.GetShardIterator(t.Context(), stream.GetShardIteratorInput{StreamName: "s", ShardID: stream.ShardID(shard), ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: seq})
		return err
	}
	whole := func(t *testing.T, err error, want string) {
		t.Helper()
		wantErr(t, err, awserr.ErrInvalidArgument)
		var ae *awserr.Error
		if err == nil || !errors.As(err, &ae) || ae.Message != want {
			t.Errorf("error = %v\nwant message %q", err, want)
		}
	}
	t.Run("the deleted stream's number", func(t *testing.T) {
		whole(t, iter(0, old), "StartingSequenceNumber "+old+" used in GetShardIterator on shard shardId-000000000000 in stream s under account "+acct+" is invalid because it did not come from this stream.")
	})
	t.Run("another shard's number", func(t *testing.T) {
		whole(t, iter(1, own), "Invalid StartingSequenceNumber. It encodes shardId-000000000000, while it was used in a call to a shard with shardId-000000000001")
		whole(t, iter(0, old1), "Invalid StartingSequenceNumber. It encodes shardId-000000000001, while it was used in a call to a shard with shardId-000000000000")
	})
	for _, bad := range []string{"abc", "1", own[:len(own)-1]} {
		t.Run("not a sequence number: "+bad, func(t *testing.T) {
			whole(t, iter(0, bad), "StartingSequenceNumber "+bad+" used in GetShardIterator on shard shardId-000000000000 in stream s under account "+acct+" is invalid.")
		})
	}
	if err := iter(0, own); err != nil {
		t.Errorf("own sequence number refused: %v", err)
	}
}

// TestANextTokenWithAnotherParameterIsRefusedNamingIt: ListShards refuses
// NextToken with a parameter that names the stream or the start, one
// message per parameter, InvalidArgumentException "NextToken and
// StreamName cannot be provided together." (likewise ExclusiveStartShardId,
// ShardFilter, StreamCreationTimestamp; API_ListShards, quoted in
// erlcloud#595, amazon-kinesis-scaling-utils#82, apache/beam#33478).
// runnel gave one combined message naming all four.
func TestANextTokenWithAnotherParameterIsRefusedNamingIt(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	createStream(t, rn, "ls", 3)
	o, err := rn.Streams.ListShardsPage(t.Context(), stream.ListShardsInput{StreamName: "ls", MaxResults: 1})
	if err != nil || o.NextToken == "" {
		t.Fatalf("ListShardsPage = %+v, %v; want a NextToken", o, err)
	}
	tok := o.NextToken
	for _, c := range []struct {
		param string
		in    stream.ListShardsInput
	}{
		{"StreamName", stream.ListShardsInput{NextToken: tok, StreamName: "ls"}},
		{"ExclusiveStartShardId", stream.ListShardsInput{NextToken: tok, ExclusiveStartShardID: stream.ShardID(0)}},
		{"StreamCreationTimestamp", stream.ListShardsInput{NextToken: tok, StreamCreationTimestamp: epoch0}},
		{"ShardFilter", stream.ListShardsInput{NextToken: tok, ShardFilter: &stream.ShardFilter{Type: stream.AtLatest}}},
	} {
		_, err := rn.Streams.ListShardsPage(t.Context(), c.in)
		var ae *awserr.Error
		want := "NextToken and " + c.param + " cannot be provided together."
		if !errors.Is(err, awserr.ErrInvalidArgument) || !errors.As(err, &ae) || ae.Message != want {
			t.Errorf("%s: error = %v, want InvalidArgumentException %q", c.param, err, want)
		}
	}
	if o, err := rn.Streams.ListShardsPage(t.Context(), stream.ListShardsInput{NextToken: tok, MaxResults: 5}); err != nil || len(o.Shards) != 2 {
		t.Errorf("NextToken with MaxResults = %+v, %v; want the two shards left", o, err)
	}
}
