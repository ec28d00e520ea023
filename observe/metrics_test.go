package observe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/observe"
	"github.com/runnel-dev/runnel/queue"
)

// TestMetricsAfterProcessingAndFailure runs a stream mapping over three
// records, one of which always fails (two retries, then discarded), puts
// messages in queues, and checks the metrics a scrape reads from runnel's
// state.
func TestMetricsAfterProcessingAndFailure(t *testing.T) {
	rn, _ := start(t)
	ctx := context.Background()
	arn := createStream(t, rn, "orders")
	fn := kinesisFunction(t, rn, function.Config{}, func(ctx context.Context, ev events.KinesisEvent) error {
		for _, r := range ev.Records {
			if string(r.Kinesis.Data) == "bad" {
				return errors.New("bad record")
			}
		}
		return nil
	})
	put(t, rn, "orders", "a", "bad", "c")
	id := createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: fn, BatchSize: 1, MaximumRetryAttempts: ptr(2)})
	testenv.Eventually(t, wait, "3 records resolved", func() bool {
		st, err := rn.Mappings.Status(id)
		return err == nil && len(st.Shards) == 1 && st.Shards[0].ProcessedRecords+st.Shards[0].DiscardedRecords == 3
	})
	testenv.Eventually(t, wait, "no pending record", func() bool {
		st, _ := rn.Mappings.Status(id)
		return st.Shards[0].PendingRecords == 0
	})

	createQueue(t, rn, "parking", nil)
	work := createQueue(t, rn, "work", map[string]string{queue.AttrRedrivePolicy: `{"deadLetterTargetArn":"` + rn.Queues.ARN("parking") + `","maxReceiveCount":3}`})
	dlq := createQueue(t, rn, "orders-dlq", nil)
	send(t, rn, dlq, 2)
	send(t, rn, work, 3)
	if _, err := rn.Queues.ReceiveMessage(ctx, work, queue.ReceiveMessageInput{MaxNumberOfMessages: 1}); err != nil {
		t.Fatal(err)
	}

	c := observe.NewCollector(rn, nil)
	shard := "shardId-000000000000"
	labels := fmt.Sprintf(`function=%q,shard=%q,source="orders",uuid=%q`, fn, shard, id)
	expected := fmt.Sprintf(`
# HELP runnel_function_invocations_total Invocations of the function that ran (Lambda's Invocations).
# TYPE runnel_function_invocations_total counter
runnel_function_invocations_total{function=%[1]q} 5
# HELP runnel_function_errors_total Invocations that ended in a function error (Lambda's Errors).
# TYPE runnel_function_errors_total counter
runnel_function_errors_total{function=%[1]q} 3
# HELP runnel_function_throttles_total Invocations refused because the function's concurrency was in use (Lambda's Throttles).
# TYPE runnel_function_throttles_total counter
runnel_function_throttles_total{function=%[1]q} 0
# HELP runnel_function_concurrent_executions Invocations running now (Lambda's ConcurrentExecutions).
# TYPE runnel_function_concurrent_executions gauge
runnel_function_concurrent_executions{function=%[1]q} 0
# HELP runnel_function_abandoned_total Invocations given up at their timeout while the handler still ran.
# TYPE runnel_function_abandoned_total counter
runnel_function_abandoned_total{function=%[1]q} 0
# HELP runnel_function_async_destination_delivery_failures_total Destination records not accepted by their destination (Lambda's DestinationDeliveryFailures).
# TYPE runnel_function_async_destination_delivery_failures_total counter
runnel_function_async_destination_delivery_failures_total{function=%[1]q} 0
# HELP runnel_mapping_iterator_age_milliseconds Age of the oldest record the mapping read from the shard and has not resolved (Lambda's IteratorAge).
# TYPE runnel_mapping_iterator_age_milliseconds gauge
runnel_mapping_iterator_age_milliseconds{%[2]s} 0
# HELP runnel_mapping_pending_records Records read from the shard and not yet resolved.
# TYPE runnel_mapping_pending_records gauge
runnel_mapping_pending_records{%[2]s} 0
# HELP runnel_mapping_processed_records_total Records resolved by a successful invocation.
# TYPE runnel_mapping_processed_records_total counter
runnel_mapping_processed_records_total{%[2]s} 2
# HELP runnel_mapping_discarded_records_total Records given up on (sent to the on-failure destination or logged).
# TYPE runnel_mapping_discarded_records_total counter
runnel_mapping_discarded_records_total{%[2]s} 1
# HELP runnel_mapping_function_errors_total Invocations that ended in a function error.
# TYPE runnel_mapping_function_errors_total counter
runnel_mapping_function_errors_total{%[2]s} 3
# HELP runnel_mapping_retries_total Retries of records after a failure.
# TYPE runnel_mapping_retries_total counter
runnel_mapping_retries_total{%[2]s} 2
# HELP runnel_mapping_bisects_total Batches split in two after a function error (BisectBatchOnFunctionError).
# TYPE runnel_mapping_bisects_total counter
runnel_mapping_bisects_total{%[2]s} 0
# HELP runnel_mapping_throttles_total Invocations throttled by the function's concurrency.
# TYPE runnel_mapping_throttles_total counter
runnel_mapping_throttles_total{%[2]s} 0
# HELP runnel_queue_messages_visible Messages available for retrieval: SQS's ApproximateNumberOfMessagesVisible metric (the ApproximateNumberOfMessages attribute).
# TYPE runnel_queue_messages_visible gauge
runnel_queue_messages_visible{queue="orders-dlq"} 2
runnel_queue_messages_visible{queue="parking"} 0
runnel_queue_messages_visible{queue="work"} 2
# HELP runnel_queue_messages_not_visible Messages in flight (ApproximateNumberOfMessagesNotVisible).
# TYPE runnel_queue_messages_not_visible gauge
runnel_queue_messages_not_visible{queue="orders-dlq"} 0
runnel_queue_messages_not_visible{queue="parking"} 0
runnel_queue_messages_not_visible{queue="work"} 1
# HELP runnel_queue_dead_letter 1 when the queue is a dead-letter queue (a RedrivePolicy or on-failure target, or named like one).
# TYPE runnel_queue_dead_letter gauge
runnel_queue_dead_letter{queue="orders-dlq"} 1
runnel_queue_dead_letter{queue="parking"} 1
runnel_queue_dead_letter{queue="work"} 0
`, fn, labels)
	names := []string{"runnel_function_invocations_total", "runnel_function_errors_total", "runnel_function_throttles_total",
		"runnel_function_concurrent_executions", "runnel_function_abandoned_total", "runnel_function_async_destination_delivery_failures_total",
		"runnel_mapping_iterator_age_milliseconds", "runnel_mapping_pending_records", "runnel_mapping_processed_records_total",
		"runnel_mapping_discarded_records_total", "runnel_mapping_function_errors_total", "runnel_mapping_retries_total",
		"runnel_mapping_bisects_total", "runnel_mapping_throttles_total",
		"runnel_queue_messages_visible", "runnel_queue_messages_not_visible", "runnel_queue_dead_letter"}
	if err := testutil.CollectAndCompare(c, strings.NewReader(expected), names...); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// The name is the brief's and Lambda's unit (IteratorAge, ms).
		if p.Metric != "runnel_mapping_iterator_age_milliseconds" {
			t.Errorf("lint: %+v", p)
		}
	}

	// The same through the HTTP handler, with /status.
	a, err := observe.NewAlarms(rn, observe.Config{Logger: testenv.Logger(t)})
	if err != nil {
		t.Fatal(err)
	}
	a.Evaluate(ctx)
	srv := httptest.NewServer(observe.Handler(rn, a))
	defer srv.Close()
	body := get(t, srv.URL+"/metrics")
	for _, want := range []string{
		fmt.Sprintf("runnel_function_errors_total{function=%q} 3", fn),
		fmt.Sprintf("runnel_mapping_discarded_records_total{%s} 1", labels),
		`runnel_queue_messages_visible{queue="orders-dlq"} 2`,
		`runnel_alarm_state{alarm="dlq-depth:orders-dlq",resource="orders-dlq",rule="dlq-depth"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	var rep observe.Report
	if err := json.Unmarshal([]byte(get(t, srv.URL+"/status")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.InAlarm == 0 || len(rep.State.Queues) != 3 || len(rep.State.Mappings) != 1 || len(rep.State.Functions) != 1 {
		t.Fatalf("/status: %+v", rep)
	}
	inAlarm := map[string]bool{}
	for _, al := range rep.Alarms {
		inAlarm[al.Name] = al.State == observe.StateAlarm
	}
	// 3 errors in 5 invocations since start; 0 messages in parking.
	want := map[string]bool{"dlq-depth:orders-dlq": true, "dlq-depth:parking": false, "error-rate:" + fn: true,
		"throttles:" + fn: false, "iterator-age:" + id: false}
	for n, v := range want {
		if got, ok := inAlarm[n]; !ok || got != v {
			t.Errorf("/status alarm %s: in ALARM %v (present %v), want %v", n, got, ok, v)
		}
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, b)
	}
	return string(b)
}
