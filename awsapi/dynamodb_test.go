package awsapi_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runnel-dev/runnel/awsapi"
)

func (e *endpoint) ddb() *dynamodb.Client {
	return dynamodb.NewFromConfig(e.config("AKID", "secret"))
}

func ddbS(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func ddbN(n int) types.AttributeValue    { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }

// attrS returns the string attribute name of item ("" if absent).
func attrS(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func attrN(item map[string]types.AttributeValue, name string) string {
	if v, ok := item[name].(*types.AttributeValueMemberN); ok {
		return v.Value
	}
	return ""
}

// createOrders creates the table the DynamoDB tests use: pk (S) and sk
// (N), with a NEW_AND_OLD_IMAGES stream.
func createOrders(t *testing.T, c *dynamodb.Client, name string) *types.TableDescription {
	t.Helper()
	out, err := c.CreateTable(context.Background(), &dynamodb.CreateTableInput{
		TableName: aws.String(name),
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeN},
		},
		BillingMode:         types.BillingModePayPerRequest,
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	return out.TableDescription
}

func TestDynamoDBTables(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()

	td := createOrders(t, c, "orders")
	if td.TableStatus != types.TableStatusActive || aws.ToString(td.TableArn) != "arn:aws:dynamodb:us-east-1:000000000000:table/orders" ||
		!strings.HasPrefix(aws.ToString(td.LatestStreamArn), aws.ToString(td.TableArn)+"/stream/") {
		t.Fatalf("CreateTable: %+v", td)
	}
	if err := dynamodb.NewTableExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")}, 10*time.Second); err != nil {
		t.Fatalf("TableExistsWaiter: %v", err)
	}
	_, err := c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("orders"),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}}})
	var inUse *types.ResourceInUseException
	if !errors.As(err, &inUse) {
		t.Fatalf("CreateTable twice: %v", err)
	}
	_, err = c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("x!"),
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}}})
	if errCode(err) != "ValidationException" {
		t.Fatalf("CreateTable with a bad name: %v", err)
	}
	must(c.CreateTable(ctx, &dynamodb.CreateTableInput{TableName: aws.String("plain"),
		KeySchema:             []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
		AttributeDefinitions:  []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(5), WriteCapacityUnits: aws.Int64(5)}}))

	d := must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("orders")})).Table
	if d.TableStatus != types.TableStatusActive || len(d.KeySchema) != 2 || aws.ToString(d.KeySchema[1].AttributeName) != "sk" || d.KeySchema[1].KeyType != types.KeyTypeRange ||
		len(d.AttributeDefinitions) != 2 || d.AttributeDefinitions[1].AttributeType != types.ScalarAttributeTypeN || aws.ToInt64(d.ItemCount) != 0 ||
		d.StreamSpecification == nil || !aws.ToBool(d.StreamSpecification.StreamEnabled) || d.StreamSpecification.StreamViewType != types.StreamViewTypeNewAndOldImages ||
		aws.ToString(d.LatestStreamArn) != aws.ToString(td.LatestStreamArn) || aws.ToString(d.LatestStreamLabel) == "" ||
		d.BillingModeSummary == nil || d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest || d.ProvisionedThroughput == nil {
		t.Fatalf("DescribeTable: %+v", d)
	}
	if age := time.Since(aws.ToTime(d.CreationDateTime)); age < 0 || age > time.Minute {
		t.Fatalf("CreationDateTime %v", d.CreationDateTime)
	}
	_, err = c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("nope")})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("DescribeTable of a missing table: %v", err)
	}

	lt := must(c.ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}))
	if len(lt.TableNames) != 1 || lt.TableNames[0] != "orders" || aws.ToString(lt.LastEvaluatedTableName) != "orders" {
		t.Fatalf("ListTables: %+v", lt)
	}
	lt = must(c.ListTables(ctx, &dynamodb.ListTablesInput{ExclusiveStartTableName: lt.LastEvaluatedTableName}))
	if len(lt.TableNames) != 1 || lt.TableNames[0] != "plain" || lt.LastEvaluatedTableName != nil {
		t.Fatalf("ListTables page 2: %+v", lt)
	}

	// UpdateTable: nothing to do, ignored settings, the stream.
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("plain")})
	if errCode(err) != "ValidationException" {
		t.Fatalf("UpdateTable with nothing: %v", err)
	}
	must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("plain"), BillingMode: types.BillingModePayPerRequest}))
	ut := must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("plain"),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}}))
	if aws.ToString(ut.TableDescription.LatestStreamArn) == "" || ut.TableDescription.StreamSpecification.StreamViewType != types.StreamViewTypeKeysOnly {
		t.Fatalf("UpdateTable stream on: %+v", ut.TableDescription)
	}
	_, err = c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("plain"),
		StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeKeysOnly}})
	if errCode(err) != "ValidationException" {
		t.Fatalf("UpdateTable stream on twice: %v", err)
	}

	// TTL.
	if s := must(c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("orders")})).TimeToLiveDescription; s.TimeToLiveStatus != types.TimeToLiveStatusDisabled {
		t.Fatalf("DescribeTimeToLive before: %+v", s)
	}
	tl := must(c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("orders"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)}}))
	if aws.ToString(tl.TimeToLiveSpecification.AttributeName) != "expires" || !aws.ToBool(tl.TimeToLiveSpecification.Enabled) {
		t.Fatalf("UpdateTimeToLive: %+v", tl.TimeToLiveSpecification)
	}
	if s := must(c.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String("orders")})).TimeToLiveDescription; s.TimeToLiveStatus != types.TimeToLiveStatusEnabled || aws.ToString(s.AttributeName) != "expires" {
		t.Fatalf("DescribeTimeToLive after: %+v", s)
	}
	_, err = c.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String("orders"),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String("expires"), Enabled: aws.Bool(true)}})
	if errCode(err) != "ValidationException" {
		t.Fatalf("UpdateTimeToLive twice: %v", err)
	}

	// Delete, with the waiter.
	dt := must(c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("plain")}))
	if aws.ToString(dt.TableDescription.TableName) != "plain" {
		t.Fatalf("DeleteTable: %+v", dt.TableDescription)
	}
	if err := dynamodb.NewTableNotExistsWaiter(c).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("plain")}, 10*time.Second); err != nil {
		t.Fatalf("TableNotExistsWaiter: %v", err)
	}
	_, err = c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String("plain")})
	if !errors.As(err, &notFound) {
		t.Fatalf("DeleteTable twice: %v", err)
	}
	if n := must(c.ListTables(ctx, &dynamodb.ListTablesInput{})).TableNames; len(n) != 1 {
		t.Fatalf("ListTables after delete: %v", n)
	}
}

func TestDynamoDBItems(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	createOrders(t, c, "orders")
	tn := aws.String("orders")

	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{
		"pk": ddbS("a"), "sk": ddbN(1), "status": ddbS("new"), "qty": ddbN(2),
		"tags": &types.AttributeValueMemberSS{Value: []string{"x", "y"}},
		"blob": &types.AttributeValueMemberB{Value: []byte{0, 1, 255}},
		"m":    &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"ok": &types.AttributeValueMemberBOOL{Value: true}, "nil": &types.AttributeValueMemberNULL{Value: true}}},
		"l":    &types.AttributeValueMemberL{Value: []types.AttributeValue{ddbS("one"), ddbN(2)}},
	}}))
	got := must(c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)}})).Item
	if attrS(got, "status") != "new" || attrN(got, "qty") != "2" || len(got["tags"].(*types.AttributeValueMemberSS).Value) != 2 ||
		string(got["blob"].(*types.AttributeValueMemberB).Value) != "\x00\x01\xff" ||
		!got["m"].(*types.AttributeValueMemberM).Value["ok"].(*types.AttributeValueMemberBOOL).Value ||
		attrS(map[string]types.AttributeValue{"v": got["l"].(*types.AttributeValueMemberL).Value[0]}, "v") != "one" {
		t.Fatalf("GetItem: %#v", got)
	}
	if miss := must(c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("zz"), "sk": ddbN(1)}})); miss.Item != nil {
		t.Fatalf("GetItem of a missing item: %v", miss.Item)
	}
	proj := must(c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		ProjectionExpression: aws.String("#s, qty"), ExpressionAttributeNames: map[string]string{"#s": "status"}})).Item
	if len(proj) != 2 || attrS(proj, "status") != "new" {
		t.Fatalf("GetItem with a projection: %v", proj)
	}

	// A conditional put that fails, with and without the old item.
	cond := &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "status": ddbS("dup")},
		ConditionExpression: aws.String("attribute_not_exists(pk)")}
	_, err := c.PutItem(ctx, cond)
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) || ccf.Item != nil || !strings.Contains(ccf.ErrorMessage(), "The conditional request failed") {
		t.Fatalf("conditional PutItem: %v", err)
	}
	cond.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	_, err = c.PutItem(ctx, cond)
	if !errors.As(err, &ccf) || attrS(ccf.Item, "status") != "new" || attrN(ccf.Item, "qty") != "2" {
		t.Fatalf("conditional PutItem with ALL_OLD: %v (item %v)", err, ccf.Item)
	}
	old := must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "status": ddbS("open"), "qty": ddbN(2)},
		ConditionExpression: aws.String("#s = :s"), ExpressionAttributeNames: map[string]string{"#s": "status"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": ddbS("new")}, ReturnValues: types.ReturnValueAllOld}))
	if attrS(old.Attributes, "status") != "new" {
		t.Fatalf("PutItem ALL_OLD: %v", old.Attributes)
	}

	// UpdateItem: arithmetic, condition, ReturnValues.
	up := must(c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		UpdateExpression: aws.String("SET qty = qty + :one, note = :n"), ConditionExpression: aws.String("qty < :max"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": ddbN(1), ":n": ddbS("hi"), ":max": ddbN(10)}, ReturnValues: types.ReturnValueAllNew}))
	if attrN(up.Attributes, "qty") != "3" || attrS(up.Attributes, "note") != "hi" || attrS(up.Attributes, "status") != "open" {
		t.Fatalf("UpdateItem ALL_NEW: %v", up.Attributes)
	}
	upd := must(c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		UpdateExpression: aws.String("ADD qty :one"), ExpressionAttributeValues: map[string]types.AttributeValue{":one": ddbN(1)}, ReturnValues: types.ReturnValueUpdatedOld}))
	if len(upd.Attributes) != 1 || attrN(upd.Attributes, "qty") != "3" {
		t.Fatalf("UpdateItem UPDATED_OLD: %v", upd.Attributes)
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		UpdateExpression: aws.String("SET qty = :v"), ConditionExpression: aws.String("qty > :v"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":v": ddbN(100)}, ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if !errors.As(err, &ccf) || attrN(ccf.Item, "qty") != "4" {
		t.Fatalf("conditional UpdateItem: %v", err)
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		UpdateExpression: aws.String("SET pk = :v"), ExpressionAttributeValues: map[string]types.AttributeValue{":v": ddbS("b")}})
	if errCode(err) != "ValidationException" || !strings.Contains(err.Error(), "part of the key") {
		t.Fatalf("UpdateItem of a key attribute: %v", err)
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a")}})
	if errCode(err) != "ValidationException" {
		t.Fatalf("PutItem without the sort key: %v", err)
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("nope"), Item: map[string]types.AttributeValue{"pk": ddbS("a")}})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("PutItem to a missing table: %v", err)
	}
	_, err = c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		Expected: map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}})
	// AWS still takes the legacy Expected (API_PutItem: "This is a legacy
	// parameter"); the item exists, so the condition fails.
	if !errors.As(err, &ccf) {
		t.Fatalf("PutItem with the legacy Expected: %v", err)
	}

	// DeleteItem.
	del := must(c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)}, ReturnValues: types.ReturnValueAllOld}))
	if attrN(del.Attributes, "qty") != "4" {
		t.Fatalf("DeleteItem ALL_OLD: %v", del.Attributes)
	}
	_, err = c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)}, ConditionExpression: aws.String("attribute_exists(pk)")})
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional DeleteItem of a missing item: %v", err)
	}

	// Query with pagination, descending, with a key condition and a filter.
	for i := 1; i <= 7; i++ {
		must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("q"), "sk": ddbN(i), "even": &types.AttributeValueMemberBOOL{Value: i%2 == 0}}}))
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("other"), "sk": ddbN(1)}}))
	var sks []string
	pages := 0
	p := dynamodb.NewQueryPaginator(c, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbS("q")}, Limit: aws.Int32(3)})
	for p.HasMorePages() {
		page := must(p.NextPage(ctx))
		pages++
		for _, it := range page.Items {
			sks = append(sks, attrN(it, "sk"))
		}
		if page.LastEvaluatedKey != nil && attrS(page.LastEvaluatedKey, "pk") != "q" {
			t.Fatalf("LastEvaluatedKey %v", page.LastEvaluatedKey)
		}
	}
	if strings.Join(sks, ",") != "1,2,3,4,5,6,7" || pages != 3 {
		t.Fatalf("Query pages: %v in %d pages", sks, pages)
	}
	q := must(c.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p AND sk BETWEEN :a AND :b"),
		FilterExpression: aws.String("even = :t"), ScanIndexForward: aws.Bool(false),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbS("q"), ":a": ddbN(2), ":b": ddbN(6), ":t": &types.AttributeValueMemberBOOL{Value: true}}}))
	if q.Count != 3 || q.ScannedCount != 5 || attrN(q.Items[0], "sk") != "6" || attrN(q.Items[2], "sk") != "2" {
		t.Fatalf("Query descending with a filter: count %d scanned %d %v", q.Count, q.ScannedCount, q.Items)
	}
	_, err = c.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbS("q"), ":unused": ddbS("x")}})
	if errCode(err) != "ValidationException" {
		t.Fatalf("Query with an unused value: %v", err)
	}

	// Scan: all, with a filter, COUNT, paginated.
	sc := must(c.Scan(ctx, &dynamodb.ScanInput{TableName: tn}))
	if sc.Count != 8 || len(sc.Items) != 8 || sc.LastEvaluatedKey != nil {
		t.Fatalf("Scan: %d items", sc.Count)
	}
	sc = must(c.Scan(ctx, &dynamodb.ScanInput{TableName: tn, Select: types.SelectCount, FilterExpression: aws.String("even = :t"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":t": &types.AttributeValueMemberBOOL{Value: true}}}))
	if sc.Count != 3 || sc.ScannedCount != 8 {
		t.Fatalf("Scan COUNT: %d of %d", sc.Count, sc.ScannedCount)
	}
	n := 0
	sp := dynamodb.NewScanPaginator(c, &dynamodb.ScanInput{TableName: tn, Limit: aws.Int32(3)})
	for sp.HasMorePages() {
		n += len(must(sp.NextPage(ctx)).Items)
	}
	if n != 8 {
		t.Fatalf("Scan pages: %d items", n)
	}
	if ic := aws.ToInt64(must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: tn})).Table.ItemCount); ic != 8 {
		t.Fatalf("ItemCount %d", ic)
	}
}

func TestDynamoDBTransactions(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	createOrders(t, c, "orders")
	tn := aws.String("orders")
	key := func(pk string, sk int) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": ddbS(pk), "sk": ddbN(sk)}
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("acct"), "sk": ddbN(1), "balance": ddbN(100)}}))

	tx := &dynamodb.TransactWriteItemsInput{ClientRequestToken: aws.String("tok-1"), TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: tn, Key: key("acct", 1), UpdateExpression: aws.String("SET balance = balance - :a"),
			ConditionExpression: aws.String("balance >= :a"), ExpressionAttributeValues: map[string]types.AttributeValue{":a": ddbN(30)}}},
		{Put: &types.Put{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("order"), "sk": ddbN(1), "amount": ddbN(30)},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}},
		{ConditionCheck: &types.ConditionCheck{TableName: tn, Key: key("acct", 1), ConditionExpression: aws.String("attribute_exists(balance)")}},
	}}
	// The ConditionCheck and the Update name one item: refused.
	_, err := c.TransactWriteItems(ctx, tx)
	if errCode(err) != "ValidationException" || !strings.Contains(err.Error(), "multiple operations on one item") {
		t.Fatalf("TransactWriteItems with two actions on one item: %v", err)
	}
	tx.TransactItems[2].ConditionCheck.Key = key("acct", 2)
	tx.TransactItems[2].ConditionCheck.ConditionExpression = aws.String("attribute_not_exists(pk)")
	must(c.TransactWriteItems(ctx, tx))
	balance := func() string {
		return attrN(must(c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: key("acct", 1)})).Item, "balance")
	}
	if b := balance(); b != "70" {
		t.Fatalf("balance after the transaction: %s", b)
	}
	// The same token and parameters again: success, nothing changes.
	must(c.TransactWriteItems(ctx, tx))
	if b := balance(); b != "70" {
		t.Fatalf("balance after the same token again: %s", b)
	}
	// The same token with other parameters.
	tx.TransactItems[0].Update.ExpressionAttributeValues[":a"] = ddbN(31)
	_, err = c.TransactWriteItems(ctx, tx)
	var mismatch *types.IdempotentParameterMismatchException
	if !errors.As(err, &mismatch) {
		t.Fatalf("same token, other parameters: %v", err)
	}

	// Cancelled: the second condition fails; reasons in order, with the
	// item where asked.
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Update: &types.Update{TableName: tn, Key: key("acct", 1), UpdateExpression: aws.String("SET balance = balance - :a"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":a": ddbN(10)}}},
		{Put: &types.Put{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("order"), "sk": ddbN(1), "amount": ddbN(10)},
			ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}},
		{Delete: &types.Delete{TableName: tn, Key: key("nothing", 1), ConditionExpression: aws.String("attribute_exists(pk)")}},
	}})
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) != 3 {
		t.Fatalf("cancelled transaction: %v", err)
	}
	r := tce.CancellationReasons
	if aws.ToString(r[0].Code) != "None" || aws.ToString(r[1].Code) != "ConditionalCheckFailed" || attrN(r[1].Item, "amount") != "30" ||
		aws.ToString(r[2].Code) != "ConditionalCheckFailed" || r[2].Item != nil || !strings.Contains(tce.ErrorMessage(), "[None, ConditionalCheckFailed, ConditionalCheckFailed]") {
		t.Fatalf("cancellation reasons: %+v, message %q", r, tce.ErrorMessage())
	}
	if b := balance(); b != "70" {
		t.Fatalf("balance after a cancelled transaction: %s", b)
	}
	_, err = c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String("nope"), Item: key("x", 1)}}}})
	var notFound *types.ResourceNotFoundException
	if !errors.As(err, &notFound) {
		t.Fatalf("transaction on a missing table: %v", err)
	}
}

// The wire shapes, for clients other than the Go SDK.
func TestDynamoDBWire(t *testing.T) {
	e := start(t, awsapi.Options{})
	post := func(target, body string) (int, http.Header, string) {
		req, _ := http.NewRequest("POST", e.srv.URL, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		req.Header.Set("X-Amz-Target", target)
		resp, err := http.DefaultClient.Do(sign(req))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header, string(b)
	}
	code, h, body := post("DynamoDB_20120810.DescribeTable", `{"TableName":"missing"}`)
	// DynamoDB's request ids: 52 characters of [0-9A-Z] (e.g.
	// VRR1NLEMF2J180HKII229KAK57VV4KQNSO5AEMVJF66Q9ASUAAJG, quoted from AWS
	// in Netflix-Skunkworks/iep-apps#527).
	if id := h.Get("x-amzn-RequestId"); !regexp.MustCompile(`^[0-9A-Z]{52}$`).MatchString(id) {
		t.Errorf("request id %q", id)
	}
	if code != 400 || h.Get("Content-Type") != "application/x-amz-json-1.0" || h.Get("X-Amz-Crc32") == "" ||
		!strings.Contains(body, `"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException"`) {
		t.Fatalf("DescribeTable of a missing table: %d %v %s", code, h, body)
	}
	code, _, body = post("DynamoDB_20120810.CreateTable", `{"TableName":"wire","KeySchema":[{"AttributeName":"id","KeyType":"HASH"}],"AttributeDefinitions":[{"AttributeName":"id","AttributeType":"S"}]}`)
	if code != 200 || !strings.Contains(body, `"TableStatus":"ACTIVE"`) || !strings.Contains(body, `"BillingMode":"PAY_PER_REQUEST"`) {
		t.Fatalf("CreateTable: %d %s", code, body)
	}
	post("DynamoDB_20120810.PutItem", `{"TableName":"wire","Item":{"id":{"S":"a"},"n":{"N":"1"}}}`)
	code, _, body = post("DynamoDB_20120810.PutItem", `{"TableName":"wire","Item":{"id":{"S":"a"}},"ConditionExpression":"attribute_not_exists(id)","ReturnValuesOnConditionCheckFailure":"ALL_OLD"}`)
	if code != 400 || !strings.Contains(body, `"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"`) ||
		!strings.Contains(body, `"message":"The conditional request failed"`) || !strings.Contains(body, `"Item":{`) {
		t.Fatalf("conditional PutItem: %d %s", code, body)
	}
	code, _, body = post("DynamoDB_20120810.PutItem", `{"TableName":`)
	if code != 400 || !strings.Contains(body, "SerializationException") {
		t.Fatalf("bad JSON: %d %s", code, body)
	}
	code, _, body = post("DynamoDB_20120810.BatchExecuteStatement", `{}`)
	if code != 400 || !strings.Contains(body, "UnknownOperationException") {
		t.Fatalf("unknown operation: %d %s", code, body)
	}
}

// DynamoDB with SigV4 checking on.
func TestDynamoDBAuth(t *testing.T) {
	e := start(t, awsapi.Options{Auth: map[string]string{"AKID": "secret"}})
	ctx := context.Background()
	must(e.ddb().ListTables(ctx, &dynamodb.ListTablesInput{}))
	_, err := dynamodb.NewFromConfig(e.config("AKID", "wrong")).ListTables(ctx, &dynamodb.ListTablesInput{})
	if errCode(err) != "InvalidSignatureException" {
		t.Fatalf("wrong secret: %v", err)
	}
	_, err = dynamodb.NewFromConfig(e.config("OTHER", "secret")).ListTables(ctx, &dynamodb.ListTablesInput{})
	if errCode(err) != "UnrecognizedClientException" {
		t.Fatalf("unknown key: %v", err)
	}
}

// TestDynamoDBLegacyParameters: the pre-expression parameters older
// programs (the Java DynamoDBMapper) send work as their expressions do;
// mixing the two kinds is refused in DynamoDB's words.
func TestDynamoDBLegacyParameters(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	tn := aws.String("legacy")
	createOrders(t, c, "legacy")
	eq := func(v types.AttributeValue) types.Condition {
		return types.Condition{ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{v}}
	}

	// PutItem with Expected: absent, then a value.
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "qty": ddbN(1)},
		Expected: map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}}))
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "qty": ddbN(2), "tag": ddbS("x")},
		Expected: map[string]types.ExpectedAttributeValue{"qty": {Value: ddbN(1)}, "nope": {ComparisonOperator: types.ComparisonOperatorNull}}}))
	if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		Expected: map[string]types.ExpectedAttributeValue{"qty": {ComparisonOperator: types.ComparisonOperatorGt, AttributeValueList: []types.AttributeValue{ddbN(5)}}}}); errCode(err) != "ConditionalCheckFailedException" {
		t.Fatalf("PutItem with a false Expected: %v", err)
	}
	must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(2), "qty": ddbN(7)}}))

	// UpdateItem with AttributeUpdates, Expected and ConditionalOperator OR.
	up := must(c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)},
		AttributeUpdates: map[string]types.AttributeValueUpdate{
			"qty":  {Action: types.AttributeActionAdd, Value: ddbN(3)},
			"tag":  {Action: types.AttributeActionDelete},
			"note": {Action: types.AttributeActionPut, Value: ddbS("n")},
		},
		Expected:            map[string]types.ExpectedAttributeValue{"qty": eqExpected(ddbN(99)), "tag": {Exists: aws.Bool(true), Value: ddbS("x")}},
		ConditionalOperator: types.ConditionalOperatorOr, ReturnValues: types.ReturnValueAllNew}))
	if attrN(up.Attributes, "qty") != "5" || attrS(up.Attributes, "note") != "n" || up.Attributes["tag"] != nil {
		t.Fatalf("UpdateItem with AttributeUpdates: %v", up.Attributes)
	}

	// GetItem with AttributesToGet.
	g := must(c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)}, AttributesToGet: []string{"qty"}}))
	if len(g.Item) != 1 || attrN(g.Item, "qty") != "5" {
		t.Fatalf("GetItem with AttributesToGet: %v", g.Item)
	}

	// Query with KeyConditions and QueryFilter; Scan with ScanFilter.
	q := must(c.Query(ctx, &dynamodb.QueryInput{TableName: tn,
		KeyConditions: map[string]types.Condition{"pk": eq(ddbS("a")), "sk": {ComparisonOperator: types.ComparisonOperatorBetween, AttributeValueList: []types.AttributeValue{ddbN(1), ddbN(2)}}},
		QueryFilter:   map[string]types.Condition{"qty": {ComparisonOperator: types.ComparisonOperatorGe, AttributeValueList: []types.AttributeValue{ddbN(6)}}}}))
	if q.Count != 1 || attrN(q.Items[0], "sk") != "2" {
		t.Fatalf("Query with KeyConditions and QueryFilter: %+v", q.Items)
	}
	sc := must(c.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ScanFilter: map[string]types.Condition{"note": {ComparisonOperator: types.ComparisonOperatorBeginsWith, AttributeValueList: []types.AttributeValue{ddbS("n")}}}}))
	if sc.Count != 1 || attrN(sc.Items[0], "sk") != "1" {
		t.Fatalf("Scan with ScanFilter: %+v", sc.Items)
	}

	// Mixing the two kinds; a wrong number of values.
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("b"), "sk": ddbN(1)},
		Expected: map[string]types.ExpectedAttributeValue{"pk": {Exists: aws.Bool(false)}}, ConditionExpression: aws.String("attribute_not_exists(pk)")})
	if errCode(err) != "ValidationException" || !strings.Contains(err.Error(),
		"Can not use both expression and non-expression parameters in the same request: Non-expression parameters: {Expected} Expression parameters: {ConditionExpression}") {
		t.Fatalf("mixed parameters: %v", err)
	}
	_, err = c.Scan(ctx, &dynamodb.ScanInput{TableName: tn, ScanFilter: map[string]types.Condition{"qty": {ComparisonOperator: types.ComparisonOperatorEq}}})
	if errCode(err) != "ValidationException" || !strings.Contains(err.Error(), "Invalid number of argument(s) for the EQ ComparisonOperator") {
		t.Fatalf("EQ without a value: %v", err)
	}
}

func eqExpected(v types.AttributeValue) types.ExpectedAttributeValue {
	return types.ExpectedAttributeValue{ComparisonOperator: types.ComparisonOperatorEq, AttributeValueList: []types.AttributeValue{v}}
}

// TestDynamoDBConsumedCapacity: ReturnConsumedCapacity TOTAL and INDEXES
// report DynamoDB's units (API_ConsumedCapacity; on-demand arithmetic: a
// write 1 unit per KB, a read 1 per 4 KB, half when eventually
// consistent); NONE and no parameter report nothing.
func TestDynamoDBConsumedCapacity(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	tn := aws.String("capacity")
	createOrders(t, c, "capacity")
	big := &types.AttributeValueMemberS{Value: strings.Repeat("x", 5000)}
	put := must(c.PutItem(ctx, &dynamodb.PutItemInput{TableName: tn, Item: map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1), "big": big},
		ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}))
	if cc := put.ConsumedCapacity; cc == nil || aws.ToString(cc.TableName) != "capacity" || aws.ToFloat64(cc.CapacityUnits) != 5 {
		t.Fatalf("PutItem of 5 KB: %+v", cc)
	}
	key := map[string]types.AttributeValue{"pk": ddbS("a"), "sk": ddbN(1)}
	get := must(c.GetItem(ctx, &dynamodb.GetItemInput{TableName: tn, Key: key, ReturnConsumedCapacity: types.ReturnConsumedCapacityIndexes}))
	if cc := get.ConsumedCapacity; cc == nil || aws.ToFloat64(cc.CapacityUnits) != 1 || cc.Table == nil || aws.ToFloat64(cc.Table.CapacityUnits) != 1 {
		t.Fatalf("GetItem of 5 KB, eventually consistent: %+v", cc)
	}
	q := must(c.Query(ctx, &dynamodb.QueryInput{TableName: tn, KeyConditionExpression: aws.String("pk = :p"), ConsistentRead: aws.Bool(true),
		ExpressionAttributeValues: map[string]types.AttributeValue{":p": ddbS("a")}, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}))
	if cc := q.ConsumedCapacity; cc == nil || aws.ToFloat64(cc.CapacityUnits) != 2 {
		t.Fatalf("Query of 5 KB, strongly consistent: %+v", cc)
	}
	upd := must(c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tn, Key: key, UpdateExpression: aws.String("REMOVE big"), ReturnConsumedCapacity: types.ReturnConsumedCapacityNone}))
	if upd.ConsumedCapacity != nil {
		t.Fatalf("NONE: %+v", upd.ConsumedCapacity)
	}
	del := must(c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tn, Key: key, ReturnConsumedCapacity: types.ReturnConsumedCapacityTotal}))
	if cc := del.ConsumedCapacity; cc == nil || aws.ToFloat64(cc.CapacityUnits) != 1 {
		t.Fatalf("DeleteItem of a small item: %+v", cc)
	}
}

// TestDynamoDBProvisionedThroughput: a provisioned table's throughput is
// stored, described and updated (not enforced); DynamoDB's refusals of
// the combinations it refuses.
func TestDynamoDBProvisionedThroughput(t *testing.T) {
	e := start(t, awsapi.Options{})
	c := e.ddb()
	ctx := context.Background()
	schema := func(in *dynamodb.CreateTableInput) *dynamodb.CreateTableInput {
		in.KeySchema = []types.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash}}
		in.AttributeDefinitions = []types.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS}}
		return in
	}
	tp := func(r, w int64) *types.ProvisionedThroughput {
		return &types.ProvisionedThroughput{ReadCapacityUnits: aws.Int64(r), WriteCapacityUnits: aws.Int64(w)}
	}
	ct := must(c.CreateTable(ctx, schema(&dynamodb.CreateTableInput{TableName: aws.String("prov"), BillingMode: types.BillingModeProvisioned, ProvisionedThroughput: tp(5, 7)})))
	if d := ct.TableDescription; d.BillingModeSummary.BillingMode != types.BillingModeProvisioned || aws.ToInt64(d.ProvisionedThroughput.ReadCapacityUnits) != 5 || aws.ToInt64(d.ProvisionedThroughput.WriteCapacityUnits) != 7 {
		t.Fatalf("CreateTable PROVISIONED: %+v %+v", d.BillingModeSummary, d.ProvisionedThroughput)
	}
	up := must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("prov"), ProvisionedThroughput: tp(10, 7)}))
	if aws.ToInt64(up.TableDescription.ProvisionedThroughput.ReadCapacityUnits) != 10 {
		t.Fatalf("UpdateTable throughput: %+v", up.TableDescription.ProvisionedThroughput)
	}
	if _, err := c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("prov"), ProvisionedThroughput: tp(10, 7)}); errCode(err) != "ValidationException" ||
		!strings.Contains(err.Error(), "The provisioned throughput for the table will not change") {
		t.Fatalf("UpdateTable to the same throughput: %v", err)
	}
	must(c.UpdateTable(ctx, &dynamodb.UpdateTableInput{TableName: aws.String("prov"), BillingMode: types.BillingModePayPerRequest}))
	d := must(c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("prov")})).Table
	if d.BillingModeSummary.BillingMode != types.BillingModePayPerRequest || aws.ToInt64(d.ProvisionedThroughput.ReadCapacityUnits) != 0 {
		t.Fatalf("after PAY_PER_REQUEST: %+v %+v", d.BillingModeSummary, d.ProvisionedThroughput)
	}
	_, err := c.CreateTable(ctx, schema(&dynamodb.CreateTableInput{TableName: aws.String("prov2"), BillingMode: types.BillingModePayPerRequest, ProvisionedThroughput: tp(1, 1)}))
	if errCode(err) != "ValidationException" || !strings.Contains(err.Error(), "Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST") {
		t.Fatalf("PAY_PER_REQUEST with a throughput: %v", err)
	}
	_, err = c.CreateTable(ctx, schema(&dynamodb.CreateTableInput{TableName: aws.String("prov2"), BillingMode: types.BillingModeProvisioned}))
	if errCode(err) != "ValidationException" || !strings.Contains(err.Error(), "ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED") {
		t.Fatalf("PROVISIONED without a throughput: %v", err)
	}
}
