package bench

// The two ways the tables scenario calls a target: aws-sdk-go-v2's DynamoDB
// client through an endpoint (runnel's or dynalite's: the same code for
// both), and table.Service in this process.

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runnel-dev/runnel/internal/slicex"
	"github.com/runnel-dev/runnel/table"
)

// The requests' expressions, the same on every target.
const (
	tableUpdate    = "ADD #n :one"
	tableCondition = "attribute_exists(pk)"
	tableQuery     = "pk = :pk"
)

var tableUpdateNames = map[string]string{"#n": "n"}

// sdkTables calls an endpoint with aws-sdk-go-v2.
type sdkTables struct {
	c     *dynamodb.Client
	w     *tableWorkload
	items []map[string]dtypes.AttributeValue
	keys  []map[string]dtypes.AttributeValue
	one   map[string]dtypes.AttributeValue
}

func newSDKTables(url string, w *tableWorkload) *sdkTables {
	s := &sdkTables{
		c: dynamodb.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(),
			Region:       "us-east-1",
			Credentials:  credentials.NewStaticCredentialsProvider("AKIDBENCH", "bench-secret", ""),
			BaseEndpoint: aws.String(url),
		}),
		w:   w,
		one: map[string]dtypes.AttributeValue{":one": &dtypes.AttributeValueMemberN{Value: "1"}},
	}
	for i := range w.total() {
		pk, sk := w.key(i)
		key := map[string]dtypes.AttributeValue{"pk": &dtypes.AttributeValueMemberS{Value: pk}, "sk": &dtypes.AttributeValueMemberN{Value: strconv.Itoa(sk)}}
		s.keys = append(s.keys, key)
		s.items = append(s.items, map[string]dtypes.AttributeValue{"pk": key["pk"], "sk": key["sk"],
			"data": &dtypes.AttributeValueMemberS{Value: w.data(i)}, "n": &dtypes.AttributeValueMemberN{Value: "0"}})
	}
	return s
}

func (s *sdkTables) createTable(ctx context.Context) error {
	_, err := s.c.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName: aws.String(s.w.name),
		KeySchema: []dtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: dtypes.KeyTypeHash}, {AttributeName: aws.String("sk"), KeyType: dtypes.KeyTypeRange}},
		AttributeDefinitions: []dtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: dtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: dtypes.ScalarAttributeTypeN}},
		BillingMode: dtypes.BillingModePayPerRequest,
	})
	if err != nil {
		return err
	}
	deadline := time.Now().Add(time.Minute)
	for {
		d, err := s.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.w.name)})
		if err != nil {
			return err
		}
		if d.Table.TableStatus == dtypes.TableStatusActive {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("table not ACTIVE after a minute (%s)", d.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// deleteTable deletes the table (of a runnel the benchmark did not start).
func (s *sdkTables) deleteTable(ctx context.Context) error {
	_, err := s.c.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(s.w.name)})
	return err
}

func (s *sdkTables) describeTable(ctx context.Context) error {
	_, err := s.c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(s.w.name)})
	return err
}

func (s *sdkTables) putItem(ctx context.Context, i int) error {
	_, err := s.c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(s.w.name), Item: s.items[i]})
	return err
}

func (s *sdkTables) getItem(ctx context.Context, i int) (tableRow, bool, error) {
	out, err := s.c.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.w.name), Key: s.keys[i]})
	if err != nil || out.Item == nil {
		return tableRow{}, false, err
	}
	r, err := sdkRow(out.Item)
	return r, err == nil, err
}

func (s *sdkTables) updateItem(ctx context.Context, i int) error {
	_, err := s.c.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(s.w.name), Key: s.keys[i],
		UpdateExpression: aws.String(tableUpdate), ConditionExpression: aws.String(tableCondition),
		ExpressionAttributeNames: tableUpdateNames, ExpressionAttributeValues: s.one})
	return err
}

func (s *sdkTables) batchWrite(ctx context.Context, items []int) ([]int, error) {
	reqs := make([]dtypes.WriteRequest, len(items))
	for j, i := range items {
		reqs[j] = dtypes.WriteRequest{PutRequest: &dtypes.PutRequest{Item: s.items[i]}}
	}
	out, err := s.c.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]dtypes.WriteRequest{s.w.name: reqs}})
	if err != nil {
		return nil, err
	}
	return indices(out.UnprocessedItems[s.w.name], func(r dtypes.WriteRequest) (int, error) {
		if r.PutRequest == nil {
			return 0, fmt.Errorf("UnprocessedItems holds a request that was not sent: %+v", r)
		}
		return s.index(r.PutRequest.Item)
	})
}

func (s *sdkTables) batchGet(ctx context.Context, items []int) ([]tableRow, []int, error) {
	keys := make([]map[string]dtypes.AttributeValue, len(items))
	for j, i := range items {
		keys[j] = s.keys[i]
	}
	out, err := s.c.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]dtypes.KeysAndAttributes{s.w.name: {Keys: keys}}})
	if err != nil {
		return nil, nil, err
	}
	return batchGot(out.Responses[s.w.name], out.UnprocessedKeys[s.w.name].Keys, sdkRow, s.index)
}

func (s *sdkTables) query(ctx context.Context, pk string, cursor any) ([]tableRow, any, error) {
	in := &dynamodb.QueryInput{TableName: aws.String(s.w.name), KeyConditionExpression: aws.String(tableQuery),
		ExpressionAttributeValues: map[string]dtypes.AttributeValue{":pk": &dtypes.AttributeValueMemberS{Value: pk}}}
	if cursor != nil {
		in.ExclusiveStartKey = cursor.(map[string]dtypes.AttributeValue)
	}
	out, err := s.c.Query(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return page(out.Items, out.LastEvaluatedKey, sdkRow)
}

func (s *sdkTables) scan(ctx context.Context, segment, total int, cursor any) ([]tableRow, any, error) {
	in := &dynamodb.ScanInput{TableName: aws.String(s.w.name)}
	if total > 1 {
		in.Segment, in.TotalSegments = aws.Int32(int32(segment)), aws.Int32(int32(total))
	}
	if cursor != nil {
		in.ExclusiveStartKey = cursor.(map[string]dtypes.AttributeValue)
	}
	out, err := s.c.Scan(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return page(out.Items, out.LastEvaluatedKey, sdkRow)
}

// index returns the item a key (or an item) of the SDK names.
func (s *sdkTables) index(k map[string]dtypes.AttributeValue) (int, error) {
	pk, _ := k["pk"].(*dtypes.AttributeValueMemberS)
	sk, _ := k["sk"].(*dtypes.AttributeValueMemberN)
	if pk == nil || sk == nil {
		return 0, fmt.Errorf("a key that was not sent: %v", k)
	}
	return s.w.keyIndex(pk.Value, sk.Value)
}

// sdkRow reads an item of the SDK, failing unless it has the workload's
// attributes with their types.
func sdkRow(it map[string]dtypes.AttributeValue) (tableRow, error) {
	pk, _ := it["pk"].(*dtypes.AttributeValueMemberS)
	data, _ := it["data"].(*dtypes.AttributeValueMemberS)
	sk, _ := it["sk"].(*dtypes.AttributeValueMemberN)
	n, _ := it["n"].(*dtypes.AttributeValueMemberN)
	if pk == nil || data == nil || sk == nil || n == nil {
		return tableRow{}, fmt.Errorf("an item without the attributes written: %v", it)
	}
	return numbersRow(pk.Value, data.Value, sk.Value, n.Value)
}

// keyIndex returns the item of a key whose sort key is still a decimal
// string.
func (w *tableWorkload) keyIndex(pk, sk string) (int, error) {
	n, err := strconv.Atoi(sk)
	if err != nil {
		return 0, fmt.Errorf("sort key %q: %w", sk, err)
	}
	return w.index(tableRow{pk: pk, sk: n})
}

// indices returns the items that a batch's unprocessed requests or keys
// name.
func indices[K any](left []K, index func(K) (int, error)) ([]int, error) {
	var is []int
	for _, k := range left {
		i, err := index(k)
		if err != nil {
			return nil, err
		}
		is = append(is, i)
	}
	return is, nil
}

// batchGot is a BatchGetItem's answer: the rows read and the items left.
func batchGot[I any](items, left []I, row func(I) (tableRow, error), index func(I) (int, error)) ([]tableRow, []int, error) {
	rows, err := slicex.MapErr(items, row)
	if err != nil {
		return nil, nil, err
	}
	is, err := indices(left, index)
	return rows, is, err
}

// page is a Query's or Scan's page: its rows, and its LastEvaluatedKey
// as the cursor of the next (nil after the last page).
func page[I ~map[string]V, V any](items []I, last I, row func(I) (tableRow, error)) ([]tableRow, any, error) {
	rows, err := slicex.MapErr(items, row)
	if len(last) == 0 {
		return rows, nil, err
	}
	return rows, last, err
}

// numbersRow is a row whose sk and n are still decimal strings.
func numbersRow(pk, data, sk, n string) (tableRow, error) {
	r := tableRow{pk: pk, data: data}
	var err1, err2 error
	r.sk, err1 = strconv.Atoi(sk)
	r.n, err2 = strconv.Atoi(n)
	if err1 != nil || err2 != nil {
		return tableRow{}, fmt.Errorf("item %s: sk %q or n %q is not an integer", pk, sk, n)
	}
	return r, nil
}

// serviceTables calls table.Service directly.
type serviceTables struct {
	s     *table.Service
	w     *tableWorkload
	items []table.Item
	keys  []table.Item
	one   table.Item
}

func newServiceTables(s *table.Service, w *tableWorkload) *serviceTables {
	c := &serviceTables{s: s, w: w, one: table.Item{":one": events.NewNumberAttribute("1")}}
	for i := range w.total() {
		pk, sk := w.key(i)
		key := table.Item{"pk": events.NewStringAttribute(pk), "sk": events.NewNumberAttribute(strconv.Itoa(sk))}
		c.keys = append(c.keys, key)
		c.items = append(c.items, table.Item{"pk": key["pk"], "sk": key["sk"], "data": events.NewStringAttribute(w.data(i)), "n": events.NewNumberAttribute("0")})
	}
	return c
}

func (c *serviceTables) createTable(ctx context.Context) error {
	_, err := c.s.CreateTable(ctx, table.CreateTableInput{
		TableName:            c.w.name,
		KeySchema:            []table.KeySchemaElement{{AttributeName: "pk", KeyType: "HASH"}, {AttributeName: "sk", KeyType: "RANGE"}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: "pk", AttributeType: "S"}, {AttributeName: "sk", AttributeType: "N"}},
		BillingMode:          "PAY_PER_REQUEST",
	})
	return err
}

func (c *serviceTables) describeTable(ctx context.Context) error {
	_, err := c.s.DescribeTable(ctx, c.w.name)
	return err
}

func (c *serviceTables) putItem(ctx context.Context, i int) error {
	_, err := c.s.PutItem(ctx, table.PutItemInput{TableName: c.w.name, Item: c.items[i]})
	return err
}

func (c *serviceTables) getItem(ctx context.Context, i int) (tableRow, bool, error) {
	out, err := c.s.GetItem(ctx, table.GetItemInput{TableName: c.w.name, Key: c.keys[i]})
	if err != nil || out.Item == nil {
		return tableRow{}, false, err
	}
	r, err := serviceRow(out.Item)
	return r, err == nil, err
}

func (c *serviceTables) updateItem(ctx context.Context, i int) error {
	_, err := c.s.UpdateItem(ctx, table.UpdateItemInput{TableName: c.w.name, Key: c.keys[i],
		UpdateExpression: tableUpdate, WriteExpr: table.WriteExpr{
			ConditionExpression:       tableCondition,
			ExpressionAttributeNames:  tableUpdateNames,
			ExpressionAttributeValues: c.one,
		},
	})
	return err
}

func (c *serviceTables) batchWrite(ctx context.Context, items []int) ([]int, error) {
	reqs := make([]table.WriteRequest, len(items))
	for j, i := range items {
		reqs[j] = table.WriteRequest{PutRequest: &table.PutRequest{Item: c.items[i]}}
	}
	out, err := c.s.BatchWriteItem(ctx, table.BatchWriteItemInput{RequestItems: map[string][]table.WriteRequest{c.w.name: reqs}})
	if err != nil {
		return nil, err
	}
	return indices(out.UnprocessedItems[c.w.name], func(r table.WriteRequest) (int, error) {
		if r.PutRequest == nil {
			return 0, fmt.Errorf("UnprocessedItems holds a request that was not sent: %+v", r)
		}
		return c.index(r.PutRequest.Item)
	})
}

func (c *serviceTables) batchGet(ctx context.Context, items []int) ([]tableRow, []int, error) {
	keys := make([]table.Item, len(items))
	for j, i := range items {
		keys[j] = c.keys[i]
	}
	out, err := c.s.BatchGetItem(ctx, table.BatchGetItemInput{RequestItems: map[string]table.KeysAndAttributes{c.w.name: {Keys: keys}}})
	if err != nil {
		return nil, nil, err
	}
	return batchGot(out.Responses[c.w.name], out.UnprocessedKeys[c.w.name].Keys, serviceRow, c.index)
}

func (c *serviceTables) query(ctx context.Context, pk string, cursor any) ([]tableRow, any, error) {
	in := table.QueryInput{ReadInput: table.ReadInput{TableName: c.w.name, ExpressionAttributeValues: table.Item{":pk": events.NewStringAttribute(pk)}}, KeyConditionExpression: tableQuery}
	if cursor != nil {
		in.ExclusiveStartKey = cursor.(table.Item)
	}
	out, err := c.s.Query(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return page(out.Items, out.LastEvaluatedKey, serviceRow)
}

func (c *serviceTables) scan(ctx context.Context, segment, total int, cursor any) ([]tableRow, any, error) {
	in := table.ScanInput{ReadInput: table.ReadInput{TableName: c.w.name}}
	if total > 1 {
		in.Segment, in.TotalSegments = &segment, &total
	}
	if cursor != nil {
		in.ExclusiveStartKey = cursor.(table.Item)
	}
	out, err := c.s.Scan(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	return page(out.Items, out.LastEvaluatedKey, serviceRow)
}

// index returns the item a key (or an item) of table.Service names.
func (c *serviceTables) index(k table.Item) (int, error) {
	pk, sk := k["pk"], k["sk"]
	if pk.DataType() != events.DataTypeString || sk.DataType() != events.DataTypeNumber {
		return 0, fmt.Errorf("a key that was not sent: %v", k)
	}
	return c.w.keyIndex(pk.String(), sk.Number())
}

// serviceRow reads an item of table.Service, failing unless it has the
// workload's attributes with their types.
func serviceRow(it table.Item) (tableRow, error) {
	pk, data, sk, n := it["pk"], it["data"], it["sk"], it["n"]
	if pk.DataType() != events.DataTypeString || data.DataType() != events.DataTypeString ||
		sk.DataType() != events.DataTypeNumber || n.DataType() != events.DataTypeNumber {
		return tableRow{}, fmt.Errorf("an item without the attributes written: %v", it)
	}
	return numbersRow(pk.String(), data.String(), sk.Number(), n.Number())
}
