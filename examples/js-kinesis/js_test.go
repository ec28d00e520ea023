package jskinesis_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// needSDK checks node and npm, and installs package.json's
// @aws-sdk/client-kinesis here when it is not (.ci/run installs it first).
func needSDK(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.MissingTool(t, "%s is not installed (apt-get install nodejs npm)", tool)
		}
	}
	if _, err := os.Stat(filepath.Join("node_modules", "@aws-sdk", "client-kinesis", "package.json")); err == nil {
		return
	}
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund")
	cmd.Env = append(os.Environ(), "npm_config_cache="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm install @aws-sdk/client-kinesis: %v\n%s", err, out)
	}
}

// TestJSKinesisPutGetReshard runs kinesis.mjs, the AWS SDK for JavaScript
// v3's Kinesis client (npm @aws-sdk/client-kinesis, the version package.json
// pins) against runnel's endpoint: PutRecords, then GetShardIterator and
// GetRecords read them back in order; SplitShard closes the shard (its
// EndingSequenceNumber, the children's ParentShardId and hash key ranges),
// puts go to the children (a hash key at the split to the upper one), the
// closed parent's records end with ChildShards and no NextShardIterator,
// and each child's records read back in order.
func TestJSKinesisPutGetReshard(t *testing.T) {
	needSDK(t)
	srv := httptest.NewUnstartedServer(awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{}))
	srv.Config.Protocols = awsapi.Protocols()
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "kinesis.mjs")
	cmd.Env = append(os.Environ(), "RUNNEL_ENDPOINT="+srv.URL)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node kinesis.mjs: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `"ok":true`) {
		t.Fatalf("node kinesis.mjs did not finish:\n%s", out)
	}
	t.Logf("kinesis.mjs: %s", strings.TrimSpace(string(out)))
}
