package function

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

// Service keeps the functions of an engine. Configurations are stored in
// the key-value bucket "runnel_functions"; handlers come from the
// service's Registry.
type Service struct {
	eng *engine.Engine
	kv  jetstream.KeyValue
	reg *Registry

	vkv jetstream.KeyValue // versions.go
	akv jetstream.KeyValue // aliases.go
	pkv jetstream.KeyValue // provisioned.go

	docMu        sync.Mutex         // serializes policy and tag changes (policy.go)
	polkv, tagkv jetstream.KeyValue // policy.go
	urlkv        jetstream.KeyValue // urls.go
	urlIDs       sync.Map           // URL id → key in urlkv

	mu       sync.RWMutex
	fns      map[string]*Function           // $LATEST, by name
	lims     map[string]*limiter            // reserved concurrency, by name
	versions map[string]map[string]*version // by name, version
	aliases  map[string]map[string]*Alias   // by name, alias

	rndMu sync.Mutex
	rnd   func() float64

	sinks sinkRef // logging.go

	slots clusterSlots // reserved concurrency across the nodes (concurrency.go)
	// pool is the account's unreserved concurrency on this node, shared by
	// the functions without a reservation: DefaultAccountConcurrency less
	// the reservations (concurrency.go).
	pool limiter

	stop    context.CancelFunc      // ends the watch (watch.go)
	revs    sync.Map                // function name, "v:<name>.<version>", "a:<name>.<alias>" -> newest revision applied (watch.go)
	hook    atomic.Pointer[hookRef] // OnStored's (watch.go)
	pending sync.Map                // key as revs -> chan closed when its entry is applied (watch.go)
}

// NewService opens the functions service on eng with the handlers of reg
// (nil: DefaultRegistry) and loads the stored configurations whose
// handlers are registered there; the others are logged and left stored.
func NewService(ctx context.Context, eng *engine.Engine, reg *Registry) (*Service, error) {
	if reg == nil {
		reg = defaultRegistry
	}
	s := &Service{eng: eng, reg: reg, fns: map[string]*Function{}, lims: map[string]*limiter{},
		versions: map[string]map[string]*version{}, aliases: map[string]map[string]*Alias{}, rnd: rand.Float64,
		slots: clusterSlots{eng: eng, node: uuid.NewString()}}
	s.pool.resize(DefaultAccountConcurrency, false)
	err := eng.Buckets(ctx, map[string]*jetstream.KeyValue{"runnel_functions": &s.kv, versionsBucket: &s.vkv, aliasesBucket: &s.akv,
		provisionedBucket: &s.pkv, policiesBucket: &s.polkv, tagsBucket: &s.tagkv, urlsBucket: &s.urlkv})
	if err != nil {
		return nil, err
	}
	// One watch per bucket (functions, versions, aliases) loads what is
	// stored (its initial values) and then follows other processes'
	// changes: a change made between a load and the start of a separate
	// watch would be missed until a restart.
	wctx, stop := context.WithCancel(context.Background())
	s.stop = stop
	if err := s.watch(ctx, wctx); err != nil {
		stop()
		return nil, err
	}
	s.loadURLs()
	return s, nil
}

// SetRandom replaces the source of the numbers in [0, 1) that route an
// alias's invocations between its versions (default math/rand/v2's
// Float64). Calls are serialized. Tests give a seeded source.
func (s *Service) SetRandom(r func() float64) {
	s.rndMu.Lock()
	defer s.rndMu.Unlock()
	s.rnd = r
}

func (s *Service) random() float64 {
	s.rndMu.Lock()
	defer s.rndMu.Unlock()
	return s.rnd()
}

// build is the Function of cfg and inv, logging to the service's sink,
// with the concurrency semaphore of its function's name: $LATEST's
// reservation sizes it, versions share it. s.mu is held for writing when
// cfg is $LATEST's (or NewService runs).
func (s *Service) build(cfg Config, inv invoker) *Function {
	f := newFunction(cfg, inv, s.eng.Clock, s.eng.Logger)
	f.sinks = &s.sinks
	if s.eng.Shared() {
		f.cluster = &s.slots // another process can run the function too
	}
	lim := s.lims[cfg.FunctionName]
	switch {
	case cfg.Version == "" && lim == nil:
		s.lims[cfg.FunctionName] = f.lim
	case cfg.Version == "":
		g := f.lim.get()
		lim.resize(cap(g.ch), g.reserved)
		f.lim = lim
	case lim != nil:
		f.lim = lim
	}
	if cfg.Version == "" {
		if cfg.ReservedConcurrentExecutions == nil {
			f.lim.share(&s.pool)
		}
		s.pool.resize(s.unreservedConcurrency(cfg), false)
	}
	return f
}

// SetLogSink makes the service's in-process functions write their START,
// END and REPORT lines to sink (the endpoint's log store), from their next
// invocation on (logging.go).
func (s *Service) SetLogSink(sink LogSink) { s.sinks.v.Store(&sink) }

// Registry returns the registry the service looks handlers up in.
func (s *Service) Registry() *Registry { return s.reg }

// ARN returns arn:aws:lambda:<region>:<account>:function:<name>.
func (s *Service) ARN(name string) string {
	return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", s.eng.Region(), s.eng.AccountID(), name)
}

// CreateFunction creates a function from cfg (defaults applied, see
// Config.WithDefaults) with the handler registered under cfg.Handler. It
// fails with ErrResourceConflict if a function of that name exists, and
// with ErrInvalidParameterValue for a bad field or an unregistered handler.
func (s *Service) CreateFunction(ctx context.Context, cfg Config) (*Function, error) {
	return s.put(ctx, cfg, false)
}

// PutFunction creates a function, or replaces the one of that name (its
// configuration and handler; invocations already running finish with the
// old ones). It fails as CreateFunction does, except that an existing name
// is no error.
func (s *Service) PutFunction(ctx context.Context, cfg Config) (*Function, error) {
	return s.put(ctx, cfg, true)
}

func (s *Service) put(ctx context.Context, cfg Config, replace bool) (*Function, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	inv, ok := s.reg.lookup(cfg.Handler)
	if !ok {
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Handler: %q is not a registered handler (registered: %v)", cfg.Handler, s.reg.Handlers())
	}
	cfg.FunctionArn = s.ARN(cfg.FunctionName)
	s.mu.Lock()
	defer s.mu.Unlock()
	old, exists := s.fns[cfg.FunctionName]
	if exists && !replace {
		return nil, awserr.New(awserr.ErrResourceConflict, "Function already exist: %s", cfg.FunctionName)
	}
	if err := s.checkUnreserved(cfg, old); err != nil {
		return nil, err
	}
	cfg.Version, cfg.RevisionId = "", uuid.NewString()
	if exists {
		cfg.LastVersion = max(cfg.LastVersion, old.cfg.LastVersion)
	}
	b, _ := json.Marshal(cfg)
	rev, err := s.kv.Put(ctx, cfg.FunctionName, b)
	s.seen(cfg.FunctionName, rev)
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "store function: %v", err)
	}
	f := s.build(cfg, inv)
	s.fns[cfg.FunctionName] = f
	return f, nil
}

// checkUnreserved refuses a new or changed ReservedConcurrentExecutions
// that leaves fewer than MinUnreservedConcurrency of the account's
// concurrency to the functions without a reservation ("You can reserve up
// to the Unreserved account concurrency value minus 100",
// configuration-concurrency.html), in Lambda's words
// (InvalidParameterValueException, 400). A reservation unchanged by an
// update is not checked again. The caller holds s.mu.
func (s *Service) checkUnreserved(cfg Config, old *Function) error {
	r := cfg.ReservedConcurrentExecutions
	if r == nil {
		return nil
	}
	if old != nil && old.cfg.ReservedConcurrentExecutions != nil && *old.cfg.ReservedConcurrentExecutions == *r {
		return nil
	}
	others := 0
	for name, f := range s.fns {
		if o := f.cfg.ReservedConcurrentExecutions; name != cfg.FunctionName && o != nil {
			others += *o
		}
	}
	if DefaultAccountConcurrency-others-*r < MinUnreservedConcurrency {
		return awserr.New(awserr.ErrInvalidParameterValue, "Specified ReservedConcurrentExecutions for function decreases account's UnreservedConcurrentExecution below its minimum value of [%d].", MinUnreservedConcurrency)
	}
	return nil
}

// GetFunction returns a function by reference (see ParseRef: a name or an
// ARN, with an optional qualifier): $LATEST without a qualifier, a
// published version, or an alias (the version its routing picks for this
// call, with the alias's ARN as FunctionArn). Errors: ResourceNotFound
// ("Function not found: <arn>"), InvalidParameterValue for a malformed
// reference.
func (s *Service) GetFunction(ref string) (*Function, error) { return s.lookup(ref, true) }

// ListFunctions returns the functions' configurations, sorted by name.
func (s *Service) ListFunctions() []Config {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Config, 0, len(s.fns))
	for _, f := range s.fns {
		out = append(out, f.cfg)
	}
	slices.SortFunc(out, func(a, b Config) int { return strings.Compare(a.FunctionName, b.FunctionName) })
	return out
}

// DeleteFunction deletes a function.
func (s *Service) DeleteFunction(ctx context.Context, name string) error {
	if n, ok := FunctionNameFromARN(name); ok {
		name = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fns[name]; !ok {
		return awserr.New(awserr.ErrResourceNotFound, "Function not found: %s", s.ARN(name))
	}
	delete(s.fns, name)
	delete(s.lims, name)
	s.pool.resize(s.unreservedConcurrency(Config{}), false)
	s.purgeProvisioned(ctx, name, "")
	s.purgeDocs(ctx, name)
	s.purgeURLs(ctx, name, "")
	return errors.Join(s.kv.Purge(ctx, name), s.purgeVersionsLocked(ctx, name))
}

var functionARNRE = regexp.MustCompile(`^arn:aws:lambda:[^:]*:[^:]*:function:([a-zA-Z0-9-_]{1,64})(:\$LATEST)?$`)

// FunctionNameFromARN returns the function name of a function ARN.
func FunctionNameFromARN(arn string) (string, bool) {
	m := functionARNRE.FindStringSubmatch(arn)
	if m == nil {
		return "", false
	}
	return m[1], true
}
