package queue

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/awserr"
)

// Queue attribute limits and defaults, from the SQS API reference
// (API_SetQueueAttributes, API_CreateQueue) and the quotas page
// (SQSDeveloperGuide/quotas-messages.html).
const (
	// DefaultVisibilityTimeout is VisibilityTimeout when not set, seconds.
	DefaultVisibilityTimeout = 30
	// MaxVisibilityTimeout bounds VisibilityTimeout (queue and call) and
	// the total time a message may stay in flight after one receive: 12 h.
	MaxVisibilityTimeout = 43200
	// MaxDelaySeconds bounds DelaySeconds (queue and message): 15 minutes.
	MaxDelaySeconds = 900
	// MinMessageRetentionPeriod, MaxMessageRetentionPeriod and
	// DefaultMessageRetentionPeriod: 1 minute, 14 days, 4 days.
	MinMessageRetentionPeriod     = 60
	MaxMessageRetentionPeriod     = 1209600
	DefaultMessageRetentionPeriod = 345600
	// MaxWaitTimeSeconds bounds ReceiveMessageWaitTimeSeconds and
	// WaitTimeSeconds.
	MaxWaitTimeSeconds = 20
	// MinMaximumMessageSize and DefaultMaximumMessageSize: 1 KiB and
	// 256 KiB. MaxMaximumMessageSize is 1 MiB: SQS raised its message size
	// limit to 1 MiB in August 2025 and runnel accepts the raised limit;
	// the default stays 256 KiB as for queues created before the raise.
	MinMaximumMessageSize     = 1024
	DefaultMaximumMessageSize = 262144
	MaxMaximumMessageSize     = 1048576
	// MaxBatchEntries is the most entries of a batch call and the largest
	// MaxNumberOfMessages of ReceiveMessage.
	MaxBatchEntries = 10
	// MaxBatchSize bounds the sum of the sizes of a SendMessageBatch's
	// messages (the 1 MiB of the raised limit).
	MaxBatchSize = 1048576
	// MinMaxReceiveCount and MaxMaxReceiveCount bound a RedrivePolicy's
	// maxReceiveCount.
	MinMaxReceiveCount = 1
	MaxMaxReceiveCount = 1000
	// DeduplicationInterval is how long a FIFO queue remembers a
	// deduplication id after the first send that used it, even if the
	// message was deleted meanwhile.
	DeduplicationInterval = 5 * time.Minute
	// PurgeInterval is the least time between two PurgeQueue calls on one
	// queue.
	PurgeInterval = 60 * time.Second
	// MaxMoveTaskRate bounds MaxNumberOfMessagesPerSecond of a message
	// move task, and is the rate used when none is given.
	MaxMoveTaskRate = 500
)

// Queue attribute names (API_GetQueueAttributes). The Approximate*,
// CreatedTimestamp, LastModifiedTimestamp and QueueArn attributes are
// read-only.
const (
	AttrAll                                   = "All"
	AttrApproximateNumberOfMessages           = "ApproximateNumberOfMessages"
	AttrApproximateNumberOfMessagesDelayed    = "ApproximateNumberOfMessagesDelayed"
	AttrApproximateNumberOfMessagesNotVisible = "ApproximateNumberOfMessagesNotVisible"
	AttrCreatedTimestamp                      = "CreatedTimestamp"
	AttrLastModifiedTimestamp                 = "LastModifiedTimestamp"
	AttrQueueArn                              = "QueueArn"
	AttrDelaySeconds                          = "DelaySeconds"
	AttrMaximumMessageSize                    = "MaximumMessageSize"
	AttrMessageRetentionPeriod                = "MessageRetentionPeriod"
	AttrReceiveMessageWaitTimeSeconds         = "ReceiveMessageWaitTimeSeconds"
	AttrVisibilityTimeout                     = "VisibilityTimeout"
	AttrPolicy                                = "Policy"
	AttrRedrivePolicy                         = "RedrivePolicy"
	AttrRedriveAllowPolicy                    = "RedriveAllowPolicy"
	AttrKmsMasterKeyId                        = "KmsMasterKeyId"
	AttrKmsDataKeyReusePeriodSeconds          = "KmsDataKeyReusePeriodSeconds"
	AttrSqsManagedSseEnabled                  = "SqsManagedSseEnabled"
	AttrFifoQueue                             = "FifoQueue"
	AttrContentBasedDeduplication             = "ContentBasedDeduplication"
	AttrDeduplicationScope                    = "DeduplicationScope"
	AttrFifoThroughputLimit                   = "FifoThroughputLimit"
)

// attrSpec describes one settable queue attribute.
type attrSpec struct {
	def      string // value reported when not set; "" = not reported
	min, max int    // integer range; both 0 = not an integer
	enum     []string
	fifoOnly bool
	// createOnly attributes can't be changed by SetQueueAttributes.
	createOnly bool
	parse      func(string) (string, error) // JSON policies
}

var attrSpecs = map[string]attrSpec{
	AttrDelaySeconds:                  {def: "0", min: 0, max: MaxDelaySeconds},
	AttrMaximumMessageSize:            {def: strconv.Itoa(DefaultMaximumMessageSize), min: MinMaximumMessageSize, max: MaxMaximumMessageSize},
	AttrMessageRetentionPeriod:        {def: strconv.Itoa(DefaultMessageRetentionPeriod), min: MinMessageRetentionPeriod, max: MaxMessageRetentionPeriod},
	AttrReceiveMessageWaitTimeSeconds: {def: "0", min: 0, max: MaxWaitTimeSeconds},
	AttrVisibilityTimeout:             {def: strconv.Itoa(DefaultVisibilityTimeout), min: 0, max: MaxVisibilityTimeout},
	AttrPolicy:                        {parse: parsePolicy},
	AttrRedrivePolicy:                 {parse: normalizeRedrivePolicy},
	AttrRedriveAllowPolicy:            {parse: normalizeRedriveAllowPolicy},
	AttrKmsMasterKeyId:                {},
	AttrKmsDataKeyReusePeriodSeconds:  {min: 60, max: 86400},
	AttrSqsManagedSseEnabled:          {def: "true", enum: []string{"true", "false"}},
	AttrFifoQueue:                     {enum: []string{"true", "false"}, createOnly: true},
	AttrContentBasedDeduplication:     {def: "false", enum: []string{"true", "false"}, fifoOnly: true},
	AttrDeduplicationScope:            {def: "queue", enum: []string{"messageGroup", "queue"}, fifoOnly: true},
	AttrFifoThroughputLimit:           {def: "perQueue", enum: []string{"perQueue", "perMessageGroupId"}, fifoOnly: true},
}

// readOnlyAttrs are reported by GetQueueAttributes but can't be set.
var readOnlyAttrs = []string{
	AttrApproximateNumberOfMessages, AttrApproximateNumberOfMessagesDelayed,
	AttrApproximateNumberOfMessagesNotVisible, AttrCreatedTimestamp,
	AttrLastModifiedTimestamp, AttrQueueArn,
}

// validateAttributes checks attributes given to CreateQueue (creating) or
// SetQueueAttributes against SQS's names and ranges and returns them
// normalized (integers without leading zeros, policies as compact JSON,
// an empty policy meaning "remove"). Errors name the attribute and range.
func validateAttributes(attrs map[string]string, fifo, creating bool) (map[string]string, error) {
	out := make(map[string]string, len(attrs))
	names := make([]string, 0, len(attrs))
	for k := range attrs {
		names = append(names, k)
	}
	sort.Strings(names) // report the first bad attribute deterministically
	for _, name := range names {
		v := attrs[name]
		spec, ok := attrSpecs[name]
		if !ok {
			return nil, awserr.New(awserr.ErrInvalidAttributeName, "Unknown Attribute %s.", name)
		}
		if spec.fifoOnly && !fifo {
			return nil, awserr.New(awserr.ErrInvalidAttributeName, "Unknown Attribute %s: it applies to FIFO queues only.", name)
		}
		if spec.createOnly && !creating {
			return nil, awserr.New(awserr.ErrInvalidAttributeName, "Attribute %s can only be set when the queue is created.", name)
		}
		switch {
		case spec.parse != nil:
			n, err := spec.parse(v)
			if err != nil {
				return nil, awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter %s. Reason: %v", name, err)
			}
			v = n
		case spec.enum != nil:
			if name == AttrFifoQueue || name == AttrContentBasedDeduplication || name == AttrSqsManagedSseEnabled {
				v = strings.ToLower(v)
			}
			found := false
			for _, e := range spec.enum {
				found = found || e == v
			}
			if !found {
				return nil, awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter %s: %q must be one of %s.", name, v, strings.Join(spec.enum, ", "))
			}
		case spec.min != 0 || spec.max != 0:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil || n < spec.min || n > spec.max {
				return nil, awserr.OutOfRange(awserr.ErrInvalidAttributeValue, name, v, spec.min, spec.max)
			}
			v = strconv.Itoa(n)
		}
		out[name] = v
	}
	return out, nil
}

func parsePolicy(v string) (string, error) {
	if v == "" {
		return "", nil
	}
	if !json.Valid([]byte(v)) {
		return "", fmt.Errorf("the policy is not valid JSON")
	}
	return v, nil
}

// RedrivePolicy is a queue's RedrivePolicy attribute: after a message was
// received MaxReceiveCount times, the next receive moves it to the queue
// DeadLetterTargetArn names instead of returning it.
type RedrivePolicy struct {
	// DeadLetterTargetArn is the ARN of the dead-letter queue; it must
	// exist and be of the source's type (FIFO for a FIFO source).
	DeadLetterTargetArn string `json:"deadLetterTargetArn"`
	// MaxReceiveCount: 1..1000.
	MaxReceiveCount int `json:"maxReceiveCount"`
}

// ParseRedrivePolicy reads a RedrivePolicy attribute value. SQS accepts
// maxReceiveCount as a JSON number or a string of digits.
func ParseRedrivePolicy(v string) (*RedrivePolicy, error) {
	var raw struct {
		Target string          `json:"deadLetterTargetArn"`
		Max    json.RawMessage `json:"maxReceiveCount"`
	}
	if err := json.Unmarshal([]byte(v), &raw); err != nil {
		return nil, fmt.Errorf("RedrivePolicy must be a JSON object {\"deadLetterTargetArn\":...,\"maxReceiveCount\":...}: %v", err)
	}
	if raw.Target == "" {
		return nil, fmt.Errorf("RedrivePolicy: deadLetterTargetArn is required")
	}
	if _, ok := NameFromARN(raw.Target); !ok {
		return nil, fmt.Errorf("RedrivePolicy: deadLetterTargetArn %q is not an SQS queue ARN", raw.Target)
	}
	s := strings.Trim(string(raw.Max), `"`)
	n, err := strconv.Atoi(s)
	if err != nil || n < MinMaxReceiveCount || n > MaxMaxReceiveCount {
		return nil, fmt.Errorf("RedrivePolicy: maxReceiveCount %s must be between %d and %d", string(raw.Max), MinMaxReceiveCount, MaxMaxReceiveCount)
	}
	return &RedrivePolicy{DeadLetterTargetArn: raw.Target, MaxReceiveCount: n}, nil
}

func normalizeRedrivePolicy(v string) (string, error) { return normalizePolicy(v, ParseRedrivePolicy) }

// normalizePolicy is a policy attribute's value as stored: "" stays "",
// anything else is parsed (its errors returned as they are) and written
// back as compact JSON.
func normalizePolicy[P any](v string, parse func(string) (*P, error)) (string, error) {
	if v == "" {
		return "", nil
	}
	p, err := parse(v)
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(p)
	return string(b), nil
}

// Redrive permissions of a RedriveAllowPolicy.
const (
	RedriveAllowAll = "allowAll"
	RedriveDenyAll  = "denyAll"
	RedriveByQueue  = "byQueue"
)

// RedriveAllowPolicy is a dead-letter queue's RedriveAllowPolicy
// attribute: which source queues may name it in their RedrivePolicy.
// Absent means allowAll.
type RedriveAllowPolicy struct {
	// RedrivePermission: allowAll, denyAll or byQueue.
	RedrivePermission string `json:"redrivePermission"`
	// SourceQueueArns: 1..10 ARNs with byQueue, none otherwise.
	SourceQueueArns []string `json:"sourceQueueArns,omitempty"`
}

// ParseRedriveAllowPolicy reads a RedriveAllowPolicy attribute value.
func ParseRedriveAllowPolicy(v string) (*RedriveAllowPolicy, error) {
	var p RedriveAllowPolicy
	if err := json.Unmarshal([]byte(v), &p); err != nil {
		return nil, fmt.Errorf("RedriveAllowPolicy must be a JSON object {\"redrivePermission\":...}: %v", err)
	}
	switch p.RedrivePermission {
	case RedriveAllowAll, RedriveDenyAll:
		if len(p.SourceQueueArns) > 0 {
			return nil, fmt.Errorf("RedriveAllowPolicy: sourceQueueArns is only allowed with redrivePermission byQueue")
		}
	case RedriveByQueue:
		if len(p.SourceQueueArns) < 1 || len(p.SourceQueueArns) > 10 {
			return nil, fmt.Errorf("RedriveAllowPolicy: byQueue needs between 1 and 10 sourceQueueArns, got %d", len(p.SourceQueueArns))
		}
		for _, a := range p.SourceQueueArns {
			if _, ok := NameFromARN(a); !ok {
				return nil, fmt.Errorf("RedriveAllowPolicy: %q is not an SQS queue ARN", a)
			}
		}
	default:
		return nil, fmt.Errorf("RedriveAllowPolicy: redrivePermission %q must be allowAll, denyAll or byQueue", p.RedrivePermission)
	}
	return &p, nil
}

func normalizeRedriveAllowPolicy(v string) (string, error) {
	return normalizePolicy(v, ParseRedriveAllowPolicy)
}

// allows reports whether the policy lets sourceArn use the queue as its
// dead-letter queue.
func (p *RedriveAllowPolicy) allows(sourceArn string) bool {
	if p == nil {
		return true
	}
	switch p.RedrivePermission {
	case RedriveDenyAll:
		return false
	case RedriveByQueue:
		for _, a := range p.SourceQueueArns {
			if a == sourceArn {
				return true
			}
		}
		return false
	}
	return true
}

// config is a queue's attributes parsed for the data path.
type config struct {
	visibility   time.Duration
	delay        time.Duration
	retention    time.Duration
	waitTime     time.Duration
	maxSize      int
	redrive      *RedrivePolicy
	redriveAllow *RedriveAllowPolicy
	fifo         bool
	contentDedup bool
	groupScope   bool // DeduplicationScope messageGroup
}

// attr returns the value of attribute name: the set value or the default.
func attr(attrs map[string]string, name string) string {
	if v, ok := attrs[name]; ok {
		return v
	}
	return attrSpecs[name].def
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

// checkThroughputScope checks a FIFO queue's attributes as they will be
// stored: "The perMessageGroupId value is allowed only when the value for
// DeduplicationScope is messageGroup" (API_SetQueueAttributes,
// FifoThroughputLimit). Before, the pair was taken.
func checkThroughputScope(attrs map[string]string) error {
	if attr(attrs, AttrFifoThroughputLimit) == "perMessageGroupId" && attr(attrs, AttrDeduplicationScope) != "messageGroup" {
		return awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter FifoThroughputLimit. Reason: the perMessageGroupId value is allowed only when the value for DeduplicationScope is messageGroup.")
	}
	return nil
}

// parseConfig derives the data-path config from stored (validated)
// attributes.
func parseConfig(attrs map[string]string, fifo bool) config {
	c := config{
		visibility:   time.Duration(atoi(attr(attrs, AttrVisibilityTimeout))) * time.Second,
		delay:        time.Duration(atoi(attr(attrs, AttrDelaySeconds))) * time.Second,
		retention:    time.Duration(atoi(attr(attrs, AttrMessageRetentionPeriod))) * time.Second,
		waitTime:     time.Duration(atoi(attr(attrs, AttrReceiveMessageWaitTimeSeconds))) * time.Second,
		maxSize:      atoi(attr(attrs, AttrMaximumMessageSize)),
		fifo:         fifo,
		contentDedup: fifo && attr(attrs, AttrContentBasedDeduplication) == "true",
		groupScope:   fifo && attr(attrs, AttrDeduplicationScope) == "messageGroup",
	}
	if v := attrs[AttrRedrivePolicy]; v != "" {
		c.redrive, _ = ParseRedrivePolicy(v)
	}
	if v := attrs[AttrRedriveAllowPolicy]; v != "" {
		c.redriveAllow, _ = ParseRedriveAllowPolicy(v)
	}
	return c
}
