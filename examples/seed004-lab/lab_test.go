package lab_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// serve starts a runnel and its AWS endpoint on a local port, with
// functions' AWS_ENDPOINT_URL pointing at it (as `runnel serve` does),
// and returns its URL.
func serve(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir(), Endpoint: url})
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: ep, Protocols: awsapi.Protocols()}}
	srv.Start()
	t.Cleanup(ep.Close)
	t.Cleanup(srv.Close)
	return url
}

// awsEnv is the environment of the AWS CLI in the tests: test
// credentials and region, and nothing from the developer's ~/.aws.
func awsEnv(t *testing.T, endpoint string) []string {
	dir := t.TempDir()
	env := []string{"AWS_ENDPOINT_URL=" + endpoint, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_DEFAULT_REGION=us-east-1", "AWS_CONFIG_FILE=" + filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(dir, "credentials")}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	return env
}

// needTools checks the lab's tools: the AWS CLI, zip, and python3 with
// boto3 (the function's interpreter).
func needTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"aws", "zip", "python3"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.MissingTool(t, "%s is not installed (apt-get install awscli zip python3-boto3)", tool)
		}
	}
	if err := exec.Command("python3", "-c", "import boto3").Run(); err != nil {
		testenv.MissingTool(t, "python3 has no boto3 (apt-get install python3-boto3, or pip install boto3): %v", err)
	}
}

// TestSeed004Lab runs seed 004's hands-on lab, steps 1 to 7 and its
// cleanup (lab.sh: the lab's commands with --endpoint-url; its header lists the other differences), with
// the AWS CLI against runnel: a python3.12 function (run on this machine's
// python3) fed by an SQS queue writes one DynamoDB item per message with
// boto3. The scan counts one item per message sent, and the function's
// log (filter-log-events, or logs tail with CLI v2) shows "processed" for
// each message id.
func TestSeed004Lab(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the AWS CLI about 30 times and the lab's sleeps (about 1 minute)")
	}
	needTools(t)
	cmd := exec.Command("bash", "lab.sh")
	cmd.Env = append(awsEnv(t, serve(t)), "LAB_EXPECT_ITEMS=2")
	out, err := cmd.CombinedOutput()
	t.Logf("lab.sh:\n%s", out)
	if err != nil {
		t.Fatalf("lab.sh: %v", err)
	}
	checkLab(t, string(out), 2)
}

// TestSeed004LabNode is TestSeed004Lab with the function in Node.js
// (LAB_FUNCTION=node): nodejs20.x on this machine's node, writing to
// DynamoDB with @aws-sdk/client-dynamodb installed from npm into the
// deployment package.
func TestSeed004LabNode(t *testing.T) {
	if testing.Short() {
		t.Skip("installs @aws-sdk/client-dynamodb from npm, runs the AWS CLI about 30 times and the lab's sleeps (about 1.5 minutes)")
	}
	needTools(t)
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.MissingTool(t, "%s is not installed (apt-get install nodejs npm)", tool)
		}
	}
	cmd := exec.Command("bash", "lab.sh")
	cmd.Env = append(awsEnv(t, serve(t)), "LAB_EXPECT_ITEMS=2", "LAB_FUNCTION=node", "npm_config_cache="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("lab.sh (Node.js):\n%s", out)
	if err != nil {
		t.Fatalf("lab.sh: %v", err)
	}
	checkLab(t, string(out), 2)
}

// checkLab checks the lab's output: the scan counts want items, and the
// log has a "processed <id>" line for each message id sent.
func checkLab(t *testing.T, out string, want int) {
	t.Helper()
	if !regexp.MustCompile(`"Count": ` + strconv.Itoa(want) + `\b`).MatchString(out) {
		t.Errorf("the scan does not count %d items", want)
	}
	ids := regexp.MustCompile(`"MessageId": "([^"]+)"`).FindAllStringSubmatch(out, -1)
	if len(ids) != want {
		t.Fatalf("%d message ids sent, want %d", len(ids), want)
	}
	for _, id := range ids {
		if !regexp.MustCompile(`(?m)[\t ]processed ` + regexp.QuoteMeta(id[1]) + `$`).MatchString(out) {
			t.Errorf("no \"processed %s\" line in the function's log", id[1])
		}
	}
}
