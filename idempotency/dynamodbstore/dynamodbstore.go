// Package dynamodbstore keeps idempotency records (package idempotency)
// in DynamoDB through aws-sdk-go-v2: Powertools' DynamoDB persistence
// layer. It works the same against AWS and against runnel's AWS endpoint
// (`runnel serve --aws`).
//
// The table has the partition key "id" (S) and TTL on "expiration"
// (CreateTable makes one; in CloudFormation: KeySchema id HASH,
// AttributeDefinitions id S, TimeToLiveSpecification expiration). The
// function needs dynamodb:PutItem, GetItem, UpdateItem and DeleteItem on
// it.
package dynamodbstore

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/runnel-dev/runnel/idempotency"
)

// API is the part of *dynamodb.Client the store uses (a smaller fake
// fits in tests).
type API interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Store is an idempotency.Store on one DynamoDB table.
type Store struct {
	api   API
	table string
}

var _ idempotency.Store = (*Store)(nil)

// New returns a store on the existing table (a *dynamodb.Client is an
// API).
func New(api API, table string) *Store { return &Store{api: api, table: table} }

// CreateTable creates the table (pay per request, partition key "id" S),
// waits until it is ACTIVE (at most two minutes), turns TTL on for
// "expiration", and returns a store on it.
func CreateTable(ctx context.Context, client *dynamodb.Client, table string) (*Store, error) {
	if _, err := client.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		BillingMode:          types.BillingModePayPerRequest,
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String(idempotency.AttrID), KeyType: types.KeyTypeHash}},
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String(idempotency.AttrID), AttributeType: types.ScalarAttributeTypeS}},
	}); err != nil {
		return nil, err
	}
	if err := dynamodb.NewTableExistsWaiter(client).Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)}, 2*time.Minute); err != nil {
		return nil, err
	}
	if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(idempotency.AttrExpiration), Enabled: aws.Bool(true)},
	}); err != nil {
		return nil, err
	}
	return New(client, table), nil
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

func key(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{idempotency.AttrID: str(id)}
}

// Put writes r under idempotency.PutCondition, asking for the existing
// item on failure (ReturnValuesOnConditionCheckFailure ALL_OLD).
func (s *Store) Put(ctx context.Context, r idempotency.Record, now time.Time) error {
	item := map[string]types.AttributeValue{
		idempotency.AttrID:         str(r.ID),
		idempotency.AttrExpiration: num(r.Expiration),
		idempotency.AttrStatus:     str(string(r.Status)),
	}
	if r.InProgressExpiration != 0 {
		item[idempotency.AttrInProgressExpiration] = num(r.InProgressExpiration)
	}
	if r.Validation != "" {
		item[idempotency.AttrValidation] = str(r.Validation)
	}
	_, err := s.api.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                aws.String(s.table),
		Item:                     item,
		ConditionExpression:      aws.String(idempotency.PutCondition),
		ExpressionAttributeNames: idempotency.PutConditionNames(),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now":           num(now.Unix()),
			":now_in_millis": num(now.UnixMilli()),
			":inprogress":    str(string(idempotency.StatusInProgress)),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		e := &idempotency.ExistsError{}
		if len(cf.Item) > 0 {
			if e.Record, err = decode(cf.Item); err != nil {
				return err
			}
		}
		return e
	}
	return err
}

// Get reads the record id with a strongly consistent read.
func (s *Store) Get(ctx context.Context, id string) (*idempotency.Record, error) {
	out, err := s.api.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, err
	}
	if len(out.Item) == 0 {
		return nil, idempotency.ErrRecordNotFound
	}
	return decode(out.Item)
}

// Update saves a completed record (UpdateItem, as Powertools), if the
// record is still the caller's (idempotency.OwnCondition with held;
// Powertools has no condition here).
func (s *Store) Update(ctx context.Context, r idempotency.Record, held int64) error {
	expr, names := idempotency.UpdateExpression(r.Validation != "")
	for k, v := range idempotency.OwnConditionNames() {
		names[k] = v
	}
	values := map[string]types.AttributeValue{
		":data":       str(string(r.Data)),
		":expiry":     num(r.Expiration),
		":status":     str(string(r.Status)),
		":inprogress": str(string(idempotency.StatusInProgress)),
		":held":       num(held),
	}
	if r.Validation != "" {
		values[":validation"] = str(r.Validation)
	}
	_, err := s.api.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: key(r.ID), UpdateExpression: aws.String(expr),
		ConditionExpression:      aws.String(idempotency.OwnCondition),
		ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	if errors.As(err, new(*types.ConditionalCheckFailedException)) {
		return idempotency.ErrRecordChanged
	}
	return err
}

// Delete removes the record id if it is still the caller's
// (idempotency.OwnCondition with held); a missing record is not an error.
func (s *Store) Delete(ctx context.Context, id string, held int64) error {
	_, err := s.api.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: key(id),
		ConditionExpression:      aws.String(idempotency.OwnCondition),
		ExpressionAttributeNames: idempotency.OwnConditionNames(),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":inprogress": str(string(idempotency.StatusInProgress)),
			":held":       num(held),
		},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var cf *types.ConditionalCheckFailedException
	if errors.As(err, &cf) {
		if len(cf.Item) == 0 {
			return nil // already gone
		}
		return idempotency.ErrRecordChanged
	}
	return err
}

func decode(it map[string]types.AttributeValue) (*idempotency.Record, error) {
	return idempotency.DecodeRecord("dynamodbstore", func(name string) (string, string, bool) {
		switch v := it[name].(type) {
		case *types.AttributeValueMemberS:
			return "S", v.Value, true
		case *types.AttributeValueMemberN:
			return "N", v.Value, true
		case nil, *types.AttributeValueMemberNULL:
			return "", "", false
		}
		return "?", "", true
	})
}
