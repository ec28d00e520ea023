package testenv

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// InCI reports whether the tests run in CI: the CI environment variable
// is set (CI=true, as GitHub Actions, GitLab and .ci/run set it) and not
// "false" or "0".
func InCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "false" && v != "0"
}

// MissingTool is what a test does when an external tool it needs
// (chromium, kinesalite, the AWS CLI) is not there. In CI it fails the
// test: CI installs every such tool, so a missing one is a failed install
// and must not turn into a silent skip. On a developer's machine it skips,
// with the reason (`go test -v` prints it, and the SKIP line names it).
func MissingTool(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if InCI() {
		t.Fatalf("CI is set and a required tool is missing: %s", msg)
	}
	t.Skip(msg)
}
