//go:build lambda.norpc

// Command echo is the test function of package process: an aws-lambda-go
// custom runtime whose event says what to do.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

type event struct {
	Op      string `json:"op"`
	Message string `json:"message,omitempty"`
	SleepMs int    `json:"sleep_ms,omitempty"`
	Size    int    `json:"size,omitempty"`
}

var count int

func handle(ctx context.Context, raw json.RawMessage) (any, error) {
	count++
	var ev event
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	switch ev.Op {
	case "error":
		return nil, errors.New(ev.Message)
	case "wrap":
		return nil, fmt.Errorf("wrapped: %w", errors.New(ev.Message))
	case "panic":
		panic(ev.Message)
	case "exit":
		os.Exit(3)
	case "sleep":
		time.Sleep(time.Duration(ev.SleepMs) * time.Millisecond)
	case "log":
		fmt.Println("to stdout: " + ev.Message)
		fmt.Fprintln(os.Stderr, "to stderr: "+ev.Message)
	case "big":
		return strings.Repeat("x", ev.Size), nil
	case "probe":
		// Post a response for an unknown request id, directly.
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/invocation/no-such-id/response"
		resp, err := http.Post(url, "application/json", strings.NewReader(`{}`))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return map[string]any{"status": resp.StatusCode, "body": json.RawMessage(b)}, nil
	}
	lc, _ := lambdacontext.FromContext(ctx)
	deadline, _ := ctx.Deadline()
	env := map[string]string{}
	for _, k := range []string{"AWS_LAMBDA_RUNTIME_API", "_HANDLER", "AWS_LAMBDA_FUNCTION_NAME",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION", "AWS_REGION", "LAMBDA_TASK_ROOT",
		"LAMBDA_RUNTIME_DIR", "TZ", "LANG", "PATH", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "MY_VAR",
		"_X_AMZN_TRACE_ID", "AWS_LAMBDA_LOG_GROUP_NAME", "TMPDIR"} {
		env[k] = os.Getenv(k)
	}
	wd, _ := os.Getwd()
	return map[string]any{
		"event":        raw,
		"request_id":   lc.AwsRequestID,
		"function_arn": lc.InvokedFunctionArn,
		"deadline_ms":  deadline.UnixMilli(),
		"pid":          os.Getpid(),
		"count":        count,
		"env":          env,
		"cwd":          wd,
		"function":     lambdacontext.FunctionName,
		"memory":       lambdacontext.MemoryLimitInMB,
	}, nil
}

func main() {
	switch os.Getenv("INIT_FAIL") {
	case "exit":
		fmt.Fprintln(os.Stderr, "init failing")
		os.Exit(7)
	case "post":
		url := "http://" + os.Getenv("AWS_LAMBDA_RUNTIME_API") + "/2018-06-01/runtime/init/error"
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"errorMessage":"no config","errorType":"InitFailed"}`))
		req.Header.Set("Lambda-Runtime-Function-Error-Type", "Runtime.Unknown")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		os.Exit(1)
	}
	lambda.Start(handle)
}
