package awsapi

// DynamoDB: the batch and transactional reads and writes over package
// table (BatchWriteItem, BatchGetItem, TransactGetItems; TransactWriteItems
// is in dynamodb_items.go). A table ARN is accepted wherever a table name
// is, map keys included; answers name tables by name.

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table"
)

// One table named twice in a batch's RequestItems, by its name and by its
// ARN (or by two spellings of its ARN), is one table: AWS's documentation
// of BatchWriteItem and BatchGetItem ("A map of one or more table names or
// table ARNs") does not say what DynamoDB does then, and runnel merges the
// two entries rather than keep one, which loses nothing. The merged entry
// is one table's to package table: its requests or keys count as one
// table's toward the batch's limits (25 requests, 100 keys) and its
// duplicate-key check ("Provided list of item keys contains duplicates"),
// as they would were they given under one name. The entries merge in the
// order of their keys, sorted. A BatchGetItem's two entries merge only
// when they read alike (ProjectionExpression or AttributesToGet,
// ExpressionAttributeNames, ConsistentRead); otherwise the batch is
// refused, ValidationException naming the table (runnel's words). Before,
// the map kept one of the two entries, by map order, and the batch
// answered success without the other's writes or reads.

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
	for _, given := range slices.Sorted(maps.Keys(in.RequestItems)) {
		var ka table.KeysAndAttributes
		g := in.RequestItems[given]
		if err := g.decode(&ka); err != nil {
			return nil, err
		}
		name := tableName(given)
		if had, twice := req.RequestItems[name]; twice {
			if had.ProjectionExpression != ka.ProjectionExpression || had.ConsistentRead != ka.ConsistentRead ||
				!maps.Equal(had.ExpressionAttributeNames, ka.ExpressionAttributeNames) {
				return nil, awserr.New(awserr.ErrValidation, "One or more parameter values were invalid: RequestItems names table %s twice, by its name and its ARN, "+
					"with different ProjectionExpression, AttributesToGet, ExpressionAttributeNames or ConsistentRead", name)
			}
			ka.Keys = append(slices.Clip(had.Keys), ka.Keys...)
		}
		req.RequestItems[name] = ka
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

// byTableName rekeys a BatchWriteItem's RequestItems, by table names or
// ARNs, by table name; a table named twice has its requests merged (see
// above).
func byTableName(m map[string][]table.WriteRequest) map[string][]table.WriteRequest {
	out := make(map[string][]table.WriteRequest, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		name := tableName(k)
		out[name] = append(slices.Clip(out[name]), m[k]...)
	}
	return out
}
