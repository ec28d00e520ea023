package awsapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A deleted layer version stays with the functions that use it: "To avoid
// breaking functions, a copy of the version remains in Lambda until no
// functions refer to it" (API_DeleteLayerVersion); "Your functions can
// continue to use any layer version that you've already added, even after
// that layer version has been deleted ... However, you cannot create a
// new function that uses a deleted layer version" (adding-layers.html).
// It is no longer
// gettable, listed, or usable by a function that does not use it yet; the
// functions using it keep being updated and published, and report its
// CodeSize; its content goes once no function (or version) refers to it.
// Before, the content went at once: UpdateFunctionConfiguration,
// UpdateFunctionCode and PublishVersion of such a function failed with
// "Layer version ...greet:1 does not exist.", and GetFunctionConfiguration
// showed the layer with CodeSize 0.
func TestADeletedLayerVersionStaysWithTheFunctionsUsingIt(t *testing.T) {
	lifecycleNeedPython(t)
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	layerZip := zipFiles(t, map[string]string{"python/greet.py": "def hello(n):\n    return 'hello ' + n\n"})
	lv := lambdaMust(lc.PublishLayerVersion(ctx, &lambda.PublishLayerVersionInput{LayerName: aws.String("greet"),
		Content: &ltypes.LayerVersionContentInput{ZipFile: layerZip}}))
	arn := aws.ToString(lv.LayerVersionArn)
	code := zipFiles(t, map[string]string{"app.py": "import greet\ndef handler(event, context):\n    return greet.hello('x')\n"})
	lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("layered"), Runtime: ltypes.RuntimePython312, Handler: aws.String("app.handler"),
		Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: code}, Layers: []string{arn}, Timeout: aws.Int32(30)}))
	lambdaMust(lc.DeleteLayerVersion(ctx, &lambda.DeleteLayerVersionInput{LayerName: aws.String("greet"), VersionNumber: aws.Int64(1)}))

	var nf *ltypes.ResourceNotFoundException
	if _, err := lc.GetLayerVersion(ctx, &lambda.GetLayerVersionInput{LayerName: aws.String("greet"), VersionNumber: aws.Int64(1)}); !errors.As(err, &nf) {
		t.Fatalf("GetLayerVersion of the deleted version: %v, want ResourceNotFoundException", err)
	}
	if l := lambdaMust(lc.ListLayerVersions(ctx, &lambda.ListLayerVersionsInput{LayerName: aws.String("greet")})); len(l.LayerVersions) != 0 {
		t.Fatalf("ListLayerVersions lists %d versions after the delete", len(l.LayerVersions))
	}
	lambdaMust(lc.UpdateFunctionConfiguration(ctx, &lambda.UpdateFunctionConfigurationInput{FunctionName: aws.String("layered"), Timeout: aws.Int32(60)}))
	lambdaMust(lc.UpdateFunctionCode(ctx, &lambda.UpdateFunctionCodeInput{FunctionName: aws.String("layered"), ZipFile: code}))
	pv := lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("layered")}))
	g := lambdaMust(lc.GetFunctionConfiguration(ctx, &lambda.GetFunctionConfigurationInput{FunctionName: aws.String("layered")}))
	if len(g.Layers) != 1 || g.Layers[0].CodeSize != int64(len(layerZip)) {
		t.Fatalf("Layers %+v, want %s with CodeSize %d", g.Layers, arn, len(layerZip))
	}
	for _, q := range []string{"", aws.ToString(pv.Version)} {
		if out, fe := lifecycleInvoke(t, lc, "layered", q, "{}"); out != `"hello x"` || fe != "" {
			t.Fatalf("invoke %q: %s %s", q, out, fe)
		}
	}
	var inv *ltypes.InvalidParameterValueException
	_, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("newcomer"), Runtime: ltypes.RuntimePython312, Handler: aws.String("app.handler"),
		Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: code}, Layers: []string{arn}})
	if !errors.As(err, &inv) {
		t.Fatalf("CreateFunction with the deleted layer version: %v, want InvalidParameterValueException", err)
	}

	// Once the function and its version are gone, so is the content.
	objs, err := rn.Engine.EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: awsapi.LayerBucket, Storage: jetstream.FileStorage})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := objs.GetInfo(ctx, "greet:1"); err != nil {
		t.Fatalf("the content of the deleted version used by a function: %v", err)
	}
	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("layered")}))
	if _, err := objs.GetInfo(ctx, "greet:1"); !errors.Is(err, jetstream.ErrObjectNotFound) {
		t.Fatalf("the content of the deleted version once no function uses it: %v, want ErrObjectNotFound", err)
	}
}
