package function

// Provisioned concurrency: environments started ahead of the invocations
// of a published version, directly or through an alias. Configurations
// are stored in KV bucket "runnel_provisioned_concurrency", key
// "<function>.<qualifier>"; what is started is the caller's (awsapi
// pre-starts a process function's environments, an in-process function
// has none to start). Refused on $LATEST, as Lambda refuses it.
// https://docs.aws.amazon.com/lambda/latest/dg/provisioned-concurrency.html
// https://docs.aws.amazon.com/lambda/latest/api/API_PutProvisionedConcurrencyConfig.html

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

// provisionedBucket holds the provisioned concurrency configurations.
const provisionedBucket = "runnel_provisioned_concurrency"

// Statuses of a provisioned concurrency configuration. runnel starts the
// environments before it answers, so a configuration is never IN_PROGRESS.
const (
	ProvisionedReady  = "READY"
	ProvisionedFailed = "FAILED"
)

// ProvisionedConcurrencyConfig is a version's or alias's provisioned
// concurrency (API_GetProvisionedConcurrencyConfig's output; FunctionArn
// as ListProvisionedConcurrencyConfigs gives it).
type ProvisionedConcurrencyConfig struct {
	// FunctionArn is the qualified ARN of the version or alias (in
	// ListProvisionedConcurrencyConfigs' items only).
	FunctionArn string `json:",omitempty"`
	// RequestedProvisionedConcurrentExecutions: 1 or more.
	RequestedProvisionedConcurrentExecutions int
	// AvailableProvisionedConcurrentExecutions and Allocated... count the
	// environments started (all of them once READY).
	AvailableProvisionedConcurrentExecutions int
	AllocatedProvisionedConcurrentExecutions int
	// Status is READY or FAILED (with StatusReason).
	Status       string
	StatusReason string `json:",omitempty"`
	// LastModified: ISO 8601.
	LastModified string
}

// ProvisionedTarget is what PutProvisionedConcurrency starts
// environments for: the function, the qualifier asked for, and the
// published version it stands for.
type ProvisionedTarget struct {
	Name, Qualifier, Version string
}

// PutProvisionedConcurrency sets n (1 or more) environments of qualifier
// (a version or an alias) of function name and calls start with the
// version they run (nil start: nothing to start), storing the outcome as
// READY or FAILED. Errors: InvalidParameterValue for $LATEST ("Provisioned
// Concurrency Configs cannot be applied to unpublished function
// versions.") or no qualifier, or n above the function's reserved
// concurrency less the other configurations'; ResourceNotFound for an
// unknown function, version or alias; ResourceConflict when an alias
// routes to two versions, or when the version already has a configuration
// through another qualifier.
func (s *Service) PutProvisionedConcurrency(ctx context.Context, name, qualifier string, n int, start func(ProvisionedTarget, int) error) (*ProvisionedConcurrencyConfig, error) {
	t, err := s.provisionedTarget(name, qualifier)
	if err != nil {
		return nil, err
	}
	if n < 1 {
		return nil, awserr.OutOfRange(awserr.ErrInvalidParameterValue, "ProvisionedConcurrentExecutions", n, 1, DefaultAccountConcurrency)
	}
	others := 0
	for _, c := range s.provisioned(name) {
		q := qualifierOfARN(c.FunctionArn)
		if q == qualifier {
			continue
		}
		others += c.RequestedProvisionedConcurrentExecutions
		if o, err := s.provisionedTarget(name, q); err == nil && o.Version == t.Version {
			return nil, awserr.New(awserr.ErrResourceConflict, "Version %s of %s already has Provisioned Concurrency through %s (one configuration per version)", t.Version, name, q)
		}
	}
	f, err := s.GetFunction(name)
	if err != nil {
		return nil, err
	}
	if r := f.cfg.ReservedConcurrentExecutions; r != nil && others+n > *r {
		return nil, awserr.New(awserr.ErrInvalidParameterValue, "ProvisionedConcurrentExecutions: %d (with %d provisioned elsewhere) is more than the function's ReservedConcurrentExecutions %d", n, others, *r)
	}
	c := ProvisionedConcurrencyConfig{FunctionArn: s.QualifiedARN(name, qualifier), RequestedProvisionedConcurrentExecutions: n,
		Status: ProvisionedReady, AvailableProvisionedConcurrentExecutions: n, AllocatedProvisionedConcurrentExecutions: n}
	if start != nil {
		if err := start(t, n); err != nil {
			c.Status, c.StatusReason = ProvisionedFailed, err.Error()
			c.AvailableProvisionedConcurrentExecutions, c.AllocatedProvisionedConcurrentExecutions = 0, 0
		}
	}
	c.LastModified = s.eng.Clock.Now().UTC().Format("2006-01-02T15:04:05.000+0000")
	if _, err := s.pkv.Put(ctx, name+"."+qualifier, mustJSON(c)); err != nil {
		return nil, awserr.New(awserr.ErrService, "store provisioned concurrency: %v", err)
	}
	return &c, nil
}

// provisionedTarget resolves qualifier of function name to the version
// provisioned concurrency runs.
func (s *Service) provisionedTarget(name, qualifier string) (ProvisionedTarget, error) {
	t := ProvisionedTarget{Name: name, Qualifier: qualifier}
	switch {
	case qualifier == "":
		return t, awserr.New(awserr.ErrInvalidParameterValue, "Qualifier: required (a published version or an alias)")
	case qualifier == Latest:
		return t, awserr.New(awserr.ErrInvalidParameterValue, "Provisioned Concurrency Configs cannot be applied to unpublished function versions.")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.fns[name]; !ok {
		return t, s.notFound(name, "")
	}
	if versionRE.MatchString(qualifier) {
		if _, ok := s.versions[name][qualifier]; !ok {
			return t, s.notFound(name, qualifier)
		}
		t.Version = qualifier
		return t, nil
	}
	a, ok := s.aliases[name][qualifier]
	if !ok {
		return t, s.notFound(name, qualifier)
	}
	if len(a.RoutingConfig.weights()) > 0 {
		return t, errWeightedProvisioned()
	}
	if a.FunctionVersion == Latest {
		return t, awserr.New(awserr.ErrInvalidParameterValue, "Provisioned Concurrency Configs cannot be applied to unpublished function versions.")
	}
	t.Version = a.FunctionVersion
	return t, nil
}

// errWeightedProvisioned refuses provisioned concurrency with alias
// routing, in Lambda's words.
func errWeightedProvisioned() error {
	return awserr.New(awserr.ErrResourceConflict, "Alias with weights can not be used with Provisioned Concurrency")
}

func qualifierOfARN(arn string) string {
	return arn[strings.LastIndex(arn, ":")+1:]
}

// provisioned reads function name's configurations (all functions' for
// name "").
func (s *Service) provisioned(name string) []ProvisionedConcurrencyConfig {
	var out []ProvisionedConcurrencyConfig
	engine.LoadJSON(context.Background(), s.pkv, func(key string, c ProvisionedConcurrencyConfig, err error) {
		if err == nil && (name == "" || strings.HasPrefix(key, name+".")) {
			out = append(out, c)
		}
	})
	slices.SortFunc(out, func(a, b ProvisionedConcurrencyConfig) int { return strings.Compare(a.FunctionArn, b.FunctionArn) })
	return out
}

// ListProvisionedConcurrency returns function name's configurations in
// ARN order (every function's for name ""), or ResourceNotFound.
func (s *Service) ListProvisionedConcurrency(name string) ([]ProvisionedConcurrencyConfig, error) {
	if name != "" {
		if _, err := s.GetFunction(name); err != nil {
			return nil, err
		}
	}
	return s.provisioned(name), nil
}

// GetProvisionedConcurrency returns the configuration of qualifier of
// function name: ResourceNotFound for an unknown function, version or
// alias, ProvisionedConcurrencyConfigNotFound when it has none.
func (s *Service) GetProvisionedConcurrency(ctx context.Context, name, qualifier string) (*ProvisionedConcurrencyConfig, error) {
	if _, err := s.GetFunction(name + ":" + qualifier); err != nil && qualifier != "" {
		return nil, err
	}
	e, err := s.pkv.Get(ctx, name+"."+qualifier)
	if err != nil {
		return nil, awserr.New(awserr.ErrProvisionedConcurrencyConfigNotFound, "No Provisioned Concurrency Config found for this function")
	}
	var c ProvisionedConcurrencyConfig
	if err := json.Unmarshal(e.Value(), &c); err != nil {
		return nil, awserr.New(awserr.ErrService, "read provisioned concurrency: %v", err)
	}
	return &c, nil
}

// DeleteProvisionedConcurrency deletes the configuration of qualifier of
// function name (errors as GetProvisionedConcurrency).
func (s *Service) DeleteProvisionedConcurrency(ctx context.Context, name, qualifier string) error {
	if _, err := s.GetProvisionedConcurrency(ctx, name, qualifier); err != nil {
		return err
	}
	return s.pkv.Purge(ctx, name+"."+qualifier)
}

// purgeProvisioned deletes the configurations of function name (all
// qualifiers, or only qualifier), when it or a version is deleted.
func (s *Service) purgeProvisioned(ctx context.Context, name, qualifier string) {
	for _, c := range s.provisioned(name) {
		if q := qualifierOfARN(c.FunctionArn); qualifier == "" || q == qualifier {
			s.pkv.Purge(ctx, name+"."+q)
		}
	}
}
