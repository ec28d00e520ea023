package awsapi

// Lambda's REST protocol (restJson1): the operation is the method and
// path (Operation.Routes), its parameters are in the path, the query and
// a JSON body; errors carry their type in X-Amzn-ErrorType.

import (
	"encoding/json"
	"strconv"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
)

// lambdaMaxBody bounds a Lambda request body: a 50 MB zip in base64, with
// room.
const lambdaMaxBody = 70 << 20

// lambdaDecode reads the JSON body into v (an empty body is {}).
func lambdaDecode(b []byte, v any) error {
	return decodeJSONOr(b, v, awserr.ErrInvalidRequestContent, "Could not parse request body into json: ")
}

// setIf sets *dst to *p when the request gives p (Lambda's pointers tell
// "not given" from zero).
func setIf[T any](dst *T, p *T) {
	if p != nil {
		*dst = *p
	}
}

// lambdaReply writes v as JSON with the operation's status (nil: the
// status alone).
func (rq *request) lambdaReply(v any) {
	status := rq.status
	if status == 0 {
		status = 200
	}
	if v == nil {
		rq.w.WriteHeader(status)
		return
	}
	rq.w.Header().Set("Content-Type", "application/json")
	rq.w.WriteHeader(status)
	json.NewEncoder(rq.w).Encode(v)
}

// lambdaFail writes Lambda's error: {"Type": "User" or "Service",
// "message"}, the type in X-Amzn-ErrorType, and for a throttle (429) the
// Reason and a Retry-After.
func (rq *request) lambdaFail(we wireError) {
	typ := "User"
	if we.status >= 500 {
		typ = "Service"
	}
	body := map[string]string{"Type": typ, "message": we.e.Message}
	w := rq.w
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", we.shape)
	if we.status == 429 {
		body["Reason"] = "ReservedFunctionConcurrentInvocationLimitExceeded"
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(we.status)
	json.NewEncoder(w).Encode(body)
}

func lambdaInvalid(format string, args ...any) error {
	return awserr.New(awserr.ErrInvalidParameterValue, format, args...)
}

// functionRef resolves the {name} path value (a name, an ARN or a
// partial ARN, with an optional qualifier) and the Qualifier query
// parameter into the function's name and qualifier ("" for none). A
// qualifier in both that differ is InvalidParameterValueException, as
// Lambda answers it.
func (rq *request) functionRef() (name, qualifier string, err error) {
	name, qualifier, err = function.ParseRef(rq.r.PathValue("name"))
	if err != nil {
		return "", "", err
	}
	if q := rq.r.URL.Query().Get("Qualifier"); q != "" {
		if qualifier != "" && qualifier != q {
			return "", "", lambdaInvalid("The derived qualifier from the function name does not match the specified qualifier.")
		}
		qualifier = q
	}
	return name, qualifier, nil
}

// qualifiedRef is the function reference of the path and Qualifier
// ("name" or "name:qualifier"), for the services' GetFunction.
func (rq *request) qualifiedRef() (string, error) {
	name, q, err := rq.functionRef()
	if err != nil || q == "" {
		return name, err
	}
	return name + ":" + q, nil
}

// onRef calls fn with the function and qualifier the path and Qualifier
// name.
func (rq *request) onRef(fn func(name, qualifier string) (any, error)) (any, error) {
	name, q, err := rq.functionRef()
	if err != nil {
		return nil, err
	}
	return fn(name, q)
}

// listOf answers a list of the function the path names (no qualifier):
// list's items, a page of them (pageOf), each converted by out.
func listOf[T, O any](rq *request, list func(name string) ([]T, error), key string, out func(*T) O) (any, error) {
	name, err := rq.functionName()
	if err != nil {
		return nil, err
	}
	items, err := list(name)
	if err != nil {
		return nil, err
	}
	return pageOf(rq, items, 50, key, out)
}

// functionName is the function the path names, for the operations that
// take no qualifier (or only $LATEST).
func (rq *request) functionName() (string, error) {
	name, q, err := rq.functionRef()
	if err != nil {
		return "", err
	}
	if q != "" && q != function.Latest {
		return "", lambdaInvalid("FunctionName: %q: this operation takes the unqualified function (or $LATEST), not qualifier %s", rq.r.PathValue("name"), q)
	}
	return name, nil
}

// page applies Marker (an index) and MaxItems to n items.
func (rq *request) page(n, def int) (from, to int, next string, err error) {
	q := rq.r.URL.Query()
	if m := q.Get("Marker"); m != "" {
		if from, err = strconv.Atoi(m); err != nil || from < 0 || from > n {
			return 0, 0, "", lambdaInvalid("Marker: %q is not a marker this endpoint returned", m)
		}
	}
	max := def
	if m := q.Get("MaxItems"); m != "" {
		if max, err = strconv.Atoi(m); err != nil || max < 1 || max > 10000 {
			return 0, 0, "", awserr.OutOfRange(awserr.ErrInvalidParameterValue, "MaxItems", m, 1, 10000)
		}
	}
	to = min(n, from+max)
	if to < n {
		next = strconv.Itoa(to)
	}
	return from, to, next, nil
}

// pageOf answers a Lambda list: {key: [...], "NextMarker": ...} with the
// items Marker and MaxItems select (def by default), each converted by
// out.
func pageOf[T, O any](rq *request, items []T, def int, key string, out func(*T) O) (any, error) {
	from, to, next, err := rq.page(len(items), def)
	if err != nil {
		return nil, err
	}
	list := make([]O, 0, to-from)
	for i := from; i < to; i++ {
		list = append(list, out(&items[i]))
	}
	res := map[string]any{key: list}
	if next != "" {
		res["NextMarker"] = next
	}
	return res, nil
}
