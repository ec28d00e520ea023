package awsapi

// Lambda: reserved concurrency (REST, /2017-10-31/functions/{name}/concurrency
// and GET /2019-09-30/...) over package function, which enforces it for
// in-process and process functions alike (throttling with
// TooManyRequestsException). No provisioned concurrency.

import (
	"github.com/runnel-dev/runnel/function"
)

// setConcurrency sets the reserved concurrency of the function the path
// names (nil: none).
func (rq *request) setConcurrency(n *int) (*function.Function, error) {
	h := rq.h
	h.fnMu.Lock()
	defer h.fnMu.Unlock()
	f, err := rq.function()
	if err != nil {
		return nil, err
	}
	cfg := f.Config()
	cfg.ReservedConcurrentExecutions = n
	// A process function's pool has no limit of its own (deployProcess),
	// so the registered handler is kept: only the configuration changes.
	if _, err := h.rn.Functions.CreateFunction(rq.ctx, cfg, true); err != nil {
		return nil, err
	}
	return h.rn.Functions.GetFunction(cfg.FunctionName)
}

type putFunctionConcurrencyInput struct {
	ReservedConcurrentExecutions *int `json:"ReservedConcurrentExecutions"`
}

func lambdaPutFunctionConcurrency(rq *request, in *putFunctionConcurrencyInput) (any, error) {
	if in.ReservedConcurrentExecutions == nil {
		return nil, lambdaInvalid("ReservedConcurrentExecutions: required")
	}
	f, err := rq.setConcurrency(in.ReservedConcurrentExecutions)
	if err != nil {
		return nil, err
	}
	return map[string]int{"ReservedConcurrentExecutions": *f.Config().ReservedConcurrentExecutions}, nil
}

func lambdaDeleteFunctionConcurrency(rq *request, _ *noInput) (any, error) {
	_, err := rq.setConcurrency(nil)
	return nil, err
}

func lambdaGetFunctionConcurrency(rq *request, _ *noInput) (any, error) {
	f, err := rq.function()
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	if n := f.Config().ReservedConcurrentExecutions; n != nil {
		out["ReservedConcurrentExecutions"] = *n
	}
	return out, nil
}
