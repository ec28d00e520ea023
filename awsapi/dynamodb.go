package awsapi

// The DynamoDB API (JSON 1.0, X-Amz-Target "DynamoDB_20120810.<Op>") over
// package table. Requests decode straight into table's input types, which
// carry DynamoDB's JSON field names; items are
// map[string]events.DynamoDBAttributeValue, DynamoDB's wire JSON.
//
// Errors are DynamoDB's: HTTP 400 with
// {"__type":"com.amazonaws.dynamodb.v20120810#<Shape>","message":...}
// (ConditionalCheckFailedException with "Item", TransactionCanceledException
// with "Message" and "CancellationReasons"), and 500 InternalServerError for
// engine failures. Responses carry X-Amz-Crc32, which the SDKs check.

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table"
)

const (
	dynamoDBTarget        = "DynamoDB_20120810."
	dynamoDBStreamsTarget = "DynamoDBStreams_20120810."
	dynamoNS              = "com.amazonaws.dynamodb.v20120810#"
	coralNS               = "com.amazon.coral.service#"
)

// coralErrors are the errors DynamoDB reports in the service framework's
// namespace rather than its own.
var coralErrors = map[string]bool{
	"SerializationException": true, "UnknownOperationException": true, "UnrecognizedClientException": true,
	"InvalidSignatureException": true, "MissingAuthenticationTokenException": true, "RequestEntityTooLarge": true,
	"RequestCanceled": true,
}

// authCodes renames the signature errors of sigv4.go (SQS's names for the
// non-Kinesis protocols) to DynamoDB's.
var authCodes = map[string]string{
	"MissingAuthenticationToken": "MissingAuthenticationTokenException",
	"InvalidClientTokenId":       "UnrecognizedClientException",
	"SignatureDoesNotMatch":      "InvalidSignatureException",
}

// dynamoError is an error in DynamoDB's shape: status, then the JSON body.
func (rq *request) dynamoError(err error) (int, map[string]any) {
	var ccf *table.ConditionalCheckFailedError
	if errors.As(err, &ccf) {
		body := map[string]any{"__type": dynamoNS + "ConditionalCheckFailedException", "message": "The conditional request failed"}
		if ccf.Item != nil {
			body["Item"] = ccf.Item
		}
		return 400, body
	}
	var tce *table.TransactionCanceledError
	if errors.As(err, &tce) {
		return 400, map[string]any{"__type": dynamoNS + "TransactionCanceledException", "Message": tce.Message(), "CancellationReasons": tce.Reasons}
	}
	var ae *apiError
	if errors.As(err, &ae) {
		code, status := ae.code, ae.status
		if c, ok := authCodes[code]; ok {
			code, status = c, 400
		}
		ns := dynamoNS
		if coralErrors[code] {
			ns = coralNS
		}
		if status >= 500 {
			rq.h.opts.Logger.Error("aws api: internal failure", "op", rq.op, "err", err)
			code, ns = "InternalServerError", dynamoNS
		}
		return status, map[string]any{"__type": ns + code, "message": ae.message}
	}
	var e *awserr.Error
	if !errors.As(err, &e) {
		if rq.r.Context().Err() != nil {
			return 400, map[string]any{"__type": coralNS + "RequestCanceled", "message": err.Error()}
		}
		rq.h.opts.Logger.Error("aws api: internal failure", "op", rq.op, "err", err)
		return 500, map[string]any{"__type": dynamoNS + "InternalServerError", "message": err.Error()}
	}
	switch e.Code {
	case awserr.ErrService.Code, "InternalFailure":
		rq.h.opts.Logger.Error("aws api: service failure", "op", rq.op, "err", err)
		return 500, map[string]any{"__type": dynamoNS + "InternalServerError", "message": e.Message}
	case awserr.ErrInvalidArgument.Code, awserr.ErrInvalidParameterValue.Code:
		// The stream package's words for a bad parameter (iterators,
		// sequence numbers): DynamoDB's is ValidationException.
		return 400, map[string]any{"__type": dynamoNS + "ValidationException", "message": e.Message}
	}
	return 400, map[string]any{"__type": dynamoNS + e.Code, "message": e.Message}
}

// dynamoFail writes err in DynamoDB's shape.
func (rq *request) dynamoFail(err error) {
	status, body := rq.dynamoError(err)
	b, _ := json.Marshal(body)
	rq.dynamoWrite(status, b)
}

// dynamoReply writes a JSON 1.0 result.
func (rq *request) dynamoReply(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		rq.dynamoFail(err)
		return
	}
	rq.dynamoWrite(200, b)
}

func (rq *request) dynamoWrite(status int, b []byte) {
	h := rq.w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("x-amzn-RequestId", rq.reqID)
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
	h.Set("Content-Length", strconv.Itoa(len(b)))
	rq.w.WriteHeader(status)
	rq.w.Write(b)
}

// dynamoDecode reads the body into v, refusing the legacy (pre-expression)
// parameters runnel does not implement rather than ignoring them.
func (rq *request) dynamoDecode(v any) error {
	body := bytes.TrimSpace(rq.body)
	if len(body) == 0 {
		return nil
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return badRequest("SerializationException", "%v", err)
	}
	for _, legacy := range []string{"Expected", "AttributeUpdates", "AttributesToGet", "KeyConditions", "QueryFilter", "ScanFilter", "ConditionalOperator"} {
		if _, ok := raw[legacy]; ok {
			return awserr.New(awserr.ErrValidation, "runnel supports the expression parameters only: the legacy parameter %s is not supported (use ConditionExpression, UpdateExpression, KeyConditionExpression, FilterExpression or ProjectionExpression)", legacy)
		}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return badRequest("SerializationException", "%v", err)
	}
	return nil
}

// tableOut is a TableDescription as DescribeTable returns it: with the
// billing fields the SDK waiters and tools expect. Every runnel table is
// on-demand.
type tableOut struct {
	*table.TableDescription
	BillingModeSummary        billingModeSummary    `json:"BillingModeSummary"`
	ProvisionedThroughput     provisionedThroughput `json:"ProvisionedThroughput"`
	DeletionProtectionEnabled bool                  `json:"DeletionProtectionEnabled"`
}

type billingModeSummary struct {
	BillingMode                       string  `json:"BillingMode"`
	LastUpdateToPayPerRequestDateTime float64 `json:"LastUpdateToPayPerRequestDateTime"`
}

type provisionedThroughput struct {
	NumberOfDecreasesToday int64 `json:"NumberOfDecreasesToday"`
	ReadCapacityUnits      int64 `json:"ReadCapacityUnits"`
	WriteCapacityUnits     int64 `json:"WriteCapacityUnits"`
}

func describeOut(d *table.TableDescription) tableOut {
	return tableOut{
		TableDescription:   d,
		BillingModeSummary: billingModeSummary{BillingMode: "PAY_PER_REQUEST", LastUpdateToPayPerRequestDateTime: d.CreationDateTime},
	}
}

// tableRef is the TableName most calls take (a table ARN is accepted too,
// as DynamoDB does).
type tableRef struct {
	TableName string `json:"TableName"`
}

func tableName(name string) string {
	// arn:aws:dynamodb:<region>:<account>:table/<name>
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			if len(name) > 4 && name[:4] == "arn:" {
				return name[i+1:]
			}
			break
		}
	}
	return name
}

func (rq *request) dynamodb() {
	out, err := rq.dynamoOp()
	if err != nil {
		rq.dynamoFail(err)
		return
	}
	rq.dynamoReply(out)
}

func (rq *request) dynamoOp() (any, error) {
	ctx := rq.r.Context()
	svc := rq.h.rn.Tables
	switch rq.op {
	case "CreateTable":
		var in struct {
			table.CreateTableInput
			GlobalSecondaryIndexes json.RawMessage `json:"GlobalSecondaryIndexes"`
			LocalSecondaryIndexes  json.RawMessage `json:"LocalSecondaryIndexes"`
		}
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		if len(in.GlobalSecondaryIndexes) > 0 || len(in.LocalSecondaryIndexes) > 0 {
			return nil, awserr.New(awserr.ErrValidation, "runnel supports no secondary indexes: GlobalSecondaryIndexes and LocalSecondaryIndexes must be absent")
		}
		d, err := svc.CreateTable(ctx, in.CreateTableInput)
		if err != nil {
			return nil, err
		}
		return map[string]any{"TableDescription": describeOut(d)}, nil
	case "DeleteTable":
		var in tableRef
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		d, err := svc.DeleteTable(ctx, tableName(in.TableName))
		if err != nil {
			return nil, err
		}
		return map[string]any{"TableDescription": describeOut(d)}, nil
	case "DescribeTable":
		var in tableRef
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		d, err := svc.DescribeTable(ctx, tableName(in.TableName))
		if err != nil {
			return nil, err
		}
		return map[string]any{"Table": describeOut(d)}, nil
	case "ListTables":
		var in struct {
			ExclusiveStartTableName string `json:"ExclusiveStartTableName"`
			Limit                   *int   `json:"Limit"`
		}
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		limit := 100
		if in.Limit != nil {
			limit = *in.Limit
			if limit < 1 || limit > 100 {
				return nil, awserr.OutOfRange(awserr.ErrValidation, "limit", limit, 1, 100)
			}
		}
		names := svc.ListTables(ctx)
		if in.ExclusiveStartTableName != "" {
			names = names[sort.SearchStrings(names, in.ExclusiveStartTableName+"\x00"):]
		}
		out := map[string]any{}
		if len(names) > limit {
			names = names[:limit]
			out["LastEvaluatedTableName"] = names[limit-1]
		}
		if names == nil {
			names = []string{}
		}
		out["TableNames"] = names
		return out, nil
	case "UpdateTable":
		return rq.updateTable()
	case "PutItem":
		var in table.PutItemInput
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		in.TableName = tableName(in.TableName)
		return svc.PutItem(ctx, in)
	case "GetItem":
		var in table.GetItemInput
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		in.TableName = tableName(in.TableName)
		return svc.GetItem(ctx, in)
	case "UpdateItem":
		var in table.UpdateItemInput
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		in.TableName = tableName(in.TableName)
		return svc.UpdateItem(ctx, in)
	case "DeleteItem":
		var in table.DeleteItemInput
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		in.TableName = tableName(in.TableName)
		return svc.DeleteItem(ctx, in)
	case "Query":
		var in struct {
			table.QueryInput
			Limit *int `json:"Limit"`
		}
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		limit, err := pageLimit(in.Limit)
		if err != nil {
			return nil, err
		}
		in.QueryInput.Limit = limit
		in.TableName = tableName(in.TableName)
		return svc.Query(ctx, in.QueryInput)
	case "Scan":
		var in struct {
			table.ScanInput
			Limit *int `json:"Limit"`
		}
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		limit, err := pageLimit(in.Limit)
		if err != nil {
			return nil, err
		}
		in.ScanInput.Limit = limit
		in.TableName = tableName(in.TableName)
		return svc.Scan(ctx, in.ScanInput)
	case "TransactWriteItems":
		var in table.TransactWriteItemsInput
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
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
		if err := svc.TransactWriteItems(ctx, in); err != nil {
			return nil, err
		}
		return struct{}{}, nil
	case "UpdateTimeToLive":
		var in struct {
			TableName               string                         `json:"TableName"`
			TimeToLiveSpecification *table.TimeToLiveSpecification `json:"TimeToLiveSpecification"`
		}
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		if in.TimeToLiveSpecification == nil {
			return nil, awserr.New(awserr.ErrValidation, "1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null")
		}
		spec, err := svc.UpdateTimeToLive(ctx, tableName(in.TableName), *in.TimeToLiveSpecification)
		if err != nil {
			return nil, err
		}
		return map[string]any{"TimeToLiveSpecification": spec}, nil
	case "DescribeTimeToLive":
		var in tableRef
		if err := rq.dynamoDecode(&in); err != nil {
			return nil, err
		}
		spec, err := svc.DescribeTimeToLive(ctx, tableName(in.TableName))
		if err != nil {
			return nil, err
		}
		d := map[string]string{"TimeToLiveStatus": "DISABLED"}
		if spec.Enabled {
			d["TimeToLiveStatus"], d["AttributeName"] = "ENABLED", spec.AttributeName
		}
		return map[string]any{"TimeToLiveDescription": d}, nil
	}
	return nil, badRequest("UnknownOperationException", "DynamoDB operation %s is not supported by runnel", rq.op)
}

// updateTable serves UpdateTable: StreamSpecification turns the stream on
// or off; billing, throughput and the other table settings are accepted and
// ignored (every runnel table is on-demand); index and replica changes are
// refused.
func (rq *request) updateTable() (any, error) {
	ctx := rq.r.Context()
	var raw map[string]json.RawMessage
	var in struct {
		TableName           string                     `json:"TableName"`
		StreamSpecification *table.StreamSpecification `json:"StreamSpecification"`
	}
	if err := rq.dynamoDecode(&in); err != nil {
		return nil, err
	}
	_ = json.Unmarshal(rq.body, &raw)
	for _, f := range []string{"GlobalSecondaryIndexUpdates", "ReplicaUpdates"} {
		if _, ok := raw[f]; ok {
			return nil, awserr.New(awserr.ErrValidation, "runnel does not support %s (no secondary indexes, no global tables)", f)
		}
	}
	name := tableName(in.TableName)
	if in.StreamSpecification != nil {
		d, err := rq.h.rn.Tables.UpdateStream(ctx, name, *in.StreamSpecification)
		if err != nil {
			return nil, err
		}
		return map[string]any{"TableDescription": describeOut(d)}, nil
	}
	delete(raw, "TableName")
	if len(raw) == 0 {
		return nil, awserr.New(awserr.ErrValidation, "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or SSESpecification or ReplicaUpdates is required")
	}
	d, err := rq.h.rn.Tables.DescribeTable(ctx, name)
	if err != nil {
		return nil, err
	}
	return map[string]any{"TableDescription": describeOut(d)}, nil
}

// epochSeconds turns DynamoDB's epoch seconds (with a fraction) into a time.
func epochSeconds(f float64) time.Time {
	return time.UnixMilli(int64(math.Round(f * 1000)))
}

// pageLimit checks Query's and Scan's Limit (at least 1 when given; 0 means
// none).
func pageLimit(limit *int) (int, error) {
	if limit == nil {
		return 0, nil
	}
	if *limit < 1 {
		return 0, awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%d' at 'limit' failed to satisfy constraint: Member must have value greater than or equal to 1", *limit)
	}
	return *limit, nil
}
