package awsapi_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func keyElem(name string, kt types.KeyType) types.KeySchemaElement {
	return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: kt}
}

func attrDef(name string, t types.ScalarAttributeType) types.AttributeDefinition {
	return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: t}
}

// TestDynamoDBSecondaryIndexes: a table with a GSI and an LSI through the
// SDK: described with IndexArn, ItemCount and IndexStatus, queried and
// scanned by IndexName with its projection, ConsistentRead refused on the
// GSI; a GSI added by UpdateTable becomes ACTIVE with the items
// backfilled, and is deleted.
func TestDynamoDBSecondaryIndexes(t *testing.T) {
	c, ctx := ddbEndpoint(t)
	out, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("games"),
		KeySchema:            []types.KeySchemaElement{keyElem("player", types.KeyTypeHash), keyElem("game", types.KeyTypeRange)},
		AttributeDefinitions: []types.AttributeDefinition{attrDef("player", "S"), attrDef("game", "S"), attrDef("title", "S"), attrDef("score", "N"), attrDef("at", "N")},
		BillingMode:          types.BillingModePayPerRequest,
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{IndexName: aws.String("byTitle"),
			KeySchema:  []types.KeySchemaElement{keyElem("title", types.KeyTypeHash), keyElem("score", types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{"wins"}}}},
		LocalSecondaryIndexes: []types.LocalSecondaryIndex{{IndexName: aws.String("byTime"),
			KeySchema:  []types.KeySchemaElement{keyElem("player", types.KeyTypeHash), keyElem("at", types.KeyTypeRange)},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	td := out.TableDescription
	if g := td.GlobalSecondaryIndexes; len(g) != 1 || g[0].IndexStatus != types.IndexStatusActive || aws.ToString(g[0].IndexArn) != aws.ToString(td.TableArn)+"/index/byTitle" ||
		g[0].Projection.ProjectionType != types.ProjectionTypeInclude || len(td.LocalSecondaryIndexes) != 1 {
		t.Fatalf("CreateTable: %+v", td)
	}
	for i := range 6 {
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("games"), Item: map[string]types.AttributeValue{
			"player": ddbS(fmt.Sprint("p", i%2)), "game": ddbS(fmt.Sprint("g", i)), "title": ddbS("chess"), "score": ddbN(i * 10), "at": ddbN(100 - i), "wins": ddbN(i), "secret": ddbS("s")}}))
	}
	q := must(c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("games"), IndexName: aws.String("byTitle"),
		KeyConditionExpression: aws.String("title = :t AND score >= :s"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": ddbS("chess"), ":s": ddbN(20)},
		ScanIndexForward: aws.Bool(false), Limit: aws.Int32(3)}))
	if q.Count != 3 || attrN(q.Items[0], "score") != "50" || attrN(q.Items[0], "wins") != "5" || q.Items[0]["secret"] != nil || len(q.LastEvaluatedKey) != 4 {
		t.Fatalf("Query byTitle: %v, LastEvaluatedKey %v", q.Items, q.LastEvaluatedKey)
	}
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("games"), IndexName: aws.String("byTitle"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("title = :t"), ExpressionAttributeValues: map[string]types.AttributeValue{":t": ddbS("chess")}})
	wantDDBErr(t, err, "ValidationException", "Consistent reads are not supported on global secondary indexes")
	l := must(c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("games"), IndexName: aws.String("byTime"), ConsistentRead: aws.Bool(true),
		KeyConditionExpression: aws.String("player = :p"), ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbS("p0")}}))
	if l.Count != 3 || attrN(l.Items[0], "at") != "96" || len(l.Items[0]) != 3 {
		t.Fatalf("Query byTime: %v", l.Items)
	}
	s := must(c.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String("games"), IndexName: aws.String("byTitle"), Select: types.SelectCount}))
	if s.Count != 6 {
		t.Fatalf("Scan byTitle: %d", s.Count)
	}

	// A stream and an index in one UpdateTable: both are made.
	u := must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("games"),
		StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly},
		AttributeDefinitions: []types.AttributeDefinition{attrDef("wins", "N")},
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{IndexName: aws.String("byWins"),
			KeySchema: []types.KeySchemaElement{keyElem("wins", types.KeyTypeHash)}, Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}},
	}))
	var added *types.GlobalSecondaryIndexDescription
	for i, g := range u.TableDescription.GlobalSecondaryIndexes {
		if aws.ToString(g.IndexName) == "byWins" {
			added = &u.TableDescription.GlobalSecondaryIndexes[i]
		}
	}
	if added == nil || added.IndexStatus != types.IndexStatusCreating || added.Backfilling == nil || u.TableDescription.LatestStreamArn == nil {
		t.Fatalf("UpdateTable: %+v", u.TableDescription.GlobalSecondaryIndexes)
	}
	testenv.Eventually(t, 10*time.Second, "byWins ACTIVE", func() bool {
		d := must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("games")})).Table
		return len(d.GlobalSecondaryIndexes) == 2 && d.GlobalSecondaryIndexes[1].IndexStatus == types.IndexStatusActive && aws.ToInt64(d.GlobalSecondaryIndexes[1].ItemCount) == 6
	})
	w := must(c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("games"), IndexName: aws.String("byWins"),
		KeyConditionExpression: aws.String("wins = :w"), ExpressionAttributeValues: map[string]types.AttributeValue{":w": ddbN(4)}}))
	if w.Count != 1 || attrS(w.Items[0], "secret") != "s" {
		t.Fatalf("Query byWins: %v", w.Items)
	}
	must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("games"),
		GlobalSecondaryIndexUpdates: []types.GlobalSecondaryIndexUpdate{{Delete: &types.DeleteGlobalSecondaryIndexAction{IndexName: aws.String("byWins")}}}}))
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: aws.String("games"), IndexName: aws.String("byWins"),
		KeyConditionExpression: aws.String("wins = :w"), ExpressionAttributeValues: map[string]types.AttributeValue{":w": ddbN(4)}})
	wantDDBErr(t, err, "ValidationException", "The table does not have the specified index: byWins")
}

// TestAnUpdateTableRefusedChangesNothing: UpdateTable makes every change
// it is asked for, or none. Before, the billing and stream changes were
// stored before the GSI change was checked: a request refused for its
// index kept its stream change (the corrected request then failed with
// "Table already has no enabled stream") or a switch to PROVISIONED.
func TestAnUpdateTableRefusedChangesNothing(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	createOrders(t, c, "upd")
	before := must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("upd")})).Table
	gsi := func(attr string) []types.GlobalSecondaryIndexUpdate {
		return []types.GlobalSecondaryIndexUpdate{{Create: &types.CreateGlobalSecondaryIndexAction{IndexName: aws.String("byG"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String(attr), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll}}}}
	}
	defs := []types.AttributeDefinition{{AttributeName: aws.String("g"), AttributeType: types.ScalarAttributeTypeS}}
	stream := &types.StreamSpecification{StreamEnabled: aws.Bool(false)} // "upd" has one on
	_, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("upd"), StreamSpecification: stream,
		AttributeDefinitions: defs, GlobalSecondaryIndexUpdates: gsi("undefined")})
	if errCode(err) != "ValidationException" {
		t.Fatalf("a GSI on an undefined attribute: %v", err)
	}
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("upd"), BillingMode: types.BillingModeProvisioned,
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)},
		AttributeDefinitions:  defs, GlobalSecondaryIndexUpdates: gsi("g")})
	if errCode(err) != "ValidationException" {
		t.Fatalf("a provisioned table's GSI without throughput: %v", err)
	}
	after := must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("upd")})).Table
	if !aws.ToBool(after.StreamSpecification.StreamEnabled) || aws.ToString(after.LatestStreamArn) != aws.ToString(before.LatestStreamArn) || len(after.GlobalSecondaryIndexes) != 0 ||
		after.BillingModeSummary == nil || after.BillingModeSummary.BillingMode != types.BillingModePayPerRequest {
		t.Fatalf("after two refused UpdateTable calls: stream %s (was %s), %d GSIs, billing %+v",
			aws.ToString(after.LatestStreamArn), aws.ToString(before.LatestStreamArn), len(after.GlobalSecondaryIndexes), after.BillingModeSummary)
	}
	// The corrected request passes whole.
	out := must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("upd"), StreamSpecification: stream,
		AttributeDefinitions: defs, GlobalSecondaryIndexUpdates: gsi("g")})).TableDescription
	if out.StreamSpecification == nil || aws.ToBool(out.StreamSpecification.StreamEnabled) || len(out.GlobalSecondaryIndexes) != 1 {
		t.Fatalf("the corrected request: %+v", out)
	}
}
