package table

import (
	"context"
)

// Throughput is a provisioned table's capacity (BillingMode PROVISIONED).
// runnel stores, describes and updates it, and does not throttle by it.
type Throughput struct {
	ReadCapacityUnits  int64 `json:"ReadCapacityUnits"`
	WriteCapacityUnits int64 `json:"WriteCapacityUnits"`
}

// Billing modes.
const (
	BillingProvisioned   = "PROVISIONED"
	BillingPayPerRequest = "PAY_PER_REQUEST"
)

// billing resolves a request's BillingMode and ProvisionedThroughput into
// the throughput to store (nil: on demand). A mode without one is the
// current (cur), and a table given neither is on demand (runnel's
// default; DynamoDB's is PROVISIONED, which then requires a throughput).
func billing(mode string, tp, cur *Throughput) (*Throughput, error) {
	switch {
	case mode == BillingPayPerRequest && tp != nil:
		return nil, validation("One or more parameter values were invalid: Neither ReadCapacityUnits nor WriteCapacityUnits can be specified when BillingMode is PAY_PER_REQUEST")
	case mode == BillingPayPerRequest:
		return nil, nil
	case tp != nil:
		return &Throughput{ReadCapacityUnits: tp.ReadCapacityUnits, WriteCapacityUnits: tp.WriteCapacityUnits}, nil
	case mode == BillingProvisioned && cur == nil:
		return nil, validation("One or more parameter values were invalid: ReadCapacityUnits and WriteCapacityUnits must both be specified when BillingMode is PROVISIONED")
	}
	return cur, nil
}

// UpdateBilling changes a table's BillingMode and ProvisionedThroughput
// (UpdateTable), in DynamoDB's words when nothing would change.
func (s *Service) UpdateBilling(ctx context.Context, name, mode string, tp *Throughput) (*TableDescription, error) {
	return s.UpdateTable(ctx, name, UpdateTableInput{BillingMode: mode, ProvisionedThroughput: tp})
}

// billingApplied is st with its billing changed (UpdateTable).
func billingApplied(st stored, mode string, tp *Throughput) (stored, error) {
	next, err := billing(mode, tp, st.Provisioned)
	if err != nil {
		return st, err
	}
	if cur := st.Provisioned; cur != nil && next != nil && *cur == *next {
		return st, validation("The provisioned throughput for the table will not change. The requested value equals the current value. "+
			"Current ReadCapacityUnits provisioned for the table: %d. Requested ReadCapacityUnits: %d. "+
			"Current WriteCapacityUnits provisioned for the table: %d. Requested WriteCapacityUnits: %d. "+
			"Refer to the Amazon DynamoDB Developer Guide for current limits and how to request higher limits.",
			cur.ReadCapacityUnits, next.ReadCapacityUnits, cur.WriteCapacityUnits, next.WriteCapacityUnits)
	}
	st.Provisioned = next
	return st, nil
}
