package awsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/stream"
)

// startLambda starts a runnel and its Lambda API for a test.
func startLambda(t *testing.T) (context.Context, *runnel.Runnel, *lambda.Client) {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	return context.Background(), rn, lc
}

func init() {
	// lambdatest-color answers its COLOR variable.
	function.Register("lambdatest-color", func(ctx context.Context, _ json.RawMessage) (string, error) {
		return function.Env(ctx)["COLOR"], nil
	})
}

// createColor creates in-process function name answering COLOR color.
func createColor(t *testing.T, lc *lambda.Client, name, color string) {
	t.Helper()
	lambdaMust(lc.CreateFunction(context.Background(), &lambda.CreateFunctionInput{
		FunctionName: aws.String(name), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-color"),
		Code: &ltypes.FunctionCode{}, Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": color}},
	}))
}

func setColor(t *testing.T, lc *lambda.Client, name, color string) {
	t.Helper()
	lambdaMust(lc.UpdateFunctionConfiguration(context.Background(), &lambda.UpdateFunctionConfigurationInput{
		FunctionName: aws.String(name), Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": color}},
	}))
}

// invokeColor invokes ref (Qualifier q, "" for none) and returns the color
// it answered and the version that ran.
func invokeColor(t *testing.T, lc *lambda.Client, ref, q string) (color, version string) {
	t.Helper()
	in := &lambda.InvokeInput{FunctionName: aws.String(ref)}
	if q != "" {
		in.Qualifier = aws.String(q)
	}
	out := lambdaMust(lc.Invoke(context.Background(), in))
	json.Unmarshal(out.Payload, &color)
	return color, aws.ToString(out.ExecutedVersion)
}

func TestLambdaVersionsAndAliases(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	createColor(t, lc, "lv", "red")
	arn := rn.Functions.ARN("lv")

	// PublishVersion: checks, then an immutable snapshot.
	_, err := lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lv"), CodeSha256: aws.String("nope")})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "CodeSHA256 (nope) is different from current CodeSHA256 in $LATEST")
	_, err = lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lv"), RevisionId: aws.String("stale")})
	wantLambdaErr[*ltypes.PreconditionFailedException](t, err, "Revision Id")
	latest := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("lv")}))
	v1 := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lv"), RevisionId: latest.RevisionId, Description: aws.String("first")}))
	if aws.ToString(v1.Version) != "1" || aws.ToString(v1.FunctionArn) != arn+":1" || aws.ToString(v1.Description) != "first" {
		t.Fatalf("PublishVersion: %+v", v1)
	}
	if again := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lv")})); aws.ToString(again.Version) != "1" {
		t.Fatalf("PublishVersion with nothing changed: version %s, want 1", aws.ToString(again.Version))
	}
	setColor(t, lc, "lv", "blue")
	if c, v := invokeColor(t, lc, "lv", "1"); c != "red" || v != "1" {
		t.Fatalf("version 1 after $LATEST changed: %q (version %s), want red from 1", c, v)
	}
	if c, v := invokeColor(t, lc, "lv", ""); c != "blue" || v != "$LATEST" {
		t.Fatalf("$LATEST: %q (version %s)", c, v)
	}
	if c, _ := invokeColor(t, lc, arn+":1", ""); c != "red" {
		t.Fatalf("version 1 by its ARN: %q", c)
	}
	v2 := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lv")}))
	if aws.ToString(v2.Version) != "2" {
		t.Fatalf("second version %s", aws.ToString(v2.Version))
	}
	gc := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("lv"), Qualifier: aws.String("1")}))
	if aws.ToString(gc.Version) != "1" || gc.Environment.Variables["COLOR"] != "red" {
		t.Fatalf("GetFunctionConfiguration of version 1: %+v", gc)
	}
	lv := lambdaMust(lc.ListVersionsByFunction(ctx, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String("lv")}))
	if len(lv.Versions) != 3 || aws.ToString(lv.Versions[0].Version) != "$LATEST" || aws.ToString(lv.Versions[2].Version) != "2" {
		t.Fatalf("ListVersionsByFunction: %d versions", len(lv.Versions))
	}
	if lf := lambdaMust(lc.ListFunctions(ctx, &lambda.ListFunctionsInput{FunctionVersion: ltypes.FunctionVersionAll})); len(lf.Functions) != 3 || aws.ToString(lf.Functions[1].FunctionArn) != arn+":1" {
		t.Fatalf("ListFunctions FunctionVersion ALL: %d functions", len(lf.Functions))
	}
	if lf := lambdaMust(lc.ListFunctions(ctx, &lambda.ListFunctionsInput{})); len(lf.Functions) != 1 {
		t.Fatalf("ListFunctions: %d functions, want $LATEST only", len(lf.Functions))
	}
	_, err = lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lv"), Qualifier: aws.String("7")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "Function not found: "+arn+":7")
	_, err = lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("lv:1"), Qualifier: aws.String("2")})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "The derived qualifier from the function name does not match the specified qualifier.")

	// Aliases.
	a := lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod"), FunctionVersion: aws.String("1")}))
	if aws.ToString(a.AliasArn) != arn+":prod" || aws.ToString(a.RevisionId) == "" {
		t.Fatalf("CreateAlias: %+v", a)
	}
	_, err = lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod"), FunctionVersion: aws.String("1")})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "Alias already exists: "+arn+":prod")
	_, err = lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("lv"), Name: aws.String("x"), FunctionVersion: aws.String("9")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, arn+":9")
	if c, v := invokeColor(t, lc, "lv:prod", ""); c != "red" || v != "1" {
		t.Fatalf("alias prod: %q (version %s)", c, v)
	}
	ga := lambdaMust(lc.GetAlias(ctx, &lambda.GetAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod")}))
	if aws.ToString(ga.FunctionVersion) != "1" {
		t.Fatalf("GetAlias: %+v", ga)
	}
	_, err = lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod"), RevisionId: aws.String("stale")})
	wantLambdaErr[*ltypes.PreconditionFailedException](t, err, "Revision Id")
	_, err = lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lv"), Qualifier: aws.String("1")})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "the following aliases reference it: [prod]")
	_, err = lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lv"), Qualifier: aws.String("$LATEST")})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "$LATEST version cannot be deleted without deleting the function.")

	// Weighted routing over the endpoint, with a seeded source: 30% to 2.
	rn.Functions.SetRandom(rand.New(rand.NewPCG(3, 4)).Float64)
	lambdaMust(lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod"),
		RoutingConfig: &ltypes.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"2": 0.3}}}))
	count := map[string]int{}
	for range 1000 {
		_, v := invokeColor(t, lc, "lv", "prod")
		count[v]++
	}
	if count["2"] < 250 || count["2"] > 350 || count["1"] != 1000-count["2"] {
		t.Fatalf("1,000 invocations of alias prod with 0.3 to version 2: %v", count)
	}
	la := lambdaMust(lc.ListAliases(ctx, &lambda.ListAliasesInput{FunctionName: aws.String("lv"), FunctionVersion: aws.String("2")}))
	if len(la.Aliases) != 1 || la.Aliases[0].RoutingConfig.AdditionalVersionWeights["2"] != 0.3 {
		t.Fatalf("ListAliases of version 2: %+v", la.Aliases)
	}
	lambdaMust(lc.DeleteAlias(ctx, &lambda.DeleteAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod")}))
	_, err = lc.GetAlias(ctx, &lambda.GetAliasInput{FunctionName: aws.String("lv"), Name: aws.String("prod")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "Alias not found")
	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lv"), Qualifier: aws.String("1")}))
	_, err = lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("lv:1")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, arn+":1")
}

// A mapping on an alias's ARN invokes the alias's version, and follows
// UpdateAlias.
func TestLambdaMappingOnAliasFollowsUpdateAlias(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	var mu sync.Mutex
	var ran []string // the version each batch ran on
	function.Register("lambdatest-version", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, function.Env(ctx)["VER"])
		return events.KinesisEventResponse{}, nil
	}))
	env := func(v string) *ltypes.Environment { return &ltypes.Environment{Variables: map[string]string{"VER": v}} }
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lm"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-version"), Code: &ltypes.FunctionCode{}, Environment: env("one")}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lm")}))
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("lm"), Environment: env("two")}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("lm")}))
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("lm"), Environment: env("latest")}))
	alias := lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("lm"), Name: aws.String("live"), FunctionVersion: aws.String("1")}))
	lambdaMust(rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "lm-s", ShardCount: 1}))
	m := lambdaMust(lc.CreateEventSourceMapping(ctx, &lambda.CreateEventSourceMappingInput{EventSourceArn: aws.String(rn.Streams.ARN("lm-s")),
		FunctionName: alias.AliasArn, StartingPosition: ltypes.EventSourcePositionTrimHorizon}))
	if aws.ToString(m.FunctionArn) != aws.ToString(alias.AliasArn) {
		t.Fatalf("mapping FunctionArn %s, want the alias's %s", aws.ToString(m.FunctionArn), aws.ToString(alias.AliasArn))
	}
	if l := lambdaMust(lc.ListEventSourceMappings(ctx, &lambda.ListEventSourceMappingsInput{FunctionName: alias.AliasArn})); len(l.EventSourceMappings) != 1 {
		t.Fatalf("ListEventSourceMappings by the alias's ARN: %d mappings", len(l.EventSourceMappings))
	}
	put := func(want string) {
		t.Helper()
		lambdaMust(rn.Streams.PutRecord(ctx, "lm-s", stream.PutRecordsRequestEntry{Data: []byte(`{}`), PartitionKey: "k"}))
		testenv.Eventually(t, 10*time.Second, "a batch", func() bool {
			mu.Lock()
			defer mu.Unlock()
			return len(ran) > 0
		})
		mu.Lock()
		defer mu.Unlock()
		if ran[0] != want {
			t.Fatalf("the mapping on alias live ran %q, want %q", ran[0], want)
		}
		ran = nil
	}
	put("one")
	lambdaMust(lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("lm"), Name: aws.String("live"), FunctionVersion: aws.String("2")}))
	put("two")
}

// An event invoke config on an alias is the alias's: an Event invocation
// of the alias that fails reaches the alias's OnFailure destination, its
// record naming the alias; $LATEST has none.
func TestLambdaEventInvokeConfigOnAnAlias(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	function.Register("lambdatest-fail", func(context.Context, json.RawMessage) (any, error) { return nil, errors.New("boom") })
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("le"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-fail"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("le")}))
	lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("le"), Name: aws.String("prod"), FunctionVersion: aws.String("1")}))
	qurl := lambdaMust(rn.Queues.CreateQueue(ctx, "le-failures", nil))
	pc := lambdaMust(lc.PutFunctionEventInvokeConfig(ctx, &lambda.PutFunctionEventInvokeConfigInput{FunctionName: aws.String("le"), Qualifier: aws.String("prod"),
		MaximumRetryAttempts: aws.Int32(0), DestinationConfig: &ltypes.DestinationConfig{OnFailure: &ltypes.OnFailure{Destination: aws.String(rn.Queues.ARN("le-failures"))}}}))
	aliasArn := rn.Functions.ARN("le") + ":prod"
	if aws.ToString(pc.FunctionArn) != aliasArn {
		t.Fatalf("PutFunctionEventInvokeConfig FunctionArn %s, want %s", aws.ToString(pc.FunctionArn), aliasArn)
	}
	_, err := lc.GetFunctionEventInvokeConfig(ctx, &lambda.GetFunctionEventInvokeConfigInput{FunctionName: aws.String("le")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "doesn't have an EventInvokeConfig")
	l := lambdaMust(lc.ListFunctionEventInvokeConfigs(ctx, &lambda.ListFunctionEventInvokeConfigsInput{FunctionName: aws.String("le")}))
	if len(l.FunctionEventInvokeConfigs) != 1 || aws.ToString(l.FunctionEventInvokeConfigs[0].FunctionArn) != aliasArn {
		t.Fatalf("ListFunctionEventInvokeConfigs: %+v", l.FunctionEventInvokeConfigs)
	}
	lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String(aliasArn), InvocationType: ltypes.InvocationTypeEvent}))
	var body string
	testenv.Eventually(t, 20*time.Second, "the failure record", func() bool {
		msgs, _ := rn.Queues.ReceiveMessage(ctx, qurl, queue.ReceiveMessageInput{})
		if len(msgs) > 0 {
			body = msgs[0].Body
		}
		return body != ""
	})
	var rec struct {
		RequestContext struct{ FunctionArn, Condition string }
	}
	if json.Unmarshal([]byte(body), &rec) != nil || rec.RequestContext.FunctionArn != aliasArn || rec.RequestContext.Condition != "RetriesExhausted" {
		t.Fatalf("failure record: %s", body)
	}
}

// TestLambdaRevisionIdAndPublishOnCreateAndUpdate: UpdateFunctionConfiguration
// and UpdateFunctionCode apply "only if the revision ID matches" one given
// (else PreconditionFailed, 412); CreateFunction and UpdateFunctionCode
// with Publish: true publish a version, "the same effect as calling
// PublishVersion separately", and answer with it; PutFunctionConcurrency
// changes the function, not a version, so PublishVersion after it alone
// publishes nothing new. (RevisionId and Publish were dropped unread, and
// reserved concurrency counted as a change of $LATEST.)
func TestLambdaRevisionIdAndPublishOnCreateAndUpdate(t *testing.T) {
	ctx, _, lc := startLambda(t)
	out := lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pub"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}, Publish: true,
		Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": "red"}}}))
	if aws.ToString(out.Version) != "1" {
		t.Fatalf("CreateFunction with Publish: version %q, want 1", aws.ToString(out.Version))
	}
	_, err := lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("pub"), RevisionId: aws.String("stale"), Description: aws.String("x")})
	wantLambdaErr[*ltypes.PreconditionFailedException](t, err, "Revision Id")
	if c := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("pub")})); aws.ToString(c.Description) != "" {
		t.Fatalf("a refused update changed the function: Description %q", aws.ToString(c.Description))
	}
	latest := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("pub")}))
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("pub"), RevisionId: latest.RevisionId, Description: aws.String("y")}))
	v2 := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pub")}))
	lambdaMust(lc.PutFunctionConcurrency(ctx, &lambda.PutFunctionConcurrencyInput{FunctionName: aws.String("pub"), ReservedConcurrentExecutions: aws.Int32(5)}))
	if again := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pub")})); aws.ToString(again.Version) != aws.ToString(v2.Version) {
		t.Fatalf("PublishVersion after PutFunctionConcurrency alone: version %s, want %s again", aws.ToString(again.Version), aws.ToString(v2.Version))
	}
}

// TestLambdaUpdateFunctionCodeChecksRevisionAndPublishes: as above, for a
// process function's code.
func TestLambdaUpdateFunctionCodeChecksRevisionAndPublishes(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		testenv.MissingTool(t, "python3 is not installed: runtime python3.12 runs on it")
	}
	ctx, _, lc := startLambda(t)
	code := func(answer string) []byte {
		return zipFiles(t, map[string]string{"app.py": "def handler(event, context):\n    return '" + answer + "'\n"})
	}
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pc"), Runtime: ltypes.RuntimePython312,
		Handler: aws.String("app.handler"), Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: code("one")}}))
	_, err := lc.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("pc"), ZipFile: code("two"), RevisionId: aws.String("stale")})
	wantLambdaErr[*ltypes.PreconditionFailedException](t, err, "Revision Id")
	out := lambdaMust(lc.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("pc"), ZipFile: code("two"), Publish: true}))
	if aws.ToString(out.Version) != "1" {
		t.Fatalf("UpdateFunctionCode with Publish: version %q, want 1", aws.ToString(out.Version))
	}
	inv := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("pc"), Qualifier: aws.String("1")}))
	if string(inv.Payload) != `"two"` {
		t.Fatalf("version 1 answers %s, want the updated code's \"two\"", inv.Payload)
	}
}
