package awsapi

// Lambda: Invoke (REST, POST /2015-03-31/functions/{name}/invocations)
// over package function/async. RequestResponse answers with the function's
// payload (X-Amz-Function-Error "Unhandled" when it failed); Event queues
// the invocation (HTTP 202) for async's retries and destinations; DryRun
// checks (204). X-Amz-Log-Type Tail returns the last 4 KB of the
// invocation's log (X-Amz-Log-Result, base64): a process function's
// output with START, END and REPORT; an in-process function's START, END
// and REPORT (function/logging.go). X-Amz-Client-Context (base64 JSON, at
// most 3,583 bytes) reaches a synchronous invocation's function
// (function.WithClientContext). A synchronous invocation is not cancelled
// when its caller disconnects: it runs to its end or its Timeout, as on
// Lambda.

import (
	"context"
	"encoding/base64"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/function/process"
)

// invokeInput is the raw payload, the invocation type and the decoded
// ClientContext (X-Amz-Client-Context).
type invokeInput struct {
	Payload        []byte
	InvocationType string
	ClientContext  []byte
}

func (in *invokeInput) decodeFrom(rq *request) error {
	in.Payload, in.InvocationType = rq.body, rq.r.Header.Get("X-Amz-Invocation-Type")
	if b64 := rq.r.Header.Get("X-Amz-Client-Context"); b64 != "" {
		raw, err := function.ParseClientContext(b64)
		if err != nil {
			return err
		}
		in.ClientContext = raw
	}
	return nil
}

func lambdaInvoke(rq *request, in *invokeInput) (any, error) {
	ref, err := rq.qualifiedRef()
	if err != nil {
		return nil, err
	}
	ctx := rq.ctx
	var tail *process.LogTail
	if rq.r.Header.Get("X-Amz-Log-Type") == "Tail" {
		ctx, tail = process.WithLogTail(ctx)
	}
	if in.InvocationType == "" || in.InvocationType == async.RequestResponse {
		// Lambda passes ClientContext to synchronous invocations only.
		ctx = function.WithClientContext(ctx, in.ClientContext)
		// A synchronous invocation runs to its end or its Timeout
		// whatever the caller does: a client that disconnects (the CLI
		// gives up after its 60 s read timeout and retries) leaves it
		// running, its log complete (boto/boto3#2510). Before, the
		// request's context reached the function, and a disconnect
		// killed its environment mid-invocation.
		ctx = context.WithoutCancel(ctx)
	}
	out, err := rq.h.rn.Async.Invoke(ctx, ref, in.InvocationType, in.Payload)
	if err != nil {
		return nil, err
	}
	return invokeReply{out, tail}, nil
}

// invokeReply writes Invoke's answer: the function's payload as it is,
// with the invocation's headers (and the tail of its log when asked).
type invokeReply struct {
	*async.InvokeOutput
	tail *process.LogTail
}

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
	if out.tail != nil && out.StatusCode == 200 {
		w.Header().Set("X-Amz-Log-Result", base64.StdEncoding.EncodeToString(out.tail.Bytes()))
	}
	if len(out.Payload) > 0 {
		w.Header().Set("Content-Type", "application/json")
	}
	w.WriteHeader(out.StatusCode)
	w.Write(out.Payload)
}
