package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	ltypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/runnel-dev/runnel/internal/testenv"
)

// A Lambda list's NextMarker names the last item of its page (opaque), so
// the next page starts after that item even when items were deleted
// between the calls (API_ListVersionsByFunction: Marker "Specify the
// pagination token that's returned by a previous request to retrieve the
// next page of results"; as SNS's tokens, TestSNSListPagesResumeAfterTheirLastItem).
// A cleanup script that deletes the versions of each page it reads then
// reaches them all. Before, a marker was a position: versions 1-5 with
// MaxItems 3 gave [$LATEST 1 2] and NextMarker "3"; after deleting 1 and
// 2 the next page was [5], and 3 and 4 were never listed.
func TestAListMarkerNamesTheLastItemReturned(t *testing.T) {
	ctx := context.Background()
	rn := testenv.Start(t, testenv.Options{})
	lc, _ := lambdaEndpoint(t, rn)
	createColor(t, lc, "pg", "c0")
	for i := 1; i <= 5; i++ {
		setColor(t, lc, "pg", fmt.Sprintf("c%d", i))
		lambdaMust(lc.PublishVersion(ctx, &lambda.PublishVersionInput{FunctionName: aws.String("pg")}))
	}
	names := func(vs []ltypes.FunctionConfiguration) (out []string) {
		for _, v := range vs {
			out = append(out, aws.ToString(v.Version))
		}
		return
	}
	p1 := lambdaMust(lc.ListVersionsByFunction(ctx, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String("pg"), MaxItems: aws.Int32(3)}))
	if got := names(p1.Versions); !slices.Equal(got, []string{"$LATEST", "1", "2"}) || p1.NextMarker == nil {
		t.Fatalf("page 1: %v NextMarker %v", got, aws.ToString(p1.NextMarker))
	}
	for _, v := range []string{"1", "2"} {
		lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("pg"), Qualifier: aws.String(v)}))
	}
	p2 := lambdaMust(lc.ListVersionsByFunction(ctx, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String("pg"), MaxItems: aws.Int32(2), Marker: p1.NextMarker}))
	if got := names(p2.Versions); !slices.Equal(got, []string{"3", "4"}) || p2.NextMarker == nil {
		t.Fatalf("page 2 after deleting versions 1 and 2: %v NextMarker %v, want [3 4] and a marker", got, aws.ToString(p2.NextMarker))
	}
	lambdaMust(lc.DeleteFunction(ctx, &lambda.DeleteFunctionInput{FunctionName: aws.String("pg"), Qualifier: aws.String("4")}))
	p3 := lambdaMust(lc.ListVersionsByFunction(ctx, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String("pg"), MaxItems: aws.Int32(2), Marker: p2.NextMarker}))
	if got := names(p3.Versions); !slices.Equal(got, []string{"5"}) || p3.NextMarker != nil {
		t.Fatalf("page 3 after deleting the marker's own version 4: %v NextMarker %v, want [5] and none", got, aws.ToString(p3.NextMarker))
	}
	var inv *ltypes.InvalidParameterValueException
	if _, err := lc.ListVersionsByFunction(ctx, &lambda.ListVersionsByFunctionInput{FunctionName: aws.String("pg"), Marker: aws.String("3")}); !errors.As(err, &inv) {
		t.Fatalf("a marker this endpoint did not return: %v, want InvalidParameterValueException", err)
	}
}
