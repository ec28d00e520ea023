package table

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/btree"

	"github.com/runnel-dev/runnel/table/expr"
)

// Secondary indexes (DynamoDB's global and local secondary indexes:
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/SecondaryIndexes.html).
//
// An index is a second order of a table's items by its own key: a global
// one (GSI) by any partition key and optional sort key, a local one (LSI)
// by the table's partition key and another sort key. An item without the
// index's key attributes is not in the index (a sparse index). Query and
// Scan read an index by IndexName; what they return is the index's
// Projection of each item: ALL its attributes, KEYS_ONLY (the table's and
// the index's keys) or INCLUDE (the keys and NonKeyAttributes).
//
// An index holds the keys of the items it has (not their data), in the
// index store with the table's own index (IndexDisk, secondary_disk.go)
// or in the heap (IndexMemory). It is maintained by the table's write
// path (apply) as each change is acknowledged: in the store, in the
// same Pebble batch as the table's entry, so that the open's replay of
// the log after the store's header brings both up to date after a
// crash; in the heap, built from the table's items when the service
// opens. A GSI that UpdateTable adds is backfilled from the items, and
// built again at an open if its backfill was cut short. Reads fetch the
// items through the table's read path and project them. Runnel's index
// reads are therefore never behind the table; a GSI still refuses
// ConsistentRead, as DynamoDB's.
//
// Not enforced: the 10 GB limit of an item collection (the items of one
// partition key in a table with LSIs: ItemCollectionSizeLimitExceeded),
// the 400 KB limit of an item with its LSI entries (the item alone is
// checked), ReturnItemCollectionMetrics (accepted, no metrics), and
// capacity per index (ConsumedCapacity counts the table).

// Index limits (DynamoDB's quotas).
const (
	// MaxGSIs is the most global secondary indexes of a table.
	MaxGSIs = 20
	// MaxLSIs is the most local secondary indexes of a table.
	MaxLSIs = 5
	// MaxProjectedAttributes is the most NonKeyAttributes over all the
	// indexes of a table (the same name in two indexes counts twice).
	MaxProjectedAttributes = 100
)

// Projection types.
const (
	ProjectAll      = "ALL"
	ProjectKeysOnly = "KEYS_ONLY"
	ProjectInclude  = "INCLUDE"
)

// Index statuses (IndexStatus).
const (
	IndexCreating = "CREATING"
	IndexActive   = "ACTIVE"
)

// Projection says which attributes an index holds: ProjectionType ALL,
// KEYS_ONLY or INCLUDE (then NonKeyAttributes, 1..20 names).
type Projection struct {
	ProjectionType   string   `json:"ProjectionType,omitempty"`
	NonKeyAttributes []string `json:"NonKeyAttributes,omitempty"`
}

// SecondaryIndex is an index of CreateTable's GlobalSecondaryIndexes or
// LocalSecondaryIndexes, or UpdateTable's Create: IndexName 3..255 of
// [a-zA-Z0-9_.-], KeySchema, Projection. ProvisionedThroughput is
// accepted and ignored.
type SecondaryIndex struct {
	IndexName             string             `json:"IndexName"`
	KeySchema             []KeySchemaElement `json:"KeySchema"`
	Projection            Projection         `json:"Projection"`
	ProvisionedThroughput *Throughput        `json:"ProvisionedThroughput,omitempty"`
}

// IndexDescription describes an index (TableDescription's
// GlobalSecondaryIndexes and LocalSecondaryIndexes). IndexStatus and
// Backfilling are a GSI's only; Backfilling is set while a GSI added by
// UpdateTable is being built. ItemCount and IndexSizeBytes are exact (the
// size of the projected items).
type IndexDescription struct {
	IndexName      string             `json:"IndexName"`
	KeySchema      []KeySchemaElement `json:"KeySchema"`
	Projection     Projection         `json:"Projection"`
	IndexStatus    string             `json:"IndexStatus,omitempty"`
	Backfilling    *bool              `json:"Backfilling,omitempty"`
	IndexArn       string             `json:"IndexArn"`
	ItemCount      int64              `json:"ItemCount"`
	IndexSizeBytes int64              `json:"IndexSizeBytes"`
	// ProvisionedThroughput is a GSI's: as given on a provisioned table
	// (stored, not enforced), zeros on an on-demand one, as DynamoDB
	// describes it.
	ProvisionedThroughput *Throughput `json:"ProvisionedThroughput,omitempty"`
}

// gsiThroughput is the throughput to describe for GSI in of a table with
// throughput provisioned (nil: on demand). Errors, DynamoDB's: a
// provisioned table's GSI must have one, an on-demand table's must not.
func gsiThroughput(provisioned *Throughput, in SecondaryIndex) (*Throughput, error) {
	switch {
	case provisioned != nil && in.ProvisionedThroughput == nil:
		return nil, validation("One or more parameter values were invalid: ProvisionedThroughput must be specified for index: %s", in.IndexName)
	case provisioned == nil && in.ProvisionedThroughput != nil:
		return nil, validation("One or more parameter values were invalid: ProvisionedThroughput should not be specified for index: %s when BillingMode is PAY_PER_REQUEST", in.IndexName)
	case provisioned == nil:
		return &Throughput{}, nil
	}
	tp := *in.ProvisionedThroughput
	return &tp, nil
}

// secondary is one open index: the keys of the items it holds.
type secondary struct {
	name   string
	global bool
	sc     schema // the index's key
	table  schema // the table's key
	proj   Projection

	mu      sync.RWMutex
	ready   bool                   // ACTIVE: readable
	entries map[string]*sEntry     // IndexMemory's entries by table key (disk nil)
	tree    *btree.BTreeG[*sEntry] // the same, in the index's order (compare)
	bytes   int64

	disk *secStore // IndexDisk: the entries are in the index store

	// gone is set when the index stopped being its table's with the
	// table's deletion (deletable); an index UpdateTable deleted is no
	// longer in Table.indexes. A build writes nothing of an index that is
	// gone or no longer its table's (kept), so that it cannot touch the
	// store's keys of a deleted table or of an index created again with
	// the same definition (the same store id).
	gone atomic.Bool
}

// errBuildStopped is a build's answer when it stopped before its walk of
// the table's items ended: the table is no longer the service's (deleted,
// or the tables' lease lost: drop) or an index of the build is no longer
// the table's (deleted meanwhile). Nothing is marked built or ready.
var errBuildStopped = errors.New("index build stopped: the table or the index is no longer served here")

// sEntry is one item in an index: its index key and its table key.
type sEntry struct {
	h    [16]byte // MD5 of the index partition key
	rk   string   // canonical index sort key
	k    key      // the table key
	size int64    // projected size
	ord  string   // the entry's place in the index's order (ordKey)
}

// validIndexName is DynamoDB's rule on index names (IndexName: 3..255 of
// [a-zA-Z0-9_.-]), the same as a table name's.
var validIndexName = tableNameRE

// checkIndexes validates CreateTable's indexes against the table's key
// and AttributeDefinitions (types), and that every definition is a key
// attribute of the table or an index. It returns their descriptions.
func checkIndexes(tbl schema, types map[string]string, gsis, lsis []SecondaryIndex) (g, l []IndexDescription, err error) {
	if lsis != nil && len(lsis) == 0 {
		return nil, nil, validation("One or more parameter values were invalid: List of LocalSecondaryIndexes is empty")
	}
	if gsis != nil && len(gsis) == 0 {
		return nil, nil, validation("One or more parameter values were invalid: List of GlobalSecondaryIndexes is empty")
	}
	if len(lsis) > 0 && tbl.rng == "" {
		return nil, nil, validation("One or more parameter values were invalid: Table KeySchema does not have a range key, which is required when specifying a LocalSecondaryIndex")
	}
	if len(gsis) > MaxGSIs {
		return nil, nil, validation("One or more parameter values were invalid: GlobalSecondaryIndex count exceeds the per-table limit of %d", MaxGSIs)
	}
	if len(lsis) > MaxLSIs {
		return nil, nil, validation("One or more parameter values were invalid: Number of LocalSecondaryIndexes exceeds per-table limit of %d", MaxLSIs)
	}
	used := map[string]bool{tbl.hash: true, tbl.rng: true}
	names := map[string]bool{}
	projected := 0
	for i, in := range append(append([]SecondaryIndex{}, lsis...), gsis...) {
		local := i < len(lsis)
		sc, err := checkIndexKey(in, types, names)
		if err != nil {
			return nil, nil, err
		}
		if local {
			if sc.rng == "" {
				return nil, nil, validation("One or more parameter values were invalid: Index KeySchema does not have a range key for index: %s", in.IndexName)
			}
			if sc.hash != tbl.hash {
				return nil, nil, validation("One or more parameter values were invalid: Index KeySchema does not have the same leading hash key as table KeySchema for index: %s. index hash key: %s, table hash key: %s", in.IndexName, sc.hash, tbl.hash)
			}
		}
		if err := checkProjection(in.Projection); err != nil {
			return nil, nil, err
		}
		used[sc.hash], used[sc.rng] = true, true
		projected += len(in.Projection.NonKeyAttributes)
		d := IndexDescription{IndexName: in.IndexName, KeySchema: sc.elements(), Projection: in.Projection}
		if local {
			l = append(l, d)
		} else {
			d.IndexStatus = IndexActive
			g = append(g, d)
		}
	}
	if projected > MaxProjectedAttributes {
		return nil, nil, validation("One or more parameter values were invalid: Number of projected attributes in all indexes exceeds limit of %d, number of projected attributes:%d", MaxProjectedAttributes, projected)
	}
	delete(used, "")
	if len(used) != len(types) {
		return nil, nil, validation("One or more parameter values were invalid: Number of attributes in KeySchema does not exactly match number of attributes defined in AttributeDefinitions")
	}
	return g, l, nil
}

// checkIndex validates one index's name (unique among names, which it
// joins), key schema and projection.
func checkIndex(in SecondaryIndex, types map[string]string, names map[string]bool) (schema, error) {
	sc, err := checkIndexKey(in, types, names)
	if err != nil {
		return sc, err
	}
	return sc, checkProjection(in.Projection)
}

// checkIndexKey validates one index's name (unique among names, which it
// joins) and key schema.
func checkIndexKey(in SecondaryIndex, types map[string]string, names map[string]bool) (schema, error) {
	if !validIndexName.MatchString(in.IndexName) {
		return schema{}, validation("1 validation error detected: Value '%s' at 'indexName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+ and have length between 3 and 255", in.IndexName)
	}
	if names[in.IndexName] {
		return schema{}, validation("One or more parameter values were invalid: Duplicate index name: %s", in.IndexName)
	}
	names[in.IndexName] = true
	return indexSchemaOf(in.KeySchema, types)
}

// checkProjection validates an index's projection.
func checkProjection(p Projection) error {
	switch p.ProjectionType {
	case ProjectAll, ProjectKeysOnly:
		if len(p.NonKeyAttributes) > 0 {
			return validation("One or more parameter values were invalid: ProjectionType is %s, but NonKeyAttributes is specified", p.ProjectionType)
		}
	case ProjectInclude:
		if len(p.NonKeyAttributes) == 0 {
			// runnel's words, after AWS's for ALL and KEYS_ONLY above.
			return validation("One or more parameter values were invalid: ProjectionType is INCLUDE, but NonKeyAttributes is not specified")
		}
	case "":
		// Java's rendering of the absent value, in DynamoDB's words.
		return validation("One or more parameter values were invalid: Unknown ProjectionType: null")
	default:
		return validation("One or more parameter values were invalid: Unknown ProjectionType: %s", p.ProjectionType)
	}
	return nil
}

// openIndexes makes the table's open indexes those of its description
// (the caller holds metaMu, or is opening the table): an index open
// already is kept, with its entries; a new one is empty until built. The
// list is replaced in one step, so no write is applied to an index that
// is then dropped.
func (t *Table) openIndexes() error {
	types, err := definitionTypes(t.st.AttributeDefinitions)
	if err != nil {
		return err
	}
	t.secMu.Lock()
	defer t.secMu.Unlock()
	old := map[string]*secondary{}
	for _, x := range t.indexes() {
		old[x.name] = x
	}
	var out []*secondary
	for i, d := range append(append([]IndexDescription{}, t.st.LocalSecondaryIndexes...), t.st.GlobalSecondaryIndexes...) {
		if x, ok := old[d.IndexName]; ok {
			out = append(out, x)
			continue
		}
		sc, err := indexSchemaOf(d.KeySchema, types)
		if err != nil {
			return fmt.Errorf("index %s: %w", d.IndexName, err)
		}
		x := &secondary{name: d.IndexName, global: i >= len(t.st.LocalSecondaryIndexes), sc: sc, table: t.schema, proj: d.Projection, entries: map[string]*sEntry{}}
		x.tree = btree.NewG(32, func(a, b *sEntry) bool { return x.compare(a, b) < 0 })
		if dx, ok := t.idx.(*diskIndex); ok {
			if x.disk, err = openSecStore(dx.st, t.st.TableId, d.IndexName, x); err != nil {
				return fmt.Errorf("index %s: %w", d.IndexName, err)
			}
			// One UpdateTable just created is not ready before its
			// backfill, whatever the store held of a deleted one of the
			// same id (cleared next, clearStoredIndex).
			x.ready = x.disk.built && d.IndexStatus != IndexCreating
		}
		out = append(out, x)
	}
	t.sec.Store(&out)
	return nil
}

// indexes returns the table's open indexes.
func (t *Table) indexes() []*secondary {
	if p := t.sec.Load(); p != nil {
		return *p
	}
	return nil
}

// index returns the open index name, nil if the table has none of that
// name.
func (t *Table) index(name string) *secondary {
	for _, x := range t.indexes() {
		if x.name == name {
			return x
		}
	}
	return nil
}

const msgIndexKeyType = "One or more parameter values were invalid: Type mismatch for Index Key "

// indexUpdateRules refuses, before the item is read, an update that gives
// a secondary index's key attribute a value of another type when the type
// is known from the expression (a :value, arithmetic, list_append, ADD),
// then one whose paths go into an index key attribute (d.b, d[1]), in
// DynamoDB's words and order.
func (t *Table) indexUpdateRules(upd *expr.Update) error {
	if len(t.indexes()) == 0 {
		return nil
	}
	for _, nt := range upd.StaticTypes() {
		for _, x := range t.indexes() {
			for _, a := range [][2]string{{x.sc.hash, x.sc.hashType}, {x.sc.rng, x.sc.rngType}} {
				if a[0] != "" && a[0] == nt.Name && a[1] != nt.Type {
					return validation(msgIndexKeyType+"%s Expected: %s Actual: %s IndexName: %s", a[0], a[1], nt.Type, x.name)
				}
			}
		}
	}
	for _, n := range upd.NestedNames() {
		for _, x := range t.indexes() {
			if n == x.sc.hash || n == x.sc.rng {
				return validation("Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: IndexKey: %s", n)
			}
		}
	}
	return nil
}

// checkIndexKeys refuses an item whose value for an index key attribute
// is of another type than the definition's, an empty string or binary,
// or longer than a key may be (2048 bytes for a partition key, 1024 for a
// sort key), in DynamoDB's words. Called on every new image before it is
// written.
func (t *Table) checkIndexKeys(it Item) error {
	for _, x := range t.indexes() {
		for _, a := range [][2]string{{x.sc.hash, x.sc.hashType}, {x.sc.rng, x.sc.rngType}} {
			v, ok := it[a[0]]
			if a[0] == "" || !ok {
				continue
			}
			if got := dataTypeName(v); got != a[1] {
				return validation(msgIndexKeyType+"%s Expected: %s Actual: %s IndexName: %s", a[0], a[1], got, x.name)
			}
			if (a[1] == TypeS && v.String() == "") || (a[1] == TypeB && len(v.Binary()) == 0) {
				return validation("One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty %s value. IndexName: %s, IndexKey: %s", map[string]string{TypeS: "string", TypeB: "binary"}[a[1]], x.name, a[0])
			}
			if a[0] == x.sc.hash {
				if _, err := x.sc.hashCanonical(v); err != nil {
					return err
				}
			} else if c, _ := canonical(a[0], a[1], v); len(c) > MaxRangeKeyBytes {
				return validation("One or more parameter values were invalid: Aggregated size of all range keys has exceeded the size limit of %d bytes", MaxRangeKeyBytes)
			}
		}
	}
	return nil
}

// entryOf is it's entry in x (nil: the item is not in the index).
func (x *secondary) entryOf(k key, it Item) *sEntry {
	if it == nil {
		return nil
	}
	hv, ok := it[x.sc.hash]
	if !ok {
		return nil
	}
	// A value that cannot be an index key (wrong type, empty, or longer
	// than 2048 bytes for a partition key, 1024 for a sort key) keeps the
	// item out of the index: "the violating items are not included in the
	// index" (GSI.OnlineOps.ViolationDetection). Writes refuse such values
	// (checkIndexKeys); a backfill meets them in items written before the
	// index existed, and before, it indexed the over-long ones.
	hc, err := x.sc.hashCanonical(hv)
	if err != nil {
		return nil
	}
	e := &sEntry{h: hashKey(x.sc.hashType, hc), k: key{h: k.h, rk: k.rk}}
	if x.sc.rng != "" {
		rv, ok := it[x.sc.rng]
		if !ok {
			return nil
		}
		if e.rk, err = canonical(x.sc.rng, x.sc.rngType, rv); err != nil || len(e.rk) > MaxRangeKeyBytes {
			return nil
		}
	}
	e.size = int64(expr.ItemSize(x.project(it)))
	e.ord = x.ordKey(e)
	return e
}

// ordKey is e's key in the index's order as bytes: the index partition
// key's hash, the index sort key in an encoding whose byte order is
// DynamoDB's (rangeBytes), escaped and ended (escapeRange), then the
// table key (its hash and sort key, the same way). Comparing two is
// comparing the entries (compare); the store's forward keys are these
// after a prefix (secStore.forward).
func (x *secondary) ordKey(e *sEntry) string {
	k := make([]byte, 0, 16+len(e.rk)+4+16+len(e.k.rk))
	k = append(k, e.h[:]...)
	k = escapeRange(k, rangeBytes(nil, e.rk, x.sc.rngType == TypeN))
	k = append(k, e.k.h[:]...)
	return string(rangeBytes(k, e.k.rk, x.table.rngType == TypeN))
}

// put moves item k of x to its new image nw (nil: gone).
func (x *secondary) put(k key, nw Item) {
	e := x.entryOf(k, nw)
	id := k.id()
	x.mu.Lock()
	if old, ok := x.entries[id]; ok {
		x.bytes -= old.size
		delete(x.entries, id)
		x.tree.Delete(old)
	}
	if e != nil {
		x.entries[id] = e
		x.tree.ReplaceOrInsert(e)
		x.bytes += e.size
	}
	x.mu.Unlock()
}

// project is what x holds of item it: the table's and the index's keys,
// and the projected attributes.
func (x *secondary) project(it Item) Item {
	if x.proj.ProjectionType == ProjectAll {
		return it
	}
	out := Item{}
	for _, a := range append([]string{x.table.hash, x.table.rng, x.sc.hash, x.sc.rng}, x.proj.NonKeyAttributes...) {
		if v, ok := it[a]; ok && a != "" {
			out[a] = v
		}
	}
	return out
}

// applyIndexes moves every index in the heap to a written change
// (apply's hook; the store's indexes move in the change's batch,
// diskBatch.secondary).
func (t *Table) applyIndexes(p *pending) {
	for _, x := range t.indexes() {
		if x.disk == nil {
			x.put(p.k, p.change.NewImage)
		}
	}
}

// buildIndexes fills the indexes from the table's items, read a page at
// a time through Scan (the table's read path, whatever its storage), each
// item again with its lock held so that a concurrent write is seen before
// or after, never lost. Then the indexes are ready (ACTIVE), an index in
// the store marked built there: only when the walk reached the last item.
// A build whose table or index stops being served here (building) ends
// with errBuildStopped, marking nothing: the index is built again at the
// table's next load. Before, a walk cut short by the loss of the tables'
// lease (drop) left its loop as if done and marked the index built with
// the items of its first pages only, which the next load trusted.
func (t *Table) buildIndexes(ctx context.Context, xs []*secondary) error {
	if len(xs) == 0 {
		return nil
	}
	t.s.indexBuilds.Add(int64(len(xs)))
	var start Item
	for {
		if !t.building(xs) {
			return errBuildStopped
		}
		page, err := t.s.Scan(ctx, ScanInput{ReadInput: ReadInput{TableName: t.tableName, ExclusiveStartKey: start}})
		if err != nil {
			return err
		}
		for _, it := range page.Items {
			k, err := t.schema.keyOf(it, false)
			if err != nil {
				return err
			}
			if err := t.reindex(ctx, k, xs); err != nil {
				return err
			}
		}
		if start = page.LastEvaluatedKey; start == nil {
			break
		}
	}
	if !t.building(xs) {
		return errBuildStopped
	}
	return t.markReady(xs)
}

// building reports whether a build of xs may go on: t is the service's
// table of its name and every index of xs is still t's (kept).
func (t *Table) building(xs []*secondary) bool {
	return t.open() && t.kept(xs)
}

// kept reports whether every index of xs is still t's: not gone and the
// one Table.index finds by its name (not deleted, nor replaced by one
// created again). Called with Table.idxMu held before a build writes to
// the store, it orders the write before the store's clear of a deleted
// index or table (UpdateTable, DeleteTable clear under idxMu after the
// index stopped being kept), or skips it.
func (t *Table) kept(xs []*secondary) bool {
	for _, x := range xs {
		if x.gone.Load() || t.index(x.name) != x {
			return false
		}
	}
	return true
}

// beforeReindex, when set (tests), is called by a build before it locks
// and reads each item, after its check that the build may go on.
var beforeReindex atomic.Pointer[func(t *Table, k key)]

// reindex puts item k's current image into xs, with its lock held.
// Errors: errBuildStopped when xs stopped being t's (building, kept).
func (t *Table) reindex(ctx context.Context, k key, xs []*secondary) error {
	if !t.building(xs) {
		return errBuildStopped
	}
	if h := beforeReindex.Load(); h != nil {
		(*h)(t, k)
	}
	mu := t.stripe(k)
	mu.Lock()
	defer mu.Unlock()
	it, _, err := t.get(ctx, k)
	if err != nil {
		return err
	}
	var b *diskBatch
	for _, x := range xs {
		if x.disk == nil {
			x.put(k, it)
			continue
		}
		if b == nil {
			t.idxMu.Lock()
			defer t.idxMu.Unlock()
			if !t.kept(xs) {
				return errBuildStopped
			}
			b = t.idx.(*diskIndex).newBatch()
		}
		if err := x.disk.stage(b, k, x.entryOf(k, it)); err != nil {
			return err
		}
	}
	if b != nil {
		b.commit()
		return b.x.Err()
	}
	return nil
}

// markReady makes xs readable (ACTIVE); an index in the store is marked
// built there first, unless it is no longer t's (kept, checked with the
// mark under Table.idxMu: errBuildStopped, nothing written). Before, a
// backfill ending after its index's or table's deletion wrote its mark
// under the deleted one's keys, where a table's or an index's created
// again of the same id could find it.
func (t *Table) markReady(xs []*secondary) error {
	for _, x := range xs {
		if x.disk != nil {
			t.idxMu.Lock()
			err := errBuildStopped
			if t.kept([]*secondary{x}) {
				err = x.disk.markBuilt()
			}
			t.idxMu.Unlock()
			if err != nil {
				return fmt.Errorf("index %s: %w", x.name, err)
			}
		}
		x.mu.Lock()
		x.ready = true
		x.mu.Unlock()
	}
	return nil
}

// describeIndexes fills d's indexes' ARNs, counts and sizes, and GSI
// statuses.
func (t *Table) describeIndexes(d *TableDescription) {
	fill := func(list []IndexDescription) []IndexDescription {
		out := make([]IndexDescription, len(list))
		for i, id := range list {
			id.IndexArn = d.TableArn + "/index/" + id.IndexName
			if x := t.index(id.IndexName); x != nil {
				id.ItemCount, id.IndexSizeBytes = t.indexSize(x)
			}
			out[i] = id
		}
		return out
	}
	d.GlobalSecondaryIndexes = fill(d.GlobalSecondaryIndexes)
	d.LocalSecondaryIndexes = fill(d.LocalSecondaryIndexes)
}

// indexSize is x's item count and projected bytes.
func (t *Table) indexSize(x *secondary) (count, bytes int64) {
	if x.disk != nil {
		t.idxMu.RLock()
		defer t.idxMu.RUnlock()
		return x.disk.count, x.disk.bytes
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	return int64(len(x.entries)), x.bytes
}

// compare orders two entries of x: index partition, index sort key in
// DynamoDB's order, then the table key (ordKey).
func (x *secondary) compare(a, b *sEntry) int { return strings.Compare(a.ord, b.ord) }

func compareHash(a, b [16]byte) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}
