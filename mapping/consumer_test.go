package mapping_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/stream"
)

// A mapping whose EventSourceArn is a stream consumer's ARN reads through
// that consumer, as Lambda does with enhanced fan-out
// (https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html, "Stream
// consumers"): it holds the consumer's subscription to the shard (a
// SubscribeToShard of the same consumer and shard is
// ResourceInUseException), keeps reporting the consumer ARN, and
// processes every record exactly as a mapping on the stream ARN does:
// the same invocations, bisect, retries, on-failure record (naming the
// stream) and checkpoint.
func TestMappingOnConsumerARNProcessesLikeAStreamMapping(t *testing.T) {
	var calls [2][]string
	for i, viaConsumer := range []bool{false, true} {
		t.Run(fmt.Sprintf("consumer=%v", viaConsumer), func(t *testing.T) {
			clk := clockwork.NewFakeClockAt(time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC))
			rn := testenv.Start(t, testenv.Options{Clock: clk})
			streamARN := createStream(t, rn, "src", 1)
			dest := createStream(t, rn, "failed", 1)
			c, err := rn.Streams.RegisterStreamConsumer(t.Context(), "src", "lambda", nil)
			if err != nil {
				t.Fatal(err)
			}
			clk.Advance(stream.ConsumerStatusDelay)
			source := streamARN
			if viaConsumer {
				source = c.ConsumerARN
			}
			var data []string
			for d := range 100 {
				data = append(data, fmt.Sprint(d))
			}
			for k := range 5 { // keys k0..k4, records in put order per key
				var mine []string
				for d := k; d < len(data); d += 5 {
					mine = append(mine, data[d])
				}
				put(t, rn, "src", fmt.Sprint("k", k), mine...)
			}
			r := newRecorder(t, rn, function.Config{}, failOn("37"))
			m := createMapping(t, rn, mapping.Config{EventSourceArn: source, FunctionName: r.name, BatchSize: 10,
				MaximumRetryAttempts: ptr(1), BisectBatchOnFunctionError: true, DestinationConfig: withDestination(dest)})
			settle(t, rn, m.UUID, "src")
			calls[i] = r.Calls()

			for _, d := range data {
				if want := map[bool]int{true: 0, false: 1}[d == "37"]; r.processedCount(d) != want {
					t.Fatalf("record %s processed %d times, want %d", d, r.processedCount(d), want)
				}
			}
			fs := failures(t, rn, "failed")
			if len(fs) != 1 || fs[0].KinesisBatchInfo.BatchSize != 1 || fs[0].KinesisBatchInfo.StreamArn != streamARN {
				t.Fatalf("on-failure records %+v, want one for record 37 naming the stream", fs)
			}
			got, err := rn.Mappings.GetEventSourceMapping(m.UUID)
			if err != nil || got.EventSourceArn != source {
				t.Fatalf("GetEventSourceMapping: EventSourceArn %q (%v), want %q", got.EventSourceArn, err, source)
			}
			r.mu.Lock()
			ev := r.events[0]
			r.mu.Unlock()
			if ev.Records[0].EventSourceArn != streamARN {
				t.Fatalf("record eventSourceARN %q, want the stream's %q", ev.Records[0].EventSourceArn, streamARN)
			}
			_, err = rn.Streams.SubscribeToShard(t.Context(), c.ConsumerARN, stream.ShardID(0), stream.StartingPosition{Type: stream.Latest})
			if viaConsumer && !errors.Is(err, awserr.ErrResourceInUse) {
				t.Fatalf("SubscribeToShard while the mapping reads through the consumer: %v, want ResourceInUseException", err)
			}
			if !viaConsumer && err != nil {
				t.Fatalf("SubscribeToShard beside a stream mapping: %v", err)
			}
			// Past a subscription's 5 minutes the mapping subscribes again
			// where it stopped: nothing lost, nothing twice. (The new
			// subscription may start inside the records put now and split
			// them over two batches: the batching window, on the fake
			// clock, is moved on until the mapping caught up.)
			clk.Advance(stream.SubscriptionLifetime)
			put(t, rn, "src", "k9", data[:10]...)
			testenv.Eventually(t, wait, "mapping caught up", func() bool {
				clk.Advance(time.Second)
				return caughtUp(t, rn, m.UUID, "src")
			})
			for _, d := range data[:10] {
				if r.processedCount(d) != 2 {
					t.Fatalf("record %s put again after 5 minutes: processed %d times in all, want 2", d, r.processedCount(d))
				}
			}
			if !viaConsumer {
				return
			}
			// A deregistered consumer is the mapping's problem, reported.
			if err := rn.Streams.DeregisterStreamConsumer(t.Context(), stream.ConsumerRef{ConsumerARN: c.ConsumerARN}); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, wait, "the mapping reports the lost consumer", func() bool {
				st, err := rn.Mappings.Status(m.UUID)
				return err == nil && len(st.Shards) == 1 && st.Shards[0].LastProcessingResult == "PROBLEM: cannot read through the stream consumer" &&
					strings.Contains(st.Shards[0].LastError, "deregistered")
			})
		})
	}
	if !reflect.DeepEqual(calls[0], calls[1]) {
		t.Fatalf("invocations through the consumer %v\ndiffer from those on the stream %v", calls[1], calls[0])
	}
}

// A consumer ARN that names no consumer is refused at creation.
func TestMappingOnAMissingConsumerIsRefused(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "src", 1)
	r := newRecorder(t, rn, function.Config{}, func(events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, nil
	})
	_, err := rn.Mappings.CreateEventSourceMapping(context.Background(), mapping.Config{EventSourceArn: arn + "/consumer/nobody:1", FunctionName: r.name, StartingPosition: mapping.TrimHorizon})
	if !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Fatalf("a mapping on a missing consumer: %v, want ResourceNotFoundException", err)
	}
}
