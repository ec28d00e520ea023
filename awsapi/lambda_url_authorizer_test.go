package awsapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/sdkhttp"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestAnIAMFunctionURLEventNamesItsCallerInTheAuthorizer: the event of a
// function URL of AuthType AWS_IAM carries requestContext.authorizer.iam
// {accessKey, accountId, callerId, cognitoIdentity, principalOrgId,
// userArn, userId} (Lambda urls-invocation.html, the request payload's
// example; SPEC-streams-functions §5): accessKey the signature's access
// key, the rest the caller as GetCallerIdentity answers it (an AssumeRole
// session's assumed-role ARN and <role id>:<session>, else the account's
// root), cognitoIdentity and principalOrgId null; AuthType NONE gives
// authorizer null. runnel's event had no authorizer at all.
func TestAnIAMFunctionURLEventNamesItsCallerInTheAuthorizer(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	h := awsapi.NewEndpoint(rn, awsapi.Options{Auth: authKeys}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	t.Cleanup(h.Close)
	ctx := context.Background()
	lc := lambda.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1",
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""), BaseEndpoint: aws.String(srv.URL)})
	got := make(chan json.RawMessage, 4)
	function.Register("lambdatest-url-authorizer", func(ctx context.Context, ev json.RawMessage) (string, error) {
		got <- ev
		return "ok", nil
	})
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("who"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-url-authorizer"), Code: &ltypes.FunctionCode{}}))
	cu := lambdaMust(lc.CreateFunctionUrlConfig(ctx, &lambda.CreateFunctionUrlConfigInput{FunctionName: aws.String("who"), AuthType: ltypes.FunctionUrlAuthTypeAwsIam}))
	u, err := url.Parse(aws.ToString(cu.FunctionUrl))
	if err != nil {
		t.Fatal(err)
	}
	// authorizer calls the URL signed with creds (nil: unsigned) and
	// returns its event's requestContext.authorizer as JSON.
	authorizer := func(creds *aws.Credentials) string {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+"/", nil)
		req.Host = u.Host
		if creds != nil {
			if err := v4.NewSigner().SignHTTP(ctx, *creds, req, hashHex(""), "lambda", "us-east-1", time.Now()); err != nil {
				t.Fatal(err)
			}
		}
		if status, body := do(t, req); status != 200 {
			t.Fatalf("function URL: %d %s", status, body)
		}
		var ev struct {
			RequestContext map[string]json.RawMessage `json:"requestContext"`
		}
		if err := json.Unmarshal(<-got, &ev); err != nil {
			t.Fatal(err)
		}
		a, ok := ev.RequestContext["authorizer"]
		if !ok {
			t.Fatalf("requestContext without authorizer: %s", ev.RequestContext)
		}
		return string(a)
	}
	// wantIAM compares authorizer a with {"iam": want}.
	wantIAM := func(a string, want map[string]any) {
		t.Helper()
		var m map[string]map[string]any
		if err := json.Unmarshal([]byte(a), &m); err != nil || m["iam"] == nil {
			t.Fatalf("authorizer %s, want {\"iam\": ...}", a)
		}
		for k, v := range want {
			if gv, ok := m["iam"][k]; !ok || gv != v {
				t.Errorf("authorizer.iam.%s = %v (present %v), want %v; all: %s", k, gv, ok, v, a)
			}
		}
		if len(m["iam"]) != len(want) {
			t.Errorf("authorizer.iam has %d members, want %d: %s", len(m["iam"]), len(want), a)
		}
	}

	root := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
	wantIAM(authorizer(&root), map[string]any{"accessKey": "AKID", "accountId": "000000000000", "callerId": "000000000000",
		"userArn": "arn:aws:iam::000000000000:root", "userId": "000000000000", "cognitoIdentity": nil, "principalOrgId": nil})

	session := assumeRole(t, srv.URL, "urlcaller", 900)
	status, body := signedForm(t, srv.URL, "iam", root, url.Values{"Action": {"GetRole"}, "Version": {"2010-05-08"}, "RoleName": {"urlcaller"}})
	_, roleID, _ := strings.Cut(body, "<RoleId>")
	roleID, _, _ = strings.Cut(roleID, "</RoleId>")
	if status != 200 || !strings.HasPrefix(roleID, "AROA") {
		t.Fatalf("GetRole: %d %s", status, body)
	}
	wantIAM(authorizer(&session), map[string]any{"accessKey": session.AccessKeyID, "accountId": "000000000000",
		"callerId": roleID + ":s1", "userId": roleID + ":s1", "userArn": "arn:aws:sts::000000000000:assumed-role/urlcaller/s1",
		"cognitoIdentity": nil, "principalOrgId": nil})

	lambdaMust(lc.UpdateFunctionUrlConfig(ctx, &lambda.UpdateFunctionUrlConfigInput{FunctionName: aws.String("who"), AuthType: ltypes.FunctionUrlAuthTypeNone}))
	if a := authorizer(nil); a != "null" {
		t.Errorf("AuthType NONE: authorizer %s, want null", a)
	}
}
