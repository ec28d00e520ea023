package awsapi

// Lambda: function URLs (REST, /2021-10-31/functions/{name}/url and
// /urls) over package function (urls.go). A URL is
// http://<url id>.lambda-url.<region>.localhost:<port>/ on runnel's own
// endpoint (AWS's is https://<url id>.lambda-url.<region>.on.aws/): the
// endpoint serves any request whose Host begins "<url id>.lambda-url."
// (lambda_url_serve.go), so a client that cannot resolve *.localhost
// sends the request to the endpoint's address with that Host header.
// AuthType NONE takes any request, AWS_IAM one with an Authorization
// header (its signature is checked only when the endpoint checks
// signatures). Cors is applied as Lambda applies it: the
// Access-Control-* headers on an answer to an allowed Origin, and a
// preflight (OPTIONS with Access-Control-Request-Method) answered without
// invoking the function. InvokeMode RESPONSE_STREAM is refused.
// https://docs.aws.amazon.com/lambda/latest/api/API_CreateFunctionUrlConfig.html

import (
	"net"
	"strings"

	"github.com/runnel-dev/runnel/function"
)

type functionURLInput struct {
	AuthType, InvokeMode *string
	Cors                 *function.URLCors
}

type functionURLConfig struct {
	FunctionUrl, FunctionArn, AuthType string
	Cors                               *function.URLCors `json:",omitempty"`
	CreationTime                       string
	LastModifiedTime                   string `json:",omitempty"`
	InvokeMode                         string
}

// urlOut is c as the API answers it, with the URL on the address the
// request came to.
func (rq *request) urlOut(c *function.URLConfig) functionURLConfig {
	scheme, port := "http", ""
	if rq.r.TLS != nil {
		scheme = "https"
	}
	if _, p, err := net.SplitHostPort(rq.r.Host); err == nil {
		port = ":" + p
	}
	return functionURLConfig{
		FunctionUrl: scheme + "://" + c.URLID + ".lambda-url." + rq.h.rn.Engine.Region() + ".localhost" + port + "/",
		FunctionArn: c.FunctionArn, AuthType: c.AuthType, Cors: c.Cors, CreationTime: c.CreationTime,
		LastModifiedTime: c.LastModifiedTime, InvokeMode: c.InvokeMode,
	}
}

// urlCall answers with a URL configuration call's result.
func (rq *request) urlCall(c *function.URLConfig, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return rq.urlOut(c), nil
}

func lambdaCreateFunctionUrlConfig(rq *request, in *functionURLInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		c := function.URLConfig{Cors: in.Cors}
		setIf(&c.AuthType, in.AuthType)
		setIf(&c.InvokeMode, in.InvokeMode)
		out, err := rq.urlCall(rq.h.rn.Functions.CreateURLConfig(rq.ctx, name, q, c))
		if o, ok := out.(functionURLConfig); ok {
			o.LastModifiedTime = "" // CreateFunctionUrlConfig's output has none
			return o, nil
		}
		return out, err
	})
}

func lambdaGetFunctionUrlConfig(rq *request, _ *noInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		return rq.urlCall(rq.h.rn.Functions.GetURLConfig(rq.ctx, name, q))
	})
}

func lambdaUpdateFunctionUrlConfig(rq *request, in *functionURLInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		return rq.urlCall(rq.h.rn.Functions.UpdateURLConfig(rq.ctx, name, q, function.URLUpdate{AuthType: in.AuthType, InvokeMode: in.InvokeMode, Cors: in.Cors}))
	})
}

func lambdaDeleteFunctionUrlConfig(rq *request, _ *noInput) (any, error) {
	return rq.onRef(func(name, q string) (any, error) {
		return nil, rq.h.rn.Functions.DeleteURLConfig(rq.ctx, name, q)
	})
}

func lambdaListFunctionUrlConfigs(rq *request, _ *noInput) (any, error) {
	return listOf(rq, rq.h.rn.Functions.ListURLConfigs, "FunctionUrlConfigs", func(c *function.URLConfig) functionURLConfig {
		return rq.urlOut(c)
	})
}

// urlIDOf is the URL id a request's Host names
// ("<id>.lambda-url.<region>...."), or false.
func urlIDOf(host string) (string, bool) {
	id, rest, ok := strings.Cut(host, ".lambda-url.")
	if !ok || len(id) != 32 || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz0123456789") != "" || rest == "" {
		return "", false
	}
	return id, true
}
