package awsapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/runnel-dev/runnel/awsapi"
)

// limitsNested wraps a string leaf in n single-key maps.
func limitsNested(n int) types.AttributeValue {
	var v types.AttributeValue = ddbS("leaf")
	for range n {
		v = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"n": v}}
	}
	return v
}

// wantExactDDBErr fails unless err is a ValidationException whose
// message is exactly msg.
func wantExactDDBErr(t *testing.T, what string, err error, msg string) {
	t.Helper()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ValidationException" || ae.ErrorMessage() != msg {
		t.Errorf("%s: got %v; want ValidationException %q", what, err, msg)
	}
}

// TestDynamoDBNestingAndExpressionLimitsOverTheWire: the limits of the
// Constraints page as an SDK client meets them. An item nests at most 32
// levels (a value inside 31 maps stored, inside 32 refused with "1
// validation error detected: Nesting Levels have exceeded supported
// limits: Attributes in the item have nested levels beyond supported
// limit", recorded against AWS); an expression is at most 4096 bytes
// ("Invalid ConditionExpression: Expression size has exceeded the
// maximum allowed size; expression size: 4097"); a placeholder at most
// 255 bytes, refused before the expression is parsed. Before, the deep
// item was stored (and made the table's stream answer 500), and any
// expression or placeholder length was taken.
func TestDynamoDBNestingAndExpressionLimitsOverTheWire(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	createOrders(t, c, "limits")
	put := func(n int) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("limits"),
			Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(n), "data": limitsNested(n)}})
		return err
	}
	if err := put(31); err != nil {
		t.Errorf("PutItem of a value inside 31 maps: %v; want it stored", err)
	}
	wantExactDDBErr(t, "PutItem inside 32 maps", put(32),
		"1 validation error detected: Nesting Levels have exceeded supported limits: Attributes in the item have nested levels beyond supported limit")

	cond := func(name string) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("limits"),
			Item:                      map[string]types.AttributeValue{"pk": ddbS("b"), "sk": ddbN(1)},
			ConditionExpression:       aws.String("attribute_not_exists(" + name + ")"),
			ExpressionAttributeValues: nil})
		return err
	}
	fill := 4096 - len("attribute_not_exists()")
	if err := cond(strings.Repeat("a", fill)); err != nil {
		t.Errorf("a 4096-byte ConditionExpression: %v; want it taken", err)
	}
	wantExactDDBErr(t, "a 4097-byte ConditionExpression", cond(strings.Repeat("a", fill+1)),
		"Invalid ConditionExpression: Expression size has exceeded the maximum allowed size; expression size: 4097")

	long := "#" + strings.Repeat("n", 255)
	_, err := c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("limits"), KeyConditionExpression: aws.String(long + " = :p"),
		ExpressionAttributeNames:  map[string]string{long: "pk"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbS("a")}})
	wantExactDDBErr(t, "a 256-byte #name", err,
		"ExpressionAttributeNames contains invalid key: The expression attribute map contains a key that is too long; size of key: 256")
}
