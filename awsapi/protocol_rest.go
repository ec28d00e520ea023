package awsapi

// Lambda's REST protocol (restJson1): the operation is the method and
// path (Operation.Routes), its parameters are in the path, the query and
// a JSON body; errors carry their type in X-Amzn-ErrorType.

import (
	"encoding/json"
	"strconv"
	"strings"

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

// functionName resolves the {name} path value: a name, an ARN or a
// partial ARN, with an optional qualifier (only $LATEST exists in runnel),
// also accepted in the Qualifier query parameter.
func (rq *request) functionName() (string, error) {
	s := rq.r.PathValue("name")
	qual := rq.r.URL.Query().Get("Qualifier")
	if n, ok := function.FunctionNameFromARN(s); ok {
		s = n
	} else if strings.HasPrefix(s, "arn:") {
		// arn:aws:lambda:region:account:function:name[:qualifier]
		parts := strings.Split(s, ":")
		if len(parts) < 7 || parts[5] != "function" {
			return "", lambdaInvalid("FunctionName: %q is not a function name or ARN", s)
		}
		s = parts[6]
		if len(parts) > 7 {
			qual = parts[7]
		}
	} else if i := strings.LastIndex(s, ":"); i >= 0 {
		// account:function:name, name:qualifier
		parts := strings.Split(s, ":")
		switch {
		case len(parts) >= 3 && parts[1] == "function":
			s = parts[2]
			if len(parts) > 3 {
				qual = parts[3]
			}
		default:
			s, qual = s[:i], s[i+1:]
		}
	}
	if qual != "" && qual != "$LATEST" {
		return "", awserr.New(awserr.ErrResourceNotFound, "Function not found: %s:%s (runnel has only $LATEST)", rq.h.rn.Functions.ARN(s), qual)
	}
	return s, nil
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
