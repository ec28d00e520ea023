package awsapi

// Lambda: Invoke (REST, POST /2015-03-31/functions/{name}/invocations)
// over package function/async. RequestResponse answers with the function's
// payload (X-Amz-Function-Error "Unhandled" when it failed); Event queues
// the invocation (HTTP 202) for async's retries and destinations; DryRun
// checks (204). X-Amz-Log-Type Tail returns an empty log.

import (
	"encoding/base64"

	"github.com/runnel-dev/runnel/function/async"
)

// invokeInput is the raw payload and the invocation type.
type invokeInput struct {
	Payload        []byte
	InvocationType string
}

func (in *invokeInput) decodeFrom(rq *request) error {
	in.Payload, in.InvocationType = rq.body, rq.r.Header.Get("X-Amz-Invocation-Type")
	return nil
}

func lambdaInvoke(rq *request, in *invokeInput) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	out, err := rq.h.rn.Async.Invoke(rq.ctx, name, in.InvocationType, in.Payload)
	if err != nil {
		return nil, err
	}
	return invokeReply{out}, nil
}

// invokeReply writes Invoke's answer: the function's payload as it is,
// with the invocation's headers.
type invokeReply struct{ *async.InvokeOutput }

func (out invokeReply) writeReply(rq *request) {
	w := rq.w
	if out.RequestID != "" {
		w.Header().Set("X-Amzn-RequestId", out.RequestID)
	}
	if out.FunctionError != "" {
		w.Header().Set("X-Amz-Function-Error", out.FunctionError)
	}
	if out.ExecutedVersion != "" {
		w.Header().Set("X-Amz-Executed-Version", out.ExecutedVersion)
	}
	if rq.r.Header.Get("X-Amz-Log-Type") == "Tail" && out.StatusCode == 200 {
		w.Header().Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString(nil))
	}
	if len(out.Payload) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(out.StatusCode)
	w.Write(out.Payload)
}
