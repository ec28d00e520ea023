package awsapi

// Lambda: asynchronous invocation's configuration (REST,
// /2019-09-25/functions/{name}/event-invoke-config) over package
// function/async: retries, maximum event age, destinations, and a
// DeadLetterConfig (a runnel extension; AWS keeps it on the function).
// $LATEST, each version and each alias has its own (Qualifier).

import (
	"math"
	"strings"
	"time"

	"github.com/runnel-dev/runnel/function/async"
)

type destination struct {
	Destination string
}

// destinations is a DestinationConfig on the wire (event source
// mappings').
type destinations struct {
	OnSuccess, OnFailure *destination `json:",omitempty"`
}

// eicDestination is API_OnSuccess and API_OnFailure in an event invoke
// configuration: an unset destination is answered as
// {"Destination":null}, as Lambda does (terraform-provider-aws tells an
// unset destination by nil). Before, runnel answered {"Destination":""}.
// On input, null and "" both remove the destination.
type eicDestination struct {
	Destination *string
}

// eicDestinations is an event invoke configuration's DestinationConfig on
// the wire: both OnSuccess and OnFailure are always answered.
type eicDestinations struct {
	OnSuccess, OnFailure *eicDestination `json:",omitempty"`
}

type eventInvokeConfig struct {
	FunctionArn                                    string           `json:",omitempty"`
	LastModified                                   float64          `json:",omitempty"`
	MaximumRetryAttempts, MaximumEventAgeInSeconds *int             `json:",omitempty"`
	DestinationConfig                              *eicDestinations `json:",omitempty"`
	// DeadLetterConfig is a runnel extension (AWS keeps it on the
	// function's configuration).
	DeadLetterConfig *async.DeadLetterConfig `json:",omitempty"`
}

func epochSecondsOf(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return math.Round(float64(t.UnixMilli())) / 1000
}

func (h *Handler) eicOut(c *async.EventInvokeConfig) eventInvokeConfig {
	out := eventInvokeConfig{
		FunctionArn: c.FunctionArn, LastModified: epochSecondsOf(c.LastModified),
		MaximumRetryAttempts: c.MaximumRetryAttempts, MaximumEventAgeInSeconds: c.MaximumEventAgeInSeconds,
		DeadLetterConfig: c.DeadLetterConfig,
	}
	if out.FunctionArn == "" {
		out.FunctionArn = h.rn.Functions.ARN(c.FunctionName)
	}
	if c.Qualifier == "" && !strings.HasSuffix(out.FunctionArn, ":$LATEST") {
		out.FunctionArn += ":$LATEST"
	}
	out.DestinationConfig = &eicDestinations{OnSuccess: &eicDestination{}, OnFailure: &eicDestination{}}
	if d := c.DestinationConfig; d != nil {
		if d.OnSuccess != nil && d.OnSuccess.Destination != "" {
			out.DestinationConfig.OnSuccess.Destination = &d.OnSuccess.Destination
		}
		if d.OnFailure != nil && d.OnFailure.Destination != "" {
			out.DestinationConfig.OnFailure.Destination = &d.OnFailure.Destination
		}
	}
	return out
}

// config is the async configuration the request asks for, for the
// function the path names.
func (in *eventInvokeConfig) config(rq *request) (async.EventInvokeConfig, error) {
	name, err := rq.qualifiedRef()
	if err != nil {
		return async.EventInvokeConfig{}, err
	}
	c := async.EventInvokeConfig{
		FunctionName: name, MaximumRetryAttempts: in.MaximumRetryAttempts,
		MaximumEventAgeInSeconds: in.MaximumEventAgeInSeconds, DeadLetterConfig: in.DeadLetterConfig,
	}
	if d := in.DestinationConfig; d != nil {
		c.DestinationConfig = &async.DestinationConfig{}
		if d.OnSuccess != nil {
			c.DestinationConfig.OnSuccess = &async.OnSuccess{Destination: eicARN(d.OnSuccess.Destination)}
		}
		if d.OnFailure != nil {
			c.DestinationConfig.OnFailure = &async.OnFailure{Destination: eicARN(d.OnFailure.Destination)}
		}
	}
	return c, nil
}

// eicCall answers with call's configuration.
func (rq *request) eicCall(out *async.EventInvokeConfig, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return rq.h.eicOut(out), nil
}

func lambdaPutFunctionEventInvokeConfig(rq *request, in *eventInvokeConfig) (any, error) {
	c, err := in.config(rq)
	if err != nil {
		return nil, err
	}
	return rq.eicCall(rq.h.rn.Async.PutFunctionEventInvokeConfig(rq.ctx, c))
}

func lambdaUpdateFunctionEventInvokeConfig(rq *request, in *eventInvokeConfig) (any, error) {
	c, err := in.config(rq)
	if err != nil {
		return nil, err
	}
	return rq.eicCall(rq.h.rn.Async.UpdateFunctionEventInvokeConfig(rq.ctx, c))
}

func lambdaGetFunctionEventInvokeConfig(rq *request, _ *noInput) (any, error) {
	name, err := rq.qualifiedRef()
	if err != nil {
		return nil, err
	}
	return rq.eicCall(rq.h.rn.Async.GetFunctionEventInvokeConfig(rq.ctx, name))
}

func lambdaListFunctionEventInvokeConfigs(rq *request, _ *noInput) (any, error) {
	list := func(name string) ([]async.EventInvokeConfig, error) {
		if _, err := rq.h.rn.Functions.GetFunction(name); err != nil {
			return nil, err
		}
		return rq.h.rn.Async.ListFunctionEventInvokeConfigs(name), nil
	}
	return listOf(rq, list, "FunctionEventInvokeConfigs", func(c *async.EventInvokeConfig) eventInvokeConfig { return rq.h.eicOut(c) })
}

func lambdaDeleteFunctionEventInvokeConfig(rq *request, _ *noInput) (any, error) {
	name, err := rq.qualifiedRef()
	if err != nil {
		return nil, err
	}
	return nil, rq.h.rn.Async.DeleteFunctionEventInvokeConfig(rq.ctx, name)
}

// eicARN is a destination ARN on input: *p, or "" (none) for nil.
func eicARN(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
