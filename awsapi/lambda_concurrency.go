package awsapi

// Lambda: reserved concurrency (REST, /2017-10-31/functions/{name}/concurrency
// and GET /2019-09-30/...) over package function, which enforces it for
// in-process and process functions alike (throttling with
// TooManyRequestsException). No provisioned concurrency.

import (
	"github.com/runnel-dev/runnel/function"
)

// setConcurrency sets the reserved concurrency of the function the path
// names (nil: none). A process function's pool has no limit of its own
// (deployProcess), so the registered handler is kept: only the
// configuration changes.
func (rq *request) setConcurrency(n *int) error {
	_, err := rq.change(func(cfg *function.Config, _ *functionMeta) error {
		cfg.ReservedConcurrentExecutions = n
		_, err := rq.h.rn.Functions.PutFunction(rq.ctx, *cfg)
		return err
	})
	return err
}

type putFunctionConcurrencyInput struct {
	ReservedConcurrentExecutions *int
}

func lambdaPutFunctionConcurrency(rq *request, in *putFunctionConcurrencyInput) (any, error) {
	if in.ReservedConcurrentExecutions == nil {
		return nil, lambdaInvalid("ReservedConcurrentExecutions: required")
	}
	if err := rq.setConcurrency(in.ReservedConcurrentExecutions); err != nil {
		return nil, err
	}
	return map[string]int{"ReservedConcurrentExecutions": *in.ReservedConcurrentExecutions}, nil
}

func lambdaDeleteFunctionConcurrency(rq *request, _ *noInput) (any, error) {
	return nil, rq.setConcurrency(nil)
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
