package awsapi_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func lifecycleNeedPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("no python3 on this machine")
	}
}

// lifecycleInvoke invokes name (at qualifier q) and returns its payload
// and FunctionError, or fails the test.
func lifecycleInvoke(t *testing.T, c *lambda.Client, name, q, payload string) (string, string) {
	t.Helper()
	in := &lambda.InvokeInput{FunctionName: aws.String(name), Payload: []byte(payload)}
	if q != "" {
		in.Qualifier = aws.String(q)
	}
	out, err := c.Invoke(context.Background(), in)
	if err != nil {
		t.Fatalf("Invoke %s:%s: %v", name, q, err)
	}
	return string(out.Payload), aws.ToString(out.FunctionError)
}

// A process function created, updated or published through one node runs
// its current code and configuration through every node: "A function
// created through one node can be invoked through every node once the
// change reaches the watch" (docs/cluster.md), as Lambda's functions are
// one resource whichever endpoint is called. Each node here has its own
// registry, as separate processes do. Before, only the node that took the
// call (and a node started later, once) built the function's pool: node B,
// started before the create, answered ResourceNotFoundException; node C,
// started after it, kept running the old code without the new variable
// after UpdateFunctionCode and UpdateFunctionConfiguration through A, and
// version 1 through C was "its handler process:cl:1 is not registered in
// this process".
func TestAProcessFunctionRunsItsCurrentCodeThroughEveryNode(t *testing.T) {
	lifecycleNeedPython(t)
	ctx := context.Background()
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0", Registry: function.NewRegistry()})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Registry: function.NewRegistry()})
	la, _ := lambdaEndpoint(t, a)
	lb, _ := lambdaEndpoint(t, b)
	code := func(s string) []byte {
		return zipFiles(t, map[string]string{"app.py": "import os\ndef handler(e, c):\n    return '" + s + " ' + os.environ.get('COLOR', '-')\n"})
	}
	lambdaMust(la.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("cl"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("r"), Timeout: aws.Int32(30), Code: &ltypes.FunctionCode{ZipFile: code("one")}}))
	if out, fe := lifecycleInvoke(t, lb, "cl", "", "{}"); out != `"one -"` || fe != "" {
		t.Fatalf("through node B (started before the create): %s %s, want \"one -\"", out, fe)
	}
	c := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Registry: function.NewRegistry()})
	lc, _ := lambdaEndpoint(t, c)
	if out, _ := lifecycleInvoke(t, lc, "cl", "", "{}"); out != `"one -"` {
		t.Fatalf("through node C (started after the create): %s, want \"one -\"", out)
	}

	lambdaMust(la.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("cl"), ZipFile: code("two")}))
	lambdaMust(la.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("cl"),
		Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": "blue"}}}))
	pv := lambdaMust(la.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("cl")}))
	for node, rn := range map[string]interface {
		Describe(string) (*function.Function, error)
	}{"B": b.Functions, "C": c.Functions} {
		testenv.Eventually(t, 10*time.Second, "node "+node+" applies the update", func() bool {
			f, err := rn.Describe("cl")
			return err == nil && f.Config().Environment["COLOR"] == "blue"
		})
	}
	for node, cl := range map[string]*lambda.Client{"A": la, "B": lb, "C": lc} {
		if out, fe := lifecycleInvoke(t, cl, "cl", "", "{}"); out != `"two blue"` || fe != "" {
			t.Errorf("$LATEST through node %s after the update through A: %s %s, want \"two blue\"", node, out, fe)
		}
		if out, fe := lifecycleInvoke(t, cl, "cl", aws.ToString(pv.Version), "{}"); out != `"two blue"` || fe != "" {
			t.Errorf("version %s through node %s: %s %s, want \"two blue\"", aws.ToString(pv.Version), node, out, fe)
		}
	}

	// Deleted through B: its pools go on every node, and a function of
	// that name created again through C runs its own code through A.
	lambdaMust(lb.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("cl")}))
	testenv.Eventually(t, 10*time.Second, "node A applies the delete", func() bool { _, err := a.Functions.Describe("cl"); return err != nil })
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("cl"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("r"), Timeout: aws.Int32(30), Code: &ltypes.FunctionCode{ZipFile: code("three")}}))
	testenv.Eventually(t, 10*time.Second, "node A applies the new create", func() bool { _, err := a.Functions.Describe("cl"); return err == nil })
	if out, _ := lifecycleInvoke(t, la, "cl", "", "{}"); out != `"three -"` {
		t.Fatalf("through node A after delete and create through other nodes: %s, want \"three -\"", out)
	}
}

// Starting a node writes no stored function: $LATEST keeps its
// RevisionId (API_FunctionConfiguration: RevisionId changes when the
// function is updated; a node's start is no update). Before, every node
// stored each process function again at its start
// (RestoreProcessFunctions' PutFunction): a new RevisionId, and possibly
// an update made meanwhile through another node overwritten.
func TestANodeStartLeavesTheStoredFunctionsAlone(t *testing.T) {
	lifecycleNeedPython(t)
	ctx := context.Background()
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0", Registry: function.NewRegistry()})
	la, _ := lambdaEndpoint(t, a)
	lambdaMust(la.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("keep"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: zipFiles(t, map[string]string{"app.py": "def handler(e, c):\n    return 'ok'\n"})}}))
	before := lambdaMust(la.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("keep")}))
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Registry: function.NewRegistry()})
	lb, _ := lambdaEndpoint(t, b)
	if out, _ := lifecycleInvoke(t, lb, "keep", "", "{}"); out != `"ok"` {
		t.Fatalf("through the node started after the create: %s", out)
	}
	after := lambdaMust(la.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("keep")}))
	if aws.ToString(after.RevisionId) != aws.ToString(before.RevisionId) {
		t.Fatalf("RevisionId %s before a node started, %s after", aws.ToString(before.RevisionId), aws.ToString(after.RevisionId))
	}
}

// An invocation running when its function is updated finishes with the
// configuration it started with: the replaced pool is closed once its
// running invocations end (or its own, old, timeout has passed), never by
// the new Timeout. runnel's PutFunction says "invocations already running
// finish with the old ones", as Lambda's do. Before, the replaced pool was
// closed when the NEW Timeout plus 1 s had passed: an 8 s invocation under
// Timeout 20, with the Timeout set to 3 after 1 s, ended with
// Runtime.ExitError "signal: killed" after 5.6 s. Time runs on a fake
// clock; the handler waits on two FIFOs, so no step sleeps.
func TestAnUpdateLetsTheRunningInvocationsFinish(t *testing.T) {
	lifecycleNeedPython(t)
	ctx := context.Background()
	clock := clockwork.NewFakeClock()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	lc, _ := lambdaEndpoint(t, rn)
	dir := t.TempDir()
	started, release := filepath.Join(dir, "started"), filepath.Join(dir, "release")
	for _, p := range []string{started, release} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
	}
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("slow"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("r"), Timeout: aws.Int32(20), Code: &ltypes.FunctionCode{ZipFile: zipFiles(t, map[string]string{
			"app.py": "def handler(e, c):\n    if 'started' not in e:\n        return 'new'\n    open(e['started'], 'w').close()\n    open(e['release']).read()\n    return 'old finished'\n"})}}))
	type result struct{ out, fe string }
	done := make(chan result, 1)
	go func() {
		out, err := lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("slow"),
			Payload: []byte(`{"started":"` + started + `","release":"` + release + `"}`)})
		if err != nil {
			done <- result{"error " + err.Error(), ""}
			return
		}
		done <- result{string(out.Payload), aws.ToString(out.FunctionError)}
	}()
	f, err := os.Open(started) // returns once the handler runs
	if err != nil {
		t.Fatal(err)
	}
	f.Close()

	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("slow"), Timeout: aws.Int32(3)}))
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("slow"), Description: aws.String("changed")}))
	clock.Advance(10 * time.Second) // past the new Timeout + 1 s, within the old Timeout
	if g := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("slow")})); aws.ToInt32(g.Timeout) != 3 {
		t.Fatalf("Timeout %d after the update, want 3", aws.ToInt32(g.Timeout))
	}
	if out, fe := lifecycleInvoke(t, lc, "slow", "", "{}"); out != `"new"` || fe != "" {
		t.Fatalf("an invocation after the update: %s %s", out, fe)
	}
	w, err := os.OpenFile(release, os.O_RDWR, 0) // O_RDWR: never blocks, even once the handler is gone
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("go"))
	w.Close()
	if r := <-done; r.out != `"old finished"` || r.fe != "" {
		t.Fatalf("the invocation running across the update (Timeout 20 lowered to 3, then Description changed): %s %s, want \"old finished\"", r.out, strings.TrimSpace(r.fe))
	}
}
