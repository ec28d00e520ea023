package awsapi_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// CreateFunction keeps EphemeralStorage (Size 512..10240 MB),
// Architectures (exactly one of x86_64, arm64) and TracingConfig (Mode
// Active or PassThrough) and answers them as configured, as
// GetFunctionConfiguration does (API_CreateFunction,
// API_FunctionConfiguration); UpdateFunctionConfiguration changes the
// first and last; out-of-range values are InvalidParameterValueException
// naming the field. Before, they were dropped: the answer had
// EphemeralStorage nil, Architectures [x86_64] and TracingConfig nil.
func TestCreateFunctionKeepsStorageArchitectureAndTracing(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	in := func(name string) *lambda.CreateFunctionInput {
		return &lambda.CreateFunctionInput{FunctionName: aws.String(name), Role: aws.String("r"), Runtime: "runnel",
			Handler: aws.String("lambdatest-color"), Code: &ltypes.FunctionCode{}}
	}
	cf := in("extras")
	cf.EphemeralStorage = &ltypes.EphemeralStorage{Size: aws.Int32(2048)}
	cf.Architectures = []ltypes.Architecture{ltypes.ArchitectureArm64}
	cf.TracingConfig = &ltypes.TracingConfig{Mode: ltypes.TracingModeActive}
	out := lambdaMust(lc.CreateFunction(ctx, cf))
	g := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("extras")}))
	for what, c := range map[string]*ltypes.EphemeralStorage{"CreateFunction": out.EphemeralStorage, "GetFunctionConfiguration": g.EphemeralStorage} {
		if c == nil || aws.ToInt32(c.Size) != 2048 {
			t.Errorf("%s EphemeralStorage %+v, want Size 2048", what, c)
		}
	}
	if !slices.Equal(out.Architectures, []ltypes.Architecture{"arm64"}) || !slices.Equal(g.Architectures, []ltypes.Architecture{"arm64"}) {
		t.Errorf("Architectures %v / %v, want [arm64]", out.Architectures, g.Architectures)
	}
	if out.TracingConfig == nil || out.TracingConfig.Mode != "Active" || g.TracingConfig == nil || g.TracingConfig.Mode != "Active" {
		t.Errorf("TracingConfig %+v / %+v, want Mode Active", out.TracingConfig, g.TracingConfig)
	}
	u := lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("extras"),
		EphemeralStorage: &ltypes.EphemeralStorage{Size: aws.Int32(10240)}, TracingConfig: &ltypes.TracingConfig{Mode: ltypes.TracingModePassThrough}}))
	if aws.ToInt32(u.EphemeralStorage.Size) != 10240 || u.TracingConfig.Mode != "PassThrough" || !slices.Equal(u.Architectures, []ltypes.Architecture{"arm64"}) {
		t.Errorf("after the update: %+v %+v %v", u.EphemeralStorage, u.TracingConfig, u.Architectures)
	}
	d := lambdaMust(lc.CreateFunction(ctx, in("defaults")))
	if aws.ToInt32(d.EphemeralStorage.Size) != 512 || !slices.Equal(d.Architectures, []ltypes.Architecture{"x86_64"}) || d.TracingConfig.Mode != "PassThrough" {
		t.Errorf("defaults: %+v %v %+v, want 512, [x86_64], PassThrough", d.EphemeralStorage, d.Architectures, d.TracingConfig)
	}

	// Out of the model's range or enum: ValidationException (as Lambda's
	// front end answers); else InvalidParameterValueException; either names
	// the field.
	bad := map[string]func(*lambda.CreateFunctionInput){
		"ephemeralstorage.size": func(c *lambda.CreateFunctionInput) {
			c.EphemeralStorage = &ltypes.EphemeralStorage{Size: aws.Int32(511)}
		},
		"architectures":      func(c *lambda.CreateFunctionInput) { c.Architectures = []ltypes.Architecture{"x86_64", "arm64"} },
		"tracingconfig.mode": func(c *lambda.CreateFunctionInput) { c.TracingConfig = &ltypes.TracingConfig{Mode: "Sometimes"} },
	}
	for field, set := range bad {
		c := in("bad")
		set(c)
		_, err := lc.CreateFunction(ctx, c)
		var ae smithy.APIError
		if !errors.As(err, &ae) || (ae.ErrorCode() != "ValidationException" && ae.ErrorCode() != "InvalidParameterValueException") ||
			!strings.Contains(strings.ToLower(ae.ErrorMessage()), field) {
			t.Errorf("bad %s: %v, want a ValidationException or InvalidParameterValueException naming it", field, err)
		}
	}
}

// GetAccountSettings (GET /2016-08-19/account-settings) answers the
// account's limits and usage (API_GetAccountSettings): AccountLimit with
// ConcurrentExecutions 1000 and UnreservedConcurrentExecutions 1000 minus
// the reservations, and the code size limits; AccountUsage with
// FunctionCount and the stored code's TotalCodeSize. Before, the
// operation was not served.
func TestGetAccountSettingsReportsLimitsAndUsage(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	createColor(t, lc, "one", "red")
	createColor(t, lc, "two", "blue")
	lambdaMust(lc.PutFunctionConcurrency(ctx, &lambda.PutFunctionConcurrencyInput{FunctionName: aws.String("two"), ReservedConcurrentExecutions: aws.Int32(150)}))
	zip := zipFiles(t, map[string]string{"python/x.py": "X = 1\n"})
	lambdaMust(lc.PublishLayerVersion(ctx, &lambda.PublishLayerVersionInput{LayerName: aws.String("l"), Content: &ltypes.LayerVersionContentInput{ZipFile: zip}}))
	s, err := lc.GetAccountSettings(ctx, &lambda.GetAccountSettingsInput{})
	if err != nil {
		var nf *ltypes.ResourceNotFoundException
		t.Fatalf("GetAccountSettings: %v (not found: %v)", err, errors.As(err, &nf))
	}
	l, u := s.AccountLimit, s.AccountUsage
	if l.ConcurrentExecutions != 1000 || aws.ToInt32(l.UnreservedConcurrentExecutions) != 850 ||
		l.CodeSizeUnzipped != 262144000 || l.CodeSizeZipped != 52428800 || l.TotalCodeSize != 80530636800 {
		t.Errorf("AccountLimit %+v", *l)
	}
	if u.FunctionCount != 2 || u.TotalCodeSize != int64(len(zip)) {
		t.Errorf("AccountUsage %+v, want FunctionCount 2 and TotalCodeSize %d (the layer's zip)", *u, len(zip))
	}
}
