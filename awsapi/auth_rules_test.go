package awsapi_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/sdkhttp"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// authKeys is the --auth of these tests.
var authKeys = map[string]string{"AKID": "secret"}

// signedForm posts a query-protocol call to base signed for service with
// creds by aws-sdk-go-v2's signer (as the AWS CLI and the SDKs sign it)
// and returns its status and body.
func signedForm(t *testing.T, base, service string, creds aws.Credentials, form url.Values) (int, string) {
	t.Helper()
	body := form.Encode()
	req, _ := http.NewRequest("POST", base+"/", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded; charset=utf-8")
	if err := v4.NewSigner().SignHTTP(context.Background(), creds, req, hashHex(body), service, "us-east-1", time.Now()); err != nil {
		t.Fatal(err)
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) (int, string) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// errStatus is the HTTP status of an SDK call's error (0: none).
func errStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

// assumeRole creates role name (signed with AKID) and assumes it for
// duration seconds, returning the session's credentials.
func assumeRole(t *testing.T, base, name string, duration int) aws.Credentials {
	t.Helper()
	akid := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":"*"},"Action":"sts:AssumeRole"}]}`
	if status, body := signedForm(t, base, "iam", akid, url.Values{"Action": {"CreateRole"}, "Version": {"2010-05-08"},
		"RoleName": {name}, "AssumeRolePolicyDocument": {trust}}); status != 200 {
		t.Fatalf("CreateRole: %d %s", status, body)
	}
	status, body := signedForm(t, base, "sts", akid, url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"},
		"RoleArn": {"arn:aws:iam::000000000000:role/" + name}, "RoleSessionName": {"s1"}, "DurationSeconds": {itoa(duration)}})
	var out struct {
		Creds struct{ AccessKeyId, SecretAccessKey, SessionToken, Expiration string } `xml:"AssumeRoleResult>Credentials"`
	}
	if status != 200 || xml.Unmarshal([]byte(body), &out) != nil || !strings.HasPrefix(out.Creds.AccessKeyId, "ASIA") {
		t.Fatalf("AssumeRole: %d %s", status, body)
	}
	return aws.Credentials{AccessKeyID: out.Creds.AccessKeyId, SecretAccessKey: out.Creds.SecretAccessKey, SessionToken: out.Creds.SessionToken}
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestCredentialsRunnelIssuesAreAcceptedUnderAuthUntilTheyExpire: with
// --auth, the session credentials STS AssumeRole returned are accepted by
// every service, on every node (a second Handler on the same data, with
// nothing in memory, accepts them: they are stored in a KV bucket),
// with their session token only, until their Expiration; then the
// request is refused with ExpiredTokenException (Kinesis, HTTP 400) or
// ExpiredToken (STS, HTTP 403), as AWS answers expired session
// credentials. Old behaviour: the README said AssumeRole's keys "are not
// checked anywhere", yet under --auth only the --auth keys were known,
// and every service refused them (UnrecognizedClientException).
func TestCredentialsRunnelIssuesAreAcceptedUnderAuthUntilTheyExpire(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	node := func() string {
		srv := httptest.NewServer(awsapi.NewHandler(rn, awsapi.Options{Auth: authKeys}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a, b := node(), node()
	creds := assumeRole(t, a, "worker", 900)
	kc := func(base string, c aws.Credentials) *kinesis.Client {
		return kinesis.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider(c.AccessKeyID, c.SecretAccessKey, c.SessionToken), BaseEndpoint: aws.String(base)})
	}
	ctx := context.Background()
	if _, err := kc(a, creds).CreateStream(ctx, &kinesis.CreateStreamInput{StreamName: aws.String("s"), ShardCount: aws.Int32(1)}); err != nil {
		t.Fatalf("CreateStream with AssumeRole's credentials: %v", err)
	}
	if out, err := kc(b, creds).ListStreams(ctx, &kinesis.ListStreamsInput{}); err != nil || len(out.StreamNames) != 1 {
		t.Fatalf("ListStreams on another node with AssumeRole's credentials: %v", err)
	}
	wrongToken := creds
	wrongToken.SessionToken = "forged"
	if _, err := kc(a, wrongToken).ListStreams(ctx, &kinesis.ListStreamsInput{}); errCode(err) != "UnrecognizedClientException" {
		t.Fatalf("the session's key with another token: %v, want UnrecognizedClientException", err)
	}
	wrongSecret := creds
	wrongSecret.SecretAccessKey = "guess"
	if _, err := kc(a, wrongSecret).ListStreams(ctx, &kinesis.ListStreamsInput{}); errCode(err) != "InvalidSignatureException" {
		t.Fatalf("the session's key with another secret: %v, want InvalidSignatureException", err)
	}

	clock.Advance(901 * time.Second)
	_, err := kc(b, creds).ListStreams(ctx, &kinesis.ListStreamsInput{})
	if errCode(err) != "ExpiredTokenException" || errStatus(err) != 400 {
		t.Fatalf("ListStreams with expired credentials: %v, want 400 ExpiredTokenException", err)
	}
	status, body := signedForm(t, a, "sts", creds, url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}})
	if status != 403 || !strings.Contains(body, "<Code>ExpiredToken</Code>") {
		t.Fatalf("GetCallerIdentity with expired credentials: %d %s, want 403 ExpiredToken", status, body)
	}
}

// TestProcessFunctionsCallRunnelWithCredentialsAuthAccepts: under
// --auth, a process function's AWS SDK (boto3 here) calls runnel back
// (AWS_ENDPOINT_URL) with credentials runnel accepts: runnel gives its
// functions a random key of the endpoint's own, not the public
// runnel/runnel, which stays refused. Old behaviour: functions got
// AWS_ACCESS_KEY_ID=runnel, secret runnel, token runnel, which --auth
// refused, so every SDK call from a function back to runnel failed.
func TestProcessFunctionsCallRunnelWithCredentialsAuthAccepts(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.MissingTool(t, "python3 is not installed: runtime python3.12 runs on it")
	}
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		testenv.MissingTool(t, "boto3 is not installed for python3: the function calls runnel with it")
	}
	rn := testenv.Start(t, testenv.Options{})
	srv := httptest.NewUnstartedServer(nil)
	ep := awsapi.NewEndpoint(rn, awsapi.Options{Auth: authKeys}, awsapi.LambdaOptions{WorkDir: t.TempDir(), Endpoint: "http://" + srv.Listener.Addr().String()})
	t.Cleanup(ep.Close)
	srv.Config.Handler = ep
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := func(key, secret string) aws.Config {
		return aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider(key, secret, ""), BaseEndpoint: aws.String(srv.URL)}
	}
	ctx := context.Background()
	lc := lambda.NewFromConfig(cfg("AKID", "secret"))
	src := `import os, boto3
def handler(event, context):
    k = boto3.client("kinesis")
    k.create_stream(StreamName="from-fn", ShardCount=1)
    return {"key": os.environ["AWS_ACCESS_KEY_ID"], "token": os.environ.get("AWS_SESSION_TOKEN"), "endpoint": os.environ["AWS_ENDPOINT_URL"],
            "streams": k.list_streams()["StreamNames"]}
`
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("caller"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("arn:aws:iam::000000000000:role/r"), Timeout: aws.Int32(30),
		Code: &ltypes.FunctionCode{ZipFile: zipFiles(t, map[string]string{"app.py": src})}}))
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("caller")}))
	var got struct {
		Key, Endpoint string
		Token         *string
		Streams       []string
	}
	if out.FunctionError != nil || json.Unmarshal(out.Payload, &got) != nil {
		t.Fatalf("the function's SDK calls to runnel under --auth: %s %s", aws.ToString(out.FunctionError), out.Payload)
	}
	if len(got.Streams) != 1 || got.Streams[0] != "from-fn" || got.Key == "runnel" || got.Key == "AKID" || got.Token != nil ||
		got.Endpoint != srv.URL {
		t.Fatalf("function saw %+v, want its own key (not runnel's dummy nor an --auth key), no token, AWS_ENDPOINT_URL %s without credentials", got, srv.URL)
	}
	_, err := kinesis.NewFromConfig(cfg("runnel", "runnel")).ListStreams(ctx, &kinesis.ListStreamsInput{})
	if errCode(err) != "UnrecognizedClientException" {
		t.Fatalf("the public runnel/runnel credentials under --auth: %v, want UnrecognizedClientException", err)
	}
}

// TestTheCanonicalHeadersAreExactlyTheSignedHeaders: a request is
// verified over exactly the headers its SignedHeaders lists, whatever
// they are. The vector is botocore's SigV4 signer made to sign every
// header as the AWS SDK for Java v1 and the KCL do (SignedHeaders
// content-type;host;user-agent;x-amz-date;x-amz-target;x-amzn-trace-id,
// a user agent with a run of two spaces, which SigV4 makes one), at
// 2026-11-28T07:00:00Z. Old behaviour: verify re-signed the request with
// aws-sdk-go-v2's signer, which drops User-Agent, X-Amzn-Trace-Id,
// Expect and Transfer-Encoding even when the client signed them, so
// this correct signature was refused (InvalidSignatureException). Rule:
// "CanonicalHeaders: the list of request headers with their values"
// that SignedHeaders names (create-signed-request.html).
func TestTheCanonicalHeadersAreExactlyTheSignedHeaders(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 7, 0, 10, 0, time.UTC))
	e := startEnv(t, awsapi.Options{Auth: authKeys}, testenv.Options{Clock: clock})
	send := func(signature, userAgent string) (int, string) {
		req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader("{}"))
		req.Host = "kinesis.us-east-1.amazonaws.com"
		req.Header.Set("Content-Type", "application/x-amz-json-1.1")
		req.Header.Set("X-Amz-Target", "Kinesis_20131202.ListStreams")
		req.Header.Set("User-Agent", userAgent)
		req.Header.Set("X-Amzn-Trace-Id", "Root=1-6566a8c0-0123456789abcdef01234567")
		req.Header.Set("X-Amz-Date", "20261128T070000Z")
		req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKID/20261128/us-east-1/kinesis/aws4_request, "+
			"SignedHeaders=content-type;host;user-agent;x-amz-date;x-amz-target;x-amzn-trace-id, Signature="+signature)
		return do(t, req)
	}
	const ua = "aws-sdk-java/1.12.600 Linux/5.15  OpenJDK_64-Bit_Server_VM/17 java/17 kcl/2.5.2"
	const sig = "645c74539bab652c809ced52a89e9803ee960e113069dad27c909d1ef8fe4b08"
	if status, body := send(sig, ua); status != 200 || !strings.Contains(body, `"StreamNames":[]`) {
		t.Fatalf("ListStreams signed over user-agent and x-amzn-trace-id: %d %s", status, body)
	}
	// The signed user agent is checked: another one is another request.
	if status, body := send(sig, "aws-sdk-java/1.12.601"); status != 400 || !strings.Contains(body, "InvalidSignatureException") {
		t.Fatalf("the same signature with another User-Agent: %d %s, want 400 InvalidSignatureException", status, body)
	}
}

// TestAValidPresignedURLIsAccepted: with --auth, a presigned URL (the
// signature in the query: X-Amz-Algorithm, X-Amz-Credential, X-Amz-Date,
// X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature; payload
// UNSIGNED-PAYLOAD, or the empty body's hash as botocore signs it) is
// verified: STS GetCallerIdentity presigned by boto3's
// generate_presigned_url (the vectors, at 2026-11-28T07:00:00Z, with
// HttpMethod GET as `aws eks get-token` presigns it, and its default
// POST) and by
// aws-sdk-go-v2's PresignHTTP is answered; one past its X-Amz-Expires,
// or with a wrong signature, is refused as SignatureDoesNotMatch (403).
// Old behaviour: signatureForm accepted the query form but verify
// required an Authorization header, so every valid presigned URL got
// MissingAuthenticationToken. Rule: sigv4-query-string-auth.html.
func TestAValidPresignedURLIsAccepted(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Date(2026, 11, 28, 7, 5, 0, 0, time.UTC))
	e := startEnv(t, awsapi.Options{Auth: authKeys}, testenv.Options{Clock: clock})
	var send func(method, u string, host string) (int, string)
	get := func(u string, host string) (int, string) { return send("GET", u, host) }
	send = func(method, u string, host string) (int, string) {
		req, _ := http.NewRequest(method, u, nil)
		if host != "" {
			req.Host = host
		}
		return do(t, req)
	}
	const boto3 = "/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKID%2F20261128%2Fus-east-1%2Fsts%2Faws4_request&X-Amz-Date=20261128T070000Z&X-Amz-Expires=900&X-Amz-SignedHeaders=host&X-Amz-Signature="
	const boto3Sig = "e927eac5dc14d38ad333f3f6abde525ab95e59035400791fd582709ec0fa0da5"
	if status, body := get(e.srv.URL+boto3+boto3Sig, "sts.us-east-1.amazonaws.com"); status != 200 || !strings.Contains(body, "<Account>000000000000</Account>") {
		t.Fatalf("boto3's presigned GetCallerIdentity: %d %s", status, body)
	}
	// Without HttpMethod, boto3 presigns STS's POST (an empty body).
	const boto3Post = "2e0f6c18850745d1dc6a05ae736a67fd435da7e7a046579ee3b61eac4043927d"
	if status, body := send("POST", e.srv.URL+boto3+boto3Post, "sts.us-east-1.amazonaws.com"); status != 200 || !strings.Contains(body, "<Account>000000000000</Account>") {
		t.Fatalf("boto3's presigned GetCallerIdentity, POST: %d %s", status, body)
	}
	if status, body := get(e.srv.URL+boto3+strings.Repeat("0", 64), "sts.us-east-1.amazonaws.com"); status != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") {
		t.Fatalf("a presigned URL with a wrong signature: %d %s, want 403 SignatureDoesNotMatch", status, body)
	}
	clock.Advance(11 * time.Minute) // 07:16, past 07:00 + 900 s
	if status, body := get(e.srv.URL+boto3+boto3Sig, "sts.us-east-1.amazonaws.com"); status != 403 || !strings.Contains(body, "<Code>SignatureDoesNotMatch</Code>") ||
		!strings.Contains(body, "Signature expired") {
		t.Fatalf("an expired presigned URL: %d %s, want 403 SignatureDoesNotMatch Signature expired", status, body)
	}

	// aws-sdk-go-v2's presigner, at the engine's time.
	presign := func(expires string, at time.Time) string {
		req, _ := http.NewRequest("GET", e.srv.URL+"/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Expires="+expires, nil)
		u, _, err := v4.NewSigner().PresignHTTP(context.Background(), aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"},
			req, "UNSIGNED-PAYLOAD", "sts", "us-east-1", at)
		if err != nil {
			t.Fatal(err)
		}
		return u
	}
	if status, body := get(presign("60", clock.Now()), ""); status != 200 || !strings.Contains(body, "GetCallerIdentityResult") {
		t.Fatalf("aws-sdk-go-v2's presigned GetCallerIdentity: %d %s", status, body)
	}
	if status, body := get(presign("60", clock.Now().Add(-2*time.Minute)), ""); status != 403 || !strings.Contains(body, "Signature expired") {
		t.Fatalf("aws-sdk-go-v2's presigned URL 2 minutes after its 60 s: %d %s, want 403 Signature expired", status, body)
	}
	if status, body := get(presign("604801", clock.Now()), ""); status != 403 || !strings.Contains(body, "X-Amz-Expires") {
		t.Fatalf("X-Amz-Expires over 7 days: %d %s, want 403 naming X-Amz-Expires", status, body)
	}
}

// TestIAMAndSTSRefuseSignaturesInTheirOwnWords: IAM and STS refuse a
// signature as the query services do: an unknown access key
// InvalidClientTokenId, a wrong signature SignatureDoesNotMatch, none
// MissingAuthenticationToken, all HTTP 403 (IAM's Common Errors page;
// STS's the same); and STS's AssumeRole answers a role that does not
// exist AccessDenied (403), a duration over the role's maximum
// ValidationError. Old behaviour: IAM and STS answered in the JSON
// services' words and status (UnrecognizedClientException,
// InvalidSignatureException, 400), AssumeRole IAM's NoSuchEntity (404)
// and InvalidInput.
func TestIAMAndSTSRefuseSignaturesInTheirOwnWords(t *testing.T) {
	e := start(t, awsapi.Options{Auth: authKeys})
	for _, service := range []string{"iam", "sts"} {
		form := url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}}
		if service == "iam" {
			form = url.Values{"Action": {"GetRole"}, "Version": {"2010-05-08"}, "RoleName": {"r"}}
		}
		for _, tt := range []struct {
			key, secret, code string
		}{
			{"NOPE", "secret", "InvalidClientTokenId"},
			{"AKID", "wrong", "SignatureDoesNotMatch"},
		} {
			status, body := signedForm(t, e.srv.URL, service, aws.Credentials{AccessKeyID: tt.key, SecretAccessKey: tt.secret}, form)
			if status != 403 || !strings.Contains(body, "<Code>"+tt.code+"</Code>") {
				t.Errorf("%s %s with %s/%s: %d %s, want 403 %s", service, form.Get("Action"), tt.key, tt.secret, status, body, tt.code)
			}
		}
		req, _ := http.NewRequest("POST", e.srv.URL+"/", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if status, body := do(t, req); status != 403 || !strings.Contains(body, "<Code>MissingAuthenticationToken</Code>") {
			t.Errorf("%s %s unsigned: %d %s, want 403 MissingAuthenticationToken", service, form.Get("Action"), status, body)
		}
	}
	akid := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
	status, body := signedForm(t, e.srv.URL, "sts", akid, url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"},
		"RoleArn": {"arn:aws:iam::000000000000:role/none"}, "RoleSessionName": {"s1"}})
	if status != 403 || !strings.Contains(body, "<Code>AccessDenied</Code>") || !strings.Contains(body, "not authorized to perform: sts:AssumeRole") {
		t.Errorf("AssumeRole of a role that does not exist: %d %s, want 403 AccessDenied", status, body)
	}
	assumeRole(t, e.srv.URL, "short", 900)
	status, body = signedForm(t, e.srv.URL, "sts", akid, url.Values{"Action": {"AssumeRole"}, "Version": {"2011-06-15"},
		"RoleArn": {"arn:aws:iam::000000000000:role/short"}, "RoleSessionName": {"s1"}, "DurationSeconds": {"43200"}})
	if status != 400 || !strings.Contains(body, "<Code>ValidationError</Code>") {
		t.Errorf("AssumeRole over the role's MaxSessionDuration: %d %s, want 400 ValidationError", status, body)
	}
}

// TestUnderAuthEveryAPIChecksTheSignature: with --auth, the REST APIs
// (Lambda, Scheduler) verify the signature as the others do, and refuse
// it with HTTP 403 as Lambda does (UnrecognizedClientException for an
// unknown key, InvalidSignatureException for a wrong secret,
// MissingAuthenticationTokenException for none). Old behaviour: Lambda
// and Scheduler calls were routed before any check, so under --auth
// anyone could create a process function (run code on the host) or a
// schedule, unsigned.
func TestUnderAuthEveryAPIChecksTheSignature(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{Auth: authKeys}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	t.Cleanup(ep.Close)
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	cfg := func(key, secret string) aws.Config {
		return aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", RetryMaxAttempts: 1,
			Credentials: credentials.NewStaticCredentialsProvider(key, secret, ""), BaseEndpoint: aws.String(srv.URL)}
	}
	ctx := context.Background()
	if _, err := lambda.NewFromConfig(cfg("AKID", "secret")).ListFunctions(ctx, &lambda.ListFunctionsInput{}); err != nil {
		t.Fatalf("Lambda ListFunctions signed with an --auth key: %v", err)
	}
	if _, err := scheduler.NewFromConfig(cfg("AKID", "secret")).ListSchedules(ctx, &scheduler.ListSchedulesInput{}); err != nil {
		t.Fatalf("Scheduler ListSchedules signed with an --auth key: %v", err)
	}
	for _, tt := range []struct{ key, secret, code string }{
		{"NOPE", "secret", "UnrecognizedClientException"},
		{"AKID", "wrong", "InvalidSignatureException"},
	} {
		_, err := lambda.NewFromConfig(cfg(tt.key, tt.secret)).ListFunctions(ctx, &lambda.ListFunctionsInput{})
		if errCode(err) != tt.code || errStatus(err) != 403 {
			t.Errorf("Lambda ListFunctions with %s/%s: %v, want 403 %s", tt.key, tt.secret, err, tt.code)
		}
		_, err = scheduler.NewFromConfig(cfg(tt.key, tt.secret)).ListSchedules(ctx, &scheduler.ListSchedulesInput{})
		if errCode(err) != tt.code || errStatus(err) != 403 {
			t.Errorf("Scheduler ListSchedules with %s/%s: %v, want 403 %s", tt.key, tt.secret, err, tt.code)
		}
	}
	req, _ := http.NewRequest("POST", srv.URL+"/2015-03-31/functions", strings.NewReader(`{"FunctionName":"f","Runtime":"python3.12","Handler":"app.handler","Role":"arn:aws:iam::000000000000:role/r","Code":{"ZipFile":""}}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 || resp.Header.Get("X-Amzn-ErrorType") != "MissingAuthenticationTokenException" {
		t.Errorf("Lambda CreateFunction unsigned: %d %s, want 403 MissingAuthenticationTokenException", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
	}
	if out := lambdaMust(lambda.NewFromConfig(cfg("AKID", "secret")).ListFunctions(ctx, &lambda.ListFunctionsInput{})); len(out.Functions) != 0 {
		t.Errorf("functions after the refused calls: %d", len(out.Functions))
	}
}

// TestAnExpiredSTSSessionLeavesTheBucket: session credentials are
// refused once expired (ExpiredToken, as AWS answers, sts
// API_AssumeRole.html "Expiration"), and runnel does not keep them for
// ever: each is stored with a JetStream per-key TTL of its duration and
// a day (sessionRemovalMargin), so the server removes it; by the engine's
// clock it answers ExpiredTokenException for that day, then is unknown
// (UnrecognizedClientException), on the node that cached it and on one
// that never read it. A bucket an older runnel made without TTLs is
// changed to allow them. Old behaviour: every session AssumeRole issued
// stayed in runnel_sts_sessions for ever.
func TestAnExpiredSTSSessionLeavesTheBucket(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	ctx := context.Background()
	if _, err := rn.Engine.Bucket(ctx, "runnel_sts_sessions"); err != nil { // as an older runnel made it
		t.Fatal(err)
	}
	node := func() string {
		srv := httptest.NewServer(awsapi.NewHandler(rn, awsapi.Options{Auth: authKeys}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	a := node()
	creds := assumeRole(t, a, "worker", 900)
	m, err := rn.Engine.LeaderLastMsg(ctx, "KV_runnel_sts_sessions", "$KV.runnel_sts_sessions."+creds.AccessKeyID)
	if err != nil {
		t.Fatal(err)
	}
	if ttl, err := time.ParseDuration(m.Header.Get("Nats-TTL")); err != nil || ttl != 900*time.Second+24*time.Hour {
		t.Errorf("the session's Nats-TTL %q (%v), want 24h15m0s", m.Header.Get("Nats-TTL"), err)
	}
	st, err := rn.Engine.JS.Stream(ctx, "KV_runnel_sts_sessions")
	if err != nil || !st.CachedInfo().Config.AllowMsgTTL {
		t.Fatalf("the sessions' bucket allows no per-key TTL: %v", err)
	}
	list := func(base string) error {
		_, err := kinesis.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", RetryMaxAttempts: 1,
			Credentials:  credentials.NewStaticCredentialsProvider(creds.AccessKeyID, creds.SecretAccessKey, creds.SessionToken),
			BaseEndpoint: aws.String(base)}).ListStreams(ctx, &kinesis.ListStreamsInput{})
		return err
	}
	if err := list(a); err != nil {
		t.Fatalf("before its expiration: %v", err)
	}
	clock.Advance(900 * time.Second)
	if err := list(a); errCode(err) != "ExpiredTokenException" {
		t.Errorf("at its expiration: %v, want ExpiredTokenException", err)
	}
	clock.Advance(24*time.Hour - time.Second)
	if err := list(a); errCode(err) != "ExpiredTokenException" {
		t.Errorf("a day less a second after: %v, want ExpiredTokenException", err)
	}
	clock.Advance(time.Second)
	for name, base := range map[string]string{"the node that cached it": a, "another node": node()} {
		if err := list(base); errCode(err) != "UnrecognizedClientException" {
			t.Errorf("a day after its expiration, on %s: %v, want UnrecognizedClientException", name, err)
		}
	}
}

// TestGetCallerIdentityOfASessionNamesTheAssumedRole: with the session
// credentials of AssumeRole, GetCallerIdentity answers Arn
// arn:aws:sts::<account>:assumed-role/<role>/<session> and UserId
// <role id>:<session> (sts API_GetCallerIdentity.html, example "assumed
// role"; IAM reference_identifiers.html), the AssumedRoleUser AssumeRole
// returned; other credentials still answer the account's root. Old
// behaviour: every caller, sessions included, was
// arn:aws:iam::<account>:root.
func TestGetCallerIdentityOfASessionNamesTheAssumedRole(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	for _, opts := range []awsapi.Options{{Auth: authKeys}, {}} {
		srv := httptest.NewServer(awsapi.NewHandler(rn, opts))
		t.Cleanup(srv.Close)
		name := "caller" + itoa(len(opts.Auth))
		creds := assumeRole(t, srv.URL, name, 900)
		status, body := signedForm(t, srv.URL, "iam", aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"},
			url.Values{"Action": {"GetRole"}, "Version": {"2010-05-08"}, "RoleName": {name}})
		var role struct {
			RoleId string `xml:"GetRoleResult>Role>RoleId"`
		}
		if status != 200 || xml.Unmarshal([]byte(body), &role) != nil || !strings.HasPrefix(role.RoleId, "AROA") {
			t.Fatalf("GetRole: %d %s", status, body)
		}
		identity := func(c aws.Credentials) (arn, userID string) {
			t.Helper()
			status, body := signedForm(t, srv.URL, "sts", c, url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}})
			var out struct {
				Arn    string `xml:"GetCallerIdentityResult>Arn"`
				UserId string `xml:"GetCallerIdentityResult>UserId"`
			}
			if status != 200 || xml.Unmarshal([]byte(body), &out) != nil {
				t.Fatalf("GetCallerIdentity: %d %s", status, body)
			}
			return out.Arn, out.UserId
		}
		if arn, id := identity(creds); arn != "arn:aws:sts::000000000000:assumed-role/"+name+"/s1" || id != role.RoleId+":s1" {
			t.Errorf("auth %v: a session's identity: %s %s, want the assumed role %s, %s:s1", opts.Auth != nil, arn, id, name, role.RoleId)
		}
		if arn, id := identity(aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}); arn != "arn:aws:iam::000000000000:root" || id != "000000000000" {
			t.Errorf("auth %v: AKID's identity: %s %s, want the root", opts.Auth != nil, arn, id)
		}
	}
}
