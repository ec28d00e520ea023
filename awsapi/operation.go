package awsapi

import (
	"fmt"
	"reflect"
	"sort"
)

// Service is an AWS API the endpoint serves.
type Service string

// The services, as README's list of supported operations names them.
const (
	Kinesis         Service = "Kinesis"
	SQS             Service = "SQS"
	Lambda          Service = "Lambda"
	DynamoDB        Service = "DynamoDB"
	DynamoDBStreams Service = "DynamoDB Streams"
	CloudWatchLogs  Service = "CloudWatch Logs"
	IAM             Service = "IAM"
	STS             Service = "STS"
	SNS             Service = "SNS"
	EventBridge     Service = "EventBridge"
	Scheduler       Service = "EventBridge Scheduler"
)

// Services lists the services in the order README lists them.
var Services = []Service{Kinesis, SQS, Lambda, DynamoDB, DynamoDBStreams, CloudWatchLogs, IAM, STS, SNS, EventBridge, Scheduler}

// Operation is one AWS operation the endpoint serves: a row of the table
// (operations.go) that the router dispatches on, the tests check, and
// README.md's list of supported operations is generated from.
type Operation struct {
	Service Service
	// Name is the operation's name in the AWS API reference
	// ("PutRecords"): the X-Amz-Target suffix or the query protocol's
	// Action (SQS, IAM, STS).
	Name string
	// Doc is one line on what runnel does of the operation, and what it
	// does not.
	Doc string
	// Routes are the REST APIs' http.ServeMux patterns (Lambda:
	// "POST /2015-03-31/functions/{name}/invocations", Scheduler:
	// "POST /schedules/{name}"); empty for the other services.
	Routes []string
	// Status is a REST operation's HTTP status on success: 200 when
	// zero.
	Status int
	// Input is the type the request body (or form) is decoded into.
	Input reflect.Type
	// ValidateOnError defers the check against the service model
	// (validate.go) until the operation has failed: a request the model
	// refuses then gets the model's ValidationException instead of the
	// operation's error. Only for a hot-path operation whose own checks,
	// made before it changes anything, refuse everything the model
	// refuses (PutRecords: 1..500 records, PartitionKey 1..256, Data with
	// the key at most 1 MiB, ExplicitHashKey's pattern; a stream name
	// outside the pattern names no stream). The trap: a constraint the
	// model has and the operation does not check would let a bad request
	// through. Reading a 500-record body twice cost a third of the
	// endpoint's put rate (docs/benchmarks/kinesis-endpoint.md, "Session 5"). SQS's SendMessage,
	// SendMessageBatch, ReceiveMessage and DeleteMessage take it too: SQS's
	// model has only required members, types and attribute-name enums,
	// and those operations refuse a missing QueueUrl, body or receipt
	// handle and an unknown attribute name themselves (not
	// ChangeMessageVisibility, whose absent VisibilityTimeout reads as 0,
	// nor the batch deletes and changes, whose entries fail one by one).
	ValidateOnError bool

	h handler
}

// handler is an operation's function, with its input type.
type handler struct {
	in    reflect.Type
	serve func(*request) (any, error)
}

// noInput is the input of an operation that reads no body.
type noInput struct{}

// handle makes fn an operation's handler: the request is decoded into a
// new In in the request's protocol (JSON, the SQS query form, DynamoDB's
// JSON, Lambda's JSON body; see request.decode), then fn answers it. The
// value fn returns is written as the protocol's result (nil: no result
// body); its error as the protocol's error (errors.go).
func handle[In any](fn func(rq *request, in *In) (any, error)) handler {
	return handler{in: reflect.TypeFor[In](), serve: func(rq *request) (any, error) {
		in := new(In)
		if err := rq.decode(in); err != nil {
			return nil, err
		}
		if c, ok := any(in).(checker); ok {
			if err := c.check(); err != nil {
				return nil, err
			}
		}
		return fn(rq, in)
	}}
}

// answer makes out a handler's answer to a service call:
// answer(out)(call(...)) is out(v) for the call's value v, or (nil, err)
// when the call failed.
func answer[T, O any](out func(T) O) func(T, error) (any, error) {
	return func(v T, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return out(v), nil
	}
}

// keyed is answer for the results that are the call's value under one
// key: keyed(key)(call(...)) is map[string]any{key: v}, or (nil, err).
func keyed(key string) func(any, error) (any, error) {
	return func(v any, err error) (any, error) {
		if err != nil {
			return nil, err
		}
		return map[string]any{key: v}, nil
	}
}

// restServices are the services of a REST protocol: their rows, and
// only theirs, have routes.
var restServices = map[Service]bool{Lambda: true, Scheduler: true}

// index checks the table and returns it by service then name. It panics
// on a duplicate, a row without a doc, or a REST row without routes:
// mistakes of the row, found by any test.
func index(ops []Operation) map[Service]map[string]*Operation {
	m := map[Service]map[string]*Operation{}
	for i := range ops {
		op := &ops[i]
		if m[op.Service] == nil {
			m[op.Service] = map[string]*Operation{}
		}
		if m[op.Service][op.Name] != nil || op.Doc == "" || restServices[op.Service] != (len(op.Routes) > 0) {
			panic(fmt.Sprintf("awsapi: operation %s %s: a duplicate, without a doc, or (REST only) without routes", op.Service, op.Name))
		}
		op.Input = op.h.in
		m[op.Service][op.Name] = op
	}
	return m
}

// lookup returns the operation name of svc, or nil.
func lookup(svc Service, name string) *Operation { return operations[svc][name] }

// Operations returns the table: every operation the endpoint serves, by
// service (in the order of Services) then name.
func Operations() []Operation {
	var out []Operation
	for _, svc := range Services {
		start := len(out)
		for _, op := range operations[svc] {
			out = append(out, *op)
		}
		sort.Slice(out[start:], func(i, j int) bool { return out[start+i].Name < out[start+j].Name })
	}
	return out
}
