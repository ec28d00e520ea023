// Package stack reads a stack file: YAML that declares streams, functions,
// event source mappings, SNS topics (topics.go), and EventBridge buses,
// rules, archives and Scheduler schedules (events.go), with the AWS
// property names, and applies it to a runnel instance.
//
//	Streams:
//	  - StreamName: flights
//	    ShardCount: 4
//	Functions:
//	  - FunctionName: stats
//	    Handler: log          # a handler registered in this binary
//	    Timeout: 30
//	Queues:
//	  - QueueName: flights-retry
//	    Attributes: {VisibilityTimeout: "60"}
//	Tables:
//	  - TableName: state
//	    KeySchema: [{AttributeName: TradeID, KeyType: HASH}]
//	    AttributeDefinitions: [{AttributeName: TradeID, AttributeType: S}]
//	    StreamSpecification: {StreamEnabled: true, StreamViewType: NEW_AND_OLD_IMAGES}
//	    TimeToLiveSpecification: {AttributeName: expires, Enabled: true}
//	EventSourceMappings:
//	  - EventSourceArn: flights       # a stream or queue name, or an ARN
//	    FunctionName: stats
//	    StartingPosition: TRIM_HORIZON
//	    BatchSize: 500
//	    BisectBatchOnFunctionError: true
//	    MaximumRetryAttempts: 3
//	    DestinationConfig:
//	      OnFailure:
//	        Destination: flights-retry    # a stream or queue name, or an ARN
//	  - EventSourceArn: flights-retry # a queue mapping
//	    FunctionName: stats
//	    FunctionResponseTypes: [ReportBatchItemFailures]
//	    RetryPolicy: {BaseDelaySeconds: 1, MaxAttempts: 5}
//	Topics:                         # SNS topics and their subscriptions (see Topic)
//	  - TopicName: flights-events
//	    Subscriptions: [{Protocol: sqs, Endpoint: flights-retry}]
//
// A name is a queue's if the stack declares a queue of that name or one
// exists; else a table's (its current stream) if the stack declares a table
// of that name or one exists; else a stream's.
//
// # Applying a file again
//
// The file is the desired state of what it declares, and Apply is
// idempotent: applying an edited file makes each declared resource what
// the file now says, and a setting taken out of the file goes back to
// AWS's default (it does not stay in force):
//
//   - Streams and tables that exist are kept. A table's stream is turned
//     on and its TTL set as the file says (a stream's view type cannot
//     change); exception: a StreamSpecification or
//     TimeToLiveSpecification taken out of the file leaves the table's
//     stream and TTL as they are.
//   - Queues that exist get the file's attributes (SetQueueAttributes);
//     attributes taken out go back to their defaults (VisibilityTimeout
//     30, DelaySeconds 0, no RedrivePolicy, ...), except Policy, which
//     AddPermission also changes. FifoQueue cannot change: an error names
//     the queue. Tags are given to a new queue only.
//   - Functions are created or replaced.
//   - A mapping that already joins the same source and function is
//     updated rather than duplicated, to exactly the file's settings:
//     one taken out goes back to Lambda's default (Enabled true,
//     BatchSize 100 or 10 for a queue, MaximumRetryAttempts -1, no
//     FilterCriteria, no DestinationConfig, no ScalingConfig, ...). A
//     queue mapping whose RetryPolicy is taken out is replaced (deleted
//     and created again). StartingPosition applies at creation only.
//   - Topics that exist get the file's attributes (SetTopicAttributes),
//     those taken out go back to their defaults; FifoTopic cannot change.
//     A topic's subscriptions are the file's: one it no longer lists is
//     unsubscribed, an attribute taken out (FilterPolicy, ...) is removed.
//   - A rule's targets are the file's: one it no longer lists is removed.
//     Schedules that exist are updated; buses and archives are kept.
//
// Taking a whole resource (a stream, queue, table, function, mapping,
// topic, bus, rule, archive or schedule) out of the file does not delete
// it: Apply never deletes what the file does not name. Only a declared
// topic's subscriptions and a declared rule's targets are removed when
// the file stops listing them.
package stack

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/backoff"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/mapping"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// Stack is the content of a stack file.
type Stack struct {
	Streams             []stream.CreateStreamInput `yaml:"Streams"`
	Queues              []Queue                    `yaml:"Queues"`
	Tables              []Table                    `yaml:"Tables"`
	Functions           []function.Config          `yaml:"Functions"`
	EventSourceMappings []Mapping                  `yaml:"EventSourceMappings"`
	// Topics are SNS topics with their subscriptions (topics.go).
	Topics []Topic `yaml:"Topics"`
	// EventBridge and Scheduler (events.go).
	EventBuses []EventBus `yaml:"EventBuses"`
	Rules      []Rule     `yaml:"Rules"`
	Archives   []Archive  `yaml:"Archives"`
	Schedules  []Schedule `yaml:"Schedules"`
}

// Queue is a queue as written in a stack file (CreateQueue): a name, and
// attributes with SQS's names and string values, for example
// VisibilityTimeout: "60" or RedrivePolicy: '{"deadLetterTargetArn":"...","maxReceiveCount":"5"}'.
// In a RedrivePolicy, deadLetterTargetArn may be a plain queue name.
// Tags (at most 50; keys 1..128 characters, values 0..256) are given to a
// new queue only, as CreateQueue does.
type Queue struct {
	QueueName  string            `yaml:"QueueName"`
	Attributes map[string]string `yaml:"Attributes"`
	Tags       map[string]string `yaml:"Tags"`
}

// Table is a table as written in a stack file (CreateTable with
// StreamSpecification, plus UpdateTimeToLive's TimeToLiveSpecification).
type Table struct {
	TableName string `yaml:"TableName"`
	KeySchema []struct {
		AttributeName string `yaml:"AttributeName"`
		KeyType       string `yaml:"KeyType"`
	} `yaml:"KeySchema"`
	AttributeDefinitions []struct {
		AttributeName string `yaml:"AttributeName"`
		AttributeType string `yaml:"AttributeType"`
	} `yaml:"AttributeDefinitions"`
	StreamSpecification *struct {
		StreamEnabled  bool   `yaml:"StreamEnabled"`
		StreamViewType string `yaml:"StreamViewType"`
	} `yaml:"StreamSpecification"`
	TimeToLiveSpecification *struct {
		AttributeName string `yaml:"AttributeName"`
		Enabled       bool   `yaml:"Enabled"`
	} `yaml:"TimeToLiveSpecification"`
	// RunnelShards is the number of change-log shards (runnel's own; default 4).
	RunnelShards int `yaml:"RunnelShards"`
}

func (t *Table) input() table.CreateTableInput {
	in := table.CreateTableInput{TableName: t.TableName, RunnelShards: t.RunnelShards}
	for _, k := range t.KeySchema {
		in.KeySchema = append(in.KeySchema, table.KeySchemaElement{AttributeName: k.AttributeName, KeyType: k.KeyType})
	}
	for _, d := range t.AttributeDefinitions {
		in.AttributeDefinitions = append(in.AttributeDefinitions, table.AttributeDefinition{AttributeName: d.AttributeName, AttributeType: d.AttributeType})
	}
	if sp := t.StreamSpecification; sp != nil {
		in.StreamSpecification = &table.StreamSpecification{StreamEnabled: sp.StreamEnabled, StreamViewType: sp.StreamViewType}
	}
	return in
}

// Mapping is an event source mapping as written in a stack file: the
// fields of mapping.Config, where EventSourceArn and the OnFailure
// destination may also be plain stream names.
type Mapping struct {
	EventSourceArn                 string                     `yaml:"EventSourceArn"`
	FunctionName                   string                     `yaml:"FunctionName"`
	Enabled                        *bool                      `yaml:"Enabled"`
	BatchSize                      int                        `yaml:"BatchSize"`
	MaximumBatchingWindowInSeconds int                        `yaml:"MaximumBatchingWindowInSeconds"`
	ParallelizationFactor          int                        `yaml:"ParallelizationFactor"`
	StartingPosition               string                     `yaml:"StartingPosition"`
	StartingPositionTimestamp      *yamlTime                  `yaml:"StartingPositionTimestamp"`
	MaximumRetryAttempts           *int                       `yaml:"MaximumRetryAttempts"`
	MaximumRecordAgeInSeconds      *int                       `yaml:"MaximumRecordAgeInSeconds"`
	BisectBatchOnFunctionError     bool                       `yaml:"BisectBatchOnFunctionError"`
	FunctionResponseTypes          []string                   `yaml:"FunctionResponseTypes"`
	DestinationConfig              *mapping.DestinationConfig `yaml:"DestinationConfig"`
	FilterCriteria                 *filterCriteria            `yaml:"FilterCriteria"`
	ScalingConfig                  *mapping.ScalingConfig     `yaml:"ScalingConfig"`
	TumblingWindowInSeconds        *int                       `yaml:"TumblingWindowInSeconds"`
	RetryPolicy                    *backoff.Policy            `yaml:"RetryPolicy"`
}

type filterCriteria struct {
	Filters []struct {
		Pattern string `yaml:"Pattern"`
	} `yaml:"Filters"`
}

// Load reads and parses a stack file. Unknown keys are errors, so a
// misspelt property does not silently take its default.
func Load(path string) (*Stack, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse parses stack YAML.
func Parse(b []byte) (*Stack, error) {
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var s Stack
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	if err := s.checkTimes(); err != nil {
		return nil, fmt.Errorf("stack: %w", err)
	}
	return &s, nil
}

// Applied says what Apply did.
type Applied struct {
	StreamsCreated, StreamsKept []string
	// QueuesCreated did not exist; QueuesKept existed, and their
	// attributes were made the file's (applyQueue).
	QueuesCreated, QueuesKept        []string
	TablesCreated, TablesKept        []string
	FunctionsCreated                 []string
	MappingsCreated, MappingsUpdated []string // UUIDs
	// MappingsReplaced are the new UUIDs of queue mappings deleted and
	// created again because the file took their RetryPolicy out
	// (updateMapping).
	MappingsReplaced     []string `json:",omitempty"`
	TopicsApplied        []string
	SubscriptionsApplied []string // ARNs
	// SubscriptionsRemoved are the ARNs of subscriptions of the file's
	// topics that the file no longer lists, unsubscribed (applyTopics).
	SubscriptionsRemoved []string `json:",omitempty"`
	Events               AppliedEvents
}

// Apply creates what the stack declares. It stops at the first refused
// item with an error naming it (mappings[1]: InvalidParameterValueException...);
// items applied before it stay.
func Apply(ctx context.Context, rn *runnel.Runnel, s *Stack) (*Applied, error) {
	out := &Applied{}
	for i, in := range s.Streams {
		if _, err := rn.Streams.CreateStream(ctx, in); err != nil {
			if errors.Is(err, awserr.ErrResourceInUse) {
				out.StreamsKept = append(out.StreamsKept, in.StreamName)
				continue
			}
			return out, fmt.Errorf("Streams[%d] (%s): %w", i, in.StreamName, err)
		}
		out.StreamsCreated = append(out.StreamsCreated, in.StreamName)
	}
	queueNames := map[string]bool{}
	for i, q := range s.Queues {
		created, err := applyQueue(ctx, rn, q)
		if err != nil {
			return out, fmt.Errorf("Queues[%d] (%s): %w", i, q.QueueName, err)
		}
		queueNames[q.QueueName] = true
		if created {
			out.QueuesCreated = append(out.QueuesCreated, q.QueueName)
		} else {
			out.QueuesKept = append(out.QueuesKept, q.QueueName)
		}
	}
	for i, t := range s.Tables {
		if _, err := rn.Tables.CreateTable(ctx, t.input()); err != nil {
			if !errors.Is(err, awserr.ErrResourceInUse) {
				return out, fmt.Errorf("Tables[%d] (%s): %w", i, t.TableName, err)
			}
			out.TablesKept = append(out.TablesKept, t.TableName)
			// A stream the file turns on for a table that has none is
			// turned on. Before, a kept table's StreamSpecification was
			// ignored, and a mapping on the table's stream then looked for
			// a Kinesis stream of its name.
			if sp := t.StreamSpecification; sp != nil && sp.StreamEnabled {
				d, err := rn.Tables.DescribeTable(ctx, t.TableName)
				if err != nil {
					return out, fmt.Errorf("Tables[%d] (%s): %w", i, t.TableName, err)
				}
				switch cur := d.StreamSpecification; {
				case cur == nil || !cur.StreamEnabled:
					if _, err := rn.Tables.UpdateStream(ctx, t.TableName, table.StreamSpecification{StreamEnabled: true, StreamViewType: sp.StreamViewType}); err != nil {
						return out, fmt.Errorf("Tables[%d] (%s): StreamSpecification: %w", i, t.TableName, err)
					}
				case cur.StreamViewType != sp.StreamViewType:
					return out, fmt.Errorf("Tables[%d] (%s): StreamSpecification: the table's stream is %s, the file says %s: a stream's view type cannot change (turn it off, then on, as in DynamoDB)", i, t.TableName, cur.StreamViewType, sp.StreamViewType)
				}
			}
		} else {
			out.TablesCreated = append(out.TablesCreated, t.TableName)
		}
		if ttl := t.TimeToLiveSpecification; ttl != nil {
			cur, err := rn.Tables.DescribeTimeToLive(ctx, t.TableName)
			if err != nil {
				return out, fmt.Errorf("Tables[%d] (%s): %w", i, t.TableName, err)
			}
			if cur.Enabled != ttl.Enabled || (ttl.Enabled && cur.AttributeName != ttl.AttributeName) {
				if _, err := rn.Tables.UpdateTimeToLive(ctx, t.TableName, table.TimeToLiveSpecification{AttributeName: ttl.AttributeName, Enabled: ttl.Enabled}); err != nil {
					return out, fmt.Errorf("Tables[%d] (%s): TimeToLiveSpecification: %w", i, t.TableName, err)
				}
			}
		}
	}
	for i, fc := range s.Functions {
		if _, err := rn.Functions.PutFunction(ctx, fc); err != nil {
			return out, fmt.Errorf("Functions[%d] (%s): %w", i, fc.FunctionName, err)
		}
		out.FunctionsCreated = append(out.FunctionsCreated, fc.FunctionName)
	}
	if err := applyTopics(ctx, rn, s.Topics, out); err != nil {
		return out, err
	}
	for i, m := range s.EventSourceMappings {
		cfg := m.config(ctx, rn, queueNames)
		var existing *mapping.Config
		for _, c := range rn.Mappings.ListEventSourceMappings() {
			if c.EventSourceArn == cfg.EventSourceArn && (c.FunctionName == cfg.FunctionName || c.FunctionArn == rn.Functions.ARN(cfg.FunctionName)) {
				existing = &c
				break
			}
		}
		if existing != nil {
			id, replaced, err := updateMapping(ctx, rn, *existing, cfg)
			if err != nil {
				return out, fmt.Errorf("EventSourceMappings[%d]: %w", i, err)
			}
			if replaced {
				out.MappingsReplaced = append(out.MappingsReplaced, id)
			} else {
				out.MappingsUpdated = append(out.MappingsUpdated, id)
			}
			continue
		}
		c, err := rn.Mappings.CreateEventSourceMapping(ctx, cfg)
		if err != nil {
			return out, fmt.Errorf("EventSourceMappings[%d]: %w", i, err)
		}
		out.MappingsCreated = append(out.MappingsCreated, c.UUID)
	}
	return out, applyEvents(ctx, rn, s, queueNames, &out.Events)
}

// resolveARN turns a queue or stream name into its ARN; ARNs pass through.
func resolveARN(ctx context.Context, rn *runnel.Runnel, queues map[string]bool, s string) string {
	if s == "" || strings.HasPrefix(s, "arn:") {
		return s
	}
	if queues[s] {
		return rn.Queues.ARN(s)
	}
	if _, err := rn.Queues.GetQueueURL(ctx, s); err == nil {
		return rn.Queues.ARN(s)
	}
	if d, err := rn.Tables.DescribeTable(ctx, s); err == nil && d.LatestStreamArn != "" {
		return d.LatestStreamArn
	}
	return rn.Streams.ARN(s)
}

// qualifyRedrive turns a plain queue name in a RedrivePolicy's
// deadLetterTargetArn into the queue's ARN.
func qualifyRedrive(rn *runnel.Runnel, policy string) string {
	var p map[string]any
	if json.Unmarshal([]byte(policy), &p) != nil {
		return policy
	}
	if t, ok := p["deadLetterTargetArn"].(string); ok && t != "" && !strings.HasPrefix(t, "arn:") {
		p["deadLetterTargetArn"] = rn.Queues.ARN(t)
		b, _ := json.Marshal(p)
		return string(b)
	}
	return policy
}

func (m *Mapping) config(ctx context.Context, rn *runnel.Runnel, queues map[string]bool) mapping.Config {
	c := mapping.Config{
		EventSourceArn:                 resolveARN(ctx, rn, queues, m.EventSourceArn),
		FunctionName:                   m.FunctionName,
		Enabled:                        m.Enabled,
		BatchSize:                      m.BatchSize,
		MaximumBatchingWindowInSeconds: m.MaximumBatchingWindowInSeconds,
		ParallelizationFactor:          m.ParallelizationFactor,
		StartingPosition:               m.StartingPosition,
		MaximumRetryAttempts:           m.MaximumRetryAttempts,
		MaximumRecordAgeInSeconds:      m.MaximumRecordAgeInSeconds,
		BisectBatchOnFunctionError:     m.BisectBatchOnFunctionError,
		FunctionResponseTypes:          m.FunctionResponseTypes,
		ScalingConfig:                  m.ScalingConfig,
		TumblingWindowInSeconds:        m.TumblingWindowInSeconds,
		RetryPolicy:                    m.RetryPolicy,
	}
	if m.StartingPositionTimestamp != nil {
		t := m.StartingPositionTimestamp.Time
		c.StartingPositionTimestamp = &t
	}
	if m.DestinationConfig != nil && m.DestinationConfig.OnFailure != nil {
		c.DestinationConfig = &mapping.DestinationConfig{OnFailure: &mapping.OnFailure{Destination: resolveARN(ctx, rn, queues, m.DestinationConfig.OnFailure.Destination)}}
	}
	if m.FilterCriteria != nil {
		c.FilterCriteria = &filter.Criteria{}
		for _, f := range m.FilterCriteria.Filters {
			c.FilterCriteria.Filters = append(c.FilterCriteria.Filters, filter.Pattern{Pattern: f.Pattern})
		}
	}
	return c
}
