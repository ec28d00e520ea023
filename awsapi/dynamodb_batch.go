package awsapi

// DynamoDB: the batch and transactional reads and writes over package
// table (BatchWriteItem, BatchGetItem, TransactGetItems; TransactWriteItems
// is in dynamodb_items.go). A table ARN is accepted wherever a table name
// is, map keys included; answers name tables by name.

import (
	"encoding/json"

	"github.com/runnel-dev/runnel/table"
)

func dynamoBatchWriteItem(rq *request, in *table.BatchWriteItemInput) (any, error) {
	in.RequestItems = byTableName(in.RequestItems)
	return rq.h.rn.Tables.BatchWriteItem(rq.ctx, *in)
}

// batchGetItemInput is BatchGetItem's request with each table's
// KeysAndAttributes as given: each may carry the legacy AttributesToGet,
// translated into a ProjectionExpression as a GetItem's is.
type batchGetItemInput struct {
	RequestItems           map[string]givenKeysAndAttributes
	ReturnConsumedCapacity string
}

// givenKeysAndAttributes is one table's part of a BatchGetItem as given:
// its JSON (the body decoded by json.Unmarshal) or its value as the
// validation read it (fromValue).
type givenKeysAndAttributes struct {
	raw json.RawMessage
	val map[string]any
}

func (g *givenKeysAndAttributes) UnmarshalJSON(b []byte) error {
	g.raw = append(g.raw[:0], b...)
	return nil
}

func (g *givenKeysAndAttributes) fromJSONValue(v any) bool {
	g.val, _ = v.(map[string]any)
	return g.val != nil
}

// decode reads the table's KeysAndAttributes, legacy parameters
// translated.
func (g *givenKeysAndAttributes) decode(ka *table.KeysAndAttributes) error {
	raw := g.raw
	if g.val != nil {
		if !hasLegacy(g.val) && fromValue(g.val, ka) {
			return nil
		}
		*ka = table.KeysAndAttributes{}
		raw, _ = json.Marshal(g.val)
	}
	return dynamoDecode(raw, ka)
}

func dynamoBatchGetItem(rq *request, in *batchGetItemInput) (any, error) {
	req := table.BatchGetItemInput{RequestItems: map[string]table.KeysAndAttributes{}, ReturnConsumedCapacity: in.ReturnConsumedCapacity}
	for name, given := range in.RequestItems {
		var ka table.KeysAndAttributes
		if err := given.decode(&ka); err != nil {
			return nil, err
		}
		req.RequestItems[tableName(name)] = ka
	}
	return rq.h.rn.Tables.BatchGetItem(rq.ctx, req)
}

func dynamoTransactGetItems(rq *request, in *table.TransactGetItemsInput) (any, error) {
	for _, it := range in.TransactItems {
		if it.Get != nil {
			it.Get.TableName = tableName(it.Get.TableName)
		}
	}
	return rq.h.rn.Tables.TransactGetItems(rq.ctx, *in)
}

// byTableName rekeys a map of table names or ARNs by table name.
func byTableName[V any](m map[string]V) map[string]V {
	out := make(map[string]V, len(m))
	for k, v := range m {
		out[tableName(k)] = v
	}
	return out
}
