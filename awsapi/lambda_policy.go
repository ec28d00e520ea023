package awsapi

// Lambda: resource-based policies (REST, /2015-03-31/functions/{name}/policy)
// and tags (/2017-03-31/tags/{arn}) over package function (policy.go):
// stored and answered in AWS's shapes (GetPolicy's Policy is the IAM
// document as a JSON string), never enforced.
// https://docs.aws.amazon.com/lambda/latest/api/API_AddPermission.html
// https://docs.aws.amazon.com/lambda/latest/api/API_TagResource.html

import (
	"encoding/json"

	"github.com/runnel-dev/runnel/function"
)

func lambdaAddPermission(rq *request, in *function.Permission) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		st, err := rq.h.rn.Functions.AddPermission(rq.ctx, name, q, *in)
		if err != nil {
			return nil, err
		}
		return map[string]string{"Statement": string(st)}, nil
	})
}

func lambdaGetPolicy(rq *request, _ *noInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		pol, err := rq.h.rn.Functions.GetPolicy(rq.ctx, name, q)
		if err != nil {
			return nil, err
		}
		rev := pol.RevisionId
		pol.RevisionId = ""
		doc, _ := json.Marshal(pol)
		return map[string]string{"Policy": string(doc), "RevisionId": rev}, nil
	})
}

func lambdaRemovePermission(rq *request, _ *noInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		return nil, rq.h.rn.Functions.RemovePermission(rq.ctx, name, q, rq.r.PathValue("sid"), rq.r.URL.Query().Get("RevisionId"))
	})
}

// onTagged calls fn with the function the path's {arn} names
// (unqualified: tags are a function's, not a version's or an alias's).
func (rq *request) onTagged(fn func(name string) (any, error)) (any, error) {
	name, q, err := function.ParseRef(rq.r.PathValue("arn"))
	if err != nil {
		return nil, err
	}
	if q != "" {
		return nil, lambdaInvalid("Resource: %q: tags are a function's, not a version's or an alias's; use the unqualified function ARN", rq.r.PathValue("arn"))
	}
	return fn(name)
}

type lambdaTagsInput struct {
	Tags map[string]string
}

func lambdaTagResource(rq *request, in *lambdaTagsInput) (any, error) {
	return rq.onTagged(func(name string) (any, error) {
		return nil, rq.h.rn.Functions.TagResource(rq.ctx, name, in.Tags)
	})
}

func lambdaUntagResource(rq *request, _ *noInput) (any, error) {
	return rq.onTagged(func(name string) (any, error) {
		return nil, rq.h.rn.Functions.UntagResource(rq.ctx, name, rq.r.URL.Query()["tagKeys"])
	})
}

func lambdaListTags(rq *request, _ *noInput) (any, error) {
	return rq.onTagged(func(name string) (any, error) {
		tags, err := rq.h.rn.Functions.ListTags(rq.ctx, name)
		return map[string]any{"Tags": tags}, err
	})
}
