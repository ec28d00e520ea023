package awsapi_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// wirePage is GetRecords' response in the order of the keys the endpoint
// writes, for encoding/json to write the bytes the endpoint must write.
type wirePage struct {
	MillisBehindLatest int64
	NextShardIterator  string              `json:",omitempty"`
	ChildShards        []stream.ChildShard `json:",omitempty"`
	Records            []wireRecord
}

type wireRecord struct {
	SequenceNumber              string
	ApproximateArrivalTimestamp float64 // epoch seconds, ms precision
	Data                        []byte
	PartitionKey                string
	EncryptionType              string
}

// TestGetRecordsWire: the body of every GetRecords response is, byte for
// byte, encoding/json's encoding of the page that stream.GetRecords reads
// from the same iterator at the same instant: keys that need escaping
// (quotes, <>&, control characters, U+2028, non-ASCII), data of many
// sizes (base64), empty and holding every byte value, arrival times with
// and without a fraction of a second, pages that split a PutRecords call
// (Limit 3), and the end of a closed shard (ChildShards, no
// NextShardIterator).
func TestGetRecordsWire(t *testing.T) {
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clk})
	kc := e.kinesis()
	ctx := t.Context()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("wire"), ShardCount: aws.Int32(1)}))

	keys := []string{"plain", `quo"te`, `back\slash`, "<tag>&amp;", "ünïcødé", "tab\there", "line\u2028sep", "nul\x00", strings.Repeat("k", 256)}
	rng := rand.New(rand.NewPCG(1, 2))
	put := 0
	for i, step := range []time.Duration{0, time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond, time.Second, 123 * time.Millisecond} {
		clk.Advance(step)
		var entries []ktypes.PutRecordsRequestEntry
		for j := range 4 + i {
			data := make([]byte, []int{0, 1, 2, 3, 100, 256, 1000, 5000}[(i+j)%8])
			for k := range data {
				data[k] = byte(rng.Uint32())
				if len(data) == 256 {
					data[k] = byte(k) // every byte value
				}
			}
			entries = append(entries, ktypes.PutRecordsRequestEntry{Data: data, PartitionKey: aws.String(keys[(i+j)%len(keys)])})
		}
		out := must(kc.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("wire"), Records: entries}))
		if aws.ToInt32(out.FailedRecordCount) != 0 {
			t.Fatalf("PutRecords: %d failed", aws.ToInt32(out.FailedRecordCount))
		}
		put += len(entries)
	}
	shards := must(kc.ListShards(ctx, &kinesis.ListShardsInput{StreamName: aws.String("wire")})).Shards
	parent := aws.ToString(shards[0].ShardId)
	// Close the shard: its last page carries ChildShards.
	must(kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("wire"), ShardToSplit: aws.String(parent),
		NewStartingHashKey: aws.String("170141183460469231731687303715884105728")}))
	clk.Advance(2 * time.Second)

	for _, limit := range []int{3, 10000} {
		it := aws.ToString(must(kc.GetShardIterator(ctx, &kinesis.GetShardIteratorInput{StreamName: aws.String("wire"), ShardId: aws.String(parent),
			ShardIteratorType: ktypes.ShardIteratorTypeTrimHorizon})).ShardIterator)
		read, pages := 0, 0
		for it != "" {
			body := getRecordsBody(t, e, it, limit)
			o, err := e.rn.Streams.GetRecords(ctx, it, limit)
			if err != nil {
				t.Fatal(err)
			}
			want := wirePage{MillisBehindLatest: o.MillisBehindLatest, NextShardIterator: o.NextShardIterator, ChildShards: o.ChildShards, Records: []wireRecord{}}
			for _, r := range o.Records {
				want.Records = append(want.Records, wireRecord{r.SequenceNumber, float64(r.ApproximateArrivalTimestamp.UnixMilli()) / 1000, r.Data, r.PartitionKey, "NONE"})
			}
			wb, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			if body != string(wb) {
				t.Fatalf("limit %d, page %d:\n got  %s\n want %s", limit, pages, body, wb)
			}
			if len(o.Records) > limit {
				t.Fatalf("limit %d: a page of %d records", limit, len(o.Records))
			}
			read += len(o.Records)
			pages++
			if o.NextShardIterator == "" && len(o.ChildShards) != 2 {
				t.Fatalf("the end of the closed shard has ChildShards %+v, want the two children", o.ChildShards)
			}
			it = o.NextShardIterator
		}
		if read != put {
			t.Errorf("limit %d: read %d records in %d pages, want %d", limit, read, pages, put)
		}
	}
}

// getRecordsBody posts GetRecords to the endpoint as JSON 1.1 and returns
// the body of its 200 response.
func getRecordsBody(t *testing.T, e *endpoint, iterator string, limit int) string {
	t.Helper()
	status, body := post(t, e.srv.URL, fmt.Sprintf(`{"ShardIterator":%q,"Limit":%d}`, iterator, limit),
		map[string]string{"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": "Kinesis_20131202.GetRecords"})
	if status != http.StatusOK {
		t.Fatalf("GetRecords: %d %s", status, body)
	}
	return body
}
