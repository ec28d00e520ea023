package awsapi_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// msgProtected is DynamoDB's refusal of DeleteTable on a protected table.
// Source: not in AWS's API reference; the text as real DynamoDB answered
// it, quoted in aws-bench/aws-bench#41 (a table created on AWS with
// DeletionProtectionEnabled) and nubo-db/dynoxide#46 (an emulator's issue
// comparing its answer with DynamoDB's), as a ValidationException.
const msgProtected = "Resource cannot be deleted as it is currently protected against deletion. Disable deletion protection first."

func createProtected(t *testing.T, c *dynamodb.Client, name string, protect *bool) *types.TableDescription {
	t.Helper()
	out, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{TableName: aws.String(name),
		KeySchema:                 []types.KeySchemaElement{keyElem("pk", types.KeyTypeHash)},
		AttributeDefinitions:      []types.AttributeDefinition{attrDef("pk", "S")},
		BillingMode:               types.BillingModePayPerRequest,
		DeletionProtectionEnabled: protect})
	if err != nil {
		t.Fatal(err)
	}
	return out.TableDescription
}

func protectedFlag(t *testing.T, c *dynamodb.Client, name string) bool {
	t.Helper()
	d, err := c.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if d.Table.DeletionProtectionEnabled == nil {
		t.Fatal("DescribeTable has no DeletionProtectionEnabled")
	}
	return *d.Table.DeletionProtectionEnabled
}

// TestADeletionProtectedTableCannotBeDeleted: DeletionProtectionEnabled
// (CreateTable, UpdateTable; default false) is described by DescribeTable
// and, while true, makes DeleteTable fail: "Indicates whether deletion
// protection is to be enabled (true) or disabled (false) on the table"
// (API_CreateTable, API_UpdateTable; the Developer Guide's "Using deletion
// protection": the table cannot be deleted while it is on). The refusal's
// text is msgProtected's. Before, the flag was accepted and ignored:
// described false, and the "protected" table was deleted.
func TestADeletionProtectedTableCannotBeDeleted(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	created := createProtected(t, c, "prot", aws.Bool(true))
	if created.DeletionProtectionEnabled == nil || !*created.DeletionProtectionEnabled {
		t.Fatalf("CreateTable answers DeletionProtectionEnabled %v", created.DeletionProtectionEnabled)
	}
	if !protectedFlag(t, c, "prot") {
		t.Fatal("DescribeTable: DeletionProtectionEnabled false for a table created protected")
	}
	_, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("prot")})
	wantDDBErr(t, err, "ValidationException", msgProtected)
	if !protectedFlag(t, c, "prot") { // still there, as it was
		t.Fatal("the refused delete changed the table")
	}

	// Turned off by UpdateTable (alone: a change on its own), then the
	// delete goes through.
	u, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("prot"), DeletionProtectionEnabled: aws.Bool(false)})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToBool(u.TableDescription.DeletionProtectionEnabled) {
		t.Fatal("UpdateTable answers DeletionProtectionEnabled true after turning it off")
	}
	if _, err := c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("prot")}); err != nil {
		t.Fatal("delete after protection was turned off:", err)
	}

	// A table created unprotected (the default), protected by UpdateTable.
	if d := createProtected(t, c, "later", nil); aws.ToBool(d.DeletionProtectionEnabled) {
		t.Fatal("a table created without the flag is protected")
	}
	u, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("later"), DeletionProtectionEnabled: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	if !aws.ToBool(u.TableDescription.DeletionProtectionEnabled) {
		t.Fatal("UpdateTable answers DeletionProtectionEnabled false after turning it on")
	}
	_, err = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("later")})
	wantDDBErr(t, err, "ValidationException", msgProtected)
}

// TestDeletionProtectionIsKeptAcrossARestart: the flag is part of the
// table's stored settings (as every setting DescribeTable shows), so a
// table protected before a restart is protected after it. Before, it was
// never stored.
func TestDeletionProtectionIsKeptAcrossARestart(t *testing.T) {
	dir := t.TempDir()
	e := startEnv(t, awsapi.Options{}, testenv.Options{Dir: dir})
	createProtected(t, e.ddb(), "prot", aws.Bool(true))
	e.rn.Close()
	e.srv.Close()

	e = startEnv(t, awsapi.Options{}, testenv.Options{Dir: dir})
	c := e.ddb()
	if !protectedFlag(t, c, "prot") {
		t.Fatal("after a restart: DeletionProtectionEnabled false")
	}
	_, err := c.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String("prot")})
	wantDDBErr(t, err, "ValidationException", msgProtected)
}

// TestContinuousBackupsAreEnabledFromCreation: DescribeContinuousBackups
// answers ContinuousBackupsStatus ENABLED ("Continuous backups are ENABLED
// on all tables at table creation", API_DescribeContinuousBackups) and
// PointInTimeRecoveryStatus DISABLED (runnel has no point-in-time
// recovery); a missing table is TableNotFoundException. Before, runnel
// answered ContinuousBackupsStatus DISABLED.
func TestContinuousBackupsAreEnabledFromCreation(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	createProtected(t, c, "plain", nil)
	out, err := c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("plain")})
	if err != nil {
		t.Fatal(err)
	}
	b := out.ContinuousBackupsDescription
	if b.ContinuousBackupsStatus != types.ContinuousBackupsStatusEnabled {
		t.Errorf("ContinuousBackupsStatus %q, want ENABLED", b.ContinuousBackupsStatus)
	}
	if b.PointInTimeRecoveryDescription == nil || b.PointInTimeRecoveryDescription.PointInTimeRecoveryStatus != types.PointInTimeRecoveryStatusDisabled {
		t.Errorf("PointInTimeRecoveryDescription %+v, want DISABLED", b.PointInTimeRecoveryDescription)
	}
	_, err = c.DescribeContinuousBackups(ctx, &dynamodb.DescribeContinuousBackupsInput{TableName: aws.String("nosuch")})
	var tnf *types.TableNotFoundException
	if !errors.As(err, &tnf) {
		t.Errorf("DescribeContinuousBackups of a missing table: %v", err)
	}
}
