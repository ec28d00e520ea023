// Package tablestore keeps idempotency records (package idempotency) in a
// runnel table: the DynamoDB layer of Powertools on runnel's DynamoDB
// model (*table.Service), in the same process, without HTTP.
//
// The table has the partition key "id" (S) and TTL on "expiration";
// CreateTable makes one. Records use Powertools' attribute names (see
// idempotency.Attr*), so a table written here reads the same through
// runnel's DynamoDB API and package idempotency/dynamodbstore.
package tablestore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/idempotency"
	"github.com/runnel-dev/runnel/table"
)

// Store is an idempotency.Store on one runnel table.
type Store struct {
	tables *table.Service
	name   string
}

var _ idempotency.Store = (*Store)(nil)

// New returns a store on the existing table name of tables.
func New(tables *table.Service, name string) *Store {
	return &Store{tables: tables, name: name}
}

// CreateTable creates the table name with the schema the store needs
// (partition key "id", type S) and TTL on "expiration", and returns a
// store on it. An existing table is an error
// (errors.Is(err, awserr.ErrResourceInUse)).
func CreateTable(ctx context.Context, tables *table.Service, name string) (*Store, error) {
	if _, err := tables.CreateTable(ctx, table.CreateTableInput{
		TableName:            name,
		KeySchema:            []table.KeySchemaElement{{AttributeName: idempotency.AttrID, KeyType: table.KeyTypeHash}},
		AttributeDefinitions: []table.AttributeDefinition{{AttributeName: idempotency.AttrID, AttributeType: table.TypeS}},
	}); err != nil {
		return nil, err
	}
	if _, err := tables.UpdateTimeToLive(ctx, name, table.TimeToLiveSpecification{AttributeName: idempotency.AttrExpiration, Enabled: true}); err != nil {
		return nil, err
	}
	return New(tables, name), nil
}

func key(id string) table.Item {
	return table.Item{idempotency.AttrID: events.NewStringAttribute(id)}
}

func num(n int64) events.DynamoDBAttributeValue {
	return events.NewNumberAttribute(strconv.FormatInt(n, 10))
}

// Put writes r under idempotency.PutCondition.
func (s *Store) Put(ctx context.Context, r idempotency.Record, now time.Time) error {
	item := table.Item{
		idempotency.AttrID:         events.NewStringAttribute(r.ID),
		idempotency.AttrExpiration: num(r.Expiration),
		idempotency.AttrStatus:     events.NewStringAttribute(string(r.Status)),
	}
	if r.InProgressExpiration != 0 {
		item[idempotency.AttrInProgressExpiration] = num(r.InProgressExpiration)
	}
	if r.Validation != "" {
		item[idempotency.AttrValidation] = events.NewStringAttribute(r.Validation)
	}
	_, err := s.tables.PutItem(ctx, table.PutItemInput{
		TableName: s.name,
		Item:      item,
		WriteExpr: table.WriteExpr{
			ConditionExpression:      idempotency.PutCondition,
			ExpressionAttributeNames: idempotency.PutConditionNames(),
			ExpressionAttributeValues: table.Item{
				":now":           num(now.Unix()),
				":now_in_millis": num(now.UnixMilli()),
				":inprogress":    events.NewStringAttribute(string(idempotency.StatusInProgress)),
			},
			ReturnValuesOnConditionCheckFailure: table.ReturnAllOld,
		},
	})
	var cf *table.ConditionalCheckFailedError
	if errors.As(err, &cf) {
		e := &idempotency.ExistsError{}
		if cf.Item != nil {
			if e.Record, err = decode(cf.Item); err != nil {
				return err
			}
		}
		return e
	}
	return err
}

// Get reads the record id.
func (s *Store) Get(ctx context.Context, id string) (*idempotency.Record, error) {
	out, err := s.tables.GetItem(ctx, table.GetItemInput{TableName: s.name, Key: key(id), ConsistentRead: true})
	if err != nil {
		return nil, err
	}
	if out.Item == nil {
		return nil, idempotency.ErrRecordNotFound
	}
	return decode(out.Item)
}

// Update saves a completed record, if the record is still the caller's
// (idempotency.OwnCondition with held).
func (s *Store) Update(ctx context.Context, r idempotency.Record, held int64) error {
	expr, names := idempotency.UpdateExpression(r.Validation != "")
	for k, v := range idempotency.OwnConditionNames() {
		names[k] = v
	}
	values := table.Item{
		":data":       events.NewStringAttribute(string(r.Data)),
		":expiry":     num(r.Expiration),
		":status":     events.NewStringAttribute(string(r.Status)),
		":inprogress": events.NewStringAttribute(string(idempotency.StatusInProgress)),
		":held":       num(held),
	}
	if r.Validation != "" {
		values[":validation"] = events.NewStringAttribute(r.Validation)
	}
	_, err := s.tables.UpdateItem(ctx, table.UpdateItemInput{
		TableName: s.name, Key: key(r.ID), UpdateExpression: expr,
		WriteExpr: table.WriteExpr{
			ConditionExpression:       idempotency.OwnCondition,
			ExpressionAttributeNames:  names,
			ExpressionAttributeValues: values,
		},
	})
	if errors.As(err, new(*table.ConditionalCheckFailedError)) {
		return idempotency.ErrRecordChanged
	}
	return err
}

// Delete removes the record id if it is still the caller's
// (idempotency.OwnCondition with held); a missing record is not an error.
func (s *Store) Delete(ctx context.Context, id string, held int64) error {
	_, err := s.tables.DeleteItem(ctx, table.DeleteItemInput{TableName: s.name, Key: key(id),
		WriteExpr: table.WriteExpr{
			ConditionExpression:      idempotency.OwnCondition,
			ExpressionAttributeNames: idempotency.OwnConditionNames(),
			ExpressionAttributeValues: table.Item{
				":inprogress": events.NewStringAttribute(string(idempotency.StatusInProgress)),
				":held":       num(held),
			},
			ReturnValuesOnConditionCheckFailure: table.ReturnAllOld,
		},
	})
	var cf *table.ConditionalCheckFailedError
	if errors.As(err, &cf) {
		if cf.Item == nil {
			return nil // already gone
		}
		return idempotency.ErrRecordChanged
	}
	return err
}

func decode(it table.Item) (*idempotency.Record, error) {
	return idempotency.DecodeRecord("tablestore", func(name string) (string, string, bool) {
		v, ok := it[name]
		if !ok || v.IsNull() {
			return "", "", false
		}
		switch v.DataType() {
		case events.DataTypeString:
			return "S", v.String(), true
		case events.DataTypeNumber:
			return "N", v.Number(), true
		}
		return "?", "", true
	})
}
