package observe

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/mapping"
)

// Collector is a prometheus.Collector that reads runnel's state at scrape
// time (a Snapshot per scrape): no counter is kept twice.
//
// Metrics (counters end in _total and count since the process running the
// function or mapping started):
//
//	runnel_function_invocations_total{function}
//	runnel_function_errors_total{function}
//	runnel_function_throttles_total{function}
//	runnel_function_duration_seconds_total{function}
//	runnel_function_concurrent_executions{function}
//	runnel_function_abandoned_total{function}
//	runnel_function_async_{accepted,retries_exhausted,event_age_exceeded,
//	  destination_delivery_failures,dead_letter_errors,kept_in_store}_total{function}
//	runnel_mapping_iterator_age_milliseconds{uuid,function,source,shard}
//	runnel_mapping_pending_records{uuid,function,source,shard}
//	runnel_mapping_{invocations,processed_records,discarded_records,filtered_records,
//	  expired_messages,function_errors,partial_failures,retries,bisects,throttles}_total{uuid,function,source,shard}
//	runnel_queue_mapping_pollers{uuid,function,source}
//	runnel_queue_mapping_{invocations,received_messages,deleted_messages,filtered_messages,
//	  failed_messages,backed_off,moved_to_dead_letter,function_errors,throttles}_total{uuid,function,source}
//	runnel_queue_messages_visible{queue}
//	runnel_queue_messages_not_visible{queue}
//	runnel_queue_messages_delayed{queue}
//	runnel_queue_oldest_message_age_seconds{queue}
//	runnel_queue_dead_letter{queue}            1 for a dead-letter queue
//	runnel_queue_expired_messages_total{queue} deleted by MessageRetentionPeriod
//	runnel_sns_{messages_published,notifications_delivered,notifications_failed,
//	  notifications_filtered_out,notifications_dead_lettered,notifications_dead_letter_failed}_total{topic}
//	runnel_eventbridge_rule_{matched_events,invocations,failed_invocations}_total{bus,rule}
//	runnel_scheduler_schedule_{delivered,failed}_total{group,schedule}
//	runnel_alarm_state{alarm,rule,resource}    1 in ALARM (with an Alarms)
//
// Function metrics are exported for the functions whose handlers run in
// this process (FunctionState.Live).
type Collector struct {
	rn      *runnel.Runnel
	opts    TakeOptions
	alarms  *Alarms
	timeout time.Duration
}

// NewCollector returns a collector of rn's state. alarms may be nil; when
// set, runnel_alarm_state reports its last evaluation, and its
// configuration's dead-letter pattern and Passive apply.
func NewCollector(rn *runnel.Runnel, alarms *Alarms) *Collector {
	c := &Collector{rn: rn, alarms: alarms, timeout: 10 * time.Second}
	if alarms != nil {
		c.opts = alarms.takeOptions()
	}
	return c
}

var (
	fnLabels    = []string{"function"}
	shardLabels = []string{"uuid", "function", "source", "shard"}
	qmLabels    = []string{"uuid", "function", "source"}
	queueLabels = []string{"queue"}
)

func desc(name, help string, labels []string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// metric is one metric of a resource of kind T: its descriptor, its type
// and its value read from a T.
type metric[T any] struct {
	d   *prometheus.Desc
	t   prometheus.ValueType
	get func(T) float64
}

// counter is a counter metric whose value is an int64 of a T.
func counter[T any](d *prometheus.Desc, get func(T) int64) metric[T] {
	return metric[T]{d, prometheus.CounterValue, func(v T) float64 { return float64(get(v)) }}
}

// describe sends the descriptor of each of ms.
func describe[T any](ch chan<- *prometheus.Desc, ms []metric[T]) {
	for _, m := range ms {
		ch <- m.d
	}
}

// send sends each of ms for v, with the values of its labels.
func send[T any](ch chan<- prometheus.Metric, ms []metric[T], v T, labels ...string) {
	for _, m := range ms {
		ch <- prometheus.MustNewConstMetric(m.d, m.t, m.get(v), labels...)
	}
}

var (
	fnMetrics = []metric[FunctionState]{
		{desc("runnel_function_invocations_total", "Invocations of the function that ran (Lambda's Invocations).", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Invocations) }},
		{desc("runnel_function_errors_total", "Invocations that ended in a function error (Lambda's Errors).", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Errors) }},
		{desc("runnel_function_throttles_total", "Invocations refused because the function's concurrency was in use (Lambda's Throttles).", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Throttles) }},
		{desc("runnel_function_duration_seconds_total", "Total time the function's handlers ran (Lambda's Duration, summed).", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return f.DurationSeconds }},
		{desc("runnel_function_concurrent_executions", "Invocations running now (Lambda's ConcurrentExecutions).", fnLabels), prometheus.GaugeValue, func(f FunctionState) float64 { return float64(f.ConcurrentExecutions) }},
		{desc("runnel_function_abandoned_total", "Invocations given up at their timeout while the handler still ran.", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Abandoned) }},
	}
	asyncMetrics = []metric[FunctionState]{
		{desc("runnel_function_async_accepted_total", "Event (asynchronous) invocations accepted.", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Async.Accepted) }},
		{desc("runnel_function_async_retries_exhausted_total", "Asynchronous events that failed after their retries.", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Async.RetriesExhausted) }},
		{desc("runnel_function_async_event_age_exceeded_total", "Asynchronous events older than MaximumEventAgeInSeconds when due.", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Async.EventAgeExceeded) }},
		{desc("runnel_function_async_destination_delivery_failures_total", "Destination records not accepted by their destination (Lambda's DestinationDeliveryFailures).", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Async.DestinationDeliveryFailures) }},
		{desc("runnel_function_async_dead_letter_errors_total", "DeadLetterConfig sends that failed (Lambda's DeadLetterErrors).", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Async.DeadLetterErrors) }},
		{desc("runnel_function_async_kept_in_store_total", "Records kept in runnel's asynchronous dead-letter store.", fnLabels), prometheus.CounterValue, func(f FunctionState) float64 { return float64(f.Async.KeptInStore) }},
		{desc("runnel_function_async_event_age_seconds", "Time from an event's acceptance to its latest invocation (Lambda's AsyncEventAge).", fnLabels), prometheus.GaugeValue, func(f FunctionState) float64 { return float64(f.Async.AsyncEventAgeMs) / 1000 }},
	}
	shardMetrics = []metric[shardStatus]{
		{desc("runnel_mapping_iterator_age_milliseconds", "Age of the oldest record the mapping read from the shard and has not resolved (Lambda's IteratorAge).", shardLabels), prometheus.GaugeValue, func(s shardStatus) float64 { return float64(s.IteratorAgeMs) }},
		{desc("runnel_mapping_pending_records", "Records read from the shard and not yet resolved.", shardLabels), prometheus.GaugeValue, func(s shardStatus) float64 { return float64(s.PendingRecords) }},
		{desc("runnel_mapping_invocations_total", "Invocations of the function by the mapping for the shard.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.Invocations) }},
		{desc("runnel_mapping_processed_records_total", "Records resolved by a successful invocation.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.ProcessedRecords) }},
		{desc("runnel_mapping_discarded_records_total", "Records given up on (sent to the on-failure destination or logged).", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.DiscardedRecords) }},
		{desc("runnel_mapping_filtered_records_total", "Records no filter matched.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.FilteredRecords) }},
		{desc("runnel_mapping_expired_messages_total", "Stored messages (each 1..500 records of one PutRecords call) that left the stream (retention) before they were read.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.ExpiredMessages) }},
		{desc("runnel_mapping_function_errors_total", "Invocations that ended in a function error.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.FunctionErrors) }},
		{desc("runnel_mapping_partial_failures_total", "Invocations that reported batch item failures.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.PartialFailures) }},
		{desc("runnel_mapping_retries_total", "Retries of records after a failure.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.Retries) }},
		{desc("runnel_mapping_bisects_total", "Batches split in two after a function error (BisectBatchOnFunctionError).", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.Bisects) }},
		{desc("runnel_mapping_throttles_total", "Invocations throttled by the function's concurrency.", shardLabels), prometheus.CounterValue, func(s shardStatus) float64 { return float64(s.Throttles) }},
	}
	qmMetrics = []metric[queueStatus]{
		{desc("runnel_queue_mapping_pollers", "Pollers of the queue mapping.", qmLabels), prometheus.GaugeValue, func(q queueStatus) float64 { return float64(q.Pollers) }},
		{desc("runnel_queue_mapping_invocations_total", "Invocations of the function by the queue mapping.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.Invocations) }},
		{desc("runnel_queue_mapping_received_messages_total", "Messages handed to the function, retries included.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.ReceivedMessages) }},
		{desc("runnel_queue_mapping_deleted_messages_total", "Messages processed and deleted.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.DeletedMessages) }},
		{desc("runnel_queue_mapping_filtered_messages_total", "Messages no filter matched (deleted).", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.FilteredMessages) }},
		{desc("runnel_queue_mapping_failed_messages_total", "Messages left for a retry.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.FailedMessages) }},
		{desc("runnel_queue_mapping_backed_off_total", "Failed messages given a RetryPolicy delay.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.BackedOff) }},
		{desc("runnel_queue_mapping_moved_to_dead_letter_total", "Messages moved by the RetryPolicy to the dead-letter queue.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.MovedToDeadLetter) }},
		{desc("runnel_queue_mapping_function_errors_total", "Invocations that ended in a function error.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.FunctionErrors) }},
		{desc("runnel_queue_mapping_throttles_total", "Invocations throttled by the function's concurrency.", qmLabels), prometheus.CounterValue, func(q queueStatus) float64 { return float64(q.Throttles) }},
	}
	queueMetrics = []metric[QueueState]{
		{desc("runnel_queue_messages_visible", "Messages available for retrieval: SQS's ApproximateNumberOfMessagesVisible metric (the ApproximateNumberOfMessages attribute).", queueLabels), prometheus.GaugeValue, func(q QueueState) float64 { return float64(q.Visible) }},
		{desc("runnel_queue_messages_not_visible", "Messages in flight (ApproximateNumberOfMessagesNotVisible).", queueLabels), prometheus.GaugeValue, func(q QueueState) float64 { return float64(q.NotVisible) }},
		{desc("runnel_queue_messages_delayed", "Messages delayed (ApproximateNumberOfMessagesDelayed).", queueLabels), prometheus.GaugeValue, func(q QueueState) float64 { return float64(q.Delayed) }},
		{desc("runnel_queue_oldest_message_age_seconds", "Age of the oldest message in the queue (ApproximateAgeOfOldestMessage).", queueLabels), prometheus.GaugeValue, func(q QueueState) float64 { return q.OldestAgeSeconds }},
		{desc("runnel_queue_dead_letter", "1 when the queue is a dead-letter queue (a RedrivePolicy or on-failure target, or named like one).", queueLabels), prometheus.GaugeValue, func(q QueueState) float64 { return b2f(q.DeadLetter) }},
		counter(desc("runnel_queue_expired_messages_total", "Messages deleted because they outlived the queue's MessageRetentionPeriod (each also logged).", queueLabels), func(q QueueState) int64 { return q.Expired }),
	}
	topicLabels  = []string{"topic"}
	topicMetrics = []metric[TopicState]{
		counter(desc("runnel_sns_messages_published_total", "Messages published to the topic (NumberOfMessagesPublished).", topicLabels), func(t TopicState) int64 { return t.Published }),
		counter(desc("runnel_sns_notifications_delivered_total", "Deliveries that succeeded (NumberOfNotificationsDelivered).", topicLabels), func(t TopicState) int64 { return t.Delivered }),
		counter(desc("runnel_sns_notifications_failed_total", "Deliveries that ended without success (NumberOfNotificationsFailed).", topicLabels), func(t TopicState) int64 { return t.Failed }),
		counter(desc("runnel_sns_notifications_filtered_out_total", "Deliveries a filter policy skipped (NumberOfNotificationsFilteredOut).", topicLabels), func(t TopicState) int64 { return t.FilteredOut }),
		counter(desc("runnel_sns_notifications_dead_lettered_total", "Failed deliveries stored in a subscription's dead-letter queue (NumberOfNotificationsRedrivenToDlq).", topicLabels), func(t TopicState) int64 { return t.DeadLettered }),
		counter(desc("runnel_sns_notifications_dead_letter_failed_total", "Failed deliveries the dead-letter queue refused (NumberOfNotificationsFailedToRedriveToDlq).", topicLabels), func(t TopicState) int64 { return t.DeadLetterFailed }),
	}
	alarmDesc = desc("runnel_alarm_state", "1 when the alarm is in ALARM, 0 when OK or INSUFFICIENT_DATA (its resource is gone) (last evaluation).", []string{"alarm", "rule", "resource"})
)

type (
	shardStatus = mapping.ShardStatus
	queueStatus = mapping.QueueStatus
)

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Describe sends the descriptors of every metric.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	describe(ch, fnMetrics)
	describe(ch, asyncMetrics)
	describe(ch, shardMetrics)
	describe(ch, qmMetrics)
	describe(ch, queueMetrics)
	describe(ch, topicMetrics)
	describeRules(ch)
	ch <- alarmDesc
}

// Collect takes a Snapshot and sends its metrics.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	snap := Take(ctx, c.rn, c.opts)
	c.collect(snap, ch)
	if c.alarms != nil {
		for _, a := range c.alarms.Alarms() {
			ch <- prometheus.MustNewConstMetric(alarmDesc, prometheus.GaugeValue, b2f(a.State == StateAlarm), a.Name, a.Rule, a.Resource)
		}
	}
}

func (c *Collector) collect(snap *Snapshot, ch chan<- prometheus.Metric) {
	for _, f := range snap.Functions {
		if !f.Live {
			continue
		}
		send(ch, fnMetrics, f, f.Name)
		if f.Async != nil {
			send(ch, asyncMetrics, f, f.Name)
		}
	}
	for _, mp := range snap.Mappings {
		for _, s := range mp.Shards {
			send(ch, shardMetrics, s, mp.UUID, mp.Function, mp.Source, s.ShardID)
		}
		if q := mp.Queue; q != nil {
			send(ch, qmMetrics, *q, mp.UUID, mp.Function, mp.Source)
		}
	}
	for _, q := range snap.Queues {
		send(ch, queueMetrics, q, q.Name)
	}
	for _, t := range snap.Topics {
		send(ch, topicMetrics, t, t.Name)
	}
	collectRules(snap, ch)
}

// Registry returns a registry with c and the Go runtime and process
// collectors.
func Registry(c *Collector) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(c, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// MetricsHandler serves reg in the Prometheus exposition formats.
func MetricsHandler(reg *prometheus.Registry) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})
}
