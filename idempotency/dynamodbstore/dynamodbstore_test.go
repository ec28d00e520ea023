package dynamodbstore_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/idempotency"
	"github.com/runnel-dev/runnel/idempotency/dynamodbstore"
	"github.com/runnel-dev/runnel/idempotency/storetest"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// client starts a runnel with its AWS endpoint and returns a DynamoDB
// client on it.
func client(t *testing.T, clock clockwork.Clock, attempts int) *dynamodb.Client {
	t.Helper()
	rn := testenv.Start(t, testenv.Options{Clock: clock})
	srv := httptest.NewServer(awsapi.NewEndpoint(rn, awsapi.Options{}, awsapi.LambdaOptions{WorkDir: t.TempDir()}))
	t.Cleanup(srv.Close)
	return dynamodb.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(),
		Region:           "us-east-1",
		Credentials:      credentials.NewStaticCredentialsProvider("a", "b", ""),
		BaseEndpoint:     aws.String(srv.URL),
		RetryMaxAttempts: attempts,
	})
}

// The same suite as the runnel-table store, through aws-sdk-go-v2 and
// runnel's DynamoDB HTTP API.
func TestConformanceThroughRunnelEndpoint(t *testing.T) {
	probe := client(t, clockwork.NewRealClock(), 1)
	if _, err := dynamodbstore.CreateTable(context.Background(), probe, "idempotency-probe"); err != nil {
		// awsapi serves DynamoDB: a failure here is a regression, not a
		// reason to skip the suite.
		t.Fatalf("runnel's AWS endpoint refused the store's table (CreateTable, UpdateTimeToLive): %v", err)
	}
	var n atomic.Int32
	storetest.Run(t, storetest.Features{ReturnsExisting: true}, func(t *testing.T, clock clockwork.Clock) idempotency.Store {
		s, err := dynamodbstore.CreateTable(context.Background(), client(t, clock, 0), fmt.Sprintf("idempotency-%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
