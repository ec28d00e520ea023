package table

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// GlobalSecondaryIndexUpdate is one entry of UpdateTable's
// GlobalSecondaryIndexUpdates: exactly one of Create (a new GSI, built
// from the table's items), Delete (by IndexName) and Update (throughput:
// accepted, ignored).
type GlobalSecondaryIndexUpdate struct {
	Create *SecondaryIndex `json:"Create,omitempty"`
	Delete *IndexRef       `json:"Delete,omitempty"`
	Update *IndexRef       `json:"Update,omitempty"`
}

// IndexRef names an index (and, for Update, its throughput, ignored).
type IndexRef struct {
	IndexName             string      `json:"IndexName"`
	ProvisionedThroughput *Throughput `json:"ProvisionedThroughput,omitempty"`
}

// onlyOneOnline is DynamoDB's refusal of a second index created or
// deleted while one is.
func onlyOneOnline() error {
	return awserr.New(awserr.ErrLimitExceeded, "Subscriber limit exceeded: Only 1 online index can be created or deleted simultaneously per table")
}

// UpdateGlobalSecondaryIndexes applies UpdateTable's
// GlobalSecondaryIndexUpdates
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.OnlineOps.html).
// defs are UpdateTable's AttributeDefinitions: the new index's key
// attributes must be among them or the table's.
//
// Create: the index is CREATING (Backfilling false) in the description
// returned, then Backfilling true while it is filled from the table's
// items in the background, then ACTIVE; until then Query and Scan on it
// are refused ("Cannot read from backfilling global secondary index: X"),
// writes maintain it already. If the process stops during the backfill,
// the index is built when the service opens. Delete: the index is gone
// at once. Update: nothing to do (throughput is not enforced).
//
// Errors: LimitExceededException for more than one Create or Delete in
// one call or while an index is CREATING ("Subscriber limit exceeded: Only
// 1 online index can be created or deleted simultaneously per table"), or
// a 21st GSI; ValidationException for a name in use, a bad key schema or
// projection (see CreateTable), an attribute defined with another type;
// ResourceNotFoundException for deleting an index the table lacks.
func (s *Service) UpdateGlobalSecondaryIndexes(ctx context.Context, name string, defs []AttributeDefinition, updates []GlobalSecondaryIndexUpdate) (*TableDescription, error) {
	return s.UpdateTable(ctx, name, UpdateTableInput{AttributeDefinitions: defs, GlobalSecondaryIndexUpdates: updates})
}

// UpdateTableInput is what one UpdateTable changes; the zero value of a
// part leaves it as it is.
type UpdateTableInput struct {
	BillingMode                 string
	ProvisionedThroughput       *Throughput
	StreamSpecification         *StreamSpecification
	AttributeDefinitions        []AttributeDefinition
	GlobalSecondaryIndexUpdates []GlobalSecondaryIndexUpdate
	// DeletionProtectionEnabled turns the table's deletion protection on
	// or off (nil: as it is); while on, DeleteTable is refused.
	DeletionProtectionEnabled *bool
}

// UpdateTable makes every change of in, billing first (a new GSI's
// throughput rule reads it), then the stream, deletion protection, then
// the GSIs, or none:
// each is checked on a copy of the table's description, which is stored
// once all passed. Before, each change was stored as it came, and a
// request refused for its third part kept its first two (a new stream
// label issued, the billing switched). Errors as UpdateBilling,
// UpdateStream and UpdateGlobalSecondaryIndexes.
func (s *Service) UpdateTable(ctx context.Context, name string, in UpdateTableInput) (*TableDescription, error) {
	if remote, d, err := s.forwardDesc(ctx, "UpdateTable", lease.Pair(name, in)); remote {
		return d, err
	}
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	online := 0
	for _, u := range in.GlobalSecondaryIndexUpdates {
		n := 0
		for _, set := range []bool{u.Create != nil, u.Delete != nil, u.Update != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return nil, validation("One or more parameter values were invalid: One of GlobalSecondaryIndexUpdate.Create, GlobalSecondaryIndexUpdate.Update, or GlobalSecondaryIndexUpdate.Delete must be specified")
		}
		if u.Update == nil {
			online++
		}
	}
	if online > 1 {
		return nil, onlyOneOnline()
	}
	var created *secondary
	var deleted []*secondary
	t.metaMu.Lock()
	st := t.st
	if in.BillingMode != "" || in.ProvisionedThroughput != nil {
		st, err = billingApplied(st, in.BillingMode, in.ProvisionedThroughput)
	}
	if err == nil && in.StreamSpecification != nil {
		st, err = streamApplied(st, *in.StreamSpecification, s.eng.Clock.Now())
	}
	if in.DeletionProtectionEnabled != nil {
		st.DeletionProtectionEnabled = *in.DeletionProtectionEnabled
	}
	for _, u := range in.GlobalSecondaryIndexUpdates {
		if err != nil {
			break
		}
		switch {
		case u.Create != nil:
			st, created, err = t.createIndex(st, in.AttributeDefinitions, *u.Create)
		case u.Delete != nil:
			deleted = append(deleted, t.index(u.Delete.IndexName))
			st, err = t.deleteIndex(st, u.Delete.IndexName)
		case t.index(u.Update.IndexName) == nil:
			err = indexNotFound(st.TableName, u.Update.IndexName)
		}
	}
	if err != nil {
		t.metaMu.Unlock()
		return nil, err
	}
	if err := s.saveMeta(ctx, st); err != nil {
		t.metaMu.Unlock()
		return nil, err
	}
	t.st = st
	if len(in.GlobalSecondaryIndexUpdates) > 0 {
		err = t.openIndexes()
	}
	if err == nil && created != nil {
		// The index itself, whose backfill starts below: one deleted and
		// created again is another object, and the backfill of the
		// deleted one stops (kept).
		created = t.index(created.name)
		// What an index of the same id deleted before left in the store.
		if x := created; x != nil && x.disk != nil {
			err = t.clearStoredIndex(x)
			x.mu.Lock()
			x.ready = false // until its backfill
			x.mu.Unlock()
		}
	}
	// A deleted index is gone before its keys are cleared (kept), and
	// they are cleared before metaMu is let go: an index created again
	// with the same id by the next call cannot have its backfill's keys
	// cleared by this one's.
	for _, x := range deleted {
		if x == nil || t.index(x.name) == x {
			continue
		}
		x.gone.Store(true)
		if err := t.clearStoredIndex(x); err != nil {
			t.s.eng.Logger.Warn("delete index: its keys are left in the index store (cleared at the table's next open)", "table", st.TableName, "index", x.name, "err", err)
		}
	}
	t.metaMu.Unlock()
	if err != nil {
		return nil, err
	}
	d := t.describe()
	if created != nil {
		s.backfills.Add(1)
		go func() {
			defer s.backfills.Done()
			t.backfill(s.bg, created)
		}()
	}
	return d, nil
}

// indexNotFound is runnel's message (AWS's text was not found) for an
// index the table lacks.
func indexNotFound(table, index string) error {
	return awserr.New(awserr.ErrResourceNotFound, "Requested resource not found: Table: %s Index: %s not found", table, index)
}

// createIndex adds GSI in to st (CREATING).
func (t *Table) createIndex(st stored, defs []AttributeDefinition, in SecondaryIndex) (stored, *secondary, error) {
	for _, g := range st.GlobalSecondaryIndexes {
		if g.IndexStatus == IndexCreating {
			return st, nil, onlyOneOnline()
		}
	}
	if len(st.GlobalSecondaryIndexes) >= MaxGSIs {
		// runnel's words, in the form of AWS's "Subscriber limit exceeded".
		return st, nil, awserr.New(awserr.ErrLimitExceeded, "Subscriber limit exceeded: The number of global secondary indexes for table %s exceeds the limit of %d", st.TableName, MaxGSIs)
	}
	types, _ := definitionTypes(st.AttributeDefinitions)
	all := slices.Clone(st.AttributeDefinitions)
	for _, d := range defs {
		switch have, ok := types[d.AttributeName]; {
		case !ok:
			all = append(all, d)
			types[d.AttributeName] = d.AttributeType
		case have != d.AttributeType:
			// runnel's words: AWS's text for this case was not found.
			return st, nil, validation("One or more parameter values were invalid: Cannot update attribute %s with type %s: it is already defined with type %s", d.AttributeName, d.AttributeType, have)
		}
	}
	if _, err := definitionTypes(all); err != nil {
		return st, nil, err
	}
	names := map[string]bool{}
	for _, x := range t.indexes() {
		names[x.name] = true
	}
	if names[in.IndexName] {
		return st, nil, validation("One or more parameter values were invalid: Attempting to create an index which already exists")
	}
	sc, err := checkIndex(in, types, names)
	if err != nil {
		return st, nil, err
	}
	tp, err := gsiThroughput(st.Provisioned, in)
	if err != nil {
		return st, nil, err
	}
	st.AttributeDefinitions = usedDefinitions(all, t.schema, sc, st)
	no := false
	st.GlobalSecondaryIndexes = append(slices.Clone(st.GlobalSecondaryIndexes), IndexDescription{IndexName: in.IndexName, KeySchema: sc.elements(), Projection: in.Projection, IndexStatus: IndexCreating, Backfilling: &no, ProvisionedThroughput: tp})
	return st, &secondary{name: in.IndexName}, nil
}

// deleteIndex removes GSI name from st.
func (t *Table) deleteIndex(st stored, name string) (stored, error) {
	i := slices.IndexFunc(st.GlobalSecondaryIndexes, func(d IndexDescription) bool { return d.IndexName == name })
	if i < 0 {
		return st, indexNotFound(st.TableName, name)
	}
	if d := st.GlobalSecondaryIndexes[i]; d.IndexStatus == IndexCreating && (d.Backfilling == nil || !*d.Backfilling) {
		return st, onlyOneOnline()
	}
	st.GlobalSecondaryIndexes = slices.Delete(slices.Clone(st.GlobalSecondaryIndexes), i, i+1)
	st.AttributeDefinitions = usedDefinitions(st.AttributeDefinitions, t.schema, schema{}, st)
	return st, nil
}

// usedDefinitions keeps the definitions of attributes that are a key of
// the table, of sc, or of st's indexes.
func usedDefinitions(defs []AttributeDefinition, tbl, sc schema, st stored) []AttributeDefinition {
	used := map[string]bool{tbl.hash: true, tbl.rng: true, sc.hash: true, sc.rng: true}
	for _, d := range append(slices.Clone(st.LocalSecondaryIndexes), st.GlobalSecondaryIndexes...) {
		for _, k := range d.KeySchema {
			used[k.AttributeName] = true
		}
	}
	var out []AttributeDefinition
	for _, d := range defs {
		if used[d.AttributeName] {
			out = append(out, d)
		}
	}
	return out
}

// backfill fills GSI x from the table's items (Backfilling true), then
// makes it ACTIVE. The index is maintained by writes meanwhile. A
// backfill whose index is deleted (UpdateTable may delete a GSI while it
// is Backfilling, as DynamoDB does), or whose table is deleted or no
// longer served here, stops (errBuildStopped): it writes no entry, count,
// built mark or status of it after, so an index created again with the
// same name, even the same definition, has only its own backfill's.
// Before, the deleted index's backfill ran on, then made the new one
// ACTIVE by name before its own backfill ended and wrote its item count
// over the new one's.
func (t *Table) backfill(ctx context.Context, x *secondary) {
	if x == nil || !t.setIndexStatus(ctx, x, IndexCreating, true) {
		return // deleted meanwhile
	}
	err := t.buildIndexes(ctx, []*secondary{x})
	if h := afterBackfill.Load(); h != nil {
		defer (*h)(t.tableName, x.name, err)
	}
	switch {
	case errors.Is(err, errBuildStopped):
		t.s.eng.Logger.Info("backfill of a global secondary index stopped: the index or its table was deleted, or the tables are no longer served here (then it is built at their next load)", "table", t.tableName, "index", x.name)
	case err != nil:
		t.s.eng.Logger.Error("backfill of a global secondary index failed; it is built when the service opens again", "table", t.tableName, "index", x.name, "err", err)
	default:
		t.setIndexStatus(ctx, x, IndexActive, false)
	}
}

// afterBackfill, when set (tests), is called as each backfill ends, with
// its build's error (nil: the index was made ACTIVE).
var afterBackfill atomic.Pointer[func(table, index string, err error)]

// setIndexStatus stores GSI x's status and reports whether it did: not
// when the table was deleted meanwhile (its name may be another table's
// now) or x is no longer the table's index of its name (deleted, or
// deleted and created again: checked under metaMu, which UpdateTable
// holds while it replaces the indexes).
func (t *Table) setIndexStatus(ctx context.Context, x *secondary, status string, backfilling bool) bool {
	if !t.open() {
		return false
	}
	t.metaMu.Lock()
	defer t.metaMu.Unlock()
	if x == nil || t.index(x.name) != x || x.gone.Load() {
		return false
	}
	st := t.st
	st.GlobalSecondaryIndexes = slices.Clone(st.GlobalSecondaryIndexes)
	for i, d := range st.GlobalSecondaryIndexes {
		if d.IndexName == x.name {
			d.IndexStatus, d.Backfilling = status, nil
			if status == IndexCreating {
				d.Backfilling = &backfilling
			}
			st.GlobalSecondaryIndexes[i] = d
		}
	}
	if err := t.s.saveMeta(ctx, st); err != nil {
		t.s.eng.Logger.Error("store index status", "table", st.TableName, "index", x.name, "err", err)
	}
	t.st = st
	return true
}

// open reports whether t is still the service's table of its name.
func (t *Table) open() bool {
	cur, err := t.s.table(t.tableName)
	return err == nil && cur == t
}

// openedIndexes builds every index of a table just opened, and makes
// ACTIVE a GSI whose backfill the last stop cut short.
//
// An index in the store is built only if its build did not finish (no
// built mark: a backfill cut short, or a store cleared and rebuilt from
// the log); otherwise the store holds it, moved by the log's replay.
func (t *Table) openedIndexes(ctx context.Context) error {
	if dx, ok := t.idx.(*diskIndex); ok {
		t.idxMu.Lock()
		err := t.sweepStoredIndexes(dx)
		t.idxMu.Unlock()
		if err != nil {
			return fmt.Errorf("index store: %w", err)
		}
	}
	var build []*secondary
	for _, x := range t.indexes() {
		if x.disk == nil {
			build = append(build, x)
			continue
		}
		t.idxMu.Lock()
		err := x.disk.load()
		if err == nil && !x.disk.built {
			err = x.disk.clear()
		}
		built := x.disk.built
		t.idxMu.Unlock()
		if err != nil {
			return fmt.Errorf("index %s: %w", x.name, err)
		}
		if built {
			x.mu.Lock()
			x.ready = true
			x.mu.Unlock()
			continue
		}
		build = append(build, x)
	}
	if err := t.buildIndexes(ctx, build); err != nil {
		return err
	}
	for _, d := range t.st.GlobalSecondaryIndexes {
		if d.IndexStatus != IndexActive {
			t.setIndexStatus(ctx, t.index(d.IndexName), IndexActive, false)
		}
	}
	return nil
}
