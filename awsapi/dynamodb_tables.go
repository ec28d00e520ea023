package awsapi

// DynamoDB: tables (JSON 1.0, X-Amz-Target "DynamoDB_20120810.<Op>") over
// package table. A table is on-demand (PAY_PER_REQUEST) or provisioned
// (its throughput stored and described, never enforced); it may have
// global and local secondary indexes (table/secondary.go); there are no
// global tables: asking for replicas is refused, not ignored. Requests
// decode straight into table's input types, which carry DynamoDB's JSON
// field names.

import (
	"encoding/json"
	"math"
	"sort"
	"time"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table"
)

func dynamoCreateTable(rq *request, in *table.CreateTableInput) (any, error) {
	d, err := rq.h.rn.Tables.CreateTable(rq.ctx, *in)
	if err != nil {
		return nil, err
	}
	return map[string]any{"TableDescription": describeOut(d)}, nil
}

func dynamoDeleteTable(rq *request, in *tableRef) (any, error) {
	d, err := rq.h.rn.Tables.DeleteTable(rq.ctx, tableName(in.TableName))
	if err != nil {
		return nil, err
	}
	return map[string]any{"TableDescription": describeOut(d)}, nil
}

func dynamoDescribeTable(rq *request, in *tableRef) (any, error) {
	d, err := rq.h.rn.Tables.DescribeTable(rq.ctx, tableName(in.TableName))
	if err != nil {
		return nil, err
	}
	return map[string]any{"Table": describeOut(d)}, nil
}

type listTablesInput struct {
	ExclusiveStartTableName string
	Limit                   *int
}

func dynamoListTables(rq *request, in *listTablesInput) (any, error) {
	limit, err := limit("limit", in.Limit, 100, 100, awserr.ErrValidation)
	if err != nil {
		return nil, err
	}
	names := rq.h.rn.Tables.ListTables(rq.ctx)
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
}

// updateTableInput is UpdateTable's request, with the names of all the
// parameters given (raw): the ones runnel ignores count as "something to
// update".
type updateTableInput struct {
	TableName                   string
	AttributeDefinitions        []table.AttributeDefinition
	GlobalSecondaryIndexUpdates []table.GlobalSecondaryIndexUpdate
	StreamSpecification         *table.StreamSpecification
	BillingMode                 string
	ProvisionedThroughput       *table.Throughput
	DeletionProtectionEnabled   *bool
	raw                         map[string]json.RawMessage
}

func (in *updateTableInput) decodeFrom(rq *request) error {
	if err := dynamoDecode(rq.body, in); err != nil {
		return err
	}
	_ = json.Unmarshal(rq.body, &in.raw)
	return nil
}

func dynamoUpdateTable(rq *request, in *updateTableInput) (any, error) {
	if _, ok := in.raw["ReplicaUpdates"]; ok {
		return nil, awserr.New(awserr.ErrValidation, "runnel does not support ReplicaUpdates (no global tables)")
	}
	name := tableName(in.TableName)
	// Every change asked for is made, or none (table.UpdateTable); the
	// answer describes the table after them.
	var d *table.TableDescription
	var err error
	if in.BillingMode != "" || in.ProvisionedThroughput != nil || in.StreamSpecification != nil || len(in.GlobalSecondaryIndexUpdates) > 0 || in.DeletionProtectionEnabled != nil {
		d, err = rq.h.rn.Tables.UpdateTable(rq.ctx, name, table.UpdateTableInput{BillingMode: in.BillingMode,
			ProvisionedThroughput: in.ProvisionedThroughput, StreamSpecification: in.StreamSpecification,
			AttributeDefinitions: in.AttributeDefinitions, GlobalSecondaryIndexUpdates: in.GlobalSecondaryIndexUpdates,
			DeletionProtectionEnabled: in.DeletionProtectionEnabled})
	}
	if err != nil {
		return nil, err
	}
	if d == nil {
		delete(in.raw, "TableName")
		if len(in.raw) == 0 {
			return nil, awserr.New(awserr.ErrValidation, "At least one of ProvisionedThroughput, BillingMode, UpdateStreamEnabled, GlobalSecondaryIndexUpdates or SSESpecification or ReplicaUpdates is required")
		}
		if d, err = rq.h.rn.Tables.DescribeTable(rq.ctx, name); err != nil {
			return nil, err
		}
	}
	return map[string]any{"TableDescription": describeOut(d)}, nil
}

type updateTimeToLiveInput struct {
	TableName               string
	TimeToLiveSpecification *table.TimeToLiveSpecification
}

func dynamoUpdateTimeToLive(rq *request, in *updateTimeToLiveInput) (any, error) {
	if in.TimeToLiveSpecification == nil {
		return nil, awserr.New(awserr.ErrValidation, "1 validation error detected: Value null at 'timeToLiveSpecification' failed to satisfy constraint: Member must not be null")
	}
	return keyed("TimeToLiveSpecification")(rq.h.rn.Tables.UpdateTimeToLive(rq.ctx, tableName(in.TableName), *in.TimeToLiveSpecification))
}

func dynamoDescribeTimeToLive(rq *request, in *tableRef) (any, error) {
	spec, err := rq.h.rn.Tables.DescribeTimeToLive(rq.ctx, tableName(in.TableName))
	if err != nil {
		return nil, err
	}
	d := map[string]string{"TimeToLiveStatus": "DISABLED"}
	if spec.Enabled {
		d["TimeToLiveStatus"], d["AttributeName"] = "ENABLED", spec.AttributeName
	}
	return map[string]any{"TimeToLiveDescription": d}, nil
}

// tableOut is a TableDescription as DescribeTable returns it: with the
// billing fields the SDK waiters and tools expect (on-demand, or the
// provisioned throughput stored, never enforced).
// DeletionProtectionEnabled is the table's (TableDescription's, as
// CreateTable or UpdateTable set it; before, always false).
type tableOut struct {
	*table.TableDescription
	BillingModeSummary    billingModeSummary
	ProvisionedThroughput provisionedThroughput
}

type billingModeSummary struct {
	BillingMode                       string
	LastUpdateToPayPerRequestDateTime float64 `json:",omitempty"`
}

type provisionedThroughput struct {
	NumberOfDecreasesToday int64
	ReadCapacityUnits      int64
	WriteCapacityUnits     int64
}

func describeOut(d *table.TableDescription) tableOut {
	if p := d.Provisioned; p != nil {
		return tableOut{
			TableDescription:      d,
			BillingModeSummary:    billingModeSummary{BillingMode: table.BillingProvisioned},
			ProvisionedThroughput: provisionedThroughput{ReadCapacityUnits: p.ReadCapacityUnits, WriteCapacityUnits: p.WriteCapacityUnits},
		}
	}
	return tableOut{
		TableDescription:   d,
		BillingModeSummary: billingModeSummary{BillingMode: table.BillingPayPerRequest, LastUpdateToPayPerRequestDateTime: d.CreationDateTime},
	}
}

// tableRef is the TableName most calls take (a table ARN is accepted too,
// as DynamoDB does).
type tableRef struct {
	TableName string
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

// epochSeconds turns epoch seconds with a fraction (the AWS JSON
// protocols' timestamps) into a time, to the nearest millisecond.
func epochSeconds(f float64) time.Time {
	return time.UnixMilli(int64(math.Round(f * 1000)))
}
