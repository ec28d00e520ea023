package awsapi

// Lambda: aliases (REST, /2015-03-31/functions/{name}/aliases) over
// package function (aliases.go): CreateAlias, GetAlias, UpdateAlias (with
// RoutingConfig weights between two published versions), ListAliases,
// DeleteAlias. Invoke, event source mappings and event invocations on an
// alias run the version its routing picks at each call.
// https://docs.aws.amazon.com/lambda/latest/api/API_CreateAlias.html

import (
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
