package awsapi_test

import (
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// AddPermission's statement and GetPolicy's document are AWS's
// (API_AddPermission's example: Principal {"Service": ...}, Condition
// ArnLike AWS:SourceArn); RemovePermission and a duplicate StatementId
// answer AWS's errors. Tags: TagResource, ListTags, UntagResource and
// CreateFunction's Tags.
func TestLambdaPermissionsAndTags(t *testing.T) {
	ctx, rn, lc := startLambda(t)
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{
		FunctionName: aws.String("lp"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-color"),
		Code: &ltypes.FunctionCode{}, Tags: map[string]string{"team": "data"},
	}))
	arn := rn.Functions.ARN("lp")

	_, err := lc.GetPolicy(ctx, &lambda.GetPolicyInput{FunctionName: aws.String("lp")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "The resource you requested does not exist.")
	add := lambdaMust(lc.AddPermission(ctx, &lambda.AddPermissionInput{FunctionName: aws.String("lp"), StatementId: aws.String("sns"),
		Action: aws.String("lambda:InvokeFunction"), Principal: aws.String("sns.amazonaws.com"), SourceArn: aws.String("arn:aws:sns:us-east-1:000000000000:topic")}))
	want := `{"Sid":"sns","Effect":"Allow","Principal":{"Service":"sns.amazonaws.com"},"Action":"lambda:InvokeFunction","Resource":"` + arn +
		`","Condition":{"ArnLike":{"AWS:SourceArn":"arn:aws:sns:us-east-1:000000000000:topic"}}}`
	if aws.ToString(add.Statement) != want {
		t.Fatalf("AddPermission statement\n%s\nwant\n%s", aws.ToString(add.Statement), want)
	}
	_, err = lc.AddPermission(ctx, &lambda.AddPermissionInput{FunctionName: aws.String("lp"), StatementId: aws.String("sns"),
		Action: aws.String("lambda:InvokeFunction"), Principal: aws.String("*")})
	wantLambdaErr[*ltypes.ResourceConflictException](t, err, "The statement id (sns) provided already exists.")
	lambdaMust(lc.AddPermission(ctx, &lambda.AddPermissionInput{FunctionName: aws.String("lp"), StatementId: aws.String("acct"),
		Action: aws.String("lambda:InvokeFunction"), Principal: aws.String("111122223333")}))
	pol := lambdaMust(lc.GetPolicy(ctx, &lambda.GetPolicyInput{FunctionName: aws.String("lp")}))
	var doc struct {
		Version, Id string
		Statement   []struct {
			Sid       string
			Principal map[string]string
		}
	}
	if err := json.Unmarshal([]byte(aws.ToString(pol.Policy)), &doc); err != nil || doc.Version != "2012-10-17" || doc.Id != "default" ||
		len(doc.Statement) != 2 || doc.Statement[1].Principal["AWS"] != "arn:aws:iam::111122223333:root" || aws.ToString(pol.RevisionId) == "" {
		t.Fatalf("GetPolicy: %s (%v)", aws.ToString(pol.Policy), err)
	}
	_, err = lc.RemovePermission(ctx, &lambda.RemovePermissionInput{FunctionName: aws.String("lp"), StatementId: aws.String("nope")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "Statement nope is not found in resource policy.")
	_, err = lc.RemovePermission(ctx, &lambda.RemovePermissionInput{FunctionName: aws.String("lp"), StatementId: aws.String("sns"), RevisionId: aws.String("stale")})
	wantLambdaErr[*ltypes.PreconditionFailedException](t, err, "Revision Id")
	lambdaMust(lc.RemovePermission(ctx, &lambda.RemovePermissionInput{FunctionName: aws.String("lp"), StatementId: aws.String("sns")}))
	if pol := lambdaMust(lc.GetPolicy(ctx, &lambda.GetPolicyInput{FunctionName: aws.String("lp")})); json.Unmarshal([]byte(aws.ToString(pol.Policy)), &doc) != nil || len(doc.Statement) != 1 {
		t.Fatalf("GetPolicy after RemovePermission: %s", aws.ToString(pol.Policy))
	}
	_, err = lc.AddPermission(ctx, &lambda.AddPermissionInput{FunctionName: aws.String("lp"), Qualifier: aws.String("prod"), StatementId: aws.String("x"),
		Action: aws.String("lambda:InvokeFunction"), Principal: aws.String("*")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, arn+":prod")

	// Tags.
	if tags := lambdaMust(lc.ListTags(ctx, &lambda.ListTagsInput{Resource: aws.String(arn)})).Tags; len(tags) != 1 || tags["team"] != "data" {
		t.Fatalf("ListTags after CreateFunction with Tags: %v", tags)
	}
	lambdaMust(lc.TagResource(ctx, &lambda.TagResourceInput{Resource: aws.String(arn), Tags: map[string]string{"env": "prod", "team": "ml"}}))
	lambdaMust(lc.UntagResource(ctx, &lambda.UntagResourceInput{Resource: aws.String(arn), TagKeys: []string{"env"}}))
	if tags := lambdaMust(lc.ListTags(ctx, &lambda.ListTagsInput{Resource: aws.String(arn)})).Tags; len(tags) != 1 || tags["team"] != "ml" {
		t.Fatalf("ListTags after TagResource and UntagResource: %v", tags)
	}
	if gf := lambdaMust(lc.GetFunction(ctx, &lambda.GetFunctionInput{FunctionName: aws.String("lp")})); gf.Tags["team"] != "ml" {
		t.Fatalf("GetFunction Tags: %v", gf.Tags)
	}
	_, err = lc.ListTags(ctx, &lambda.ListTagsInput{Resource: aws.String(arn + "x")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "lpx")
	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("lp")}))
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("lp"), Role: aws.String("r"), Runtime: "runnel", Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}))
	if tags := lambdaMust(lc.ListTags(ctx, &lambda.ListTagsInput{Resource: aws.String(arn)})).Tags; len(tags) != 0 {
		t.Fatalf("a re-created function has its predecessor's tags: %v", tags)
	}
	_, err = lc.GetPolicy(ctx, &lambda.GetPolicyInput{FunctionName: aws.String("lp")})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "does not exist")
}
