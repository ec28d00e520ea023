package table

import (
	"context"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table/expr"
)

// TransactGet is one read of a TransactGetItems: a table's item by key,
// with an optional ProjectionExpression.
type TransactGet struct {
	TableName                string            `json:"TableName"`
	Key                      Item              `json:"Key"`
	ProjectionExpression     string            `json:"ProjectionExpression,omitempty"`
	ExpressionAttributeNames map[string]string `json:"ExpressionAttributeNames,omitempty"`
}

// TransactGetItem is one action of TransactGetItems: Get is required.
type TransactGetItem struct {
	Get *TransactGet `json:"Get"`
}

// TransactGetItemsInput is TransactGetItems' request: 1..100 actions.
type TransactGetItemsInput struct {
	TransactItems          []TransactGetItem `json:"TransactItems"`
	ReturnConsumedCapacity string            `json:"ReturnConsumedCapacity,omitempty"`
}

// ItemResponse is one action's answer: Item nil when there is none.
type ItemResponse struct {
	Item Item `json:"Item,omitempty"`
}

// TransactGetItemsOutput holds one response per action, in order.
type TransactGetItemsOutput struct {
	Responses        []ItemResponse     `json:"Responses"`
	ConsumedCapacity []ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// TransactGetItems reads up to 100 items of one or several tables as one
// snapshot (API_TransactGetItems,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_TransactGetItems.html):
// the items' locks are taken together, so no transaction or single write
// is seen half done. Capacity is counted as DynamoDB counts transactional
// reads: twice a strongly consistent read.
//
// Errors: ValidationException for no actions or more than 100, an action
// without Get, two actions on one item ("Transaction request cannot
// include multiple operations on one item"), an empty string or binary
// key value, a bad projection; ResourceNotFoundException for a missing
// table; TransactionCanceledError when a Key does not match the table's
// key schema (a value of the wrong type, an attribute missing or one
// too many: that action's reason ValidationError "The provided key
// element does not match the schema", the others None; after every
// ValidationException above), when an item is held by a
// TransactWriteItems in progress (that action's reason
// TransactionConflict, the others None), or held by a write whose outcome
// is not known yet (resolve.go: a change of a committed transaction not
// applied yet among them, so that the read would see the transaction half
// done; the transaction-apis.html rule is "either all changes from a
// completed transaction or none at all"), or the items read exceed 4 MB
// (every reason ValidationError).
func (s *Service) TransactGetItems(ctx context.Context, in TransactGetItemsInput) (*TransactGetItemsOutput, error) {
	if remote, out, err := forwardOut[TransactGetItemsOutput](ctx, s, "TransactGetItems", in); remote {
		return out, err
	}
	n := len(in.TransactItems)
	if n < 1 || n > MaxTransactItems {
		return nil, awserr.New(awserr.ErrValidation, "1 validation error detected: Value '%d' at 'transactItems' failed to satisfy constraint: Member must have length less than or equal to %d and greater than or equal to 1", n, MaxTransactItems)
	}
	ops := make([]*op, n)
	projs := make([]*expr.Projection, n)
	ids := make([]string, n)
	seen := map[string]bool{}
	// reasons: set when a Get's Key does not match the table's key
	// schema (checkTxKey): the read is cancelled once every Get passed
	// its other checks.
	var reasons []CancellationReason
	for i, it := range in.TransactItems {
		g := it.Get
		if g == nil {
			return nil, validation("1 validation error detected: Value null at 'transactItems.%d.member.get' failed to satisfy constraint: Member must not be null", i+1)
		}
		t, err := s.table(g.TableName)
		if err != nil {
			return nil, err
		}
		keyItem := g.Key
		kc := checkTxKey(t, g.Key, true)
		if kc.reason != "" {
			keyItem = kc.use // the projection is checked all the same
		}
		if ops[i], projs[i], err = s.getOp(g.TableName, keyItem, g.ProjectionExpression, g.ExpressionAttributeNames); err != nil {
			return nil, err
		}
		if kc.reason != "" {
			if reasons == nil {
				reasons = make([]CancellationReason, n)
				for j := range reasons {
					reasons[j].Code = "None"
				}
			}
			reasons[i] = CancellationReason{Code: "ValidationError", Message: kc.reason}
			continue
		}
		ids[i] = ops[i].itemID()
		if seen[ids[i]] {
			return nil, validation("Transaction request cannot include multiple operations on one item")
		}
		seen[ids[i]] = true
	}
	if reasons != nil {
		return nil, &TransactionCanceledError{Reasons: reasons}
	}
	if busy := s.held.busy(ids); busy != nil {
		return nil, conflictCancel(n, busy)
	}
	// An item held by a write of unknown outcome (unsure: resolve.go) may
	// have a change in the log that the index lacks, one of a committed
	// transaction among them: read it is to see that transaction half
	// applied. Such an item is a TransactionConflict, checked again with
	// the stripes locked (a transaction in progress holds them all).
	unsure := func() []int {
		if !s.unsure.any() {
			return nil
		}
		return s.unsure.busy(ids)
	}
	if busy := unsure(); busy != nil {
		return nil, conflictCancel(n, busy)
	}
	items, busy, err := readLocked(ctx, ops, unsure)
	if err != nil {
		return nil, err
	}
	if busy != nil {
		return nil, conflictCancel(n, busy)
	}
	out := &TransactGetItemsOutput{Responses: make([]ItemResponse, n)}
	units := map[string]float64{}
	size := 0
	for i, it := range items {
		size += expr.ItemSize(it)
		units[ops[i].t.tableName] += 2 * readUnits(expr.ItemSize(it), true)
		out.Responses[i].Item = project(it, projs[i])
	}
	if size > MaxTransactBytes {
		reasons := make([]CancellationReason, n)
		for i := range reasons {
			reasons[i] = CancellationReason{Code: "ValidationError", Message: "Transaction size has exceeded the maximum allowed size of 4 MB"}
		}
		return nil, &TransactionCanceledError{Reasons: reasons}
	}
	out.ConsumedCapacity = capacities(in.ReturnConsumedCapacity, units)
	return out, nil
}

// readLocked reads the items of ops with all their stripes locked, unless
// check, with them locked, names busy items.
func readLocked(ctx context.Context, ops []*op, check func() []int) ([]Item, []int, error) {
	defer lockItems(ops)()
	if busy := check(); busy != nil {
		return nil, busy, nil
	}
	items := make([]Item, len(ops))
	for i, o := range ops {
		it, _, err := o.t.get(ctx, o.k)
		if err != nil {
			return nil, nil, err
		}
		items[i] = it
	}
	return items, nil, nil
}
