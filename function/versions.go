package function

// Versions: PublishVersion freezes $LATEST's configuration (and, through
// prepare, its code) as version 1, 2, 3...; a version never changes and
// survives a restart (KV bucket "runnel_function_versions", key
// "<function>.<version>", written with Create so an existing key is never
// overwritten). Numbers are not reused after a version is deleted
// ($LATEST's Config.LastVersion keeps the last one).
// https://docs.aws.amazon.com/lambda/latest/dg/configuration-versions.html
//
// Reserved concurrency is the function's: $LATEST and its versions share
// one semaphore (Service.build), and a version reports $LATEST's
// reservation. Where runnel differs: an in-process version keeps its
// handler's name, not its code (the Go code is the binary's).

import (
	"context"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/runnel-dev/runnel/awserr"
)

// Latest is the qualifier of a function's unpublished version.
const Latest = "$LATEST"

// versionsBucket holds the published versions.
const versionsBucket = "runnel_function_versions"

// version is a published version: its configuration, and its Function
// once its handler is registered (a process function's version registers
// its handler after the service has loaded it).
type version struct {
	cfg Config
	fn  atomic.Pointer[Function]
}

var (
	versionRE   = regexp.MustCompile(`^[0-9]+$`)
	qualifierRE = regexp.MustCompile(`^(\$LATEST|[a-zA-Z0-9-_]{1,128})$`)
)

// ParseRef splits a function reference into the function's name and a
// qualifier ("" when there is none). It takes what Lambda's FunctionName
// takes: a name ("my-function"), a name with a qualifier
// ("my-function:prod"), a partial ARN ("123456789012:function:my-function")
// or an ARN ("arn:aws:lambda:us-west-2:123456789012:function:my-function"),
// the last two with an optional ":<version or alias>". It fails with
// InvalidParameterValueException for an ARN that is not a function's.
func ParseRef(ref string) (name, qualifier string, err error) {
	parts := strings.Split(ref, ":")
	switch {
	case strings.HasPrefix(ref, "arn:"):
		if len(parts) < 7 || len(parts) > 8 || parts[2] != "lambda" || parts[5] != "function" {
			return "", "", awserr.New(awserr.ErrInvalidParameterValue, "FunctionName: %q is not a function name or ARN (arn:aws:lambda:<region>:<account>:function:<name>[:<qualifier>])", ref)
		}
		parts = parts[6:]
	case len(parts) >= 3 && parts[1] == "function":
		parts = parts[2:]
	}
	switch len(parts) {
	case 1:
		return parts[0], "", nil
	case 2:
		return parts[0], parts[1], nil
	}
	return "", "", awserr.New(awserr.ErrInvalidParameterValue, "FunctionName: %q is not a function name or ARN", ref)
}

// QualifiedARN is the ARN of version or alias qualifier of function name
// (the unqualified ARN for "" and $LATEST is name's ARN with ":$LATEST").
func (s *Service) QualifiedARN(name, qualifier string) string {
	if qualifier == "" {
		return s.ARN(name)
	}
	return s.ARN(name) + ":" + qualifier
}

// notFound is Lambda's ResourceNotFoundException for a function, version
// or alias: "Function not found: <arn>".
func (s *Service) notFound(name, qualifier string) error {
	return awserr.New(awserr.ErrResourceNotFound, "Function not found: %s", s.QualifiedARN(name, qualifier))
}

// resolveLocked returns function name at qualifier: $LATEST for "" and
// "$LATEST", a published version for a number, else an alias (its version
// picked by its routing configuration when route is set, else its
// FunctionVersion; seen through the alias's ARN). s.mu is held (read).
func (s *Service) resolveLocked(name, qualifier string, route bool) (*Function, error) {
	f, ok := s.fns[name]
	if !ok {
		return nil, s.notFound(name, qualifier)
	}
	switch {
	case qualifier == "" || qualifier == Latest:
		return f, nil
	case versionRE.MatchString(qualifier):
		return s.versionLocked(name, qualifier)
	}
	a, ok := s.aliases[name][qualifier]
	if !ok {
		return nil, s.notFound(name, qualifier)
	}
	v := a.FunctionVersion
	if route {
		v = a.route(s.random)
	}
	var vf *Function
	var err error
	if v == Latest {
		vf = f
	} else if vf, err = s.versionLocked(name, v); err != nil {
		return nil, err
	}
	cfg := vf.cfg
	cfg.FunctionArn = a.AliasArn
	return vf.withConfig(cfg), nil
}

// versionLocked returns published version v of function name, building
// its Function when its handler has been registered since.
func (s *Service) versionLocked(name, v string) (*Function, error) {
	ver, ok := s.versions[name][v]
	if !ok {
		return nil, s.notFound(name, v)
	}
	latest := s.fns[name].cfg.ReservedConcurrentExecutions
	if f := ver.fn.Load(); f != nil {
		return f.withReserved(latest), nil
	}
	inv, ok := s.reg.lookup(ver.cfg.Handler)
	if !ok {
		return nil, awserr.New(awserr.ErrResourceNotFound, "Function not found: %s (its handler %q is not registered in this process)", ver.cfg.FunctionArn, ver.cfg.Handler)
	}
	f := s.build(ver.cfg, inv)
	if !ver.fn.CompareAndSwap(nil, f) {
		f = ver.fn.Load()
	}
	return f.withReserved(latest), nil
}

// PublishVersion publishes $LATEST of function name as its next version
// (Config.LastVersion + 1): a copy of its configuration with Version and
// a qualified FunctionArn, stored for good. prepare, when not nil, gets
// the version number and the copy before it is stored, and may change its
// Handler (awsapi gives a process function's version a pool of its own
// there); an error from it publishes nothing. Errors: ResourceNotFound
// for an unknown function, InvalidParameterValue for a handler not
// registered.
// https://docs.aws.amazon.com/lambda/latest/api/API_PublishVersion.html
func (s *Service) PublishVersion(ctx context.Context, name string, prepare func(version string, cfg *Config) error) (*Function, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.fns[name]
	if !ok {
		return nil, s.notFound(name, "")
	}
	latest := f.cfg
	v := strconv.Itoa(latest.LastVersion + 1)
	cfg := latest
	cfg.Version, cfg.LastVersion, cfg.FunctionArn = v, 0, s.QualifiedARN(name, v)
	if prepare != nil {
		if err := prepare(v, &cfg); err != nil {
			return nil, err
		}
	}
	inv, ok := s.reg.lookup(cfg.Handler)
	if !ok {
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "Handler: %q is not a registered handler", cfg.Handler)
	}
	vrev, err := s.vkv.Create(ctx, name+"."+v, mustJSON(cfg))
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "store version %s of %s: %v", v, name, err)
	}
	s.seen("v:"+name+"."+v, vrev)
	latest.LastVersion++
	rev, err := s.kv.Put(ctx, name, mustJSON(latest))
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "store function: %v", err)
	}
	s.seen(name, rev)
	s.fns[name] = &Function{cfg: latest, core: f.core}
	ver := &version{cfg: cfg}
	vf := s.build(cfg, inv)
	ver.fn.Store(vf)
	if s.versions[name] == nil {
		s.versions[name] = map[string]*version{}
	}
	s.versions[name][v] = ver
	return vf, nil
}

// Describe returns the function ref names (see ParseRef) as GetFunction
// does, except that an alias gives its FunctionVersion, without routing:
// what Lambda's GetFunction and GetFunctionConfiguration report.
func (s *Service) Describe(ref string) (*Function, error) { return s.lookup(ref, false) }

func (s *Service) lookup(ref string, route bool) (*Function, error) {
	name, qualifier, err := ParseRef(ref)
	if err != nil {
		return nil, err
	}
	s.mu.RLock()
	f, err := s.resolveLocked(name, qualifier, route)
	s.mu.RUnlock()
	if err != nil && errors.Is(err, awserr.ErrResourceNotFound) && s.readThrough(name, qualifier) {
		s.mu.RLock()
		f, err = s.resolveLocked(name, qualifier, route)
		s.mu.RUnlock()
	}
	return f, err
}

// VersionConfig returns the configuration of published version v of
// function name, or ResourceNotFound.
func (s *Service) VersionConfig(name, v string) (Config, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ver, ok := s.versions[name][v]
	if !ok {
		return Config{}, s.notFound(name, v)
	}
	return ver.cfg, nil
}

// LatestVersion returns the configuration of function name's most recent
// published version, or false when it has none.
func (s *Service) LatestVersion(name string) (Config, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	vs := s.sortedVersionsLocked(name)
	if len(vs) == 0 {
		return Config{}, false
	}
	return vs[len(vs)-1], true
}

// ListVersions returns function name's $LATEST and then its published
// versions in number order (ListVersionsByFunction), or ResourceNotFound.
func (s *Service) ListVersions(name string) ([]Config, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	f, ok := s.fns[name]
	if !ok {
		return nil, s.notFound(name, "")
	}
	return append([]Config{f.cfg}, s.sortedVersionsLocked(name)...), nil
}

func (s *Service) sortedVersionsLocked(name string) []Config {
	out := make([]Config, 0, len(s.versions[name]))
	for _, v := range s.versions[name] {
		out = append(out, v.cfg)
	}
	slices.SortFunc(out, func(a, b Config) int {
		x, _ := strconv.Atoi(a.Version)
		y, _ := strconv.Atoi(b.Version)
		return x - y
	})
	return out
}

// DeleteVersion deletes published version v of function name. Errors as
// Lambda's DeleteFunction with a Qualifier: InvalidParameterValue for
// $LATEST ("$LATEST version cannot be deleted without deleting the
// function."), ResourceConflict while an alias references the version,
// ResourceNotFound for an unknown one. The version's resource policy goes
// with it.
func (s *Service) DeleteVersion(ctx context.Context, name, v string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v == Latest {
		return awserr.New(awserr.ErrInvalidParameterValue, "$LATEST version cannot be deleted without deleting the function.")
	}
	if _, ok := s.versions[name][v]; !ok {
		return s.notFound(name, v)
	}
	var refs []string
	for _, a := range s.aliases[name] {
		if a.references(v) {
			refs = append(refs, a.Name)
		}
	}
	if len(refs) > 0 {
		slices.Sort(refs)
		return awserr.New(awserr.ErrResourceConflict, "Unable to delete version because the following aliases reference it: [%s]", strings.Join(refs, ", "))
	}
	if err := s.vkv.Purge(ctx, name+"."+v); err != nil {
		return awserr.New(awserr.ErrService, "delete version %s of %s: %v", v, name, err)
	}
	delete(s.versions[name], v)
	s.purgeProvisioned(ctx, name, v)
	s.purgePolicy(ctx, name, v)
	return nil
}

// purgeVersionsLocked deletes every version and alias of function name
// (DeleteFunction).
func (s *Service) purgeVersionsLocked(ctx context.Context, name string) error {
	var errs []error
	for v := range s.versions[name] {
		errs = append(errs, s.vkv.Purge(ctx, name+"."+v))
	}
	for a := range s.aliases[name] {
		errs = append(errs, s.akv.Purge(ctx, name+"."+a))
	}
	delete(s.versions, name)
	delete(s.aliases, name)
	return errors.Join(errs...)
}
