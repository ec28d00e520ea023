package awsapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// Every AddPermission, RemovePermission and TagResource that answers
// success is in the policy or tags afterwards, whichever node took it
// (API_AddPermission: a call that returns 200 added its statement). The
// policy and tags used to be read, changed and written back with a plain
// Put under a mutex of one process: 40 AddPermission through each of two
// nodes at once left 51 statements of 80. They are now written with the
// revision read and read again on a conflict.
func TestAddPermissionThroughTwoNodesKeepsEveryStatement(t *testing.T) {
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	lc, _ := lambdaEndpoint(t, a)
	ctx := context.Background()
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pf"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	testenv.Eventually(t, 10*time.Second, "node B sees function pf", func() bool { _, err := b.Functions.Describe("pf"); return err == nil })

	const n = 40
	nodes := map[string]*runnel.Runnel{"a": a, "b": b}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		for id, rn := range nodes {
			wg.Add(2)
			go func() {
				defer wg.Done()
				if _, err := rn.Functions.AddPermission(ctx, "pf", "", function.Permission{StatementId: fmt.Sprintf("%s%d", id, i), Action: "lambda:InvokeFunction", Principal: "*"}); err != nil {
					t.Errorf("AddPermission %s%d: %v", id, i, err)
				}
			}()
			go func() {
				defer wg.Done()
				if err := rn.Functions.TagResource(ctx, "pf", map[string]string{fmt.Sprintf("%s%d", id, i%20): "v"}); err != nil {
					t.Errorf("TagResource %s%d: %v", id, i, err)
				}
			}()
		}
	}
	wg.Wait()
	pol, err := a.Functions.GetPolicy(ctx, "pf", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Statement) != 2*n {
		t.Fatalf("%d AddPermission calls answered success through 2 nodes; the policy holds %d statements", 2*n, len(pol.Statement))
	}
	if tags, err := b.Functions.ListTags(ctx, "pf"); err != nil || len(tags) != 40 {
		t.Fatalf("40 tag keys set through 2 nodes; ListTags has %d (%v)", len(tags), err)
	}

	// RemovePermission of every statement, half through each node.
	for i := 0; i < n; i++ {
		for id, rn := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := rn.Functions.RemovePermission(ctx, "pf", "", fmt.Sprintf("%s%d", id, i), ""); err != nil {
					t.Errorf("RemovePermission %s%d: %v", id, i, err)
				}
			}()
		}
	}
	wg.Wait()
	if pol, err := a.Functions.GetPolicy(ctx, "pf", ""); err == nil {
		t.Fatalf("every statement removed; the policy still holds %d", len(pol.Statement))
	}
}

// A function's resource policy is at most 20 KB (Lambda quotas:
// "Function resource-based policy: 20 KB"); AddPermission beyond answers
// PolicyLengthExceededException "The final policy size is bigger than the
// limit." (AddPermission's errors in the Lambda model, HTTP 400) and adds
// nothing. runnel used to take 150 statements (42 KB) and more.
func TestAPolicyOver20KBIsRefused(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("big"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	perm := func(i int) function.Permission {
		return function.Permission{StatementId: fmt.Sprintf("apigw-route-%03d", i), Action: "lambda:InvokeFunction", Principal: "apigateway.amazonaws.com",
			SourceArn: "arn:aws:execute-api:us-east-1:123456789012:abcdefghij/*/GET/some/long/resource/path/" + strings.Repeat("x", 40)}
	}
	added := 0
	var err error
	for ; added < 150; added++ {
		if _, err = rn.Functions.AddPermission(ctx, "big", "", perm(added)); err != nil {
			break
		}
	}
	if !errors.Is(err, function.ErrPolicyLengthExceeded) || !strings.Contains(err.Error(), "The final policy size is bigger than the limit.") {
		t.Fatalf("after %d statements: %v, want PolicyLengthExceededException", added, err)
	}
	gp := lambdaMust(lc.GetPolicy(ctx, &lambda.GetPolicyInput{FunctionName: aws.String("big")}))
	var doc struct{ Statement []json.RawMessage }
	json.Unmarshal([]byte(aws.ToString(gp.Policy)), &doc)
	if size := len(aws.ToString(gp.Policy)); size > function.MaxPolicySize || len(doc.Statement) != added || added < 50 {
		t.Fatalf("policy of %d bytes with %d statements after %d added", size, len(doc.Statement), added)
	}
	// Room again once a statement is removed.
	lambdaMust(lc.RemovePermission(ctx, &lambda.RemovePermissionInput{FunctionName: aws.String("big"), StatementId: aws.String("apigw-route-000")}))
	if _, err := rn.Functions.AddPermission(ctx, "big", "", perm(0)); err != nil {
		t.Fatalf("AddPermission after RemovePermission made room: %v", err)
	}
}

// DeleteAlias deletes the alias's resource policy, and DeleteFunction of
// a version the version's (a policy is the version's or alias's own,
// Lambda's resource-based policy guide): an alias or version created
// again under the name starts without statements. The alias's policy
// used to stay behind: the new alias inherited the old statements and
// AddPermission of the same Sid answered ResourceConflictException.
func TestADeletedAliasTakesItsPolicy(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pa"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pa")}))
	add := func(q string) error {
		_, err := lc.AddPermission(ctx, &lambda.AddPermissionInput{FunctionName: aws.String("pa"), Qualifier: aws.String(q), StatementId: aws.String("sns"),
			Action: aws.String("lambda:InvokeFunction"), Principal: aws.String("sns.amazonaws.com")})
		return err
	}
	noPolicy := func(q string) {
		t.Helper()
		_, err := lc.GetPolicy(ctx, &lambda.GetPolicyInput{FunctionName: aws.String("pa"), Qualifier: aws.String(q)})
		wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "The resource you requested does not exist.")
	}

	lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("pa"), Name: aws.String("prod"), FunctionVersion: aws.String("1")}))
	lambdaMust(0, add("prod"))
	lambdaMust(lc.DeleteAlias(ctx, &lambda.DeleteAliasInput{FunctionName: aws.String("pa"), Name: aws.String("prod")}))
	lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("pa"), Name: aws.String("prod"), FunctionVersion: aws.String("1")}))
	noPolicy("prod")
	if err := add("prod"); err != nil {
		t.Fatalf("AddPermission sns on the re-created alias: %v", err)
	}

	// A version's policy goes with the version.
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("pa"),
		Environment: &ltypes.Environment{Variables: map[string]string{"COLOR": "blue"}}}))
	testenv.Eventually(t, 10*time.Second, "pa updated", func() bool {
		c := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("pa")}))
		return c.LastUpdateStatus == ltypes.LastUpdateStatusSuccessful
	})
	if v := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pa")})); aws.ToString(v.Version) != "2" {
		t.Fatalf("PublishVersion after a change: version %s", aws.ToString(v.Version))
	}
	lambdaMust(0, add("2"))
	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("pa"), Qualifier: aws.String("2")}))
	// (Version numbers are not used again: the stored policy itself.)
	kv, err := rn.Engine.JS.KeyValue(ctx, "runnel_function_policies")
	if err != nil {
		t.Fatal(err)
	}
	if e, err := kv.Get(ctx, "pa.2"); err == nil {
		t.Fatalf("the policy of deleted version 2 is still stored: %s", e.Value())
	}

	// Every policy goes with the function.
	lambdaMust(0, add(""))
	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("pa")}))
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("pa"), Role: aws.String("r"), Runtime: "runnel",
		Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pa")}))
	lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("pa"), Name: aws.String("prod"), FunctionVersion: aws.String("1")}))
	for _, q := range []string{"", "1", "prod"} {
		noPolicy(q)
	}
}
