package awsapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	ktypes "github.com/aws/aws-sdk-go-v2/service/kinesis/types"
	"github.com/aws/smithy-go/eventstream"
	"github.com/fxamacker/cbor/v2"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// efoEndpoint starts an endpoint on a fake clock with a 1-shard stream
// "efo" holding n records and an ACTIVE consumer of it, registered
// through kc; it returns the consumer's ARN.
func efoEndpoint(t *testing.T, n int, kc func(e *endpoint) *kinesis.Client) (*endpoint, *kinesis.Client, *clockwork.FakeClock, string) {
	t.Helper()
	clk := clockwork.NewFakeClockAt(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	e := startEnv(t, awsapi.Options{}, testenv.Options{Clock: clk})
	c := kc(e)
	ctx := t.Context()
	must(c.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("efo"), ShardCount: aws.Int32(1)}))
	reg := must(c.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(e.rn.Streams.ARN("efo")), ConsumerName: aws.String("app")}))
	arn := aws.ToString(reg.Consumer.ConsumerARN)
	if want := "arn:aws:kinesis:us-east-1:000000000000:stream/efo/consumer/app:1767323045"; arn != want || reg.Consumer.ConsumerStatus != ktypes.ConsumerStatusCreating {
		t.Fatalf("RegisterStreamConsumer: %s %s, want %s CREATING", arn, reg.Consumer.ConsumerStatus, want)
	}
	clk.Advance(stream.ConsumerStatusDelay)
	for i := 0; i < n; i += 500 {
		var entries []ktypes.PutRecordsRequestEntry
		for j := i; j < min(n, i+500); j++ {
			entries = append(entries, ktypes.PutRecordsRequestEntry{PartitionKey: aws.String(fmt.Sprint("k", j%5)), Data: []byte(fmt.Sprint(j))})
		}
		must(c.PutRecords(ctx, &kinesis.PutRecordsInput{StreamName: aws.String("efo"), Records: entries}))
	}
	return e, c, clk, arn
}

// readEvents reads SubscribeToShardEvents until n records came, checking
// their order (data from, from+1...) and each event's continuation.
func readEvents(t *testing.T, es *kinesis.SubscribeToShardEventStream, from, n int) (cont string) {
	t.Helper()
	got := 0
	for got < n {
		var ev ktypes.SubscribeToShardEventStream
		var ok bool
		select {
		case ev, ok = <-es.Events():
		case <-time.After(10 * time.Second):
			t.Fatalf("no event within 10 s after %d of %d records", got, n)
		}
		if !ok {
			t.Fatalf("the event stream ended after %d of %d records: %v", got, n, es.Err())
		}
		e := ev.(*ktypes.SubscribeToShardEventStreamMemberSubscribeToShardEvent).Value
		for _, r := range e.Records {
			if string(r.Data) != fmt.Sprint(from+got) {
				t.Fatalf("record %d is %q, want %d", got, r.Data, from+got)
			}
			got++
		}
		if len(e.Records) > 0 && aws.ToString(e.ContinuationSequenceNumber) != aws.ToString(e.Records[len(e.Records)-1].SequenceNumber) {
			t.Fatalf("ContinuationSequenceNumber %s, want the last record's", aws.ToString(e.ContinuationSequenceNumber))
		}
		cont = aws.ToString(e.ContinuationSequenceNumber)
	}
	if got != n {
		t.Fatalf("got %d records, want %d", got, n)
	}
	return cont
}

// aws-sdk-go-v2 reads SubscribeToShard's event stream, over HTTP/1.1 (its
// default for http://) and over h2c: every record in order, on with the
// continuation, a second subscription refused, the shard's end with
// ChildShards.
func TestKinesisSubscribeToShardThroughSDK(t *testing.T) {
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	for _, tc := range []struct {
		name   string
		client func(e *endpoint) *kinesis.Client
	}{
		{"HTTP/1.1", (*endpoint).kinesis}, // behind sdkhttp.PlainBodies, as every test's client
		{"h2c", func(e *endpoint) *kinesis.Client {
			return kinesis.NewFromConfig(e.config("AKID", "secret"), func(o *kinesis.Options) {
				o.HTTPClient = &http.Client{Transport: &http.Transport{Protocols: h2c}}
			})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, kc, clk, arn := efoEndpoint(t, 700, tc.client)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			d := must(kc.DescribeStreamConsumer(ctx, &kinesis.DescribeStreamConsumerInput{ConsumerARN: aws.String(arn)}))
			if d.ConsumerDescription.ConsumerStatus != ktypes.ConsumerStatusActive || aws.ToString(d.ConsumerDescription.StreamARN) != e.rn.Streams.ARN("efo") {
				t.Fatalf("DescribeStreamConsumer: %+v", d.ConsumerDescription)
			}
			sum := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("efo")}))
			if aws.ToInt32(sum.StreamDescriptionSummary.ConsumerCount) != 1 {
				t.Fatalf("ConsumerCount %d, want 1", aws.ToInt32(sum.StreamDescriptionSummary.ConsumerCount))
			}
			// Each subscription on a client of its own: aws-sdk-go-v2's
			// clients share one event-stream codec between a new call's
			// initial response and a live stream's reader, a data race
			// under -race (aws/smithy-go#714, benign, open as of v1.28.9).
			sub := func() *kinesis.Client { return tc.client(e) }
			sh := aws.String(stream.ShardID(0))
			out := must(sub().SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(arn), ShardId: sh,
				StartingPosition: &ktypes.StartingPosition{Type: ktypes.ShardIteratorTypeTrimHorizon}}))
			readEvents(t, out.GetStream(), 0, 700)

			// A second call a second later (one call per second per
			// consumer and shard, on the engine clock), while the first
			// subscription is younger than 5 s.
			clk.Advance(time.Second)
			_, err := sub().SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(arn), ShardId: sh,
				StartingPosition: &ktypes.StartingPosition{Type: ktypes.ShardIteratorTypeLatest}})
			var inUse *ktypes.ResourceInUseException
			if !errors.As(err, &inUse) {
				t.Fatalf("a second SubscribeToShard: %v, want ResourceInUseException", err)
			}
			must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("efo"), PartitionKey: aws.String("k"), Data: []byte("700")}))
			cont := readEvents(t, out.GetStream(), 700, 1)
			out.GetStream().Close()

			// 5 s later a new subscription takes over, AFTER the continuation.
			clk.Advance(stream.SubscriptionTakeoverAfter)
			must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("efo"), PartitionKey: aws.String("k"), Data: []byte("701")}))
			out = must(sub().SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(arn), ShardId: sh,
				StartingPosition: &ktypes.StartingPosition{Type: ktypes.ShardIteratorTypeAfterSequenceNumber, SequenceNumber: aws.String(cont)}}))
			readEvents(t, out.GetStream(), 701, 1)
			must(kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("efo"), ShardToSplit: sh, NewStartingHashKey: aws.String("2")}))
			var last ktypes.SubscribeToShardEvent
			for ev := range out.GetStream().Events() {
				last = ev.(*ktypes.SubscribeToShardEventStreamMemberSubscribeToShardEvent).Value
			}
			if err := out.GetStream().Err(); err != nil || len(last.ChildShards) != 2 || last.ContinuationSequenceNumber != nil ||
				aws.ToString(last.ChildShards[0].ShardId) != stream.ShardID(1) || last.ChildShards[0].ParentShards[0] != stream.ShardID(0) {
				t.Fatalf("the shard's end: %+v, %v; want ChildShards and no continuation", last, err)
			}
			// The children hold what was put after the split, each in order.
			want := map[string][]string{}
			for i := range 20 {
				r := must(kc.PutRecord(ctx, &kinesis.PutRecordInput{StreamName: aws.String("efo"), PartitionKey: aws.String(fmt.Sprint("p", i)), Data: []byte(fmt.Sprint(1000 + i))}))
				want[aws.ToString(r.ShardId)] = append(want[aws.ToString(r.ShardId)], fmt.Sprint(1000+i))
			}
			for _, child := range last.ChildShards {
				cs := must(sub().SubscribeToShard(ctx, &kinesis.SubscribeToShardInput{ConsumerARN: aws.String(arn), ShardId: child.ShardId,
					StartingPosition: &ktypes.StartingPosition{Type: ktypes.ShardIteratorTypeTrimHorizon}}))
				var got []string
				for len(got) < len(want[aws.ToString(child.ShardId)]) {
					var ev ktypes.SubscribeToShardEventStream
					var ok bool
					select {
					case ev, ok = <-cs.GetStream().Events():
					case <-time.After(10 * time.Second):
						t.Fatalf("%s: no event within 10 s", aws.ToString(child.ShardId))
					}
					if !ok {
						t.Fatalf("%s: the event stream ended: %v", aws.ToString(child.ShardId), cs.GetStream().Err())
					}
					for _, r := range ev.(*ktypes.SubscribeToShardEventStreamMemberSubscribeToShardEvent).Value.Records {
						got = append(got, string(r.Data))
					}
				}
				if fmt.Sprint(got) != fmt.Sprint(want[aws.ToString(child.ShardId)]) {
					t.Fatalf("%s delivered %v, want %v", aws.ToString(child.ShardId), got, want[aws.ToString(child.ShardId)])
				}
				cs.GetStream().Close()
			}
			if tc.name == "h2c" && e.h2.Load() == 0 {
				t.Fatal("no request was served over HTTP/2")
			}

			must(kc.DeregisterStreamConsumer(ctx, &kinesis.DeregisterStreamConsumerInput{ConsumerARN: aws.String(arn)}))
			ls := must(kc.ListStreamConsumers(ctx, &kinesis.ListStreamConsumersInput{StreamARN: aws.String(e.rn.Streams.ARN("efo"))}))
			if len(ls.Consumers) != 1 || ls.Consumers[0].ConsumerStatus != ktypes.ConsumerStatusDeleting {
				t.Fatalf("ListStreamConsumers after deregistering: %+v", ls.Consumers)
			}
		})
	}
}

// A CBOR SubscribeToShard (as the AWS SDK for Java sends it): the events'
// payloads are CBOR, Data a byte string.
func TestKinesisSubscribeToShardCBOR(t *testing.T) {
	e, _, _, arn := efoEndpoint(t, 3, (*endpoint).kinesis)
	body := cborBody(t, map[string]any{"ConsumerARN": arn, "ShardId": stream.ShardID(0), "StartingPosition": map[string]any{"Type": "TRIM_HORIZON"}})
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, e.srv.URL+"/", bytes.NewReader(body))
	req.Header.Set("X-Amz-Target", "Kinesis_20131202.SubscribeToShard")
	req.Header.Set("Content-Type", "application/x-amz-cbor-1.1")
	resp, err := http.DefaultClient.Do(sign(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || ct != "application/vnd.amazon.eventstream" {
		t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
	}
	dec := eventstream.NewDecoder()
	first, err := dec.Decode(resp.Body, nil)
	if err != nil || first.Headers.Get(eventstream.EventTypeHeader).String() != "initial-response" {
		t.Fatalf("first message %+v, %v; want initial-response", first.Headers, err)
	}
	msg, err := dec.Decode(resp.Body, nil)
	if err != nil || msg.Headers.Get(eventstream.EventTypeHeader).String() != "SubscribeToShardEvent" ||
		msg.Headers.Get(eventstream.ContentTypeHeader).String() != "application/x-amz-cbor-1.1" {
		t.Fatalf("event %+v, %v", msg.Headers, err)
	}
	var ev struct {
		Records []struct {
			Data           []byte
			SequenceNumber string
		}
		ContinuationSequenceNumber string
	}
	if err := cbor.Unmarshal(msg.Payload, &ev); err != nil {
		t.Fatalf("payload is not CBOR: %v", err)
	}
	if len(ev.Records) != 3 || string(ev.Records[2].Data) != "2" || !regexp.MustCompile(`^\d+$`).MatchString(ev.ContinuationSequenceNumber) {
		t.Fatalf("CBOR event %+v", ev)
	}
}

// ON_DEMAND through aws-sdk-go-v2: reported as such (4 shards), counted by
// DescribeLimits, no SplitShard, and UpdateStreamMode switches it.
func TestKinesisOnDemandThroughSDK(t *testing.T) {
	e := start(t, awsapi.Options{})
	kc := e.kinesis()
	ctx := t.Context()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("od"), StreamModeDetails: &ktypes.StreamModeDetails{StreamMode: ktypes.StreamModeOnDemand}}))
	sum := must(kc.DescribeStreamSummary(ctx, &kinesis.DescribeStreamSummaryInput{StreamName: aws.String("od")})).StreamDescriptionSummary
	if sum.StreamModeDetails.StreamMode != ktypes.StreamModeOnDemand || aws.ToInt32(sum.OpenShardCount) != 4 {
		t.Fatalf("DescribeStreamSummary: %s with %d shards, want ON_DEMAND with 4", sum.StreamModeDetails.StreamMode, aws.ToInt32(sum.OpenShardCount))
	}
	if dl := must(kc.DescribeLimits(ctx, &kinesis.DescribeLimitsInput{})); aws.ToInt32(dl.OnDemandStreamCount) != 1 || aws.ToInt32(dl.OpenShardCount) != 0 {
		t.Fatalf("DescribeLimits: %d on-demand streams, %d provisioned shards; want 1 and 0", aws.ToInt32(dl.OnDemandStreamCount), aws.ToInt32(dl.OpenShardCount))
	}
	_, err := kc.SplitShard(ctx, &kinesis.SplitShardInput{StreamName: aws.String("od"), ShardToSplit: aws.String(stream.ShardID(0)), NewStartingHashKey: aws.String("1000")})
	var invalid *ktypes.ValidationException
	if !errors.As(err, &invalid) {
		t.Fatalf("SplitShard of an ON_DEMAND stream: %v, want ValidationException", err)
	}
	must(kc.UpdateStreamMode(ctx, &kinesis.UpdateStreamModeInput{StreamARN: sum.StreamARN, StreamModeDetails: &ktypes.StreamModeDetails{StreamMode: ktypes.StreamModeProvisioned}}))
	d := must(kc.DescribeStream(ctx, &kinesis.DescribeStreamInput{StreamName: aws.String("od")})).StreamDescription
	if d.StreamModeDetails.StreamMode != ktypes.StreamModeProvisioned || len(d.Shards) != 4 {
		t.Fatalf("after UpdateStreamMode: %s with %d shards, want PROVISIONED with 4", d.StreamModeDetails.StreamMode, len(d.Shards))
	}
	ls := must(kc.ListStreams(ctx, &kinesis.ListStreamsInput{}))
	if ls.StreamSummaries[0].StreamModeDetails.StreamMode != ktypes.StreamModeProvisioned {
		t.Fatalf("ListStreams: %+v", ls.StreamSummaries[0].StreamModeDetails)
	}
}

// A consumer's tags: given at RegisterStreamConsumer, then TagResource,
// UntagResource and ListTagsForResource by its ARN; the stream's own tags
// are apart.
func TestKinesisConsumerTagsThroughSDK(t *testing.T) {
	e := start(t, awsapi.Options{})
	kc := e.kinesis()
	ctx := t.Context()
	must(kc.CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("tg"), ShardCount: aws.Int32(1), Tags: map[string]string{"stream": "yes"}}))
	c := must(kc.RegisterStreamConsumer(ctx, &kinesis.RegisterStreamConsumerInput{StreamARN: aws.String(e.rn.Streams.ARN("tg")), ConsumerName: aws.String("c"),
		Tags: map[string]string{"team": "a", "env": "dev"}})).Consumer
	arn := c.ConsumerARN
	tags := func() string {
		lt := must(kc.ListTagsForResource(ctx, &kinesis.ListTagsForResourceInput{ResourceARN: arn}))
		var s []string
		for _, tg := range lt.Tags {
			s = append(s, aws.ToString(tg.Key)+"="+aws.ToString(tg.Value))
		}
		return fmt.Sprint(s)
	}
	if got := tags(); got != "[env=dev team=a]" {
		t.Fatalf("tags at registration: %s", got)
	}
	must(kc.TagResource(ctx, &kinesis.TagResourceInput{ResourceARN: arn, Tags: map[string]string{"team": "b", "cost": "1"}}))
	must(kc.UntagResource(ctx, &kinesis.UntagResourceInput{ResourceARN: arn, TagKeys: []string{"env"}}))
	if got := tags(); got != "[cost=1 team=b]" {
		t.Fatalf("tags after TagResource and UntagResource: %s", got)
	}
	st := must(kc.ListTagsForResource(ctx, &kinesis.ListTagsForResourceInput{ResourceARN: aws.String(e.rn.Streams.ARN("tg"))}))
	if len(st.Tags) != 1 || aws.ToString(st.Tags[0].Key) != "stream" {
		t.Fatalf("the stream's tags: %+v", st.Tags)
	}
	many := map[string]string{}
	for i := range 49 {
		many[fmt.Sprint("k", i)] = "v"
	}
	_, err := kc.TagResource(ctx, &kinesis.TagResourceInput{ResourceARN: arn, Tags: many})
	var invalid *ktypes.InvalidArgumentException
	if !errors.As(err, &invalid) || !strings.Contains(aws.ToString(invalid.Message), "more than 50 tags") {
		t.Fatalf("a consumer's 51st tag: %v, want InvalidArgumentException", err)
	}
}
