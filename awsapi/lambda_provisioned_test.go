package awsapi_test

import (
	"context"
	"encoding/base64"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// startPython serves a runnel with pythonFunction's function and returns
// a context of a minute and a Lambda client.
func startPython(t *testing.T) (context.Context, *lambda.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	_, cfg := pythonFunction(t)
	return ctx, lambda.NewFromConfig(cfg)
}

// Provisioned concurrency is refused on $LATEST; on a version of a Python
// function it pre-starts an environment, so the version's first
// invocation is warm (no Init Duration in REPORT) and sees
// AWS_LAMBDA_INITIALIZATION_TYPE provisioned-concurrency, while $LATEST's
// first invocation is a cold start.
func TestLambdaProvisionedConcurrency(t *testing.T) {
	ctx, lc := startPython(t)
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pcfn"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("arn:aws:iam::000000000000:role/r"), Code: &ltypes.FunctionCode{ZipFile: zipFiles(t, map[string]string{
			"app.py": "import os\ndef handler(event, context):\n    return os.environ['AWS_LAMBDA_INITIALIZATION_TYPE']\n"})}}))

	_, err := lc.PutProvisionedConcurrencyConfig(ctx, &lambda.PutProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("$LATEST"), ProvisionedConcurrentExecutions: aws.Int32(1)})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "Provisioned Concurrency Configs cannot be applied to unpublished function versions.")
	_, err = lc.PutProvisionedConcurrencyConfig(ctx, &lambda.PutProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("1"), ProvisionedConcurrentExecutions: aws.Int32(1)})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "pcfn:1")
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pcfn")}))
	_, err = lc.GetProvisionedConcurrencyConfig(ctx, &lambda.GetProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("1")})
	wantLambdaErr[*ltypes.ProvisionedConcurrencyConfigNotFoundException](t, err, "No Provisioned Concurrency Config")
	pc := lambdaMust(lc.PutProvisionedConcurrencyConfig(ctx, &lambda.PutProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("1"), ProvisionedConcurrentExecutions: aws.Int32(1)}))
	if pc.Status != ltypes.ProvisionedConcurrencyStatusEnumReady || aws.ToInt32(pc.AvailableProvisionedConcurrentExecutions) != 1 {
		t.Fatalf("PutProvisionedConcurrencyConfig: %+v", pc)
	}
	lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("pcfn"), Name: aws.String("live"), FunctionVersion: aws.String("1")}))
	_, err = lc.PutProvisionedConcurrencyConfig(ctx, &lambda.PutProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("live"), ProvisionedConcurrentExecutions: aws.Int32(1)})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "one configuration per version")

	invoke := func(q string) (payload, report string) {
		t.Helper()
		out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String(q), LogType: ltypes.LogTypeTail}))
		log, _ := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult))
		_, report, _ = strings.Cut(string(log), "REPORT ")
		return string(out.Payload), report
	}
	if p, report := invoke("1"); p != `"provisioned-concurrency"` || strings.Contains(report, "Init Duration") || report == "" {
		t.Errorf("version 1 with provisioned concurrency: payload %s, REPORT %q (want no Init Duration)", p, report)
	}
	if p, report := invoke("$LATEST"); p != `"on-demand"` || !strings.Contains(report, "Init Duration") {
		t.Errorf("$LATEST: payload %s, REPORT %q (want a cold start's Init Duration)", p, report)
	}
	list := lambdaMust(lc.ListProvisionedConcurrencyConfigs(ctx, &lambda.ListProvisionedConcurrencyConfigsInput{FunctionName: aws.String("pcfn")}))
	if len(list.ProvisionedConcurrencyConfigs) != 1 || aws.ToString(list.ProvisionedConcurrencyConfigs[0].FunctionArn) != "arn:aws:lambda:us-east-1:000000000000:function:pcfn:1" {
		t.Fatalf("ListProvisionedConcurrencyConfigs: %+v", list.ProvisionedConcurrencyConfigs)
	}
	// A process function's version keeps its code when $LATEST's changes.
	lambdaMust(lc.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("pcfn"), ZipFile: zipFiles(t, map[string]string{
		"app.py": "def handler(event, context):\n    return 'changed'\n"})}))
	if p, _ := invoke("$LATEST"); p != `"changed"` {
		t.Errorf("$LATEST after UpdateFunctionCode: %s", p)
	}
	if p, _ := invoke("1"); p != `"provisioned-concurrency"` {
		t.Errorf("version 1 after UpdateFunctionCode of $LATEST: %s, want its own code's answer", p)
	}
	lambdaMust(lc.DeleteProvisionedConcurrencyConfig(ctx, &lambda.DeleteProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("1")}))
	_, err = lc.GetProvisionedConcurrencyConfig(ctx, &lambda.GetProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("1")})
	wantLambdaErr[*ltypes.ProvisionedConcurrencyConfigNotFoundException](t, err, "No Provisioned Concurrency Config")

	// An alias's provisioned concurrency moves with it to its new version,
	// whose first invocation is then warm too; weights are refused.
	lambdaMust(lc.PutProvisionedConcurrencyConfig(ctx, &lambda.PutProvisionedConcurrencyConfigInput{FunctionName: aws.String("pcfn"), Qualifier: aws.String("live"), ProvisionedConcurrentExecutions: aws.Int32(1)}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pcfn")}))
	lambdaMust(lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("pcfn"), Name: aws.String("live"), FunctionVersion: aws.String("2")}))
	if p, report := invoke("live"); p != `"changed"` || strings.Contains(report, "Init Duration") {
		t.Errorf("alias live moved to version 2: payload %s, REPORT %q (want no Init Duration)", p, report)
	}
	_, err = lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("pcfn"), Name: aws.String("live"),
		RoutingConfig: &ltypes.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"1": 0.5}}})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "Alias with weights can not be used with Provisioned Concurrency")
}

// A Python function's published version keeps its own code across a
// restart, and its provisioned concurrency is started again.
func TestLambdaProcessVersionSurvivesRestart(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.MissingTool(t, "python3 is not installed: runtime python3.12 runs on it")
	}
	ctx := context.Background()
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	lc, lh := lambdaEndpoint(t, rn)
	code := func(answer string) []byte {
		return zipFiles(t, map[string]string{"app.py": "def handler(event, context):\n    return '" + answer + "'\n"})
	}
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pv"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: code("one")}}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pv")}))
	lambdaMust(lc.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("pv"), ZipFile: code("two")}))
	lambdaMust(lc.PutProvisionedConcurrencyConfig(ctx, &lambda.PutProvisionedConcurrencyConfigInput{FunctionName: aws.String("pv"), Qualifier: aws.String("1"), ProvisionedConcurrentExecutions: aws.Int32(1)}))
	lh.Close()
	rn.Close()

	rn2 := testenv.Start(t, testenv.Options{Dir: dir})
	lc2, _ := lambdaEndpoint(t, rn2)
	for q, want := range map[string]string{"1": `"one"`, "$LATEST": `"two"`} {
		out := lambdaMust(lc2.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pv"), Qualifier: aws.String(q), LogType: ltypes.LogTypeTail}))
		log, _ := base64.StdEncoding.DecodeString(aws.ToString(out.LogResult))
		if string(out.Payload) != want || (q == "1") == strings.Contains(string(log), "Init Duration") {
			t.Errorf("after a restart, %s answers %s (want %s); log %q (provisioned version 1 warm, $LATEST cold)", q, out.Payload, want, log)
		}
	}
}
