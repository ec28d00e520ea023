package awsapi_test

import (
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
)

// post sends body to base with header and returns the status and body.
func post(t *testing.T, base, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", base+"/", strings.NewReader(body))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(sign(req))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// query posts a query-protocol call signed for scope (iam, sts) and
// returns its status and body.
func query(t *testing.T, base, scope string, form url.Values) (int, string) {
	t.Helper()
	return post(t, base, form.Encode(), map[string]string{"Content-Type": "application/x-www-form-urlencoded",
		"Authorization": "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/" + scope + "/aws4_request, SignedHeaders=host, Signature=00"})
}

// jsonCall posts a JSON 1.1 call (X-Amz-Target) and decodes its reply into
// out (when not nil); it returns the status and the body.
func jsonCall(t *testing.T, base, target string, in any, out any) (int, string) {
	t.Helper()
	body, _ := json.Marshal(in)
	status, b := post(t, base, string(body), map[string]string{"Content-Type": "application/x-amz-json-1.1", "X-Amz-Target": target})
	if out != nil && status == 200 {
		if err := json.Unmarshal([]byte(b), out); err != nil {
			t.Fatalf("%s: %v: %s", target, err, b)
		}
	}
	return status, b
}

// IAM roles as deploy scripts make them, in IAM's XML: created (once, by
// a name without case), read with the trust policy URL-encoded, policies
// attached, listed and detached, inline policies put and deleted, and
// deleted only without policies; STS answers who the caller is and
// role sessions.
func TestIAMRolesAndSTS(t *testing.T) {
	e := start(t, awsapi.Options{})
	base := e.srv.URL
	trust := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"Service":"lambda.amazonaws.com"},"Action":"sts:AssumeRole"}]}`
	iam := func(action string, kv ...string) (int, string) {
		f := url.Values{"Action": {action}, "Version": {"2010-05-08"}}
		for i := 0; i < len(kv); i += 2 {
			f.Set(kv[i], kv[i+1])
		}
		return query(t, base, "iam", f)
	}
	status, body := iam("CreateRole", "RoleName", "lab-role", "AssumeRolePolicyDocument", trust, "Path", "/service-role/",
		"Tags.member.1.Key", "team", "Tags.member.1.Value", "data")
	var created struct {
		XMLName xml.Name                                                                           `xml:"https://iam.amazonaws.com/doc/2010-05-08/ CreateRoleResponse"`
		Role    struct{ Path, RoleName, RoleId, Arn, CreateDate, AssumeRolePolicyDocument string } `xml:"CreateRoleResult>Role"`
		ReqID   string                                                                             `xml:"ResponseMetadata>RequestId"`
	}
	if status != 200 || xml.Unmarshal([]byte(body), &created) != nil {
		t.Fatalf("CreateRole: %d %s", status, body)
	}
	r := created.Role
	if r.RoleName != "lab-role" || r.Arn != "arn:aws:iam::000000000000:role/service-role/lab-role" || !strings.HasPrefix(r.RoleId, "AROA") || len(r.RoleId) != 21 || created.ReqID == "" {
		t.Errorf("role %+v", created)
	}
	if doc, _ := url.PathUnescape(r.AssumeRolePolicyDocument); doc != trust || r.AssumeRolePolicyDocument == trust {
		t.Errorf("trust policy %q: want it URL-encoded", r.AssumeRolePolicyDocument)
	}
	if status, body := iam("CreateRole", "RoleName", "LAB-ROLE", "AssumeRolePolicyDocument", trust); status != 409 ||
		!strings.Contains(body, `<ErrorResponse xmlns="https://iam.amazonaws.com/doc/2010-05-08/"><Error><Type>Sender</Type><Code>EntityAlreadyExists</Code>`) {
		t.Errorf("CreateRole again: %d %s", status, body)
	}
	if status, body := iam("CreateRole", "RoleName", "bad", "AssumeRolePolicyDocument", "{not json"); status != 400 || !strings.Contains(body, "<Code>MalformedPolicyDocument</Code>") {
		t.Errorf("CreateRole with a bad policy: %d %s", status, body)
	}
	if !strings.Contains(body, "<Tags><member><Key>team</Key><Value>data</Value></member></Tags>") {
		t.Errorf("tags: %s", body)
	}
	if _, body := iam("CreateRole", "RoleName", "untagged", "AssumeRolePolicyDocument", trust); strings.Contains(body, "<Tags>") {
		t.Errorf("a role without tags: %s", body)
	}
	if status, body := iam("GetRole", "RoleName", "lab-role"); status != 200 || !strings.Contains(body, "<RoleId>"+r.RoleId+"</RoleId>") {
		t.Errorf("GetRole: %d %s", status, body)
	}

	const sqsPolicy, ddbPolicy = "arn:aws:iam::aws:policy/service-role/AWSLambdaSQSQueueExecutionRole", "arn:aws:iam::aws:policy/AmazonDynamoDBFullAccess"
	for _, p := range []string{sqsPolicy, ddbPolicy, ddbPolicy} {
		if status, body := iam("AttachRolePolicy", "RoleName", "lab-role", "PolicyArn", p); status != 200 || strings.Contains(body, "Result") {
			t.Errorf("AttachRolePolicy: %d %s", status, body)
		}
	}
	listed := func() []string {
		_, body := iam("ListAttachedRolePolicies", "RoleName", "lab-role")
		var out struct {
			Policies []struct{ PolicyName, PolicyArn string } `xml:"ListAttachedRolePoliciesResult>AttachedPolicies>member"`
			Trunc    bool                                     `xml:"ListAttachedRolePoliciesResult>IsTruncated"`
		}
		if err := xml.Unmarshal([]byte(body), &out); err != nil {
			t.Fatalf("ListAttachedRolePolicies: %v: %s", err, body)
		}
		var names []string
		for _, p := range out.Policies {
			names = append(names, p.PolicyName+"="+p.PolicyArn)
		}
		return names
	}
	if got := strings.Join(listed(), " "); got != "AWSLambdaSQSQueueExecutionRole="+sqsPolicy+" AmazonDynamoDBFullAccess="+ddbPolicy {
		t.Errorf("attached: %s", got)
	}
	if status, body := iam("DeleteRole", "RoleName", "lab-role"); status != 409 || !strings.Contains(body, "<Code>DeleteConflict</Code>") {
		t.Errorf("DeleteRole with policies: %d %s", status, body)
	}
	iam("DetachRolePolicy", "RoleName", "lab-role", "PolicyArn", sqsPolicy)
	if status, body := iam("DetachRolePolicy", "RoleName", "lab-role", "PolicyArn", sqsPolicy); status != 404 || !strings.Contains(body, "<Code>NoSuchEntity</Code>") {
		t.Errorf("DetachRolePolicy again: %d %s", status, body)
	}
	iam("DetachRolePolicy", "RoleName", "lab-role", "PolicyArn", ddbPolicy)
	if got := listed(); len(got) != 0 {
		t.Errorf("attached after detaching: %v", got)
	}
	inline := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":"logs:*","Resource":"*"}]}`
	iam("PutRolePolicy", "RoleName", "lab-role", "PolicyName", "logs", "PolicyDocument", inline)
	if status, body := iam("GetRolePolicy", "RoleName", "lab-role", "PolicyName", "logs"); status != 200 || !strings.Contains(body, "<PolicyDocument>"+url.PathEscape(inline)+"</PolicyDocument>") {
		t.Errorf("GetRolePolicy: %d %s", status, body)
	}
	if status, _ := iam("DeleteRole", "RoleName", "lab-role"); status != 409 {
		t.Errorf("DeleteRole with an inline policy: %d", status)
	}

	// STS.
	status, body = query(t, base, "sts", url.Values{"Action": {"GetCallerIdentity"}, "Version": {"2011-06-15"}})
	if status != 200 || !strings.Contains(body, `<GetCallerIdentityResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><GetCallerIdentityResult>`) ||
		!strings.Contains(body, "<Account>000000000000</Account>") {
		t.Errorf("GetCallerIdentity: %d %s", status, body)
	}
	status, body = query(t, base, "sts", url.Values{"Action": {"AssumeRole"}, "RoleArn": {r.Arn}, "RoleSessionName": {"s1"}})
	if status != 200 || !strings.Contains(body, "<Arn>arn:aws:sts::000000000000:assumed-role/lab-role/s1</Arn>") ||
		!strings.Contains(body, "<AssumedRoleId>"+r.RoleId+":s1</AssumedRoleId>") || !strings.Contains(body, "<AccessKeyId>ASIA") {
		t.Errorf("AssumeRole: %d %s", status, body)
	}

	iam("DeleteRolePolicy", "RoleName", "lab-role", "PolicyName", "logs")
	if status, body := iam("DeleteRole", "RoleName", "lab-role"); status != 200 {
		t.Errorf("DeleteRole: %d %s", status, body)
	}
	if status, body := iam("GetRole", "RoleName", "lab-role"); status != 404 || !strings.Contains(body, "<Message>The role with name lab-role cannot be found.</Message>") {
		t.Errorf("GetRole after DeleteRole: %d %s", status, body)
	}
}
