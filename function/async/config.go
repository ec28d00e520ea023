package async

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// EventInvokeConfig is a function's configuration for asynchronous
// invocation (API_FunctionEventInvokeConfig), plus its DeadLetterConfig
// (which AWS keeps on the function's configuration; see the package doc).
// A nil field is unset: its default applies.
type EventInvokeConfig struct {
	// FunctionName: the function's name or ARN, with an optional
	// qualifier (a version or an alias: "f:prod") (input); its name
	// (output).
	FunctionName string `json:"FunctionName"`
	// Qualifier is set by runnel: the version or alias the configuration
	// is for ("" for $LATEST). An invocation of a qualifier takes that
	// qualifier's configuration, and the defaults when it has none, as
	// Lambda does.
	Qualifier string `json:"Qualifier,omitempty"`
	// MaximumRetryAttempts after a function error: 0..2, default 2.
	MaximumRetryAttempts *int `json:"MaximumRetryAttempts,omitempty"`
	// MaximumEventAgeInSeconds: an event older than this when due is not
	// invoked but fails with EventAgeExceeded. 60..21600, default 21600.
	MaximumEventAgeInSeconds *int `json:"MaximumEventAgeInSeconds,omitempty"`
	// DestinationConfig: where records of processed events go.
	DestinationConfig *DestinationConfig `json:"DestinationConfig,omitempty"`
	// DeadLetterConfig: a standard queue for the raw failed events.
	DeadLetterConfig *DeadLetterConfig `json:"DeadLetterConfig,omitempty"`

	// FunctionArn and LastModified are set by runnel.
	FunctionArn  string    `json:"FunctionArn,omitempty"`
	LastModified time.Time `json:"LastModified"`
}

// DestinationConfig names the destinations of records (API_DestinationConfig).
type DestinationConfig struct {
	OnSuccess *OnSuccess `json:"OnSuccess,omitempty"`
	OnFailure *OnFailure `json:"OnFailure,omitempty"`
}

// Destination is where records go (API_OnSuccess and API_OnFailure, one
// shape): the ARN of a standard queue, a stream or a function. An empty
// Destination removes it.
type Destination struct {
	Destination string `json:"Destination"`
}

// OnSuccess is the destination of Success records; OnFailure that of
// RetriesExhausted and EventAgeExceeded records.
type (
	OnSuccess = Destination
	OnFailure = Destination
)

// DeadLetterConfig is the legacy dead-letter queue (API_DeadLetterConfig):
// the ARN of a standard queue. An empty TargetArn removes it.
type DeadLetterConfig struct {
	TargetArn string `json:"TargetArn"`
}

// effective is a configuration with its defaults applied.
type effective struct {
	retries              int
	maxAge               time.Duration
	onSuccess, onFailure string
	dlq                  string
}

func (c *EventInvokeConfig) effective() effective {
	e := effective{retries: DefaultMaximumRetryAttempts, maxAge: DefaultMaximumEventAgeInSeconds * time.Second}
	if c == nil {
		return e
	}
	if c.MaximumRetryAttempts != nil {
		e.retries = *c.MaximumRetryAttempts
	}
	if c.MaximumEventAgeInSeconds != nil {
		e.maxAge = time.Duration(*c.MaximumEventAgeInSeconds) * time.Second
	}
	if d := c.DestinationConfig; d != nil {
		if d.OnSuccess != nil {
			e.onSuccess = d.OnSuccess.Destination
		}
		if d.OnFailure != nil {
			e.onFailure = d.OnFailure.Destination
		}
	}
	if c.DeadLetterConfig != nil {
		e.dlq = c.DeadLetterConfig.TargetArn
	}
	return e
}

// normalize drops empty destinations.
func (c *EventInvokeConfig) normalize() {
	if d := c.DestinationConfig; d != nil {
		if d.OnSuccess != nil && d.OnSuccess.Destination == "" {
			d.OnSuccess = nil
		}
		if d.OnFailure != nil && d.OnFailure.Destination == "" {
			d.OnFailure = nil
		}
		if d.OnSuccess == nil && d.OnFailure == nil {
			c.DestinationConfig = nil
		}
	}
	if c.DeadLetterConfig != nil && c.DeadLetterConfig.TargetArn == "" {
		c.DeadLetterConfig = nil
	}
}

func (c EventInvokeConfig) clone() EventInvokeConfig {
	cp := func(p *int) *int {
		if p == nil {
			return nil
		}
		v := *p
		return &v
	}
	c.MaximumRetryAttempts, c.MaximumEventAgeInSeconds = cp(c.MaximumRetryAttempts), cp(c.MaximumEventAgeInSeconds)
	if d := c.DestinationConfig; d != nil {
		nd := &DestinationConfig{}
		if d.OnSuccess != nil {
			nd.OnSuccess = &OnSuccess{Destination: d.OnSuccess.Destination}
		}
		if d.OnFailure != nil {
			nd.OnFailure = &OnFailure{Destination: d.OnFailure.Destination}
		}
		c.DestinationConfig = nd
	}
	if c.DeadLetterConfig != nil {
		c.DeadLetterConfig = &DeadLetterConfig{TargetArn: c.DeadLetterConfig.TargetArn}
	}
	return c
}

func invalid(format string, args ...any) error {
	return awserr.New(awserr.ErrInvalidParameterValue, format, args...)
}

// validate checks the ranges and destinations of a normalized
// configuration of function name.
func (s *Service) validate(ctx context.Context, name string, c *EventInvokeConfig) error {
	if v := c.MaximumRetryAttempts; v != nil && (*v < 0 || *v > MaxMaximumRetryAttempts) {
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "MaximumRetryAttempts", *v, 0, MaxMaximumRetryAttempts)
	}
	if v := c.MaximumEventAgeInSeconds; v != nil && (*v < MinMaximumEventAgeInSeconds || *v > MaxMaximumEventAgeInSeconds) {
		return awserr.OutOfRange(awserr.ErrInvalidParameterValue, "MaximumEventAgeInSeconds", *v, MinMaximumEventAgeInSeconds, MaxMaximumEventAgeInSeconds)
	}
	if d := c.DestinationConfig; d != nil {
		if d.OnSuccess != nil {
			if err := s.checkDestination(ctx, name, "DestinationConfig.OnSuccess.Destination", d.OnSuccess.Destination); err != nil {
				return err
			}
		}
		if d.OnFailure != nil {
			if err := s.checkDestination(ctx, name, "DestinationConfig.OnFailure.Destination", d.OnFailure.Destination); err != nil {
				return err
			}
		}
	}
	if c.DeadLetterConfig != nil {
		arn := c.DeadLetterConfig.TargetArn
		if _, ok := queue.NameFromARN(arn); !ok {
			return invalid("DeadLetterConfig.TargetArn: %q is not a queue ARN (arn:aws:sqs:<region>:<account>:<name>); runnel's dead-letter queues are queues (SNS topics are not supported)", arn)
		}
		if err := s.checkQueue(ctx, "DeadLetterConfig.TargetArn", arn); err != nil {
			return err
		}
	}
	return nil
}

// checkDestination checks that arn names an existing destination of a
// supported kind.
func (s *Service) checkDestination(ctx context.Context, name, field, arn string) error {
	switch {
	case strings.HasPrefix(arn, "arn:aws:sqs:"):
		if _, ok := queue.NameFromARN(arn); !ok {
			return invalid("%s: %q is not a valid queue ARN", field, arn)
		}
		return s.checkQueue(ctx, field, arn)
	case strings.HasPrefix(arn, "arn:aws:kinesis:"):
		sn, ok := stream.NameFromARN(arn)
		if !ok {
			return invalid("%s: %q is not a valid stream ARN (arn:aws:kinesis:<region>:<account>:stream/<name>)", field, arn)
		}
		if _, err := s.streams.DescribeStream(ctx, sn); err != nil {
			return invalid("%s: stream %s does not exist", field, arn)
		}
		return nil
	case strings.HasPrefix(arn, "arn:aws:lambda:"):
		// A version or an alias may be the destination (its ARN
		// qualified); before, only the unqualified ARN was taken.
		fn, _, err := function.ParseRef(arn)
		if err != nil {
			return invalid("%s: %q is not a valid function ARN", field, arn)
		}
		if fn == name {
			return invalid("%s: %s is the function itself: its records would invoke it again, without end", field, arn)
		}
		if _, err := s.fns.Describe(arn); err != nil {
			return invalid("%s: function %s does not exist", field, arn)
		}
		return nil
	case strings.HasPrefix(arn, "arn:aws:sns:"), strings.HasPrefix(arn, "arn:aws:events:"):
		return s.checkFanoutDestination(ctx, field, arn)
	case strings.HasPrefix(arn, "arn:aws:s3:"):
		return invalid("%s: %q: S3 buckets are not supported by runnel; use a queue, a topic, a bus, a stream or a function", field, arn)
	}
	return invalid("%s: %q is not the ARN of a queue (arn:aws:sqs:...), a topic (arn:aws:sns:...), an event bus (arn:aws:events:...), a stream (arn:aws:kinesis:...) or a function (arn:aws:lambda:...)", field, arn)
}

// checkQueue checks that a queue exists and is a standard queue.
func (s *Service) checkQueue(ctx context.Context, field, arn string) error {
	attrs, err := s.queues.GetQueueAttributes(ctx, arn, []string{queue.AttrFifoQueue})
	if err != nil {
		return invalid("%s: queue %s does not exist", field, arn)
	}
	if attrs[queue.AttrFifoQueue] == "true" {
		return invalid("%s: %s is a FIFO queue; Lambda supports only standard queues as destinations and dead-letter queues", field, arn)
	}
	return nil
}

// PutFunctionEventInvokeConfig sets a function's configuration, replacing
// any previous one: unset fields take their defaults. Errors:
// ErrResourceNotFound for an unknown function; ErrInvalidParameterValue
// naming the field for a value out of range or a destination that does not
// exist or is of an unsupported kind (FIFO queues included).
func (s *Service) PutFunctionEventInvokeConfig(ctx context.Context, cfg EventInvokeConfig) (*EventInvokeConfig, error) {
	return s.store(ctx, cfg.clone(), nil)
}

// UpdateFunctionEventInvokeConfig merges the set fields of cfg into the
// function's configuration, ErrResourceNotFound if it has none (before,
// it created one: a tool that updates to detect drift got a silent
// create; Lambda answers "The function ... doesn't have an
// EventInvokeConfig"): a set
// MaximumRetryAttempts or MaximumEventAgeInSeconds replaces the stored
// value; a set OnSuccess, OnFailure or DeadLetterConfig replaces the
// stored one, and removes it when its ARN is empty. Errors as
// PutFunctionEventInvokeConfig.
func (s *Service) UpdateFunctionEventInvokeConfig(ctx context.Context, cfg EventInvokeConfig) (*EventInvokeConfig, error) {
	return s.store(ctx, cfg.clone(), func(old EventInvokeConfig, c *EventInvokeConfig) {
		if c.MaximumRetryAttempts == nil {
			c.MaximumRetryAttempts = old.MaximumRetryAttempts
		}
		if c.MaximumEventAgeInSeconds == nil {
			c.MaximumEventAgeInSeconds = old.MaximumEventAgeInSeconds
		}
		if od := old.DestinationConfig; od != nil {
			if c.DestinationConfig == nil {
				c.DestinationConfig = &DestinationConfig{}
			}
			if c.DestinationConfig.OnSuccess == nil {
				c.DestinationConfig.OnSuccess = od.OnSuccess
			}
			if c.DestinationConfig.OnFailure == nil {
				c.DestinationConfig.OnFailure = od.OnFailure
			}
		}
		if c.DeadLetterConfig == nil {
			c.DeadLetterConfig = old.DeadLetterConfig
		}
	})
}

func (s *Service) store(ctx context.Context, c EventInvokeConfig, merge func(old EventInvokeConfig, c *EventInvokeConfig)) (*EventInvokeConfig, error) {
	fn, err := s.fns.Describe(c.FunctionName)
	if err != nil {
		return nil, err
	}
	name := fn.Config().FunctionName
	_, q, _ := function.ParseRef(c.FunctionName)
	q = strings.TrimPrefix(q, function.Latest)
	key := configKey(name, q)
	if merge != nil {
		// The request's own fields are checked first, as for a Put (an
		// empty ARN removes a destination: normalize drops it).
		req := c.clone()
		req.normalize()
		if err := s.validate(ctx, name, &req); err != nil {
			return nil, err
		}
		// From the bucket, not this process's copy: another process may
		// have stored it a moment ago.
		old, ok, err := s.stored(ctx, key)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, s.noConfig(c.FunctionName)
		}
		merge(old.clone(), &c)
	}
	c.normalize()
	if err := s.validate(ctx, name, &c); err != nil {
		return nil, err
	}
	c.FunctionName, c.Qualifier, c.FunctionArn, c.LastModified = name, q, s.fns.QualifiedARN(name, q), s.eng.Clock.Now().UTC()
	b, _ := json.Marshal(c)
	// The bucket write and the cache update happen under the lock so that
	// concurrent Puts leave the two alike.
	s.mu.Lock()
	rev, err := s.kv.Put(ctx, key, b)
	if err != nil {
		s.mu.Unlock()
		return nil, awserr.New(awserr.ErrService, "store the event invoke configuration of %s: %v", c.FunctionArn, err)
	}
	s.configs[key], s.configRevs[key] = c, max(s.configRevs[key], rev)
	s.warned[key] = false
	s.mu.Unlock()
	s.warnIfDropped(key)
	out := c.clone()
	return &out, nil
}

// GetFunctionEventInvokeConfig returns a function's configuration as
// stored (unset fields are nil: their defaults apply), or
// ErrResourceNotFound.
func (s *Service) GetFunctionEventInvokeConfig(ctx context.Context, functionName string) (*EventInvokeConfig, error) {
	c, ok, err := s.stored(ctx, keyOf(functionName))
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, s.noConfig(functionName)
	}
	out := c.clone()
	return &out, nil
}

// stored reads the configuration key from the bucket (what every process
// sees), not this process's copy.
func (s *Service) stored(ctx context.Context, key string) (EventInvokeConfig, bool, error) {
	e, err := s.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return EventInvokeConfig{}, false, nil
	} else if err != nil {
		return EventInvokeConfig{}, false, awserr.New(awserr.ErrService, "read the event invoke configuration %s: %v", key, err)
	}
	var c EventInvokeConfig
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return EventInvokeConfig{}, false, awserr.New(awserr.ErrService, "read the event invoke configuration %s: %v", key, err)
	}
	return c, true, nil
}

// DeleteFunctionEventInvokeConfig deletes a function's configuration (its
// events then get the defaults), or returns ErrResourceNotFound.
func (s *Service) DeleteFunctionEventInvokeConfig(ctx context.Context, functionName string) error {
	key := keyOf(functionName)
	if _, ok, err := s.stored(ctx, key); err != nil {
		return err
	} else if !ok {
		return s.noConfig(functionName)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.kv.Purge(ctx, key); err != nil {
		return awserr.New(awserr.ErrService, "delete the event invoke configuration of %s: %v", functionName, err)
	}
	delete(s.configs, key)
	s.warned[key] = false
	return nil
}

// ListFunctionEventInvokeConfigs returns the configurations of function
// name and of its versions and aliases, $LATEST's first.
func (s *Service) ListFunctionEventInvokeConfigs(name string) []EventInvokeConfig {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []EventInvokeConfig
	for _, c := range s.configs {
		if c.FunctionName == name {
			out = append(out, c.clone())
		}
	}
	slices.SortFunc(out, func(a, b EventInvokeConfig) int { return strings.Compare(a.Qualifier, b.Qualifier) })
	return out
}

// noConfig is Lambda's ResourceNotFoundException for a function (or
// qualifier) without a configuration.
func (s *Service) noConfig(ref string) error {
	name, q, _ := function.ParseRef(ref)
	return awserr.New(awserr.ErrResourceNotFound, "The function %s doesn't have an EventInvokeConfig", s.fns.QualifiedARN(name, strings.TrimPrefix(q, function.Latest)))
}

// configKey is the key of the configuration of qualifier q ("" for
// $LATEST) of function name, in the bucket and in s.configs.
func configKey(name, q string) string {
	if q == "" {
		return name
	}
	return name + "." + q
}

// keyOf is the configuration key of a function reference.
func keyOf(ref string) string {
	name, q, err := function.ParseRef(ref)
	if err != nil {
		return ref
	}
	return configKey(name, strings.TrimPrefix(q, function.Latest))
}

// config returns the effective configuration of key (configKey: a
// function's name, or "<name>.<qualifier>"). The dead-letter queue is
// the configuration's DeadLetterConfig, else the function version's
// (CreateFunction, UpdateFunctionConfiguration): that of the version the
// qualifier names (an alias's FunctionVersion, without routing).
func (s *Service) config(key string) effective { return s.configRan(key, "") }

// configRan is config for an event that ran on version executed ("" when
// none ran, or not known): the dead-letter queue, when the configuration
// has none, is that version's. Before, it was always the alias's
// FunctionVersion's: with a weighted alias, a dead letter of an event the
// additional version ran went to the other version's queue.
func (s *Service) configRan(key, executed string) effective {
	s.mu.Lock()
	c, ok := s.configs[key]
	s.mu.Unlock()
	var e effective
	if ok {
		e = c.effective()
	} else {
		e = (*EventInvokeConfig)(nil).effective()
	}
	if e.dlq == "" {
		name, q, _ := strings.Cut(key, ".")
		ref := name
		switch {
		case executed != "" && executed != function.Latest:
			ref = name + ":" + executed
		case executed == "" && q != "":
			ref = name + ":" + q
		}
		if f, err := s.fns.Describe(ref); err == nil && f.Config().DeadLetterConfig != nil {
			e.dlq = f.Config().DeadLetterConfig.TargetArn
		}
	}
	return e
}

// FailedEventsGoTo says where a function's failed events go: its OnFailure
// destination and DeadLetterConfig queue, or the built-in dead-letter
// store when it has neither.
func (s *Service) FailedEventsGoTo(functionName string) []string {
	e := s.config(keyOf(functionName))
	var out []string
	if e.onFailure != "" {
		out = append(out, e.onFailure)
	}
	if e.dlq != "" {
		out = append(out, e.dlq)
	}
	if len(out) == 0 {
		out = append(out, s.queues.ARN(DeadLetterStore))
	}
	return out
}

// warnIfDropped logs, once per configuration, a WARN when a function has
// neither an OnFailure destination nor a DeadLetterConfig: AWS would drop
// its failed events, runnel keeps them in the built-in store.
func (s *Service) warnIfDropped(name string) {
	e := s.config(name)
	if e.onFailure != "" || e.dlq != "" {
		return
	}
	s.mu.Lock()
	done := s.warned[name]
	s.warned[name] = true
	s.mu.Unlock()
	if done {
		return
	}
	s.log.Warn("function "+name+" has no OnFailure destination and no DeadLetterConfig: AWS Lambda would drop its failed asynchronous events; "+
		"runnel keeps them in its built-in dead-letter store, queue "+DeadLetterStore+" ("+s.queues.ARN(DeadLetterStore)+")",
		"function", name, "queue", DeadLetterStore, "queueArn", s.queues.ARN(DeadLetterStore))
}
