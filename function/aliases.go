package function

// Aliases: a name (prod, live) for a version of a function, optionally
// splitting its invocations with a second version by weight
// (RoutingConfig). Stored in KV bucket "runnel_function_aliases", key
// "<function>.<alias>". Invoking "<function>:<alias>" (or its ARN) runs the
// version the routing picks, seen through the alias's ARN (the handler's
// InvokedFunctionArn); event source mappings on an alias resolve it at
// every batch, so they follow UpdateAlias.
// https://docs.aws.amazon.com/lambda/latest/dg/configuration-aliases.html

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
)

// aliasesBucket holds the aliases.
const aliasesBucket = "runnel_function_aliases"

// Alias is a function alias (API_AliasConfiguration).
type Alias struct {
	// AliasArn is set by runnel: …:function:<name>:<alias>.
	AliasArn string
	// Name: 1..128 characters of [a-zA-Z0-9-_], not all digits.
	Name string
	// FunctionVersion is the version the alias points to: a published
	// version, or $LATEST (then without RoutingConfig).
	FunctionVersion string
	// Description: up to 256 characters.
	Description string
	// RoutingConfig sends a share of the invocations to one other
	// published version; nil or empty: all go to FunctionVersion.
	RoutingConfig *AliasRoutingConfiguration `json:",omitempty"`
	// RevisionId is set by runnel: a UUID that changes at every update.
	RevisionId string
}

// AliasRoutingConfiguration is an alias's traffic shifting
// (API_AliasRoutingConfiguration).
type AliasRoutingConfiguration struct {
	// AdditionalVersionWeights maps at most one version (not the alias's
	// FunctionVersion, not $LATEST) to the share of invocations it gets,
	// 0.0..1.0; FunctionVersion gets the rest.
	AdditionalVersionWeights map[string]float64
}

// route picks the version of one invocation: the additional version with
// its weight's probability (r() in [0, 1)), else FunctionVersion.
func (a *Alias) route(r func() float64) string {
	if a.RoutingConfig != nil {
		for v, w := range a.RoutingConfig.AdditionalVersionWeights {
			if r() < w {
				return v
			}
		}
	}
	return a.FunctionVersion
}

// references reports whether the alias sends any invocation to version v.
func (a *Alias) references(v string) bool {
	if a.FunctionVersion == v {
		return true
	}
	_, ok := a.RoutingConfig.weights()[v]
	return ok
}

func (rc *AliasRoutingConfiguration) weights() map[string]float64 {
	if rc == nil {
		return nil
	}
	return rc.AdditionalVersionWeights
}

// AliasUpdate is the change of UpdateAlias: nil fields are kept.
type AliasUpdate struct {
	FunctionVersion, Description *string
	// RoutingConfig replaces the routing; an empty one removes it.
	RoutingConfig *AliasRoutingConfiguration
	// RevisionId, when set, must be the alias's (PreconditionFailed).
	RevisionId string
}

// checkAliasLocked checks a's version and routing against function name's
// versions: ResourceNotFound for a version that does not exist,
// InvalidParameterValue for a name of digits only, more than one
// additional version, a weight outside 0.0..1.0, $LATEST in a routing,
// the additional version equal to FunctionVersion, or two versions with
// different DeadLetterConfigs ("Both versions must have the same
// dead-letter queue configuration, or no dead-letter queue
// configuration", configuring-alias-routing.html; before, such an alias
// was accepted and an event's dead letter went to the primary version's
// queue whichever version ran it). The other rule there, "the same
// execution role", is awsapi's (the role is its metadata).
func (s *Service) checkAliasLocked(name string, a *Alias) error {
	if versionRE.MatchString(a.Name) {
		return awserr.New(awserr.ErrInvalidParameterValue, "Name: %q must not be a number (1..128 characters of [a-zA-Z0-9-_], not all digits)", a.Name)
	}
	if !qualifierRE.MatchString(a.Name) || a.Name == Latest {
		return awserr.New(awserr.ErrInvalidParameterValue, "Name: %q must be 1..128 characters of [a-zA-Z0-9-_]", a.Name)
	}
	if a.FunctionVersion != Latest {
		if _, ok := s.versions[name][a.FunctionVersion]; !ok {
			return s.notFound(name, a.FunctionVersion)
		}
	}
	w := a.RoutingConfig.weights()
	if len(w) == 0 {
		a.RoutingConfig = nil
		return nil
	}
	if len(w) > 1 {
		return awserr.New(awserr.ErrInvalidParameterValue, "RoutingConfig.AdditionalVersionWeights: at most 1 additional version, got %d", len(w))
	}
	for v, weight := range w {
		switch {
		case weight < 0 || weight > 1:
			return awserr.New(awserr.ErrInvalidParameterValue, "RoutingConfig.AdditionalVersionWeights: the weight of version %s, %v, must be between 0.0 and 1.0", v, weight)
		case v == Latest || a.FunctionVersion == Latest:
			return awserr.New(awserr.ErrInvalidParameterValue, "$LATEST is not supported for an alias pointing to more than 1 version")
		case v == a.FunctionVersion:
			return awserr.New(awserr.ErrInvalidParameterValue, "RoutingConfig.AdditionalVersionWeights: version %s is the alias's FunctionVersion; the additional version must be another", v)
		}
		add, ok := s.versions[name][v]
		if !ok {
			return s.notFound(name, v)
		}
		primary := s.versions[name][a.FunctionVersion]
		if d1, d2 := dlqOf(primary.cfg), dlqOf(add.cfg); d1 != d2 {
			return awserr.New(awserr.ErrInvalidParameterValue, "RoutingConfig.AdditionalVersionWeights: versions %s (DeadLetterConfig %s) and %s (DeadLetterConfig %s) of %s must have the same dead-letter queue configuration, or none, to share an alias",
				a.FunctionVersion, d1, v, d2, name)
		}
	}
	return nil
}

// dlqOf names cfg's dead-letter queue for an error message: its ARN, or
// "none".
func dlqOf(cfg Config) string {
	if d := cfg.DeadLetterConfig; d != nil && d.TargetArn != "" {
		return d.TargetArn
	}
	return "none"
}

// aliasLocked returns alias of function name, or ResourceNotFound.
func (s *Service) aliasLocked(name, alias string) (*Alias, error) {
	if _, ok := s.fns[name]; !ok {
		return nil, s.notFound(name, "")
	}
	a, ok := s.aliases[name][alias]
	if !ok {
		return nil, awserr.New(awserr.ErrResourceNotFound, "Alias not found: %s", s.QualifiedARN(name, alias))
	}
	return a, nil
}

// storeAliasLocked stores a with a new RevisionId (create: only if it is
// not stored yet).
func (s *Service) storeAliasLocked(ctx context.Context, name string, a Alias, create bool) (*Alias, error) {
	a.AliasArn, a.RevisionId = s.QualifiedARN(name, a.Name), uuid.NewString()
	var rev uint64
	var err error
	if create {
		rev, err = s.akv.Create(ctx, name+"."+a.Name, mustJSON(a))
	} else {
		rev, err = s.akv.Put(ctx, name+"."+a.Name, mustJSON(a))
	}
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "store alias %s: %v", a.AliasArn, err)
	}
	s.seen("a:"+name+"."+a.Name, rev)
	if s.aliases[name] == nil {
		s.aliases[name] = map[string]*Alias{}
	}
	s.aliases[name][a.Name] = &a
	return &a, nil
}

// CreateAlias creates alias a of function name. Errors: ResourceNotFound
// (function or version), ResourceConflict ("Alias already exists: <arn>"),
// InvalidParameterValue (see AliasUpdate's checks).
// https://docs.aws.amazon.com/lambda/latest/api/API_CreateAlias.html
func (s *Service) CreateAlias(ctx context.Context, name string, a Alias) (*Alias, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.fns[name]; !ok {
		return nil, s.notFound(name, "")
	}
	if err := s.checkAliasLocked(name, &a); err != nil {
		return nil, err
	}
	if _, ok := s.aliases[name][a.Name]; ok {
		return nil, awserr.New(awserr.ErrResourceConflict, "Alias already exists: %s", s.QualifiedARN(name, a.Name))
	}
	return s.storeAliasLocked(ctx, name, a, true)
}

// UpdateAlias changes alias of function name. Errors as CreateAlias,
// PreconditionFailed when u.RevisionId is not the alias's, and
// ResourceConflict for weights on an alias with provisioned concurrency.
// https://docs.aws.amazon.com/lambda/latest/api/API_UpdateAlias.html
func (s *Service) UpdateAlias(ctx context.Context, name, alias string, u AliasUpdate) (*Alias, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, err := s.aliasLocked(name, alias)
	if err != nil {
		return nil, err
	}
	if u.RevisionId != "" && u.RevisionId != cur.RevisionId {
		return nil, errRevision()
	}
	a := *cur
	setPtr(&a.FunctionVersion, u.FunctionVersion)
	setPtr(&a.Description, u.Description)
	if u.RoutingConfig != nil {
		a.RoutingConfig = &AliasRoutingConfiguration{AdditionalVersionWeights: maps.Clone(u.RoutingConfig.AdditionalVersionWeights)}
	}
	if err := s.checkAliasLocked(name, &a); err != nil {
		return nil, err
	}
	if a.RoutingConfig != nil {
		if _, err := s.pkv.Get(ctx, name+"."+alias); err == nil {
			return nil, errWeightedProvisioned()
		}
	}
	return s.storeAliasLocked(ctx, name, a, false)
}

// errRevision is Lambda's PreconditionFailedException for a stale
// RevisionId.
func errRevision() error {
	return awserr.New(awserr.ErrPreconditionFailed, "The Revision Id provided does not match the latest Revision Id. Call the GetFunction/GetAlias API to retrieve the latest Revision Id")
}

// CheckRevision fails with PreconditionFailed when revisionID is set and
// is not the RevisionId of function name's $LATEST.
func (s *Service) CheckRevision(name, revisionID string) error {
	f, err := s.GetFunction(name)
	if err != nil {
		return err
	}
	if revisionID != "" && revisionID != f.cfg.RevisionId {
		return errRevision()
	}
	return nil
}

func setPtr[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// GetAlias returns alias of function name, or ResourceNotFound.
func (s *Service) GetAlias(name, alias string) (*Alias, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	a, err := s.aliasLocked(name, alias)
	if err != nil {
		return nil, err
	}
	c := *a
	return &c, nil
}

// ListAliases returns function name's aliases in name order, only those
// sending invocations to functionVersion when it is set.
func (s *Service) ListAliases(name, functionVersion string) ([]Alias, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.fns[name]; !ok {
		return nil, s.notFound(name, "")
	}
	out := []Alias{}
	for _, a := range s.aliases[name] {
		if functionVersion == "" || a.references(functionVersion) {
			out = append(out, *a)
		}
	}
	slices.SortFunc(out, func(a, b Alias) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// DeleteAlias deletes alias of function name, with its resource policy,
// provisioned concurrency and URL configuration, or fails with
// ResourceNotFound. (Its policy used to stay behind: an alias created
// again under the name inherited the old statements.)
func (s *Service) DeleteAlias(ctx context.Context, name, alias string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.aliasLocked(name, alias); err != nil {
		return err
	}
	if err := s.akv.Purge(ctx, name+"."+alias); err != nil {
		return awserr.New(awserr.ErrService, "delete alias: %v", err)
	}
	delete(s.aliases[name], alias)
	s.purgeProvisioned(ctx, name, alias)
	s.purgeURLs(ctx, name, alias)
	s.purgePolicy(ctx, name, alias)
	return nil
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // configurations are plain data
	}
	return b
}
