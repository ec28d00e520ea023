// Package mapping implements Lambda event source mappings for three kinds
// of source: Kinesis streams, SQS queues and DynamoDB streams (a table's
// change stream). Each enabled mapping runs pollers in this process that
// read its source, batch records (BatchSize,
// MaximumBatchingWindowInSeconds), filter them (FilterCriteria), invoke a
// function with Lambda's event for the source, and handle failures as
// Lambda does.
//
// Stream and DynamoDB stream sources (poller.go, batch.go, lane.go): a
// poller per shard reads records in order, with MaximumRetryAttempts,
// MaximumRecordAgeInSeconds, BisectBatchOnFunctionError,
// ReportBatchItemFailures, ParallelizationFactor and an on-failure
// destination (wire.OnFailureRecord), and a durable checkpoint per
// (mapping, shard). Delivery is at least once: after a crash, the records
// after the last checkpoint are invoked again. Nothing is skipped: the
// checkpoint passes a record only once it was processed by a successful
// invocation or discarded to the on-failure destination (or, with none
// set, logged with its shard and sequence number and counted). With
// TumblingWindowInSeconds (window.go) the function carries a state from
// one invocation to the next within windows aligned on arrival time,
// closed on the engine clock by a final invocation; the state is stored
// with the lane's batch record.
//
// Queue sources (queue_poller.go): receive, invoke, delete; a failed
// message returns after its visibility timeout and moves by the queue's
// RedrivePolicy, with ReportBatchItemFailures, ScalingConfig and runnel's
// RetryPolicy (backoff through the visibility timeout).
//
// The rules follow https://docs.aws.amazon.com/lambda/latest/dg/with-kinesis.html,
// .../services-kinesis-parameters.html, .../services-kinesis-batchfailurereporting.html,
// .../with-sqs.html and .../with-ddb.html.
package mapping

import (
	"cmp"
	"context"
	"encoding/json"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/mapping/filter"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// Options are runtime knobs of the mapping service (not stored with a
// mapping, not part of the AWS API).
type Options struct {
	// RetryBaseDelay is the first retry's upper bound for the full-jitter
	// backoff between retries of the same records and after throttles.
	// Default 100ms. A negative value retries at once (tests).
	RetryBaseDelay time.Duration
	// RetryMaxDelay caps the backoff. Default 5s.
	RetryMaxDelay time.Duration
	// CheckpointInterval is the least time between two checkpoint writes
	// of a shard. Default 100ms; negative writes after every batch. After
	// a crash, up to this much progress is processed again.
	CheckpointInterval time.Duration
	// Passive opens the service without running any poller: mappings can
	// be created, listed and inspected, but this process does not invoke
	// functions for them. CLI commands that only administer or read use it
	// so they never compete with the `runnel serve` processes that run the
	// mappings. Non-passive processes on one JetStream share the mappings'
	// shards by lease (owner.go).
	Passive bool
	// LaneBuffer is the least number of records a batch lane holds ahead
	// of its function (it holds at least 2×BatchSize). Default 1000.
	LaneBuffer int
	// HandOverDrain bounds how long a shard handed over to balance the
	// cluster (owner_units.go, owner_load.go) may take to finish the
	// batches it is invoking, after it stops reading and taking new
	// ones, before they are cancelled (and so delivered again by the
	// next holder). Wall clock, as the leases' TTL is (the lease is
	// renewed meanwhile, so its checkpoint writes stay fenced); default
	// 5s; negative: no drain, in-flight batches are cancelled at once. A
	// lost lease, a fenced checkpoint and Close never drain. The trap:
	// the balance waits meanwhile, so a function that runs for minutes
	// holds every hand-over of this process up to the bound.
	HandOverDrain time.Duration
}

func (o *Options) setDefaults() {
	o.RetryBaseDelay = cmp.Or(o.RetryBaseDelay, 100*time.Millisecond)
	o.RetryMaxDelay = cmp.Or(o.RetryMaxDelay, 5*time.Second)
	o.CheckpointInterval = cmp.Or(o.CheckpointInterval, 100*time.Millisecond)
	o.LaneBuffer = cmp.Or(o.LaneBuffer, 1000)
	o.HandOverDrain = cmp.Or(o.HandOverDrain, 5*time.Second)
}

// afterLoad, when set (tests only), runs in NewService between loading
// the configurations and starting to apply the watch's changes.
var afterLoad func()

// Service keeps the event source mappings of an engine: their
// configurations in the bucket "runnel_mappings", their checkpoints in
// "runnel_checkpoints" (key "<UUID>.<shardId>", value the next log position
// to read), and a running poller per enabled mapping.
type Service struct {
	eng       *engine.Engine
	streams   *stream.Service
	queues    *queue.Service
	tables    *table.Service
	functions *function.Service
	kv, ck    jetstream.KeyValue
	claims    jetstream.KeyValue // one mapping per (source, function): claims.go
	live      jetstream.KeyValue // last published Status of mappings running anywhere
	opts      Options
	resMu     sync.Mutex // guards resolvers (taken inside mu, never the other way)
	resolvers []DestinationResolver
	discarded atomic.Int64

	published chan struct{}  // closed when the status publisher ends
	loops     sync.WaitGroup // the ownership loops (owner.go)
	own       owner

	mu      sync.Mutex
	configs map[string]Config
	runners map[string]poller
	ctx     context.Context
	cancel  context.CancelFunc
}

// NewService opens the mapping service and starts every stored, enabled
// mapping from its checkpoints.
//
// queues and tables may be nil: queue (SQS) and DynamoDB stream event
// sources are then refused.
func NewService(ctx context.Context, eng *engine.Engine, streams *stream.Service, queues *queue.Service, tables *table.Service, functions *function.Service, opts Options) (*Service, error) {
	opts.setDefaults()
	kv, err := eng.Bucket(ctx, "runnel_mappings")
	if err != nil {
		return nil, err
	}
	ck, err := eng.Bucket(ctx, "runnel_checkpoints")
	if err != nil {
		return nil, err
	}
	s := &Service{eng: eng, streams: streams, functions: functions, kv: kv, ck: ck, opts: opts,
		configs: map[string]Config{}, runners: map[string]poller{}, queues: queues, tables: tables,
		own: owner{held: map[string]*lease.Lease{}, done: map[string]string{}, kick: make(chan struct{}, 1), revs: map[string]uint64{}, cfgRevs: map[string]uint64{},
			samples: map[string][]loadSample{}, freeSince: map[string]time.Time{}, given: map[string]handedOver{}}}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.published = make(chan struct{})
	s.resolvers = []DestinationResolver{StreamDestinations(streams)}
	if queues != nil {
		s.resolvers = append(s.resolvers, QueueDestinations(queues))
	}
	if s.live, err = eng.Bucket(ctx, "runnel_mapping_status"); err != nil {
		return nil, err
	}
	if s.claims, err = eng.Bucket(ctx, "runnel_mapping_claims"); err != nil {
		return nil, err
	}
	// The watch of the configurations starts before they are loaded, so
	// that a change made by another process while this one loads them, or
	// while it waits for its presence lease (up to 2 minutes while the
	// leases' stream elects a leader), is applied once the watch runs;
	// watchConfigs skips what the load already has.
	w, err := kv.WatchAll(s.ctx, jetstream.UpdatesOnly())
	if err != nil {
		s.cancel()
		return nil, err
	}
	err = engine.LoadJSON(ctx, kv, func(k string, c Config, err error) {
		if err != nil {
			eng.Logger.Warn("stored mapping does not decode", "uuid", k, "err", err)
			return
		}
		s.configs[c.UUID] = c
	})
	if err == nil && afterLoad != nil {
		afterLoad()
	}
	if err == nil && !opts.Passive {
		// Claims this process's share of the stored mappings and starts
		// them, and the watch and balance loops (owner.go).
		err = s.startOwnership(ctx, w)
	}
	if err != nil {
		w.Stop()
		s.cancel()
		return nil, err
	}
	// Only now: the publisher reads the maps the loop above fills.
	if opts.Passive {
		close(s.published)
		// A passive process runs nothing, but answers Get, List and Status
		// as a node would: it follows the changes others make.
		s.loops.Add(1)
		go func() { defer s.loops.Done(); s.watchConfigs(w) }()
	} else {
		go s.publishStatus()
	}
	return s, nil
}

// AddDestinationResolver lets OnFailure name another kind of destination.
// Resolvers are tried in order, after the built-in stream and queue
// resolvers; the first that claims the ARN decides.
func (s *Service) AddDestinationResolver(r DestinationResolver) {
	s.resMu.Lock()
	s.resolvers = append(s.resolvers, r)
	s.resMu.Unlock()
}

func (s *Service) resolveDestination(ctx context.Context, arn string) (Destination, error) {
	if arn == "" {
		return nil, nil
	}
	s.resMu.Lock()
	resolvers := append([]DestinationResolver(nil), s.resolvers...)
	s.resMu.Unlock()
	for _, r := range resolvers {
		d, err := r(ctx, arn)
		if err != nil || d != nil {
			return d, err
		}
	}
	return nil, invalid("DestinationConfig.OnFailure.Destination: %q is not a supported destination ARN (a stream arn:aws:kinesis:<region>:<account>:stream/<name> or a queue arn:aws:sqs:<region>:<account>:<name>)", arn)
}

// DiscardedRecords is how many records all mappings have discarded since
// the service started (to a destination or, without one, to the log).
func (s *Service) DiscardedRecords() int64 { return s.discarded.Load() }

// CreateEventSourceMapping validates cfg (AWS defaults, ranges), checks
// that the stream, the function and the destination exist, resolves
// StartingPosition into a durable checkpoint per shard, stores the
// mapping and, if enabled, starts it. It returns the stored configuration
// with its UUID and State.
//
// Errors: InvalidParameterValueException for a value out of its range or
// a source that does not exist ("Stream not found: <arn>" for a DynamoDB
// stream that is not its table's current stream); ResourceConflictException
// (409) when a mapping of the same EventSourceArn to the same function
// (by qualified ARN) exists, naming its UUID (claims.go).
func (s *Service) CreateEventSourceMapping(ctx context.Context, cfg Config) (*Config, error) {
	if err := s.validate(ctx, &cfg, nil); err != nil {
		return nil, err
	}
	cfg.UUID = uuid.NewString()
	s.mu.Lock()
	err := s.conflictLocked(&cfg)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if beforeClaim != nil {
		beforeClaim()
	}
	if err := s.claimPair(ctx, &cfg); err != nil {
		return nil, err
	}
	out, err := s.createClaimed(ctx, cfg)
	if err != nil && !s.stored(cfg.UUID) {
		s.releasePair(ctx, cfg.UUID, cfg.EventSourceArn, cfg.FunctionArn)
	}
	return out, err
}

// stored tells whether mapping id is among the configurations.
func (s *Service) stored(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.configs[id]
	return ok
}

// createClaimed is CreateEventSourceMapping once cfg is valid and has its
// UUID and its pair's claim.
func (s *Service) createClaimed(ctx context.Context, cfg Config) (*Config, error) {
	// A stream-like source (a Kinesis stream, or a table's change log for
	// a DynamoDB stream) gets a checkpoint per shard now, so that LATEST
	// means the records after this call, whenever the mapping first runs.
	var streams *stream.Service
	var name string
	var shards []stream.Shard
	var streamDesc *stream.StreamDescription
	if cfg.sourceKind() != sourceQueue {
		var err error
		if streams, name, _, err = s.sourceStreams(cfg); err != nil {
			return nil, err
		}
		if streamDesc, err = streams.DescribeStream(ctx, name); err != nil {
			return nil, err
		}
		shards = streamDesc.Shards
	}
	for _, sh := range shards {
		first, last, err := streams.ShardBounds(ctx, name, sh.ShardID)
		if err != nil {
			return nil, err
		}
		next := first
		switch cfg.StartingPosition {
		case Latest:
			next = last + 1
		case AtTimestamp:
			if next, err = streams.PositionAtTime(ctx, name, sh.ShardID, *cfg.StartingPositionTimestamp); err != nil {
				return nil, err
			}
		}
		if err := s.storeCheckpoint(ctx, cfg.UUID, sh.ShardID, streamDesc.ID, next); err != nil {
			return nil, awserr.New(awserr.ErrService, "store checkpoint: %v", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.commitLocked(ctx, cfg)
}

// validate fills cfg's defaults (Config.WithDefaults) and its
// FunctionArn, and checks it against its source, its function and its
// destination. old is the stored mapping cfg updates, nil at create.
//
// Two rules are create-time rules (API_CreateEventSourceMapping): a
// DynamoDB stream must be its table's current stream, checked when the
// source is new (an update never changes it); and a queue's
// VisibilityTimeout must be at least the function's Timeout, checked at
// create and on an update that changes the function, never on one that
// leaves it or disables the mapping (the function's timeout may have been
// raised since: the mapping must stay updatable, and stoppable).
func (s *Service) validate(ctx context.Context, cfg *Config, old *Config) error {
	*cfg = cfg.WithDefaults()
	if cfg.sourceKind() == sourceQueue {
		err := s.validateQueue(ctx, cfg)
		if old != nil && isVisibilityRule(err) && (cfg.FunctionArn == old.FunctionArn || !*cfg.Enabled) {
			err = nil // validateQueue checks this rule last, FunctionArn set
		}
		return err
	}
	if err := cfg.Validate(); err != nil {
		return err // an *awserr.Error, filter errors too
	}
	kind := function.EventKinesis
	if cfg.sourceKind() == sourceDynamoDB {
		kind = function.EventDynamoDB
		t, label, _, err := s.dynamoSource(*cfg)
		if err != nil {
			return err
		}
		if current, _, _ := t.Stream(); (old == nil || old.EventSourceArn != cfg.EventSourceArn) && (current == "" || current != label) {
			// A table without a stream, or an older stream: the mapping
			// would wait forever for changes it never gets.
			return invalid("Stream not found: %s", cfg.EventSourceArn)
		}
		if cfg.StartingPosition == AtTimestamp {
			return invalid("StartingPosition: AT_TIMESTAMP is not supported for a DynamoDB stream (TRIM_HORIZON or LATEST)")
		}
	} else {
		name, consumer, ok := stream.SourceOfARN(cfg.EventSourceArn)
		if !ok {
			return invalid("EventSourceArn: %q is not a stream ARN (arn:aws:kinesis:<region>:<account>:stream/<name>) or a stream consumer ARN (<stream ARN>/consumer/<name>:<creation timestamp>)", cfg.EventSourceArn)
		}
		if _, err := s.streams.DescribeStream(ctx, name); err != nil {
			return err
		}
		if consumer != "" {
			if _, err := s.streams.DescribeStreamConsumer(ctx, stream.ConsumerRef{ConsumerARN: consumer}); err != nil {
				return err
			}
		}
	}
	fn, err := s.functions.GetFunction(cfg.FunctionName)
	if err != nil {
		return err
	}
	if !fn.Accepts(kind) {
		return invalid("FunctionName: the handler of %s does not take %s events; use a handler of that event type or a JSON handler", cfg.FunctionName, kind)
	}
	cfg.FunctionArn = fn.Config().FunctionArn
	if _, err := s.resolveDestination(ctx, cfg.onFailure()); err != nil {
		return err
	}
	return nil
}

func (s *Service) saveLocked(ctx context.Context, cfg *Config) error {
	cfg.LastModified = s.eng.Clock.Now().UTC()
	cfg.StateTransitionReason = "USER_INITIATED"
	if *cfg.Enabled {
		cfg.State = StateEnabled
	} else {
		cfg.State = StateDisabled
	}
	b, _ := json.Marshal(cfg)
	rev, err := s.kv.Put(ctx, cfg.UUID, b)
	if err == nil {
		s.own.cfgRevs[cfg.UUID] = rev
	}
	if err != nil {
		return awserr.New(awserr.ErrService, "store mapping: %v", err)
	}
	s.configs[cfg.UUID] = *cfg
	return nil
}

// commitLocked stores cfg and, when it is enabled and the service is not
// passive, starts its poller. It returns the stored configuration.
func (s *Service) commitLocked(ctx context.Context, cfg Config) (*Config, error) {
	if err := s.saveLocked(ctx, &cfg); err != nil {
		return nil, err
	}
	if !s.opts.Passive {
		if s.holdsLocked(cfg.UUID) {
			if !*cfg.Enabled {
				s.releaseLocked(cfg.UUID)
			} else if err := s.startLocked(ctx, cfg); err != nil {
				return nil, err
			}
		} else if *cfg.Enabled {
			s.balanceLocked(ctx)
		}
	}
	out := s.configs[cfg.UUID]
	return &out, nil
}

// stopLocked stops the poller of mapping id, if one runs.
func (s *Service) stopLocked(id string) {
	if r := s.runners[id]; r != nil {
		r.stop()
		delete(s.runners, id)
	}
}

func (s *Service) startLocked(ctx context.Context, cfg Config) error {
	if cfg.sourceKind() == sourceQueue {
		return s.startQueueLocked(ctx, cfg)
	}
	streams, name, ddb, err := s.sourceStreams(cfg)
	if err != nil {
		return err
	}
	desc, err := streams.DescribeStream(ctx, name)
	if err != nil {
		return err
	}
	m, err := filter.Compile(cfg.FilterCriteria)
	if err != nil {
		return err
	}
	dest, err := s.resolveDestination(ctx, cfg.onFailure())
	if err != nil {
		return err
	}
	r := &runner{svc: s, streams: streams, ddb: ddb, cfg: cfg, streamName: name, streamARN: cfg.EventSourceArn, streamID: desc.ID, numbering: desc.Numbering(), matcher: m, dest: dest,
		mine: s.heldShardsLocked(cfg.UUID)}
	if _, consumer, _ := stream.SourceOfARN(cfg.EventSourceArn); consumer != "" {
		// Read through the consumer; records and failure records name
		// the stream.
		r.consumerARN, r.streamARN = consumer, desc.StreamARN
	}
	if err := r.start(s.ctx); err != nil {
		return err
	}
	s.runners[cfg.UUID] = r
	return nil
}

// restart stops the running poller r of mapping id and starts it again
// from its checkpoints, unless the mapping changed meanwhile.
func (s *Service) restart(id string, r poller) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.runners[id] != r || s.ctx.Err() != nil {
		return
	}
	r.stop()
	delete(s.runners, id)
	if err := s.startLocked(s.ctx, s.configs[id]); err != nil {
		s.eng.Logger.Warn("mapping did not restart", "mapping", id, "err", err)
	}
}

// GetEventSourceMapping returns a mapping's configuration, or
// ErrResourceNotFound.
func (s *Service) GetEventSourceMapping(id string) (*Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.configs[id]
	if !ok {
		return nil, awserr.New(awserr.ErrResourceNotFound, "The resource you requested does not exist. (Service: Lambda, Status Code: 404, mapping %s)", id)
	}
	return &c, nil
}

// ListEventSourceMappings returns all mappings, sorted by UUID.
func (s *Service) ListEventSourceMappings() []Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Config, 0, len(s.configs))
	for _, c := range s.configs {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].UUID < out[j].UUID })
	return out
}

// UpdateEventSourceMapping changes the settings of mapping cfg.UUID that
// cfg gives, as the Lambda API does, and restarts its poller from the
// stored checkpoints. A field is "not given" when it is nil (the pointer,
// list and struct fields: Enabled, MaximumRetryAttempts,
// MaximumRecordAgeInSeconds, FunctionResponseTypes, DestinationConfig,
// FilterCriteria, ScalingConfig, RetryPolicy), or zero where zero is not a
// valid value (BatchSize, ParallelizationFactor, FunctionName); those keep
// their stored values. Trap: BisectBatchOnFunctionError and
// MaximumBatchingWindowInSeconds have valid zero values and are always
// taken as given. EventSourceArn and StartingPosition never change.
// To clear a list, give an empty non-nil one; to remove the destination,
// give an empty DestinationConfig; to remove a queue mapping's
// ScalingConfig, give an empty one (MaximumConcurrency 0).
//
// The create-time rule "queue VisibilityTimeout >= function Timeout" is
// checked again only when FunctionName changes to another function (by
// qualified ARN) and the mapping stays enabled: Enabled=false is never
// refused by it. Moving to a function that already has a mapping of the
// same source answers 409 ResourceConflictException naming its UUID.
func (s *Service) UpdateEventSourceMapping(ctx context.Context, cfg Config) (*Config, error) {
	old, err := s.GetEventSourceMapping(cfg.UUID)
	if err != nil {
		return nil, err
	}
	cfg.EventSourceArn = old.EventSourceArn
	cfg.StartingPosition, cfg.StartingPositionTimestamp = old.StartingPosition, old.StartingPositionTimestamp
	if cfg.FunctionName == "" {
		cfg.FunctionName = old.FunctionName
	}
	keep := func(given bool, apply func()) {
		if !given {
			apply()
		}
	}
	keep(cfg.Enabled != nil, func() { cfg.Enabled = old.Enabled })
	keep(cfg.BatchSize != 0, func() { cfg.BatchSize = old.BatchSize })
	keep(cfg.ParallelizationFactor != 0, func() { cfg.ParallelizationFactor = old.ParallelizationFactor })
	keep(cfg.FunctionResponseTypes != nil, func() { cfg.FunctionResponseTypes = old.FunctionResponseTypes })
	keep(cfg.DestinationConfig != nil, func() { cfg.DestinationConfig = old.DestinationConfig })
	keep(cfg.FilterCriteria != nil, func() { cfg.FilterCriteria = old.FilterCriteria })
	if old.sourceKind() == sourceQueue {
		keep(cfg.ScalingConfig != nil, func() { cfg.ScalingConfig = old.ScalingConfig })
		keep(cfg.RetryPolicy != nil, func() { cfg.RetryPolicy = old.RetryPolicy })
		// Stream-only parameters are refused for queues; defaults left
		// from a stream config do not apply.
		cfg.StartingPosition, cfg.StartingPositionTimestamp = "", nil
	} else {
		keep(cfg.MaximumRetryAttempts != nil, func() { cfg.MaximumRetryAttempts = old.MaximumRetryAttempts })
		keep(cfg.MaximumRecordAgeInSeconds != nil, func() { cfg.MaximumRecordAgeInSeconds = old.MaximumRecordAgeInSeconds })
		keep(cfg.TumblingWindowInSeconds != nil, func() { cfg.TumblingWindowInSeconds = old.TumblingWindowInSeconds })
	}
	if cfg.DestinationConfig != nil && cfg.DestinationConfig.OnFailure == nil {
		cfg.DestinationConfig = nil // an empty DestinationConfig removes it
	}
	if cfg.ScalingConfig != nil && *cfg.ScalingConfig == (ScalingConfig{}) {
		cfg.ScalingConfig = nil // an empty ScalingConfig removes it (Lambda's ScalingConfig: "To remove the configuration, pass an empty value")
	}
	if err := s.validate(ctx, &cfg, old); err != nil {
		return nil, err
	}
	moved := cfg.FunctionArn != old.FunctionArn
	if moved {
		// The new function must not have a mapping of this source already.
		s.mu.Lock()
		err := s.conflictLocked(&cfg)
		s.mu.Unlock()
		if err == nil {
			err = s.claimPair(ctx, &cfg)
		}
		if err != nil {
			return nil, err
		}
	}
	out, err := s.updateValid(ctx, cfg)
	switch {
	case moved && err == nil:
		s.releasePair(ctx, cfg.UUID, old.EventSourceArn, old.FunctionArn)
	case moved && s.functionOf(cfg.UUID) != cfg.FunctionArn:
		s.releasePair(ctx, cfg.UUID, cfg.EventSourceArn, cfg.FunctionArn)
	}
	return out, err
}

// functionOf is the FunctionArn of the stored mapping id ("" if none).
func (s *Service) functionOf(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.configs[id].FunctionArn
}

// updateValid is UpdateEventSourceMapping once cfg is valid.
func (s *Service) updateValid(ctx context.Context, cfg Config) (*Config, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	// The batches being invoked are let finish (up to HandOverDrain), as
	// at a hand-over: cancelled at once, a stream batch was invoked again
	// by the new runner while the cancelled call still ran (an in-process
	// handler cannot be stopped), two batches at once on one shard.
	if r, ok := s.runners[cfg.UUID].(*runner); ok {
		r.stopDrained(s.opts.HandOverDrain)
		delete(s.runners, cfg.UUID)
	}
	s.stopLocked(cfg.UUID)
	return s.commitLocked(ctx, cfg)
}

// DeleteEventSourceMapping stops a mapping and deletes it with its
// checkpoints.
func (s *Service) DeleteEventSourceMapping(ctx context.Context, id string) error {
	c, err := s.GetEventSourceMapping(id)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.configs, id)
	s.releaseLocked(id)
	s.ckForget(id)
	// Every key of the mapping in the checkpoint store, all prefixed by
	// its UUID: the shards' checkpoints, and their lanes' batch records,
	// windows and retired windows under every ParallelizationFactor the
	// mapping had. Purging only the current shards' checkpoints and
	// windows left the rest behind for good.
	if lister, err := s.ck.ListKeysFiltered(ctx, id+".>"); err == nil {
		for k := range lister.Keys() {
			if err := s.ck.Purge(ctx, k); err != nil {
				s.eng.Logger.Warn("mapping: a deleted mapping's checkpoint key was not purged", "mapping", id, "key", k, "err", err)
			}
		}
	}
	err = s.kv.Purge(ctx, id)
	if err == nil {
		s.releasePair(ctx, id, c.EventSourceArn, c.FunctionArn)
	}
	return err
}

// Close stops every poller, storing final checkpoints. Batches being
// processed are abandoned and will be invoked again after a restart.
func (s *Service) Close() {
	s.mu.Lock()
	s.cancel()
	for _, r := range s.runners {
		r.stop()
	}
	s.mu.Unlock()
	<-s.published // the final status, with the final checkpoints
	s.loops.Wait()
	s.mu.Lock()
	clear(s.runners)
	for _, key := range s.heldKeysLocked("") {
		s.releaseUnitLocked(key) // hand the mappings' units over at once
	}
	s.mu.Unlock()
	if s.own.node != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s.own.node.Release(ctx)
		cancel()
	}
}

// sourceStreams returns where a stream-like source's shards are: the
// Kinesis streams, or for a DynamoDB stream the tables' change logs (and
// the stream's label).
func (s *Service) sourceStreams(cfg Config) (*stream.Service, string, *ddbSource, error) {
	if cfg.sourceKind() == sourceDynamoDB {
		t, label, _, err := s.dynamoSource(cfg)
		if err != nil {
			return nil, "", nil, err
		}
		return s.tables.Logs(), t.LogName(), &ddbSource{label: label, table: t}, nil
	}
	name, _, ok := stream.SourceOfARN(cfg.EventSourceArn)
	if !ok {
		return nil, "", nil, invalid("EventSourceArn: %q is not a stream ARN", cfg.EventSourceArn)
	}
	return s.streams, name, nil, nil
}

// dynamoSource resolves a DynamoDB stream ARN to its table.
func (s *Service) dynamoSource(cfg Config) (*table.Table, string, string, error) {
	if s.tables == nil {
		return nil, "", "", invalid("EventSourceArn: DynamoDB streams are not available in this process")
	}
	name, label, ok := table.ParseStreamARN(cfg.EventSourceArn)
	if !ok {
		return nil, "", "", invalid("EventSourceArn: %q is not a DynamoDB stream ARN (arn:aws:dynamodb:<region>:<account>:table/<name>/stream/<label>)", cfg.EventSourceArn)
	}
	t, err := s.tables.Table(name)
	if err != nil {
		return nil, "", "", err
	}
	return t, label, name, nil
}
