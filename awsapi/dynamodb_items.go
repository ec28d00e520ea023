package awsapi

// DynamoDB: items (JSON 1.0) over package table: the expression
// parameters (the legacy ones are translated into expressions,
// dynamodb_legacy.go), items as map[string]events.DynamoDBAttributeValue, DynamoDB's wire
// JSON. A table ARN is accepted wherever a TableName is.

import (
	"context"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table"
)

func dynamoPutItem(rq *request, in *table.PutItemInput) (any, error) {
	return itemCall(rq, (*table.Service).PutItem, in, &in.TableName)
}

func dynamoGetItem(rq *request, in *table.GetItemInput) (any, error) {
	return itemCall(rq, (*table.Service).GetItem, in, &in.TableName)
}

func dynamoUpdateItem(rq *request, in *table.UpdateItemInput) (any, error) {
	return itemCall(rq, (*table.Service).UpdateItem, in, &in.TableName)
}

func dynamoDeleteItem(rq *request, in *table.DeleteItemInput) (any, error) {
	return itemCall(rq, (*table.Service).DeleteItem, in, &in.TableName)
}

// itemCall resolves the table name (a table ARN is accepted) and makes
// the call.
func itemCall[In, Out any](rq *request, call func(*table.Service, context.Context, In) (Out, error), in *In, table *string) (any, error) {
	*table = tableName(*table)
	return call(rq.h.rn.Tables, rq.ctx, *in)
}

// queryInput and scanInput are Query's and Scan's requests with Limit as
// given (table takes 0 for none; DynamoDB refuses 0).
type (
	queryInput struct {
		table.QueryInput
		Limit *int
	}
	scanInput struct {
		table.ScanInput
		Limit *int
	}
)

func dynamoQuery(rq *request, in *queryInput) (any, error) {
	if err := pageInput(&in.QueryInput.Limit, in.Limit, &in.TableName); err != nil {
		return nil, err
	}
	out, err := rq.h.rn.Tables.Query(rq.ctx, in.QueryInput)
	if obj, _ := rq.parsed.(map[string]any); obj["QueryFilter"] != nil {
		// the filter came as a QueryFilter (dynamodb_legacy.go): DynamoDB
		// names it so
		if e, ok := err.(*awserr.Error); ok {
			if rest, ok := strings.CutPrefix(e.Message, "Filter Expression can only contain"); ok {
				return nil, awserr.New(awserr.ErrValidation, "QueryFilter can only contain%s", rest)
			}
		}
	}
	return out, err
}

func dynamoScan(rq *request, in *scanInput) (any, error) {
	if err := pageInput(&in.ScanInput.Limit, in.Limit, &in.TableName); err != nil {
		return nil, err
	}
	return rq.h.rn.Tables.Scan(rq.ctx, in.ScanInput)
}

// pageInput checks Query's and Scan's Limit (at least 1 when given) into
// dst (0: none) and resolves the table name.
func pageInput(dst, limit *int, table *string) error {
	*table = tableName(*table)
	if limit == nil {
		return nil
	}
	if *limit < 1 {
		return awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *limit)
	}
	*dst = *limit
	return nil
}

func dynamoTransactWriteItems(rq *request, in *table.TransactWriteItemsInput) (any, error) {
	for _, it := range in.TransactItems {
		switch {
		case it.ConditionCheck != nil:
			it.ConditionCheck.TableName = tableName(it.ConditionCheck.TableName)
		case it.Put != nil:
			it.Put.TableName = tableName(it.Put.TableName)
		case it.Update != nil:
			it.Update.TableName = tableName(it.Update.TableName)
		case it.Delete != nil:
			it.Delete.TableName = tableName(it.Delete.TableName)
		}
	}
	return nil, rq.h.rn.Tables.TransactWriteItems(rq.ctx, *in)
}
