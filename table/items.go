package table

import (
	"context"
	"errors"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table/expr"
)

// ReturnValues settings.
const (
	ReturnNone       = "NONE"
	ReturnAllOld     = "ALL_OLD"
	ReturnUpdatedOld = "UPDATED_OLD"
	ReturnAllNew     = "ALL_NEW"
	ReturnUpdatedNew = "UPDATED_NEW"
)

// ConditionalCheckFailedError is returned when a write's
// ConditionExpression is false. Item is the item as it was, when the
// request asked for it with ReturnValuesOnConditionCheckFailure ALL_OLD
// (Powertools' idempotency layer reads it). errors.Is(err,
// awserr.ErrConditionalCheckFailed) matches it.
type ConditionalCheckFailedError struct {
	Item Item
}

func (e *ConditionalCheckFailedError) Error() string {
	return "ConditionalCheckFailedException: The conditional request failed"
}

// Is matches awserr.ErrConditionalCheckFailed.
func (e *ConditionalCheckFailedError) Is(target error) bool {
	return target == awserr.ErrConditionalCheckFailed
}

// WriteExpr is what PutItem, UpdateItem, DeleteItem and a transaction's
// actions share: the ConditionExpression, the placeholders
// (ExpressionAttributeNames and ExpressionAttributeValues) of it and of an
// UpdateExpression, and what a failed condition returns
// (ReturnValuesOnConditionCheckFailure NONE or ALL_OLD). Its fields are
// promoted, so the requests' JSON is DynamoDB's.
type WriteExpr struct {
	ConditionExpression                 string            `json:"ConditionExpression,omitempty"`
	ExpressionAttributeNames            map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ExpressionAttributeValues           Item              `json:"ExpressionAttributeValues,omitempty"`
	ReturnValuesOnConditionCheckFailure string            `json:"ReturnValuesOnConditionCheckFailure,omitempty"`
}

// PutItemInput is PutItem's request (API_PutItem), with DynamoDB's JSON
// field names. ReturnValues is NONE or ALL_OLD.
type PutItemInput struct {
	TableName string `json:"TableName"`
	Item      Item   `json:"Item"`
	WriteExpr
	ReturnValues           string `json:"ReturnValues,omitempty"`
	ReturnConsumedCapacity string `json:"ReturnConsumedCapacity,omitempty"`
}

// WriteOutput is the answer of PutItem, UpdateItem and DeleteItem:
// Attributes as ReturnValues asked.
type WriteOutput struct {
	Attributes       Item              `json:"Attributes,omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// GetItemInput is GetItem's request. Reads are always strongly consistent.
type GetItemInput struct {
	TableName                string            `json:"TableName"`
	Key                      Item              `json:"Key"`
	ProjectionExpression     string            `json:"ProjectionExpression,omitempty"`
	ExpressionAttributeNames map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ConsistentRead           bool              `json:"ConsistentRead,omitempty"`
	ReturnConsumedCapacity   string            `json:"ReturnConsumedCapacity,omitempty"`
}

// GetItemOutput holds the item, nil if there is none.
type GetItemOutput struct {
	Item             Item              `json:"Item,omitempty"`
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// UpdateItemInput is UpdateItem's request (API_UpdateItem). An update of a
// missing item creates it (from Key plus the update) unless the condition
// says otherwise.
type UpdateItemInput struct {
	TableName        string `json:"TableName"`
	Key              Item   `json:"Key"`
	UpdateExpression string `json:"UpdateExpression,omitempty"`
	WriteExpr
	ReturnValues           string `json:"ReturnValues,omitempty"`
	ReturnConsumedCapacity string `json:"ReturnConsumedCapacity,omitempty"`
}

// DeleteItemInput is DeleteItem's request. Deleting a missing item
// succeeds and writes nothing.
type DeleteItemInput struct {
	TableName string `json:"TableName"`
	Key       Item   `json:"Key"`
	WriteExpr
	ReturnValues           string `json:"ReturnValues,omitempty"`
	ReturnConsumedCapacity string `json:"ReturnConsumedCapacity,omitempty"`
}

// newContext is the expression context of a request; its values' numbers
// are in canonical form, as DynamoDB stores what SET copies.
func newContext(names map[string]string, values Item) *expr.Context {
	return &expr.Context{Names: names, Values: expr.CanonicalItem(values)}
}

// exprErr turns an expression error into a ValidationException.
func exprErr(err error) error {
	var ve *expr.ValidationError
	if errors.As(err, &ve) {
		return validation("%s", ve.Message)
	}
	return err
}

// checkReturn checks ReturnValuesOnConditionCheckFailure: NONE or ALL_OLD.
func (c WriteExpr) checkReturn() error {
	return checkReturn("returnValuesOnConditionCheckFailure", c.ReturnValuesOnConditionCheckFailure, ReturnNone, ReturnAllOld)
}

// returnOld reports whether a failed condition returns the item.
func (c WriteExpr) returnOld() bool { return c.ReturnValuesOnConditionCheckFailure == ReturnAllOld }

func checkReturn(field, v string, allowed ...string) error {
	if v == "" {
		return nil
	}
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return validation("1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: %v", v, field, allowed)
}

// op is a prepared single-item write: the table, the key, and what to do
// with the current item.
type op struct {
	t    *Table
	k    key
	cond *expr.Condition
	// next computes the new item from the current one (nil: delete).
	next func(old Item) (Item, error)
	// returnOld: put the current item in ConditionalCheckFailedError.
	returnOld bool
	// update: an UpdateItem's, whose item over the limit DynamoDB words
	// as an "item size to update".
	update bool
}

// prepare checks the op's condition against the current item and computes
// the change. The caller holds the item's stripe.
func (o *op) prepare(ctx context.Context) (old Item, p *pending, err error) {
	old, prev, err := o.t.get(ctx, o.k)
	if err != nil {
		return nil, nil, err
	}
	if o.cond != nil {
		ok, err := o.cond.Eval(old)
		if err != nil {
			return old, nil, exprErr(err)
		}
		if !ok {
			e := &ConditionalCheckFailedError{}
			if o.returnOld {
				e.Item = cloneItem(old)
			}
			return old, nil, e
		}
	}
	if o.next == nil {
		return old, nil, nil // ConditionCheck
	}
	nw, err := o.next(old)
	if err != nil {
		return old, nil, err
	}
	if nw != nil && expr.ItemDepth(nw, expr.MaxNesting) > expr.MaxNesting {
		// An UpdateItem's SET that nests the item deeper (a Put's item
		// was checked as it came, putOp): a transaction's cancellation
		// reason is the short sentence.
		if o.update {
			return old, nil, validation(expr.MsgNestingReason)
		}
		return old, nil, validation(expr.MsgNesting)
	}
	if nw != nil {
		if err := o.t.checkIndexKeys(nw); err != nil {
			if o.update && strings.HasPrefix(errMessage(err), msgIndexKeyType) {
				// A value read from the item (SET c = e): the types
				// known up front were checked by indexUpdateRules.
				err = validation("The update expression attempted to update the secondary index key to unsupported type")
			}
			return old, nil, err
		}
	}
	p = o.t.newChange(o.k, old, nw, false)
	if p != nil {
		p.prev, p.prevKnown = prev, true
	}
	if p != nil && nw != nil && p.size > MaxItemSize {
		if o.update {
			return old, nil, validation("Item size to update has exceeded the maximum allowed size")
		}
		return old, nil, validation("Item size has exceeded the maximum allowed size")
	}
	return old, p, nil
}

// unchanged is the item after an op whose prepare found nothing to
// write: old for a ConditionCheck, else what next makes of old (equal to
// it).
func (o *op) unchanged(old Item) (Item, error) {
	if o.next == nil {
		return old, nil
	}
	return o.next(old)
}

// run performs a single-item write: lock, check, append, move the index.
//
// An item held by a transaction in progress fails with
// TransactionConflictException, checked before the lock (a transaction
// holding it) and after (a transaction that claimed it meanwhile and waits
// for this lock).
func (o *op) run(ctx context.Context) (old, nw Item, err error) {
	if err := o.checkHeld(); err != nil {
		return nil, nil, err
	}
	mu := o.t.stripe(o.k)
	mu.Lock()
	defer mu.Unlock()
	if err := o.checkHeld(); err != nil {
		return nil, nil, err
	}
	old, p, err := o.prepare(ctx)
	if err != nil {
		return old, nil, err
	}
	if p == nil {
		nw, err = o.unchanged(old)
		return old, nw, err
	}
	if err := o.t.appendChanges(ctx, []*pending{p}); err != nil {
		return old, nil, err
	}
	return old, p.change.NewImage, nil
}

// conditionOnly parses the ConditionExpression of a request that has no
// other expression, and checks that every placeholder was used.
func (s *Service) conditionOnly(text string, names map[string]string, values Item) (*expr.Condition, error) {
	c := newContext(names, values)
	cond, err := s.condition(text, c)
	if err != nil {
		return nil, err
	}
	if err := c.CheckUnused(); err != nil {
		return nil, exprErr(err)
	}
	return cond, nil
}

func (s *Service) condition(text string, c *expr.Context) (*expr.Condition, error) {
	if text == "" {
		return nil, nil
	}
	cond, err := expr.ParseCondition(text, c)
	if err != nil {
		return nil, exprErr(err)
	}
	return cond, nil
}

// PutItem writes a whole item (API_PutItem), replacing any item with the
// same key, if ConditionExpression (when given) holds for the current item.
// Errors: ValidationException (missing or mistyped key, item over 400 KB,
// bad expression, unused placeholder), ConditionalCheckFailedError.
func (s *Service) PutItem(ctx context.Context, in PutItemInput) (*WriteOutput, error) {
	if remote, out, err := forwardOut[WriteOutput](ctx, s, "PutItem", in); remote {
		return out, err
	}
	if err := singleNesting(in.Item, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	return s.writeAllOld(ctx, in.TableName, in.ReturnValues, in.ReturnConsumedCapacity, func(t *Table) (*op, error) {
		return s.putOp(t, in.Item, in.WriteExpr)
	})
}

// writeAllOld runs a PutItem or DeleteItem: ReturnValues NONE or ALL_OLD.
func (s *Service) writeAllOld(ctx context.Context, tableName, returnValues, rcc string, build func(*Table) (*op, error)) (*WriteOutput, error) {
	t, err := s.table(tableName)
	if err != nil {
		return nil, err
	}
	if err := checkReturn("returnValues", returnValues, ReturnNone, ReturnAllOld); err != nil {
		return nil, err
	}
	o, err := build(t)
	if err != nil {
		return nil, err
	}
	old, nw, err := o.run(ctx)
	if err != nil {
		return nil, err
	}
	out := &WriteOutput{ConsumedCapacity: writeCapacity(rcc, t.tableName, old, nw)}
	if returnValues == ReturnAllOld {
		out.Attributes = cloneItem(old)
	}
	return out, nil
}

func (s *Service) putOp(t *Table, item Item, c WriteExpr) (*op, error) {
	if expr.ItemDepth(item, expr.MaxNesting) > expr.MaxNesting {
		return nil, validation(expr.MsgNesting)
	}
	k, cond, err := s.keyAndCondition(t, item, false, c)
	if err != nil {
		return nil, err
	}
	if size := expr.ItemSize(item); size > MaxItemSize {
		return nil, validation("Item size has exceeded the maximum allowed size")
	}
	it := cloneItem(expr.CanonicalItem(item))
	return &op{t: t, k: k, cond: cond, returnOld: c.returnOld(),
		next: func(Item) (Item, error) { return it, nil }}, nil
}

// keyAndCondition is the prologue of PutItem and DeleteItem: the
// ReturnValuesOnConditionCheckFailure value, the item's key (keyOnly: the
// item must be the key and nothing else) and the parsed condition, checked
// in that order.
func (s *Service) keyAndCondition(t *Table, item Item, keyOnly bool, c WriteExpr) (key, *expr.Condition, error) {
	if err := c.checkReturn(); err != nil {
		return key{}, nil, err
	}
	k, err := t.schema.keyOf(item, keyOnly)
	if err != nil {
		return key{}, nil, err
	}
	if err := valuesNesting(c.ExpressionAttributeValues); err != nil {
		return key{}, nil, err
	}
	cond, err := s.conditionOnly(c.ConditionExpression, c.ExpressionAttributeNames, c.ExpressionAttributeValues)
	return k, cond, err
}

func copyItem(it Item) Item {
	if it == nil {
		return nil
	}
	out := make(Item, len(it))
	for k, v := range it {
		out[k] = v
	}
	return out
}

// GetItem returns the item with the given key, or an empty output.
// Expired items not yet deleted by the TTL sweeper are returned, as in
// DynamoDB. An item whose latest write (a committed transaction's change
// among them) has an outcome not known yet is read as the index holds it,
// from before that write, until a resolver applies it (resolve.go);
// TransactGetItems refuses it instead.
func (s *Service) GetItem(ctx context.Context, in GetItemInput) (*GetItemOutput, error) {
	if remote, out, err := forwardOut[GetItemOutput](ctx, s, "GetItem", in); remote {
		return out, err
	}
	o, proj, err := s.getOp(in.TableName, in.Key, in.ProjectionExpression, in.ExpressionAttributeNames)
	if err != nil {
		return nil, err
	}
	it, _, err := o.t.get(ctx, o.k)
	if err != nil {
		return nil, err
	}
	out := &GetItemOutput{}
	if asked(in.ReturnConsumedCapacity) {
		out.ConsumedCapacity = capacity(in.ReturnConsumedCapacity, o.t.tableName, readUnits(expr.ItemSize(it), in.ConsistentRead))
	}
	out.Item = project(it, proj)
	return out, nil
}

// getOp checks a read of one item (GetItem, a TransactGetItems Get): the
// table exists (else ResourceNotFoundException), the key is exactly the
// table's key, and the ProjectionExpression parses.
func (s *Service) getOp(table string, keyItem Item, projText string, names map[string]string) (*op, *expr.Projection, error) {
	t, err := s.table(table)
	if err != nil {
		return nil, nil, err
	}
	k, err := t.schema.keyOf(keyItem, true)
	if err != nil {
		return nil, nil, err
	}
	proj, err := projection(projText, names)
	if err != nil {
		return nil, nil, err
	}
	if err := t.scalarKeys(proj); err != nil {
		return nil, nil, err
	}
	return &op{t: t, k: k}, proj, nil
}

// projection parses a read's ProjectionExpression ("": nil, the whole
// item) and checks that every name placeholder was used.
func projection(text string, names map[string]string) (*expr.Projection, error) {
	if text == "" {
		return nil, nil
	}
	c := newContext(names, nil)
	proj, err := expr.ParseProjection(text, c)
	if err != nil {
		return nil, exprErr(err)
	}
	if err := c.CheckUnused(); err != nil {
		return nil, exprErr(err)
	}
	return proj, nil
}

// project is the part of it a reader gets: nil for no item, a copy of the
// whole item without a projection.
func project(it Item, proj *expr.Projection) Item {
	switch {
	case it == nil:
		return nil
	case proj != nil:
		return ownValues(proj.Apply(it))
	}
	return cloneItem(it)
}

// UpdateItem edits an item's attributes with an UpdateExpression
// (API_UpdateItem), creating the item if it does not exist. Errors as
// PutItem, plus "Cannot update attribute X. This attribute is part of the
// key".
func (s *Service) UpdateItem(ctx context.Context, in UpdateItemInput) (*WriteOutput, error) {
	if remote, out, err := forwardOut[WriteOutput](ctx, s, "UpdateItem", in); remote {
		return out, err
	}
	if err := singleNesting(nil, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, err
	}
	if err := checkReturn("returnValues", in.ReturnValues, ReturnNone, ReturnAllOld, ReturnUpdatedOld, ReturnAllNew, ReturnUpdatedNew); err != nil {
		return nil, err
	}
	o, upd, err := s.updateOp(t, in.Key, in.UpdateExpression, in.WriteExpr)
	if err != nil {
		return nil, err
	}
	old, nw, err := o.run(ctx)
	if err != nil {
		return nil, err
	}
	out := &WriteOutput{ConsumedCapacity: writeCapacity(in.ReturnConsumedCapacity, t.tableName, old, nw)}
	switch in.ReturnValues {
	case ReturnAllOld:
		out.Attributes = cloneItem(old)
	case ReturnAllNew:
		out.Attributes = cloneItem(nw)
	case ReturnUpdatedOld, ReturnUpdatedNew:
		src := nw
		if in.ReturnValues == ReturnUpdatedOld {
			src = old
		}
		if upd != nil && src != nil {
			out.Attributes = ownValues(upd.Projection().Apply(src))
			if out.Attributes == nil {
				out.Attributes = Item{}
			}
		}
	}
	return out, nil
}

func (s *Service) updateOp(t *Table, keyItem Item, update string, wc WriteExpr) (*op, *expr.Update, error) {
	if err := wc.checkReturn(); err != nil {
		return nil, nil, err
	}
	k, err := t.schema.keyOf(keyItem, true)
	if err != nil {
		return nil, nil, err
	}
	if err := valuesNesting(wc.ExpressionAttributeValues); err != nil {
		return nil, nil, err
	}
	// An update stores the values it SETs or ADDs: a caller's own.
	c := newContext(wc.ExpressionAttributeNames, cloneNested(wc.ExpressionAttributeValues))
	var upd *expr.Update
	if update != "" {
		if upd, err = expr.ParseUpdate(update, c); err != nil {
			return nil, nil, exprErr(err)
		}
		for _, p := range upd.Paths() {
			if p == t.schema.hash || p == t.schema.rng {
				return nil, nil, validation("One or more parameter values were invalid: Cannot update attribute %s. This attribute is part of the key", p)
			}
		}
		if err := t.indexUpdateRules(upd); err != nil {
			return nil, nil, err
		}
	}
	cond, err := s.condition(wc.ConditionExpression, c)
	if err != nil {
		return nil, nil, err
	}
	if err := c.CheckUnused(); err != nil {
		return nil, nil, exprErr(err)
	}
	keys := k.keys
	return &op{t: t, k: k, cond: cond, returnOld: wc.returnOld(), update: true, next: func(old Item) (Item, error) {
		base := old
		if base == nil {
			base = copyItem(keys)
		}
		if upd == nil {
			return copyItem(base), nil
		}
		nw, err := upd.Apply(base)
		if err != nil {
			return nil, exprErr(err)
		}
		return nw, nil
	}}, upd, nil
}

// DeleteItem deletes the item with the given key (API_DeleteItem), if
// ConditionExpression holds. ReturnValues is NONE or ALL_OLD.
func (s *Service) DeleteItem(ctx context.Context, in DeleteItemInput) (*WriteOutput, error) {
	if remote, out, err := forwardOut[WriteOutput](ctx, s, "DeleteItem", in); remote {
		return out, err
	}
	if err := singleNesting(nil, in.ExpressionAttributeValues); err != nil {
		return nil, err
	}
	return s.writeAllOld(ctx, in.TableName, in.ReturnValues, in.ReturnConsumedCapacity, func(t *Table) (*op, error) {
		return s.deleteOp(t, in.Key, in.WriteExpr)
	})
}

func (s *Service) deleteOp(t *Table, keyItem Item, c WriteExpr) (*op, error) {
	k, cond, err := s.keyAndCondition(t, keyItem, true, c)
	if err != nil {
		return nil, err
	}
	return &op{t: t, k: k, cond: cond, returnOld: c.returnOld(), next: func(Item) (Item, error) { return nil, nil }}, nil
}

// scalarKeys refuses a projection into a key attribute of the table or of
// an index (a.b, a[0]), in DynamoDB's words.
func (t *Table) scalarKeys(proj *expr.Projection) error {
	if proj == nil {
		return nil
	}
	return t.scalarKeyNames(proj.NestedNames())
}

// scalarKeyNames refuses a read into (a.b, a[0]) a key attribute of the
// table or of an index, names being the attributes read into: a
// projection's, or a filter's (after the start key is checked).
func (t *Table) scalarKeyNames(names []string) error {
	for _, n := range names {
		if n == t.schema.hash || n == t.schema.rng {
			return validation("Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: %s", n)
		}
		for _, x := range t.indexes() {
			if n == x.sc.hash || n == x.sc.rng {
				return validation("Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: %s", n)
			}
		}
	}
	return nil
}

// DynamoDB's nesting limit (Constraints: "DynamoDB supports nested
// attributes up to 32 levels deep"; expr.MaxNesting), as a conformance
// suite recorded it against AWS: a value inside 31 maps or lists is
// accepted, one inside 32 refused. Where and how:
//   - an item a write would store (PutItem, a BatchWriteItem or
//     TransactWriteItems Put: putOp; what an update makes of the item:
//     op.prepare) - "Nesting Levels have exceeded supported limits:
//     Attributes in the item have nested levels beyond supported limit"
//     (expr.MsgNesting), PutItem's inside "1 validation error detected: "
//     up to 61 wrapping levels (singleNesting); a transaction's update
//     cancels with the reason "Nesting Levels have exceeded supported
//     limits";
//   - an ExpressionAttributeValues value of PutItem, UpdateItem or
//     DeleteItem past the same limit, "1 validation error detected: " and
//     that sentence, a value past 61 wrapping levels naming its key
//     (singleNesting); of a transaction's action, past one level more
//     ("ExpressionAttributeValues contains invalid value: <sentence> for
//     key :v", valuesNesting).
//
// The change log's decoder reads far deeper (codec.go maxDepth), so the
// items stored before the limit stay readable.
const (
	// singleEnvelopeDepth is the deepest level PutItem, UpdateItem and
	// DeleteItem refuse inside the validation envelope; deeper, the
	// second form (recorded: 61 wrapping levels one form, 63 the other).
	singleEnvelopeDepth = 62
)

// singleNesting checks the nesting of a PutItem's item (nil for the
// others) and of a single-item write's ExpressionAttributeValues, before
// any table is looked up.
func singleNesting(item, values Item) error {
	if d := expr.ItemDepth(item, singleEnvelopeDepth); d > expr.MaxNesting {
		if d > singleEnvelopeDepth {
			return validation(expr.MsgNesting)
		}
		return validation("1 validation error detected: %s", expr.MsgNesting)
	}
	k, d := deepestValue(values, singleEnvelopeDepth)
	switch {
	case d > singleEnvelopeDepth:
		return validation("ExpressionAttributeValues contains invalid value: %s for key %s", expr.MsgNesting, k)
	case d > expr.MaxNesting:
		return validation("1 validation error detected: %s", expr.MsgNesting)
	}
	return nil
}

// valuesNesting refuses an ExpressionAttributeValues value nested more
// than one level past the limit, naming its key: a transaction's action
// is refused so before it runs (a value one level past the limit is
// compared, not stored: what an update stores is checked in op.prepare).
func valuesNesting(values Item) error {
	if k, d := deepestValue(values, expr.MaxNesting+1); d > expr.MaxNesting+1 {
		return validation("ExpressionAttributeValues contains invalid value: %s for key %s", expr.MsgNesting, k)
	}
	return nil
}

// deepestValue is the key of the deepest of values (the first in key
// order among equals) and its depth, counted no further than stop.
func deepestValue(values Item, stop int) (string, int) {
	var key string
	deepest := 0
	for k, v := range values {
		d := expr.Depth(&v, stop)
		if d > deepest || d == deepest && k < key {
			key, deepest = k, d
		}
	}
	return key, deepest
}
