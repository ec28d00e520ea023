package stream_test

import (
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// The conformance suite holds the Kinesis rules that do not depend on
// restarting the engine. It runs once against the embedded engine and once
// against an external nats-server reached by URL (what `--nats-url` does),
// proving both backends share one code path.

func TestConformanceEmbedded(t *testing.T) {
	testenv.NeedsEmbedded(t, "the embedded variant of the suite; the suite itself runs on the cluster in TestConformanceExternalServer")
	runConformance(t, func(t *testing.T) *runnel.Runnel {
		rn := testenv.Start(t, testenv.Options{Clock: newClock()})
		if !rn.Engine.Embedded() {
			t.Fatal("engine is not embedded")
		}
		return rn
	})
}

// In the cluster-suite mode (testenv.ClusterSuiteEnv) the external server
// is the suite's 3-server cluster, with replicas 3.
func TestConformanceExternalServer(t *testing.T) {
	runConformance(t, func(t *testing.T) *runnel.Runnel {
		if testenv.ClusterSuite() {
			return testenv.Start(t, testenv.Options{Clock: newClock()})
		}
		srv, err := engine.StartServer(engine.ServerConfig{StoreDir: t.TempDir(), Listen: true})
		if err != nil {
			t.Fatalf("start external server: %v", err)
		}
		t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
		rn := testenv.Start(t, testenv.Options{NATSURL: srv.ClientURL(), Clock: newClock()})
		if rn.Engine.Embedded() {
			t.Fatal("engine is embedded although NATSURL was given")
		}
		return rn
	})
}

// runConformance runs every core case on a fresh runnel from start, whose
// engine clock must be a *clockwork.FakeClock.
func runConformance(t *testing.T, start func(t *testing.T) *runnel.Runnel) {
	cases := []struct {
		name string
		run  func(t *testing.T, rn *runnel.Runnel, clk *clockwork.FakeClock)
	}{
		{"CreateStream numbers shards from shardId-000000000000 and splits 0..2^128-1 evenly", confShardLayout},
		{"CreateStream validation names the field and its range", confCreateValidation},
		{"CreateStream of an existing name is ResourceInUseException", confDuplicate},
		{"DeleteStream removes the stream from Describe and ListStreams", confDeleteAndList},
		{"partition key is hashed with MD5 to a 128-bit key", confMD5Routing},
		{"ExplicitHashKey overrides the partition key", confExplicitHashKey},
		{"PartitionKey is 1..256 characters", confPartitionKeyLength},
		{"data plus partition key is at most 1 MiB", confRecordSize},
		{"PutRecords takes 1..500 entries", confPutRecordsCount},
		{"a malformed entry rejects the whole PutRecords call", confBadEntryRejectsAll},
		{"sequence numbers are decimal, unique and increasing per shard", confSequenceNumbers},
		{"records of one partition key keep their order", confOrderPerKey},
		{"ApproximateArrivalTimestamp is the arrival time in ms", confArrivalTimestamp},
		{"shard iterator types position the read", confIteratorTypes},
		{"AT_TIMESTAMP starts at the first record arrived at or after the timestamp", confAtTimestamp},
		{"GetRecords Limit and NextShardIterator continue without gaps or repeats", confLimitAndContinuation},
		{"GetRecords returns at most 10 MiB per call", confTenMiB},
		{"MillisBehindLatest is 0 when caught up and >0 when behind", confMillisBehind},
		{"a shard iterator expires after 5 minutes", confIteratorExpiry},
		{"invalid iterator requests are refused", confInvalidIteratorRequests},
		{"a sequence number of another stream is refused", confForeignSequenceNumber},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rn := start(t)
			c.run(t, rn, fakeClock(t, rn))
		})
	}
}

func confShardLayout(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	two128 := new(big.Int).Lsh(big.NewInt(1), 128)
	for _, n := range []int{1, 2, 3, 7, 16} {
		t.Run(fmt.Sprintf("ShardCount=%d", n), func(t *testing.T) {
			name := fmt.Sprintf("layout-%d", n)
			d, err := rn.Streams.CreateStream(t.Context(), stream.CreateStreamInput{StreamName: name, ShardCount: n})
			if err != nil {
				t.Fatal(err)
			}
			if d.StreamName != name || d.StreamStatus != stream.StatusActive || d.RetentionPeriodHours != 24 {
				t.Errorf("description = %+v, want name %s, ACTIVE, 24 h", d, name)
			}
			if want := "arn:aws:kinesis:us-east-1:000000000000:stream/" + name; d.StreamARN != want {
				t.Errorf("ARN = %q, want %q", d.StreamARN, want)
			}
			if len(d.Shards) != n {
				t.Fatalf("%d shards, want %d", len(d.Shards), n)
			}
			step := new(big.Int).Div(two128, big.NewInt(int64(n)))
			prevEnd := big.NewInt(-1)
			for i, sh := range d.Shards {
				if want := fmt.Sprintf("shardId-%012d", i); sh.ShardID != want {
					t.Errorf("shard %d id = %q, want %q", i, sh.ShardID, want)
				}
				lo, hi := shardRange(t, sh)
				if want := new(big.Int).Add(prevEnd, big.NewInt(1)); lo.Cmp(want) != 0 {
					t.Errorf("%s starts at %s, want previous end+1 = %s", sh.ShardID, lo, want)
				}
				size := new(big.Int).Sub(hi, lo)
				size.Add(size, big.NewInt(1))
				// Even split: every range is floor(2^128/n); the last one also
				// takes the remainder (< n).
				extra := new(big.Int).Sub(size, step)
				if i < n-1 && extra.Sign() != 0 || i == n-1 && (extra.Sign() < 0 || extra.Cmp(big.NewInt(int64(n))) >= 0) {
					t.Errorf("%s has %s keys, want %s (+remainder on the last shard)", sh.ShardID, size, step)
				}
				if !seqRE.MatchString(sh.SequenceNumberRange.StartingSequenceNumber) {
					t.Errorf("%s StartingSequenceNumber %q is not a sequence number", sh.ShardID, sh.SequenceNumberRange.StartingSequenceNumber)
				}
				prevEnd = hi
			}
			if lo, _ := shardRange(t, d.Shards[0]); lo.Sign() != 0 {
				t.Errorf("first shard starts at %s, want 0", lo)
			}
			if prevEnd.Cmp(maxHash) != 0 {
				t.Errorf("last shard ends at %s, want 2^128-1 = %s", prevEnd, maxHash)
			}
			got, err := rn.Streams.DescribeStream(t.Context(), name)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got.Shards) != fmt.Sprint(d.Shards) {
				t.Errorf("DescribeStream shards differ from CreateStream's:\n%v\n%v", got.Shards, d.Shards)
			}
			shards, err := rn.Streams.ListShards(t.Context(), name)
			if err != nil || len(shards) != n {
				t.Errorf("ListShards = %d shards, %v; want %d", len(shards), err, n)
			}
		})
	}
}

func confCreateValidation(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	bad := []struct {
		name string
		in   stream.CreateStreamInput
		want []string // substrings of the message
	}{
		{"ShardCount below 1", stream.CreateStreamInput{StreamName: "s", ShardCount: -1}, []string{"ShardCount", "-1", "1 and 1024"}},
		{"ShardCount above the maximum", stream.CreateStreamInput{StreamName: "s", ShardCount: stream.MaxShardCount + 1}, []string{"ShardCount", "1025", "1 and 1024"}},
		{"RetentionPeriodHours 23", stream.CreateStreamInput{StreamName: "s", RetentionPeriodHours: 23}, []string{"RetentionPeriodHours", "23", "24 and 8760"}},
		{"RetentionPeriodHours 8761", stream.CreateStreamInput{StreamName: "s", RetentionPeriodHours: 8761}, []string{"RetentionPeriodHours", "8761", "24 and 8760"}},
		{"empty StreamName", stream.CreateStreamInput{StreamName: ""}, []string{"StreamName", "1..128"}},
		{"StreamName with a space", stream.CreateStreamInput{StreamName: "bad name"}, []string{"StreamName", "bad name"}},
		{"StreamName with a slash", stream.CreateStreamInput{StreamName: "a/b"}, []string{"StreamName"}},
		{"StreamName of 129 characters", stream.CreateStreamInput{StreamName: strings.Repeat("x", 129)}, []string{"StreamName", "1..128"}},
	}
	for _, c := range bad {
		t.Run(c.name, func(t *testing.T) {
			_, err := rn.Streams.CreateStream(t.Context(), c.in)
			wantErr(t, err, awserr.ErrInvalidArgument, c.want...)
			names, err := rn.Streams.ListStreams(t.Context())
			if err != nil || len(names) != 0 {
				t.Errorf("refused create left streams %v (%v)", names, err)
			}
		})
	}
	good := []struct {
		name string
		in   stream.CreateStreamInput
	}{
		{"RetentionPeriodHours 24", stream.CreateStreamInput{StreamName: "r24", RetentionPeriodHours: 24}},
		{"RetentionPeriodHours 8760", stream.CreateStreamInput{StreamName: "r8760", RetentionPeriodHours: 8760}},
		{"StreamName of 128 characters of [a-zA-Z0-9_.-]", stream.CreateStreamInput{StreamName: strings.Repeat("aZ9_.-", 21) + "ab"}},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			d, err := rn.Streams.CreateStream(t.Context(), c.in)
			if err != nil {
				t.Fatalf("CreateStream(%+v): %v", c.in, err)
			}
			if c.in.RetentionPeriodHours != 0 && d.RetentionPeriodHours != c.in.RetentionPeriodHours {
				t.Errorf("RetentionPeriodHours = %d, want %d", d.RetentionPeriodHours, c.in.RetentionPeriodHours)
			}
		})
	}
}

func confDuplicate(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "dup", 2)
	_, err := rn.Streams.CreateStream(t.Context(), stream.CreateStreamInput{StreamName: "dup", ShardCount: 3})
	wantErr(t, err, awserr.ErrResourceInUse, "dup")
	d, err := rn.Streams.DescribeStream(t.Context(), "dup")
	if err != nil || len(d.Shards) != 2 {
		t.Errorf("original stream changed by the refused create: %v, %v", d, err)
	}
}

func confDeleteAndList(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	ctx := t.Context()
	names, err := rn.Streams.ListStreams(ctx)
	if err != nil || len(names) != 0 {
		t.Fatalf("ListStreams on a new runnel = %v, %v; want none", names, err)
	}
	for _, n := range []string{"b-stream", "c_stream", "a.stream"} {
		createStream(t, rn, n, 1)
	}
	names, err = rn.Streams.ListStreams(ctx)
	if err != nil || strings.Join(names, ",") != "a.stream,b-stream,c_stream" {
		t.Fatalf("ListStreams = %v, %v; want the three names sorted", names, err)
	}
	putRecord(t, rn, "b-stream", "pk", "old")
	oldIt := shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "b-stream", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})

	if err := rn.Streams.DeleteStream(ctx, "b-stream"); err != nil {
		t.Fatal(err)
	}
	_, err = rn.Streams.DescribeStream(ctx, "b-stream")
	wantErr(t, err, awserr.ErrResourceNotFound, "b-stream")
	names, _ = rn.Streams.ListStreams(ctx)
	if strings.Join(names, ",") != "a.stream,c_stream" {
		t.Errorf("ListStreams after delete = %v", names)
	}
	wantErr(t, rn.Streams.DeleteStream(ctx, "b-stream"), awserr.ErrResourceNotFound)
	_, err = rn.Streams.PutRecord(ctx, "b-stream", stream.PutRecordsRequestEntry{PartitionKey: "pk", Data: []byte("x")})
	wantErr(t, err, awserr.ErrResourceNotFound)
	_, err = rn.Streams.GetRecords(ctx, oldIt, 0)
	wantErr(t, err, awserr.ErrResourceNotFound)

	// The name can be used again, for a new, empty stream; iterators of
	// the deleted one stay invalid.
	createStream(t, rn, "b-stream", 1)
	if recs := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "b-stream", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})); len(recs) != 0 {
		t.Errorf("re-created stream holds %d records of the deleted one", len(recs))
	}
	_, err = rn.Streams.GetRecords(ctx, oldIt, 0)
	wantErr(t, err, awserr.ErrResourceNotFound)
}

func confMD5Routing(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	// Known vector: MD5("a") = 0cc175b9c0f1b6a831c399e269772661.
	want, _ := new(big.Int).SetString("0cc175b9c0f1b6a831c399e269772661", 16)
	if got := stream.PartitionHashKey("a"); got.Cmp(want) != 0 {
		t.Errorf("PartitionHashKey(a) = %s, want %s", got, want)
	}
	d := createStream(t, rn, "route", 7)
	var entries []stream.PutRecordsRequestEntry
	for i := range 400 {
		entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprintf("key-%d-é", i), Data: []byte{byte(i)}})
	}
	out, err := rn.Streams.PutRecords(t.Context(), "route", entries)
	if err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("PutRecords: %v %+v", err, out)
	}
	perShard := map[string]int{}
	for i, r := range out.Records {
		k := md5Key(entries[i].PartitionKey)
		if got, want := r.ShardId, ownerShard(t, d, k); got != want {
			t.Errorf("key %q (MD5 %s) went to %s, want %s", entries[i].PartitionKey, k, got, want)
		}
		perShard[r.ShardId]++
	}
	if len(perShard) != 7 {
		t.Errorf("400 keys reached %d of 7 shards: %v", len(perShard), perShard)
	}
	// PutRecord routes the same way, and the record is stored in that shard.
	for _, pk := range []string{"x", "user-42", "日本語", strings.Repeat("z", 256)} {
		r := putRecord(t, rn, "route", pk, "v")
		if want := ownerShard(t, d, md5Key(pk)); r.ShardId != want {
			t.Errorf("PutRecord key %q went to %s, want %s", pk, r.ShardId, want)
		}
		recs := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "route", ShardID: r.ShardId, ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: r.SequenceNumber}))
		if len(recs) == 0 || recs[0].PartitionKey != pk || recs[0].SequenceNumber != r.SequenceNumber || recs[0].ShardID != r.ShardId {
			t.Errorf("record of key %q not found at %s %s: %+v", pk, r.ShardId, r.SequenceNumber, recs)
		}
	}
}

func confExplicitHashKey(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	d := createStream(t, rn, "ehk", 4)
	two127 := new(big.Int).Lsh(big.NewInt(1), 127)
	// a partition key whose MD5 falls in shard 0
	pk0 := ""
	for i := 0; pk0 == ""; i++ {
		if k := fmt.Sprint("p", i); ownerShard(t, d, md5Key(k)) == stream.ShardID(0) {
			pk0 = k
		}
	}
	good := []struct {
		name, pk, ehk, shard string
	}{
		{"0 goes to the first shard", "k", "0", stream.ShardID(0)},
		{"2^128-1 goes to the last shard", pk0, maxHash.String(), stream.ShardID(3)},
		{"2^127 (a shard's StartingHashKey) goes to that shard", pk0, two127.String(), stream.ShardID(2)},
		{"2^127-1 (a shard's EndingHashKey) goes to that shard", pk0, new(big.Int).Sub(two127, big.NewInt(1)).String(), stream.ShardID(1)},
		{"a mid value of shard 3 overrides a key of shard 0", pk0, "300000000000000000000000000000000000000", stream.ShardID(3)},
	}
	for _, c := range good {
		t.Run(c.name, func(t *testing.T) {
			r, err := rn.Streams.PutRecord(t.Context(), "ehk", stream.PutRecordsRequestEntry{PartitionKey: c.pk, ExplicitHashKey: c.ehk, Data: []byte("d")})
			if err != nil {
				t.Fatal(err)
			}
			if r.ShardId != c.shard {
				t.Errorf("ExplicitHashKey %s went to %s, want %s", c.ehk, r.ShardId, c.shard)
			}
		})
	}
	bad := []string{"-1", "01", "1.5", "abc", " 1", "1e5", maxHash.String() + "0",
		new(big.Int).Add(maxHash, big.NewInt(1)).String(), // 2^128
	}
	for _, ehk := range bad {
		t.Run("invalid "+ehk, func(t *testing.T) {
			_, err := rn.Streams.PutRecord(t.Context(), "ehk", stream.PutRecordsRequestEntry{PartitionKey: "k", ExplicitHashKey: ehk, Data: []byte("d")})
			wantErr(t, err, awserr.ErrInvalidArgument, "ExplicitHashKey")
		})
	}
	if n := countRecords(t, rn, "ehk"); n != len(good) {
		t.Errorf("stream holds %d records, want %d (the refused ones must not be stored)", n, len(good))
	}
}

func confPartitionKeyLength(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "pkl", 1)
	cases := []struct {
		name string
		pk   string
		ok   bool
	}{
		{"empty key refused", "", false},
		{"1 character", "a", true},
		{"256 ASCII characters", strings.Repeat("a", 256), true},
		{"257 ASCII characters refused", strings.Repeat("a", 257), false},
		{"256 two-byte characters", strings.Repeat("é", 256), true},
		{"256 four-byte characters", strings.Repeat("😀", 256), true},
		{"257 two-byte characters refused", strings.Repeat("é", 257), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := rn.Streams.PutRecord(t.Context(), "pkl", stream.PutRecordsRequestEntry{PartitionKey: c.pk, Data: []byte("d")})
			if !c.ok {
				wantErr(t, err, awserr.ErrInvalidArgument, "PartitionKey", "1..256")
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "pkl", ShardID: r.ShardId, ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: r.SequenceNumber}))
			if len(recs) != 1 || recs[0].PartitionKey != c.pk {
				t.Errorf("read back %+v, want the key %q", recs, c.pk)
			}
		})
	}
}

func confRecordSize(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "size", 1)
	twoByteKey := strings.Repeat("é", 256) // 512 bytes
	cases := []struct {
		name string
		pk   string
		data int
		ok   bool
	}{
		{"empty data", "k", 0, true},
		{"1 MiB with a 1-byte key", "k", stream.MaxRecordSize - 1, true},
		{"1 MiB + 1 byte with the key refused", "k", stream.MaxRecordSize, false},
		{"1 MiB with a 512-byte multibyte key", twoByteKey, stream.MaxRecordSize - 512, true},
		{"1 MiB + 1 byte with a multibyte key refused", twoByteKey, stream.MaxRecordSize - 511, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := make([]byte, c.data)
			for i := range data {
				data[i] = byte(i * 7)
			}
			out, err := rn.Streams.PutRecords(t.Context(), "size", []stream.PutRecordsRequestEntry{{PartitionKey: "small", Data: []byte("x")}, {PartitionKey: c.pk, Data: data}})
			if !c.ok {
				wantErr(t, err, awserr.ErrInvalidArgument, "Records.1.Data", "1 MiB")
				return
			}
			if err != nil || out.FailedRecordCount != 0 {
				t.Fatalf("PutRecords: %v %+v", err, out)
			}
			r := out.Records[1]
			recs := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "size", ShardID: r.ShardId, ShardIteratorType: stream.AtSequenceNumber, StartingSequenceNumber: r.SequenceNumber}))
			if len(recs) != 1 || string(recs[0].Data) != string(data) || recs[0].PartitionKey != c.pk {
				t.Errorf("record of %d bytes not read back intact", c.data)
			}
		})
	}
	if n := countRecords(t, rn, "size"); n != 6 {
		t.Errorf("stream holds %d records, want 6 (refused calls store nothing)", n)
	}
}

func confPutRecordsCount(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "count", 2)
	mk := func(n int) []stream.PutRecordsRequestEntry {
		e := make([]stream.PutRecordsRequestEntry, n)
		for i := range e {
			e[i] = stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint(i), Data: []byte("d")}
		}
		return e
	}
	for _, n := range []int{0, 501} {
		_, err := rn.Streams.PutRecords(t.Context(), "count", mk(n))
		wantErr(t, err, awserr.ErrInvalidArgument, "Records", fmt.Sprintf("'%d'", n), "1 and 500")
	}
	out, err := rn.Streams.PutRecords(t.Context(), "count", mk(500))
	if err != nil || out.FailedRecordCount != 0 || len(out.Records) != 500 {
		t.Fatalf("PutRecords(500): %v, %+v", err, out)
	}
	if n := countRecords(t, rn, "count"); n != 500 {
		t.Errorf("stream holds %d records, want 500", n)
	}
}

func confBadEntryRejectsAll(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "atomic", 3)
	cases := []struct {
		name  string
		bad   stream.PutRecordsRequestEntry
		field string
	}{
		{"empty partition key", stream.PutRecordsRequestEntry{PartitionKey: "", Data: []byte("d")}, "Records.3.PartitionKey"},
		{"bad ExplicitHashKey", stream.PutRecordsRequestEntry{PartitionKey: "k", ExplicitHashKey: "x", Data: []byte("d")}, "Records.3.ExplicitHashKey"},
		{"oversized data", stream.PutRecordsRequestEntry{PartitionKey: "k", Data: make([]byte, stream.MaxRecordSize)}, "Records.3.Data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entries := []stream.PutRecordsRequestEntry{
				{PartitionKey: "a", Data: []byte("1")}, {PartitionKey: "b", Data: []byte("2")},
				{PartitionKey: "c", Data: []byte("3")}, c.bad, {PartitionKey: "d", Data: []byte("5")},
			}
			out, err := rn.Streams.PutRecords(t.Context(), "atomic", entries)
			wantErr(t, err, awserr.ErrInvalidArgument, c.field)
			if out != nil {
				t.Errorf("refused call returned results %+v", out)
			}
			if n := countRecords(t, rn, "atomic"); n != 0 {
				t.Errorf("%d records stored by a refused call", n)
			}
		})
	}
}

func confSequenceNumbers(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "seq", 3)
	var results []stream.PutRecordsResultEntry
	for round := range 3 {
		var entries []stream.PutRecordsRequestEntry
		for i := range 150 {
			entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprintf("k%d", i%40), Data: fmt.Appendf(nil, "%d-%d", round, i)})
		}
		out, err := rn.Streams.PutRecords(t.Context(), "seq", entries)
		if err != nil || out.FailedRecordCount != 0 {
			t.Fatalf("PutRecords: %v %+v", err, out)
		}
		results = append(results, out.Records...)
		for i := range 10 {
			results = append(results, putRecord(t, rn, "seq", fmt.Sprintf("k%d", i), "single"))
		}
	}
	last := map[string]*big.Int{}
	seen := map[string]bool{}
	for _, r := range results {
		if !seqRE.MatchString(r.SequenceNumber) {
			t.Fatalf("sequence number %q does not match %s", r.SequenceNumber, seqRE)
		}
		key := r.ShardId + "/" + r.SequenceNumber
		if seen[key] {
			t.Fatalf("sequence number %s repeated in %s", r.SequenceNumber, r.ShardId)
		}
		seen[key] = true
		v := seqBig(t, r.SequenceNumber)
		if p := last[r.ShardId]; p != nil && v.Cmp(p) <= 0 {
			t.Fatalf("%s: sequence number %s after %s is not greater", r.ShardId, v, p)
		}
		last[r.ShardId] = v
	}
	if len(last) != 3 {
		t.Errorf("records reached %d of 3 shards", len(last))
	}
	// GetRecords returns the same sequence numbers, in increasing order.
	for sh := range 3 {
		recs := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "seq", ShardID: stream.ShardID(sh), ShardIteratorType: stream.TrimHorizon}))
		var prev *big.Int
		for _, rec := range recs {
			if !seen[rec.ShardID+"/"+rec.SequenceNumber] {
				t.Errorf("read %s %s that PutRecords never returned", rec.ShardID, rec.SequenceNumber)
			}
			v := seqBig(t, rec.SequenceNumber)
			if prev != nil && v.Cmp(prev) <= 0 {
				t.Errorf("GetRecords order: %s after %s", v, prev)
			}
			prev = v
		}
	}
}

func confOrderPerKey(t *testing.T, rn *runnel.Runnel, _ *clockwork.FakeClock) {
	createStream(t, rn, "order", 4)
	const keys, rounds = 12, 30
	for round := 0; round < rounds; {
		if round%5 == 4 { // some through PutRecord
			for k := range keys {
				putRecord(t, rn, "order", fmt.Sprint("key", k), fmt.Sprintf("%d", round))
			}
			round++
			continue
		}
		var entries []stream.PutRecordsRequestEntry
		for r := round; r < round+2; r++ { // two rounds per call, interleaved keys
			for k := range keys {
				entries = append(entries, stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint("key", k), Data: fmt.Appendf(nil, "%d", r)})
			}
		}
		if out, err := rn.Streams.PutRecords(t.Context(), "order", entries); err != nil || out.FailedRecordCount != 0 {
			t.Fatalf("PutRecords: %v %+v", err, out)
		}
		round += 2
	}
	got := map[string][]string{}
	for sh := range 4 {
		for _, rec := range readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "order", ShardID: stream.ShardID(sh), ShardIteratorType: stream.TrimHorizon})) {
			got[rec.PartitionKey] = append(got[rec.PartitionKey], string(rec.Data))
		}
	}
	var want []string
	for r := range rounds {
		want = append(want, fmt.Sprint(r))
	}
	for k := range keys {
		if g := got[fmt.Sprint("key", k)]; strings.Join(g, ",") != strings.Join(want, ",") {
			t.Errorf("key%d read in order %v, want %v", k, g, want)
		}
	}
}

func confArrivalTimestamp(t *testing.T, rn *runnel.Runnel, clk *clockwork.FakeClock) {
	createStream(t, rn, "arrival", 1)
	t1 := clk.Now()
	putRecord(t, rn, "arrival", "a", "1")
	clk.Advance(1500*time.Millisecond + 777*time.Microsecond)
	t2 := clk.Now()
	if out, err := rn.Streams.PutRecords(t.Context(), "arrival", []stream.PutRecordsRequestEntry{{PartitionKey: "b", Data: []byte("2")}, {PartitionKey: "c", Data: []byte("3")}}); err != nil || out.FailedRecordCount != 0 {
		t.Fatalf("PutRecords: %v %+v", err, out)
	}
	clk.Advance(time.Hour)
	recs := readAll(t, rn, shardIterator(t, rn, stream.GetShardIteratorInput{StreamName: "arrival", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon}))
	want := []time.Time{t1.Truncate(time.Millisecond), t2.Truncate(time.Millisecond), t2.Truncate(time.Millisecond)}
	if len(recs) != len(want) {
		t.Fatalf("read %d records, want %d", len(recs), len(want))
	}
	for i, r := range recs {
		if !r.ApproximateArrivalTimestamp.Equal(want[i]) {
			t.Errorf("record %d arrival = %s, want %s", i, r.ApproximateArrivalTimestamp.Format(time.RFC3339Nano), want[i].Format(time.RFC3339Nano))
		}
	}
}
