package stack

// What Apply does to a resource that exists: it makes its settings the
// file's, and what the file leaves out goes back to AWS's default.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/queue"
)

// queueAttrDefaults are the queue attributes Apply puts back to their
// default when the file leaves them out (SetQueueAttributes; "" removes a
// policy), with the values GetQueueAttributes reports for them. Policy is
// not among them: AddPermission and RemovePermission change it too.
var queueAttrDefaults = map[string]string{
	queue.AttrDelaySeconds:                  "0",
	queue.AttrMaximumMessageSize:            strconv.Itoa(queue.DefaultMaximumMessageSize),
	queue.AttrMessageRetentionPeriod:        strconv.Itoa(queue.DefaultMessageRetentionPeriod),
	queue.AttrReceiveMessageWaitTimeSeconds: "0",
	queue.AttrVisibilityTimeout:             strconv.Itoa(queue.DefaultVisibilityTimeout),
	queue.AttrRedrivePolicy:                 "",
	queue.AttrRedriveAllowPolicy:            "",
	queue.AttrKmsMasterKeyId:                "",
	queue.AttrKmsDataKeyReusePeriodSeconds:  "300",
	queue.AttrSqsManagedSseEnabled:          "true",
}

// fifoQueueAttrDefaults are queueAttrDefaults' FIFO-only attributes.
var fifoQueueAttrDefaults = map[string]string{
	queue.AttrContentBasedDeduplication: "false",
	queue.AttrDeduplicationScope:        "queue",
	queue.AttrFifoThroughputLimit:       "perQueue",
}

// applyQueue creates queue q with its attributes and tags, or, when it
// exists, sets the attributes that differ from the file's
// (SetQueueAttributes) and puts those the file leaves out back to their
// defaults (queueAttrDefaults); an existing queue's tags are left as they
// are, as CreateQueue leaves them. It reports whether it created the
// queue. FifoQueue cannot change after creation: a file that changes it
// is an InvalidAttributeName error naming the queue. Before, CreateQueue
// was called on the existing queue, and a changed attribute made every
// Apply fail (QueueAlreadyExists "a different value for attribute
// VisibilityTimeout"), so `runnel serve -f` refused to start.
func applyQueue(ctx context.Context, rn *runnel.Runnel, q Queue) (bool, error) {
	attrs := maps.Clone(q.Attributes)
	if attrs == nil {
		attrs = map[string]string{}
	}
	if rp, ok := attrs[queue.AttrRedrivePolicy]; ok {
		attrs[queue.AttrRedrivePolicy] = qualifyRedrive(rn, rp)
	}
	if _, err := rn.Queues.GetQueueURL(ctx, q.QueueName); err != nil {
		if !errors.Is(err, awserr.ErrQueueDoesNotExist) {
			return false, err
		}
		_, err := rn.Queues.CreateQueueWithTags(ctx, q.QueueName, attrs, q.Tags)
		return err == nil, err
	}
	cur, err := rn.Queues.GetQueueAttributes(ctx, q.QueueName, []string{queue.AttrAll})
	if err != nil {
		return false, err
	}
	fifo := cur[queue.AttrFifoQueue] == "true"
	if want := strings.EqualFold(attrs[queue.AttrFifoQueue], "true"); want != fifo {
		return false, awserr.New(awserr.ErrInvalidAttributeName, "FifoQueue: queue %s exists with FifoQueue %t and the file says %t: FifoQueue can only be set when the queue is created (delete the queue, then apply)", q.QueueName, fifo, want)
	}
	delete(attrs, queue.AttrFifoQueue)
	change := map[string]string{}
	for k, v := range attrs {
		if cur[k] != v {
			change[k] = v
		}
	}
	defaults := maps.Clone(queueAttrDefaults)
	if fifo {
		maps.Copy(defaults, fifoQueueAttrDefaults)
	}
	for k, def := range defaults {
		// An attribute not reported is at its default.
		if v, set := cur[k]; set && v != def {
			if _, given := attrs[k]; !given {
				change[k] = def
			}
		}
	}
	if len(change) == 0 {
		return false, nil
	}
	return false, rn.Queues.SetQueueAttributes(ctx, q.QueueName, change)
}

// updateMapping makes the existing mapping old's settings those of cfg
// (the file's), and returns its UUID. UpdateEventSourceMapping keeps the
// stored value of a field not given, so every setting the file leaves out
// is given with Lambda's default, or with the value that removes it:
// Enabled true; BatchSize 100 (a queue: 10); for a stream or DynamoDB
// stream ParallelizationFactor 1, MaximumRetryAttempts and
// MaximumRecordAgeInSeconds -1, TumblingWindowInSeconds 0, no
// DestinationConfig; no FunctionResponseTypes, no FilterCriteria ({"Filters":
// []}); for a queue no ScalingConfig (an empty one removes it, as in
// Lambda). A queue mapping's RetryPolicy (runnel's) cannot be removed by
// an update (left out, it is kept; empty, it is the default policy): a
// queue mapping whose RetryPolicy the file took out is deleted and created
// again (replaced true; the queue holds its messages, there are no
// checkpoints to lose). StartingPosition and StartingPositionTimestamp
// apply at creation only, as in Lambda: a change to them is ignored for an
// existing mapping. Before, the file's absent settings were sent as "not
// given", and a filter, a destination, a retry limit or Enabled: false
// taken out of the file stayed in force.
func updateMapping(ctx context.Context, rn *runnel.Runnel, old mapping.Config, cfg mapping.Config) (uuid string, replaced bool, err error) {
	cfg.UUID = old.UUID
	if cfg.Enabled == nil {
		cfg.Enabled = new(true)
	}
	if cfg.FunctionResponseTypes == nil {
		cfg.FunctionResponseTypes = []string{}
	}
	if cfg.FilterCriteria == nil {
		cfg.FilterCriteria = &filter.Criteria{Filters: []filter.Pattern{}}
	}
	if strings.HasPrefix(cfg.EventSourceArn, "arn:aws:sqs:") {
		cfg.BatchSize = cmp.Or(cfg.BatchSize, mapping.DefaultQueueBatchSize)
		if cfg.RetryPolicy == nil && old.RetryPolicy != nil {
			cfg.UUID = ""
			if err := rn.Mappings.DeleteEventSourceMapping(ctx, old.UUID); err != nil {
				return "", false, err
			}
			c, err := rn.Mappings.CreateEventSourceMapping(ctx, cfg)
			if err != nil {
				return "", false, fmt.Errorf("RetryPolicy removed: the mapping %s was deleted, and creating it again failed: %w", old.UUID, err)
			}
			return c.UUID, true, nil
		}
		if cfg.ScalingConfig == nil {
			cfg.ScalingConfig = &mapping.ScalingConfig{} // removes it
		}
	} else {
		cfg.BatchSize = cmp.Or(cfg.BatchSize, mapping.DefaultBatchSize)
		cfg.ParallelizationFactor = cmp.Or(cfg.ParallelizationFactor, 1)
		cfg.MaximumRetryAttempts = cmp.Or(cfg.MaximumRetryAttempts, new(-1))
		cfg.MaximumRecordAgeInSeconds = cmp.Or(cfg.MaximumRecordAgeInSeconds, new(-1))
		cfg.TumblingWindowInSeconds = cmp.Or(cfg.TumblingWindowInSeconds, new(0))
		if cfg.DestinationConfig == nil {
			cfg.DestinationConfig = &mapping.DestinationConfig{} // removes it
		}
	}
	if _, err := rn.Mappings.UpdateEventSourceMapping(ctx, cfg); err != nil {
		return "", false, err
	}
	return cfg.UUID, false, nil
}
