package awsapi

// Lambda: aliases (REST, /2015-03-31/functions/{name}/aliases) over
// package function (aliases.go): CreateAlias, GetAlias, UpdateAlias (with
// RoutingConfig weights between two published versions), ListAliases,
// DeleteAlias. Invoke, event source mappings and event invocations on an
// alias run the version its routing picks at each call.
// https://docs.aws.amazon.com/lambda/latest/api/API_CreateAlias.html

import (
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
)

type createAliasInput struct {
	Name, FunctionVersion, Description string
	RoutingConfig                      *function.AliasRoutingConfiguration
}

func lambdaCreateAlias(rq *request, in *createAliasInput) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	if err := rq.checkSameRole(name, in.FunctionVersion, in.RoutingConfig); err != nil {
		return nil, err
	}
	return rq.h.rn.Functions.CreateAlias(rq.ctx, name, function.Alias{
		Name: in.Name, FunctionVersion: in.FunctionVersion, Description: in.Description, RoutingConfig: in.RoutingConfig,
	})
}

type updateAliasInput struct {
	FunctionVersion, Description *string
	RoutingConfig                *function.AliasRoutingConfiguration
	RevisionId                   string
}

func lambdaUpdateAlias(rq *request, in *updateAliasInput) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	alias := rq.r.PathValue("alias")
	if cur, err := rq.h.rn.Functions.GetAlias(name, alias); err == nil {
		primary, rc := cur.FunctionVersion, cur.RoutingConfig
		if in.FunctionVersion != nil {
			primary = *in.FunctionVersion
		}
		if in.RoutingConfig != nil {
			rc = in.RoutingConfig
		}
		if err := rq.checkSameRole(name, primary, rc); err != nil {
			return nil, err
		}
	}
	a, err := rq.h.rn.Functions.UpdateAlias(rq.ctx, name, alias, function.AliasUpdate{
		FunctionVersion: in.FunctionVersion, Description: in.Description, RoutingConfig: in.RoutingConfig, RevisionId: in.RevisionId,
	})
	if err != nil {
		return nil, err
	}
	// An alias's provisioned concurrency moves with it: the new version's
	// environments are started.
	if pc, err := rq.h.rn.Functions.GetProvisionedConcurrency(rq.ctx, name, alias); err == nil {
		rq.h.putProvisioned(rq.ctx, name, alias, pc.RequestedProvisionedConcurrentExecutions)
	}
	return a, nil
}

// checkSameRole refuses a routing between two versions of function name
// whose execution roles (Role, kept in the versions' metadata) differ,
// with InvalidParameterValueException naming both: "Both versions must
// have ... the same execution role"
// (https://docs.aws.amazon.com/lambda/latest/dg/configuring-alias-routing.html).
// Versions that do not exist are left to package function's checks, as
// are the other rules (among them the same DeadLetterConfig).
func (rq *request) checkSameRole(name, primary string, rc *function.AliasRoutingConfiguration) error {
	if rc == nil {
		return nil
	}
	role := func(v string) (string, bool) {
		cfg, err := rq.h.rn.Functions.VersionConfig(name, v)
		if err != nil {
			return "", false
		}
		if m, err := rq.h.loadMeta(rq.ctx, metaKey(cfg)); err == nil {
			return m.Role, true
		}
		return "", true
	}
	r1, ok1 := role(primary)
	for v := range rc.AdditionalVersionWeights {
		if r2, ok2 := role(v); ok1 && ok2 && r1 != r2 {
			return awserr.New(awserr.ErrInvalidParameterValue, "RoutingConfig.AdditionalVersionWeights: versions %s (Role %q) and %s (Role %q) of %s must have the same execution role to share an alias",
				primary, r1, v, r2, name)
		}
	}
	return nil
}

func lambdaGetAlias(rq *request, _ *noInput) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	return rq.h.rn.Functions.GetAlias(name, rq.r.PathValue("alias"))
}

func lambdaListAliases(rq *request, _ *noInput) (any, error) {
	list := func(name string) ([]function.Alias, error) {
		return rq.h.rn.Functions.ListAliases(name, rq.r.URL.Query().Get("FunctionVersion"))
	}
	return listOf(rq, list, "Aliases", func(a *function.Alias) function.Alias { return *a })
}

func lambdaDeleteAlias(rq *request, _ *noInput) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	alias := rq.r.PathValue("alias")
	if err := rq.h.rn.Functions.DeleteAlias(rq.ctx, name, alias); err != nil {
		return nil, err
	}
	rq.h.rn.Async.DeleteFunctionEventInvokeConfig(rq.ctx, name+":"+alias) // none is no error
	return nil, nil
}
