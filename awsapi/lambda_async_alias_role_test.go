package awsapi_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// "Both versions must have ... the same execution role"
// (https://docs.aws.amazon.com/lambda/latest/dg/configuring-alias-routing.html):
// CreateAlias and UpdateAlias refuse weights between versions whose
// Roles differ, with InvalidParameterValueException naming both. Before,
// they were accepted.
func TestAWeightedAliasNeedsTheSameRoleInBothVersions(t *testing.T) {
	ctx, _, lc := startLambda(t)
	createColor(t, lc, "wr", "red")
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("wr")}))
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("wr"), Role: aws.String("other-role")}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("wr")}))
	weights := &ltypes.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"2": 0.5}}
	_, err := lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("wr"), Name: aws.String("live"), FunctionVersion: aws.String("1"), RoutingConfig: weights})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, `versions 1 (Role "r") and 2 (Role "other-role")`)
	lambdaMust(lc.CreateAlias(ctx, &lambda.CreateAliasInput{FunctionName: aws.String("wr"), Name: aws.String("live"), FunctionVersion: aws.String("1")}))
	_, err = lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("wr"), Name: aws.String("live"), RoutingConfig: weights})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "same execution role")
	// The same role on both: accepted.
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("wr"), Role: aws.String("r"), Description: aws.String("3")}))
	lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("wr")}))
	lambdaMust(lc.UpdateAlias(ctx, &lambda.UpdateAliasInput{FunctionName: aws.String("wr"), Name: aws.String("live"),
		RoutingConfig: &ltypes.AliasRoutingConfiguration{AdditionalVersionWeights: map[string]float64{"3": 0.5}}}))
}
