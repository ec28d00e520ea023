package function

import (
	"maps"
	"slices"
	"sync"
)

// Registry maps handler names (Config.Handler) to in-process handlers. A
// runnel instance looks its functions' handlers up in its own registry
// (runnel.Config.Registry), so two instances in one process, or two
// tests, may give one name different handlers. The zero value is an empty
// registry ready to use; a Registry is safe for concurrent use.
type Registry struct {
	mu sync.RWMutex
	m  map[string]invoker
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{} }

// defaultRegistry is the one package-level Register fills.
var defaultRegistry = NewRegistry()

// DefaultRegistry returns the package's default registry: the one Register
// and Handlers use, and the one a runnel instance uses when its
// configuration names none.
func DefaultRegistry() *Registry { return defaultRegistry }

// Register makes an in-process handler available under name, for
// Config.Handler. h may be a KinesisHandler, a
// func(context.Context, events.KinesisEvent) error, an SQSHandler, a
// DynamoDBHandler (or func(context.Context, events.DynamoDBEvent) error),
// an EventHandler (both), a lambda.Handler, or any handler signature
// aws-lambda-go's lambda.Start accepts (it then gets the event as JSON).
// Registering a name twice replaces the handler for functions created (or
// loaded) afterwards; functions already created keep theirs. It returns an
// error, and registers nothing, if h is not a function.
func (r *Registry) Register(name string, h any) error {
	inv, err := toInvoker(h)
	if err != nil {
		return err
	}
	r.mu.Lock()
	if r.m == nil {
		r.m = map[string]invoker{}
	}
	r.m[name] = inv
	r.mu.Unlock()
	return nil
}

func (r *Registry) lookup(name string) (invoker, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	inv, ok := r.m[name]
	return inv, ok
}

// Handlers lists the registered handler names, sorted.
func (r *Registry) Handlers() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.m))
}

// Register registers h under name in the default registry (see
// Registry.Register), for programs with one runnel instance. It panics if
// h is not a function.
func Register(name string, h any) {
	if err := defaultRegistry.Register(name, h); err != nil {
		panic(err)
	}
}

// Handlers lists the handler names of the default registry, sorted.
func Handlers() []string { return defaultRegistry.Handlers() }
