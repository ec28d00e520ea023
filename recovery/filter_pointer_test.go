package recovery_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/recovery"
)

// filteredPointer sets up a stream mapping with FilterCriteria
// {"data":{"keep":["yes"]}}, MaximumRetryAttempts 0 and the Retry-DLQ as
// its OnFailure destination, to a function that fails every batch, puts
// k1, FILTERED, k2 and returns the pointer record the mapping wrote (its
// range spans FILTERED, which was never in the batch).
func filteredPointer(t *testing.T, s *setup) string {
	t.Helper()
	rn, ctx := s.rn, context.Background()
	function.Register("filtered-fail-all", func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, errors.New("downstream down")
	})
	if _, err := rn.Functions.CreateFunction(ctx, function.Config{FunctionName: "proc", Handler: "filtered-fail-all", Timeout: 30}); err != nil {
		t.Fatal(err)
	}
	s.put(t, `{"keep":"yes","id":"k1"}`, `{"keep":"no","id":"FILTERED"}`, `{"keep":"yes","id":"k2"}`)
	zero := 0
	if _, err := rn.Mappings.CreateEventSourceMapping(ctx, mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc",
		StartingPosition: mapping.TrimHorizon, BatchSize: 10, MaximumBatchingWindowInSeconds: 1, MaximumRetryAttempts: &zero,
		FilterCriteria:    &filter.Criteria{Filters: []filter.Pattern{{Pattern: `{"data":{"keep":["yes"]}}`}}},
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}}); err != nil {
		t.Fatal(err)
	}
	s.drain(t, "the on-failure pointer", func() bool { return count(t, rn, s.retryDLQ) == 1 })
	return messages(t, rn, s.retryDLQ)[0]
}

func datas(recs []events.KinesisEventRecord) []string {
	var out []string
	for _, r := range recs {
		out = append(out, string(r.Kinesis.Data))
	}
	return out
}

// TestARecordTheMappingFilteredOutNeverReachesTheRecordHandlerThroughTheRetryDLQ:
// Lambda discards the records that match none of a mapping's
// FilterCriteria (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html),
// and Resolved.Records are the records "as a function would see them".
// An on-failure pointer names a sequence-number range, which also holds
// the records filtered out between the batch's first and last record.
// Before, Resolve read the whole range (k1, FILTERED, k2: three records
// for a batchSize of 2) and both flows handed FILTERED to the record
// handler, the IdempotentUnsupported flow by splitting it into a Retry-DLQ
// message of its own. Now ResolveFrom with Sources.Mappings finds the
// mapping (the pointer's streamArn and functionArn) and applies its
// FilterCriteria; Resolve, which knows no mappings, says so (Unfiltered).
func TestARecordTheMappingFilteredOutNeverReachesTheRecordHandlerThroughTheRetryDLQ(t *testing.T) {
	s := twoTier(t, "")
	rn, ctx := s.rn, context.Background()
	body := filteredPointer(t, s)

	res, err := recovery.ResolveFrom(ctx, recovery.Sources{Streams: rn.Streams, Mappings: rn.Mappings}, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(datas(res.Records), " "); strings.Contains(got, "FILTERED") || len(res.Records) != res.Info.BatchSize || res.Filtered != 1 || res.Mapping == "" || res.Unfiltered != "" {
		t.Errorf("ResolveFrom with the mappings = %d records %s (batchSize %d), filtered %d, mapping %q, unfiltered %q; want the batch's 2 records, 1 filtered",
			len(res.Records), got, res.Info.BatchSize, res.Filtered, res.Mapping, res.Unfiltered)
	}
	plain, err := recovery.Resolve(ctx, rn.Streams, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if plain.Unfiltered == "" || plain.Mapping != "" {
		t.Errorf("Resolve without the mappings: unfiltered %q, mapping %q; want it to say the FilterCriteria were not applied", plain.Unfiltered, plain.Mapping)
	}

	// The IdempotentSupported flow hands only the batch's records on.
	var mu sync.Mutex
	var handled []string
	handle := func(ctx context.Context, r events.KinesisEventRecord, attempt int) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, string(r.Kinesis.Data))
		return nil
	}
	msg := events.SQSMessage{MessageId: "m1", Body: body, Attributes: map[string]string{"ApproximateReceiveCount": "1"}}
	sup := &recovery.IdempotentSupported{Streams: rn.Streams, Mappings: rn.Mappings, Handle: handle}
	if resp, err := sup.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("IdempotentSupported.HandleSQS = %v, %v", resp, err)
	}
	if got := strings.Join(handled, " "); len(handled) != 2 || strings.Contains(got, "FILTERED") {
		t.Errorf("IdempotentSupported handed %d records to Handle: %s; want k1 and k2 only", len(handled), got)
	}

	// The IdempotentUnsupported flow splits only the batch's records.
	uns := &recovery.IdempotentUnsupported{Streams: rn.Streams, Mappings: rn.Mappings, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: handle, Clock: s.clock}
	if resp, err := uns.HandleSQS(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}}); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("IdempotentUnsupported.HandleSQS = %v, %v", resp, err)
	}
	var split []string
	for _, b := range messages(t, rn, s.retryDLQ) {
		if b == body {
			continue
		}
		r, err := recovery.Resolve(ctx, rn.Streams, []byte(b))
		if err != nil {
			t.Fatal(err)
		}
		split = append(split, datas(r.Records)...)
	}
	if got := strings.Join(split, " "); len(split) != 2 || strings.Contains(got, "FILTERED") {
		t.Errorf("IdempotentUnsupported split the pointer into %d messages: %s; want k1 and k2 only", len(split), got)
	}
}

// TestIdempotentUnsupportedRefusesFilterCriteriaWithoutItsMappings: the
// split of an OnFailure pointer drops the records the mapping filtered out
// (Lambda discards them, invocation-eventfiltering.html) only when the
// flow can find the mapping (Mappings). Before, CheckMapping accepted
// FilterCriteria with no way to apply them; now it refuses them, naming
// the field, unless Mappings is set.
func TestIdempotentUnsupportedRefusesFilterCriteriaWithoutItsMappings(t *testing.T) {
	s := twoTier(t, "")
	rn := s.rn
	zero := 0
	cfg := mapping.Config{EventSourceArn: s.streamARN, FunctionName: "proc", StartingPosition: mapping.TrimHorizon,
		MaximumRetryAttempts: &zero, FunctionResponseTypes: []string{mapping.ReportBatchItemFailures},
		FilterCriteria:    &filter.Criteria{Filters: []filter.Pattern{{Pattern: `{"data":{"keep":["yes"]}}`}}},
		DestinationConfig: &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: rn.Queues.ARN("retry-dlq")}}}
	fn := &recovery.IdempotentUnsupported{Streams: rn.Streams, Queues: rn.Queues, RetryDLQ: s.retryDLQ, Handle: newCounting().handle}
	if err := fn.CheckMapping(cfg); err == nil || !strings.Contains(err.Error(), "FilterCriteria") {
		t.Fatalf("CheckMapping with FilterCriteria and no Mappings = %v; want it refused, naming FilterCriteria", err)
	}
	fn.Mappings = rn.Mappings
	if err := fn.CheckMapping(cfg); err != nil {
		t.Fatalf("CheckMapping with FilterCriteria and Mappings = %v; want it accepted", err)
	}
}
