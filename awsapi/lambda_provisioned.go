package awsapi

// Lambda: provisioned concurrency (REST,
// /2019-09-30/functions/{name}/provisioned-concurrency?Qualifier=) over
// package function (provisioned.go). For a process function, Put starts
// the environments of the version (or the alias's version) before it
// answers, their init phase done, so their first invocations are warm (no
// Init Duration); the configuration is then READY (FAILED with the init
// error). An in-process function has no environment to start: READY at
// once. Configurations are started again after a restart
// (RestoreProcessFunctions). Environments are not stopped by Delete: they
// stay in the pool as warm ones.
// https://docs.aws.amazon.com/lambda/latest/api/API_PutProvisionedConcurrencyConfig.html

import (
	"context"

	"github.com/runnel-dev/runnel/function"
)

type putProvisionedConcurrencyConfigInput struct {
	ProvisionedConcurrentExecutions int
}

// provisionedOf is a configuration as Put and Get answer it (List's items
// add FunctionArn).
func provisionedOf(c *function.ProvisionedConcurrencyConfig) function.ProvisionedConcurrencyConfig {
	out := *c
	out.FunctionArn = ""
	return out
}

// prestart starts n environments of version t of a process function (none
// for an in-process function).
func (h *Handler) prestart(ctx context.Context, t function.ProvisionedTarget, n int) error {
	h.procs.mu.Lock()
	pf := h.procs.m[t.Name+":"+t.Version]
	h.procs.mu.Unlock()
	if pf == nil {
		return nil
	}
	return pf.Prestart(ctx, n)
}

// putProvisioned sets n environments of qualifier q of function name and
// starts them.
func (h *Handler) putProvisioned(ctx context.Context, name, q string, n int) (*function.ProvisionedConcurrencyConfig, error) {
	return h.rn.Functions.PutProvisionedConcurrency(ctx, name, q, n, func(t function.ProvisionedTarget, n int) error {
		return h.prestart(ctx, t, n)
	})
}

func lambdaPutProvisionedConcurrencyConfig(rq *request, in *putProvisionedConcurrencyConfigInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		c, err := rq.h.putProvisioned(rq.ctx, name, q, in.ProvisionedConcurrentExecutions)
		if err != nil {
			return nil, err
		}
		return provisionedOf(c), nil
	})
}

func lambdaGetProvisionedConcurrencyConfig(rq *request, _ *noInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		c, err := rq.h.rn.Functions.GetProvisionedConcurrency(rq.ctx, name, q)
		if err != nil {
			return nil, err
		}
		return provisionedOf(c), nil
	})
}

func lambdaDeleteProvisionedConcurrencyConfig(rq *request, _ *noInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		return nil, rq.h.rn.Functions.DeleteProvisionedConcurrency(rq.ctx, name, q)
	})
}

func lambdaListProvisionedConcurrencyConfigs(rq *request, _ *noInput) (any, error) {
	return listOf(rq, rq.h.rn.Functions.ListProvisionedConcurrency, "ProvisionedConcurrencyConfigs",
		func(c *function.ProvisionedConcurrencyConfig) function.ProvisionedConcurrencyConfig { return *c })
}

// restoreProvisioned starts again the environments of every stored
// configuration (RestoreProcessFunctions).
func (h *Handler) restoreProvisioned(ctx context.Context) error {
	cs, err := h.rn.Functions.ListProvisionedConcurrency("")
	if err != nil {
		return err
	}
	for _, c := range cs {
		name, q, err := function.ParseRef(c.FunctionArn)
		if err != nil {
			continue
		}
		if _, err := h.putProvisioned(ctx, name, q, c.RequestedProvisionedConcurrentExecutions); err != nil {
			h.lopts.Logger.Warn("lambda api: provisioned concurrency not restored", "function", c.FunctionArn, "err", err)
		}
	}
	return nil
}
