package awsapi_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/sdkhttp"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestARequestRunnelDoesNotServeIsNeverASuccess: a call to an operation
// runnel does not serve fails, whatever its protocol. Old behaviour: a
// REST call (restJson1: the operation in its method and path, no
// X-Amz-Target) to a path no service here routes fell through to
// Kinesis's legacy JSON 1.0 answer, HTTP 200 {"Output":{"__type":
// "...UnknownOperationException"}}, which every SDK reads as a success:
// Scheduler's TagResource (served since), Lambda's PutFunctionRecursionConfig,
// CreateCodeSigningConfig and PutRuntimeManagementConfig, SESv2's
// SendEmail (from a function whose AWS_ENDPOINT_URL is runnel) all
// "succeeded". Rule: a REST path that matches no operation is HTTP 404
// UnknownOperationException in the X-Amzn-ErrorType header, as
// smithy-rs's restJson1 router answers it
// (aws-smithy-http-server/src/protocol/rest_json_1/router.rs); a JSON
// target of a service runnel does not serve is a 4xx too. The legacy
// 200 stays Kinesis's (TestKinesisLegacyJSON).
func TestARequestRunnelDoesNotServeIsNeverASuccess(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ep := awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()})
	t.Cleanup(ep.Close)
	srv := httptest.NewServer(ep)
	t.Cleanup(srv.Close)
	cfg := aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", ""),
		BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1}
	ctx := context.Background()
	lc := lambda.NewFromConfig(cfg)
	for _, tt := range []struct {
		name string
		call func() error
	}{
		{"Lambda PutFunctionRecursionConfig", func() error {
			_, err := lc.PutFunctionRecursionConfig(ctx, &lambda.PutFunctionRecursionConfigInput{FunctionName: aws.String("f"), RecursiveLoop: ltypes.RecursiveLoopAllow})
			return err
		}},
		{"Lambda CreateCodeSigningConfig", func() error {
			_, err := lc.CreateCodeSigningConfig(ctx, &lambda.CreateCodeSigningConfigInput{AllowedPublishers: &ltypes.AllowedPublishers{
				SigningProfileVersionArns: []string{"arn:aws:signer:us-east-1:000000000000:/signing-profiles/p/v"}}})
			return err
		}},
		{"Lambda PutRuntimeManagementConfig", func() error {
			_, err := lc.PutRuntimeManagementConfig(ctx, &lambda.PutRuntimeManagementConfigInput{FunctionName: aws.String("f"), UpdateRuntimeOn: ltypes.UpdateRuntimeOnAuto})
			return err
		}},
	} {
		err := tt.call()
		var re *awshttp.ResponseError
		if err == nil || !errors.As(err, &re) || re.HTTPStatusCode() != 404 || errCode(err) != "UnknownOperationException" {
			t.Errorf("%s: %v, want HTTP 404 UnknownOperationException", tt.name, err)
		}
	}

	// SESv2 SendEmail (no SESv2 client in go.mod: the SDK's signer, as the
	// client signs it) and a JSON target of a service runnel does not
	// serve, in the content type of Kinesis's legacy protocol.
	for _, tt := range []struct {
		name, path, service string
		header              map[string]string
		want                int
	}{
		{"SESv2 SendEmail", "/v2/email/outbound-emails", "ses", map[string]string{"Content-Type": "application/json"}, 404},
		{"Secrets Manager GetSecretValue", "/", "secretsmanager", map[string]string{"Content-Type": "application/json", "X-Amz-Target": "secretsmanager.GetSecretValue"}, 400},
	} {
		body := []byte(`{"FromEmailAddress":"a@example.com","Destination":{"ToAddresses":["b@example.com"]},"Content":{"Simple":{"Subject":{"Data":"s"},"Body":{"Text":{"Data":"b"}}}}}`)
		req, _ := http.NewRequest("POST", srv.URL+tt.path, bytes.NewReader(body))
		for k, v := range tt.header {
			req.Header.Set(k, v)
		}
		sum := sha256.Sum256(body)
		if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}, req, hex.EncodeToString(sum[:]), tt.service, "us-east-1", time.Now()); err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tt.want || !bytes.Contains(append(b, resp.Header.Get("X-Amzn-ErrorType")...), []byte("UnknownOperationException")) {
			t.Errorf("%s: %d %s, want %d UnknownOperationException", tt.name, resp.StatusCode, b, tt.want)
		}
	}
}
