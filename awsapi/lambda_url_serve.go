package awsapi

// Serving function URLs: an HTTP request to a URL's host invokes its
// function (RequestResponse) with the payload format 2.0 event
// (events.LambdaFunctionURLRequest, plus routeKey and stage "$default")
// and maps the result back, as Lambda does: a JSON object with statusCode
// gives the status, headers, cookies (one Set-Cookie each) and body
// (base64-decoded when isBase64Encoded); any other JSON is the body of a
// 200 application/json answer as it is (a string keeps its quotes). A
// function error answers 502, a throttle 429, an unknown URL 403, a
// request whose event exceeds 6 MiB (the body, or the body in its
// envelope, base64 when binary) 413, each with {"Message": ...}. The
// invocation runs to its end or its Timeout even when the caller
// disconnects, as on Lambda. A URL of AuthType AWS_IAM gives the caller
// in requestContext.authorizer.iam (see urlIAMAuthorizer); AuthType NONE
// gives authorizer null.
// https://docs.aws.amazon.com/lambda/latest/dg/urls-invocation.html

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
)

// urlRequest is the payload format 2.0 event: aws-lambda-go's with the
// members it leaves out.
type urlRequest struct {
	events.LambdaFunctionURLRequest
	RouteKey       string            `json:"routeKey"`
	RequestContext urlRequestContext `json:"requestContext"`
	PathParameters map[string]string `json:"pathParameters"`
	StageVariables map[string]string `json:"stageVariables"`
}

type urlRequestContext struct {
	events.LambdaFunctionURLRequestContext
	RouteKey       string `json:"routeKey"`
	Stage          string `json:"stage"`
	Authentication any    `json:"authentication"`
	// Authorizer is aws-lambda-go's with the members it leaves out
	// (cognitoIdentity, principalOrgId); nil (null) unless AWS_IAM.
	Authorizer *urlAuthorizer `json:"authorizer"`
}

// urlAuthorizer is requestContext.authorizer of an AWS_IAM URL's event:
// {"iam": {accessKey, accountId, callerId, cognitoIdentity,
// principalOrgId, userArn, userId}} (urls-invocation.html, the request
// payload's example).
type urlAuthorizer struct {
	IAM *urlIAM `json:"iam"`
}

type urlIAM struct {
	events.LambdaFunctionURLRequestContextAuthorizerIAMDescription
	// CognitoIdentity and PrincipalOrgID are always null: runnel has no
	// Cognito identities and no organizations.
	CognitoIdentity any `json:"cognitoIdentity"`
	PrincipalOrgID  any `json:"principalOrgId"`
}

// urlFail answers a function URL request with status and {"Message": msg}.
func urlFail(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

// serveFunctionURL answers a request to the URL id.
func (h *Handler) serveFunctionURL(w http.ResponseWriter, r *http.Request, id string) {
	c, ok := h.rn.Functions.URLByID(r.Context(), id)
	if !ok || (c.AuthType == function.URLAuthIAM && r.Header.Get("Authorization") == "") {
		urlFail(w, http.StatusForbidden, "Forbidden")
		return
	}
	if urlCORS(w, r, c.Cors) {
		return // a preflight, answered
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, async.MaxSyncPayloadSize+1))
	if err != nil || len(body) > async.MaxSyncPayloadSize {
		urlFail(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
		return
	}
	payload, _ := json.Marshal(h.urlEvent(r, c, body))
	ref := c.FunctionName
	if c.Qualifier != "" {
		ref += ":" + c.Qualifier
	}
	// As Invoke's: the invocation outlives a caller that disconnects.
	out, err := h.rn.Async.Invoke(context.WithoutCancel(r.Context()), ref, async.RequestResponse, payload)
	switch {
	case errors.Is(err, awserr.ErrTooManyRequests):
		urlFail(w, http.StatusTooManyRequests, "Rate Exceeded.")
	case errors.Is(err, async.ErrRequestTooLarge):
		// The event (the body in its 2.0 envelope, base64 when binary)
		// over the 6 MB limit is the caller's, as a body over it is:
		// 413, not a 500.
		urlFail(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
	case err != nil:
		h.lopts.Logger.Warn("function url: invoke", "function", ref, "err", err)
		urlFail(w, http.StatusInternalServerError, "Internal Server Error")
	case out.FunctionError != "":
		urlFail(w, http.StatusBadGateway, "Internal Server Error")
	default:
		writeURLResponse(w, out.Payload)
	}
}

// urlEvent is the event of request r to URL c.
func (h *Handler) urlEvent(r *http.Request, c *function.URLConfig, body []byte) urlRequest {
	now := h.rn.Engine.Clock.Now().UTC()
	host, _, err := net.SplitHostPort(r.Host)
	if err != nil {
		host = r.Host
	}
	ip, _, _ := net.SplitHostPort(r.RemoteAddr)
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	ev := urlRequest{RouteKey: "$default"}
	ev.Version, ev.RawPath, ev.RawQueryString = "2.0", r.URL.EscapedPath(), r.URL.RawQuery
	ev.Headers = map[string]string{"host": r.Host, "x-forwarded-proto": scheme, "x-forwarded-for": ip}
	for k, vs := range r.Header {
		if k = strings.ToLower(k); k == "cookie" {
			for _, v := range vs {
				ev.Cookies = append(ev.Cookies, strings.Split(v, "; ")...)
			}
			continue
		}
		ev.Headers[k] = strings.Join(vs, ",")
	}
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if len(body) > 0 {
		if isText(r.Header.Get("Content-Type"), body) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	rc := &ev.RequestContext
	rc.RouteKey, rc.Stage = "$default", "$default"
	rc.AccountID, rc.RequestID, rc.APIID, rc.DomainPrefix = h.rn.Engine.AccountID(), uuid.NewString(), c.URLID, c.URLID
	rc.DomainName, rc.Time, rc.TimeEpoch = host, now.Format("02/Jan/2006:15:04:05 -0700"), now.UnixMilli()
	rc.HTTP = events.LambdaFunctionURLRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path, Protocol: r.Proto, SourceIP: ip, UserAgent: r.UserAgent()}
	if c.AuthType == function.URLAuthIAM {
		rc.Authorizer = h.urlIAMAuthorizer(r)
	}
	return ev
}

// urlIAMAuthorizer is the authorizer of a request r to an AWS_IAM URL:
// accessKey the access key of the SigV4 Credential in its Authorization
// header ("" when the header is not SigV4); accountId, userArn, userId
// and callerId the caller as GetCallerIdentity answers it for the same
// credentials: for the session credentials of AssumeRole, the session
// (arn:aws:sts::<account>:assumed-role/<role>/<session>, userId and
// callerId <role id>:<session>), else the account's root
// (arn:aws:iam::<account>:root, userId and callerId the account id);
// cognitoIdentity and principalOrgId null.
func (h *Handler) urlIAMAuthorizer(r *http.Request) *urlAuthorizer {
	iam := &urlIAM{}
	if sig, ok := parseAuthorization(r.Header.Get("Authorization")); ok {
		iam.AccessKey = sig.accessKey
	}
	acct := h.rn.Engine.AccountID()
	iam.AccountID, iam.UserARN, iam.UserID = acct, "arn:aws:iam::"+acct+":root", acct
	if who, err := stsGetCallerIdentity(&request{h: h, r: r, ctx: r.Context()}, nil); err == nil {
		if id, ok := who.(callerIdentityResult); ok {
			iam.AccountID, iam.UserARN, iam.UserID = id.Account, id.Arn, id.UserId
		}
	}
	iam.CallerID = iam.UserID
	return &urlAuthorizer{IAM: iam}
}

// urlCORS sets the CORS headers of cors on the answer to a request from
// an allowed Origin, and answers a preflight (true) without invoking the
// function.
func urlCORS(w http.ResponseWriter, r *http.Request, cors *function.URLCors) bool {
	origin := r.Header.Get("Origin")
	if cors == nil || origin == "" || !slices.ContainsFunc(cors.AllowOrigins, func(o string) bool { return o == "*" || o == origin }) {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	if cors.AllowCredentials != nil && *cors.AllowCredentials {
		h.Set("Access-Control-Allow-Credentials", "true")
	}
	if len(cors.ExposeHeaders) > 0 {
		h.Set("Access-Control-Expose-Headers", strings.Join(cors.ExposeHeaders, ","))
	}
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", strings.Join(cors.AllowMethods, ","))
	h.Set("Access-Control-Allow-Headers", strings.Join(cors.AllowHeaders, ","))
	if cors.MaxAge != nil {
		h.Set("Access-Control-Max-Age", strconv.Itoa(*cors.MaxAge))
	}
	w.WriteHeader(http.StatusOK)
	return true
}

// isText reports whether a body of contentType is sent as text (else
// base64), as Lambda decides it.
func isText(contentType string, body []byte) bool {
	ct := strings.ToLower(contentType)
	for _, t := range []string{"text/", "json", "xml", "javascript", "x-www-form-urlencoded", "yaml", "csv"} {
		if strings.Contains(ct, t) {
			return utf8.Valid(body)
		}
	}
	return ct == "" && utf8.Valid(body)
}

// writeURLResponse maps a function's result to the HTTP answer.
func writeURLResponse(w http.ResponseWriter, payload []byte) {
	var resp struct {
		StatusCode      *int              `json:"statusCode"`
		Headers         map[string]string `json:"headers"`
		Body            string            `json:"body"`
		IsBase64Encoded bool              `json:"isBase64Encoded"`
		Cookies         []string          `json:"cookies"`
	}
	if json.Unmarshal(payload, &resp) != nil || resp.StatusCode == nil {
		w.Header().Set("Content-Type", "application/json")
		w.Write(payload)
		return
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if b, err := base64.StdEncoding.DecodeString(resp.Body); err == nil {
			body = b
		}
	}
	w.Header().Set("Content-Type", "application/json")
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	w.WriteHeader(*resp.StatusCode)
	w.Write(body)
}
