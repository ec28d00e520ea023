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
// KeysAndAttributes raw: each may carry the legacy AttributesToGet,
// translated into a ProjectionExpression as a GetItem's is.
type batchGetItemInput struct {
	RequestItems           map[string]json.RawMessage
	ReturnConsumedCapacity string
}

func dynamoBatchGetItem(rq *request, in *batchGetItemInput) (any, error) {
	req := table.BatchGetItemInput{RequestItems: map[string]table.KeysAndAttributes{}, ReturnConsumedCapacity: in.ReturnConsumedCapacity}
	for name, raw := range in.RequestItems {
		var ka table.KeysAndAttributes
		if err := dynamoDecode(raw, &ka); err != nil {
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
