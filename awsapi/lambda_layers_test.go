package awsapi_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"
)

// A Python function imports a module from its layer, unpacked into its
// /opt (python/ on PYTHONPATH, as Lambda puts /opt/python); the layer
// APIs answer in AWS's shapes.
func TestLambdaLayers(t *testing.T) {
	ctx, lc := startPython(t)
	lv := lambdaMust(lc.PublishLayerVersion(ctx, &lambda.PublishLayerVersionInput{LayerName: aws.String("greet"), Description: aws.String("hello"),
		Content: &ltypes.LayerVersionContentInput{ZipFile: zipFiles(t, map[string]string{"python/greet.py": "def hello(n):\n    return 'hello ' + n\n"})}}))
	if lv.Version != 1 || aws.ToString(lv.LayerVersionArn) != "arn:aws:lambda:us-east-1:000000000000:layer:greet:1" || lv.Content.CodeSize == 0 {
		t.Fatalf("PublishLayerVersion: %+v", lv)
	}
	code := zipFiles(t, map[string]string{"app.py": "import greet\ndef handler(event, context):\n    return greet.hello(event['n'])\n"})
	_, err := lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("layered"), Runtime: ltypes.RuntimePython312, Handler: aws.String("app.handler"),
		Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: code}, Layers: []string{"arn:aws:lambda:us-east-1:000000000000:layer:greet:9"}})
	wantLambdaErr[*ltypes.InvalidParameterValueException](t, err, "Layer version arn:aws:lambda:us-east-1:000000000000:layer:greet:9 does not exist.")
	cf := lambdaMust(lc.CreateFunction(ctx, &lambda.CreateFunctionInput{FunctionName: aws.String("layered"), Runtime: ltypes.RuntimePython312, Handler: aws.String("app.handler"),
		Role: aws.String("r"), Code: &ltypes.FunctionCode{ZipFile: code}, Layers: []string{aws.ToString(lv.LayerVersionArn)},
		Timeout: aws.Int32(60)})) // a cold Python start on a loaded machine can pass the 3 s default
	if len(cf.Layers) != 1 || aws.ToString(cf.Layers[0].Arn) != aws.ToString(lv.LayerVersionArn) || cf.Layers[0].CodeSize != lv.Content.CodeSize {
		t.Fatalf("CreateFunction Layers: %+v", cf.Layers)
	}
	out := lambdaMust(lc.Invoke(ctx, &lambda.InvokeInput{FunctionName: aws.String("layered"), Payload: []byte(`{"n":"layer"}`)}))
	if out.FunctionError != nil || string(out.Payload) != `"hello layer"` {
		t.Fatalf("Invoke of a function importing its layer's module: %v %s", aws.ToString(out.FunctionError), out.Payload)
	}
	lambdaMust(lc.PublishLayerVersion(ctx, &lambda.PublishLayerVersionInput{LayerName: aws.String("greet"),
		Content: &ltypes.LayerVersionContentInput{ZipFile: zipFiles(t, map[string]string{"python/greet.py": "def hello(n):\n    return 'hi ' + n\n"})}}))
	list := lambdaMust(lc.ListLayerVersions(ctx, &lambda.ListLayerVersionsInput{LayerName: aws.String("greet")}))
	if len(list.LayerVersions) != 2 || list.LayerVersions[0].Version != 2 {
		t.Fatalf("ListLayerVersions: %+v", list.LayerVersions)
	}
	if ls := lambdaMust(lc.ListLayers(ctx, &lambda.ListLayersInput{})); len(ls.Layers) != 1 || ls.Layers[0].LatestMatchingVersion.Version != 2 {
		t.Fatalf("ListLayers: %+v", ls.Layers)
	}
	lambdaMust(lc.DeleteLayerVersion(ctx, &lambda.DeleteLayerVersionInput{LayerName: aws.String("greet"), VersionNumber: aws.Int64(1)}))
	_, err = lc.GetLayerVersion(ctx, &lambda.GetLayerVersionInput{LayerName: aws.String("greet"), VersionNumber: aws.Int64(1)})
	wantLambdaErr[*ltypes.ResourceNotFoundException](t, err, "does not exist")
	if g := lambdaMust(lc.GetLayerVersion(ctx, &lambda.GetLayerVersionInput{LayerName: aws.String("greet"), VersionNumber: aws.Int64(2)})); aws.ToString(g.Description) != "" || g.Version != 2 {
		t.Fatalf("GetLayerVersion 2: %+v", g)
	}
}
