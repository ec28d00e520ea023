package main

import (
	"os/exec"
	"testing"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestAWSCLISmoke runs scripts/aws-cli-smoke.sh: the AWS CLI (a client
// runnel does not control) drives the Kinesis, SQS, DynamoDB and DynamoDB
// Streams operations against `runnel serve --aws`. Without the CLI it
// skips on a developer's machine and fails in CI.
func TestAWSCLISmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and serves runnel, then runs the AWS CLI (about 40 s)")
	}
	if _, err := exec.LookPath("aws"); err != nil {
		testenv.MissingTool(t, "the AWS CLI (aws) is not installed: apt-get install awscli, or pip install awscli")
	}
	out, err := exec.Command("bash", "../../scripts/aws-cli-smoke.sh").CombinedOutput()
	if err != nil {
		t.Fatalf("scripts/aws-cli-smoke.sh: %v\n%s", err, out)
	}
	t.Logf("%s", out)
}
