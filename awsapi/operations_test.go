package awsapi_test

import (
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/awserr"
)

var update = flag.Bool("update", false, "rewrite README.md's list of supported operations from the table")

// targetPrefix is each JSON service's X-Amz-Target prefix.
var targetPrefix = map[awsapi.Service]string{
	awsapi.Kinesis: "Kinesis_20131202.", awsapi.SQS: "AmazonSQS.",
	awsapi.DynamoDB: "DynamoDB_20120810.", awsapi.DynamoDBStreams: "DynamoDBStreams_20120810.",
	awsapi.CloudWatchLogs: "Logs_20140328.", awsapi.EventBridge: "AWSEvents.",
}

// queryScope is the SigV4 scope service of each query-protocol service
// but SQS (which a form without a scope reaches).
var queryScope = map[awsapi.Service]string{awsapi.IAM: "iam", awsapi.STS: "sts", awsapi.SNS: "sns"}

// TestEveryOperationIsRouted sends every operation of the table, with an
// empty input, the way a client does (X-Amz-Target, SQS Action, Lambda
// method and path): none may be answered as an unknown operation.
func TestEveryOperationIsRouted(t *testing.T) {
	e := start(t, awsapi.Options{})
	ep := awsapi.NewEndpoint(e.rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	t.Cleanup(ep.Close)
	unknown := regexp.MustCompile(`UnknownOperation|InvalidAction|not supported by runnel`)
	do := func(op awsapi.Operation, req *http.Request) {
		t.Helper()
		rec := &recorder{header: http.Header{}}
		ep.ServeHTTP(rec, req)
		if unknown.MatchString(rec.body.String()) || rec.header.Get("X-Amzn-ErrorType") == "UnknownOperationException" {
			t.Errorf("%s %s: %d %s", op.Service, op.Name, rec.status, rec.body.String())
		}
	}
	ops := awsapi.Operations()
	if len(ops) < 60 {
		t.Fatalf("%d operations in the table", len(ops))
	}
	for _, op := range ops {
		if op.Doc == "" || strings.Contains(op.Doc, "\n") || op.Input == nil {
			t.Errorf("%s %s: Doc %q, Input %v", op.Service, op.Name, op.Doc, op.Input)
		}
		if len(op.Routes) > 0 {
			for _, route := range op.Routes {
				method, path, _ := strings.Cut(route, " ")
				path = strings.NewReplacer("{name}", "nosuchfunction", "{uuid}", "nosuchuuid", "{alias}", "nosuchalias", "{layer}", "nosuchlayer", "{version}", "1", "{sid}", "nosuchsid", "{arn}", "arn:aws:lambda:us-east-1:000000000000:function:nosuchfunction", "{$}", "").Replace(path)
				do(op, httpRequest(method, path, "", nil))
			}
			continue
		}
		if scope, ok := queryScope[op.Service]; ok {
			auth := "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/" + scope + "/aws4_request, SignedHeaders=host, Signature=00"
			do(op, httpRequest("POST", "/", url.Values{"Action": {op.Name}}.Encode(), map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": auth}))
			if op.Service == awsapi.SNS { // and its JSON protocol
				do(op, httpRequest("POST", "/", "{}", map[string]string{"X-Amz-Target": "SNS_20100331." + op.Name}))
			}
			continue
		}
		do(op, httpRequest("POST", "/", "{}", map[string]string{"X-Amz-Target": targetPrefix[op.Service] + op.Name}))
		if op.Service == awsapi.SQS {
			do(op, httpRequest("POST", "/", url.Values{"Action": {op.Name}}.Encode(), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}))
		}
	}
}

// httpRequest is a request signed in form (sign) unless header names an
// Authorization (an empty one: none).
func httpRequest(method, path, body string, header map[string]string) *http.Request {
	r, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(body))
	if err != nil {
		panic(err)
	}
	for k, v := range header {
		r.Header.Set(k, v)
	}
	return sign(r)
}

// testSignature is a SigV4 Authorization header of the right form; its
// value is checked only with Options.Auth, but every request must be
// signed (signatureForm), as AWS requires. The scope's service, runnel,
// is none of the query services, which are routed by it.
const testSignature = "AWS4-HMAC-SHA256 Credential=AKID/20260101/us-east-1/runnel/aws4_request, SignedHeaders=host, Signature=00"

// sign gives r testSignature unless it has an Authorization header (set,
// even empty) already, and a request with a whole AWS4-HMAC-SHA256
// signature an X-Amz-Date. It returns r.
func sign(r *http.Request) *http.Request {
	if _, ok := r.Header["Authorization"]; !ok {
		r.Header.Set("Authorization", testSignature)
	}
	if strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=") && r.Header.Get("X-Amz-Date") == "" && r.Header.Get("Date") == "" {
		r.Header.Set("X-Amz-Date", "20260101T000000Z")
	}
	return r
}

// recorder is a minimal http.ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

// operationsMarkdown is README.md's list of supported operations, from
// the table.
func operationsMarkdown() string {
	var b strings.Builder
	ops := awsapi.Operations()
	for _, svc := range awsapi.Services {
		fmt.Fprintf(&b, "\n**%s**\n\n| Operation | What runnel does |\n| --- | --- |\n", svc)
		for _, op := range ops {
			if op.Service == svc {
				fmt.Fprintf(&b, "| %s | %s |\n", op.Name, strings.ReplaceAll(op.Doc, "|", `\|`))
			}
		}
	}
	return b.String() + "\n"
}

const opsBegin, opsEnd = "<!-- ops:begin", "<!-- ops:end -->"

// TestREADMEOperations fails when README.md's list of supported operations
// differs from the table; -update rewrites it.
func TestREADMEOperations(t *testing.T) {
	path := filepath.Join("..", "README.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, opsBegin), strings.Index(s, opsEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md has no %s ... %s section", opsBegin, opsEnd)
	}
	i += strings.Index(s[i:], "-->") + len("-->")
	want := operationsMarkdown()
	if s[i:j] == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(s[:i]+want+s[j:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's list of supported operations differs from the table; run go generate ./awsapi")
}

// TestErrorCodesInSourceHaveEntries walks the repository's Go code for
// error codes written as literals (an *awserr.Error or a per-entry
// ErrorCode): each must have an entry in awserr's table, or the endpoint
// would answer it as an internal failure. (Sentinels made in awserr have
// one by construction.)
func TestErrorCodesInSourceHaveEntries(t *testing.T) {
	lit := regexp.MustCompile(`(?:awserr\.Error\{Code:|ErrorCode:)\s*"([^"]+)"`)
	n := 0
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != ".." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllSubmatch(b, -1) {
			n++
			if awserr.Lookup(string(m[1])) == nil {
				t.Errorf("%s: code %q has no entry in awserr's table", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range awserr.Specs() {
		if s.Status < 400 || s.Status > 599 {
			t.Errorf("%s: status %d", s.Code, s.Status)
		}
	}
	t.Logf("%d literal codes, %d table entries", n, len(awserr.Specs()))
}
