package awsapi

// Lambda's REST protocol (restJson1): the operation is the method and
// path (Operation.Routes), its parameters are in the path, the query and
// a JSON body; errors carry their type in X-Amzn-ErrorType.

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/mapping"
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
// Reason (ConcurrentInvocationLimitExceeded from the account's unreserved
// concurrency, ReservedFunctionConcurrentInvocationLimitExceeded from a
// reservation: function.ThrottleReason) and a Retry-After.
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
		body["Reason"] = function.ThrottleReason(we.e.Message)
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

// pageKey is the key of a listed item that a Marker names: unique in its
// list, and the list is in its order (pageOf sorts by it). false: the
// item's type has none (its list is paged by position).
func pageKey(v any) (string, bool) {
	switch x := v.(type) {
	case *function.Config:
		return x.FunctionName + "\x00" + versionKey(x.Version), true
	case *function.Alias:
		return x.Name, true
	case *async.EventInvokeConfig:
		return x.Qualifier, true
	case *mapping.Config:
		return x.UUID, true
	case *function.ProvisionedConcurrencyConfig:
		return x.FunctionArn, true
	case *function.URLConfig:
		return x.FunctionArn, true
	case *layerVersion:
		// By layer, then newest version first.
		return fmt.Sprintf("%s\x00%020d", x.LayerArn, math.MaxInt64-x.Version), true
	case *layerListItem:
		return x.LayerArn, true
	}
	return "", false
}

// versionKey orders $LATEST ("") before the published versions, those by
// number.
func versionKey(v string) string {
	if n, err := strconv.ParseUint(v, 10, 64); err == nil {
		return fmt.Sprintf("1%020d", n)
	}
	return "0" + v
}

// markerPrefix begins every decoded Marker of a Lambda list.
const markerPrefix = "lambda-list\x00"

// pageOf answers a Lambda list: {key: [...], "NextMarker": ...} with the
// items Marker and MaxItems (1..10000; def by default) select, each
// converted by out. A NextMarker names the last item returned (opaque:
// base64 of its pageKey), and the next page starts after where that item
// is, or would be, in the list: deleting items between two calls skips
// none of the others. Before, a marker was a position: deleting versions
// 1 and 2 after a page [$LATEST 1 2] of 1..5 gave the page [5], and
// versions 3 and 4 were never listed. A marker this endpoint did not
// return is InvalidParameterValueException naming Marker.
func pageOf[T, O any](rq *request, items []T, def int, key string, out func(*T) O) (any, error) {
	q := rq.r.URL.Query()
	max := def
	if m := q.Get("MaxItems"); m != "" {
		var err error
		if max, err = strconv.Atoi(m); err != nil || max < 1 || max > 10000 {
			return nil, awserr.OutOfRange(awserr.ErrInvalidParameterValue, "MaxItems", m, 1, 10000)
		}
	}
	keyed := len(items) > 0
	keys := make([]string, len(items))
	for i := range items {
		k, ok := pageKey(&items[i])
		keys[i], keyed = k, keyed && ok
	}
	if keyed {
		idx := make([]int, len(items))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
		sorted, sortedKeys := make([]T, len(items)), make([]string, len(items))
		for i, j := range idx {
			sorted[i], sortedKeys[i] = items[j], keys[j]
		}
		items, keys = sorted, sortedKeys
	}
	from := 0
	if m := q.Get("Marker"); m != "" {
		b, err := base64.RawURLEncoding.DecodeString(m)
		after, ok := strings.CutPrefix(string(b), markerPrefix)
		if err != nil || !ok {
			return nil, lambdaInvalid("Marker: %q is not a marker this endpoint returned", m)
		}
		if pos, isPos := strings.CutPrefix(after, "\x01"); isPos { // a list without keys: a position
			if from, err = strconv.Atoi(pos); err != nil || from < 0 {
				return nil, lambdaInvalid("Marker: %q is not a marker this endpoint returned", m)
			}
			from = min(from, len(items))
		} else {
			from = sort.SearchStrings(keys, after)
			if from < len(keys) && keys[from] == after {
				from++
			}
		}
	}
	to := min(len(items), from+max)
	list := make([]O, 0, to-from)
	for i := from; i < to; i++ {
		list = append(list, out(&items[i]))
	}
	res := map[string]any{key: list}
	if to < len(items) {
		next := "\x01" + strconv.Itoa(to)
		if keyed {
			next = keys[to-1]
		}
		res["NextMarker"] = base64.RawURLEncoding.EncodeToString([]byte(markerPrefix + next))
	}
	return res, nil
}
