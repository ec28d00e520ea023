package table

import (
	"context"
	"sort"
	"sync"

	"github.com/runnel-dev/runnel/table/expr"
)

// Batch limits (API_BatchWriteItem, API_BatchGetItem).
const (
	// MaxBatchWrite is the most Put and Delete requests in one
	// BatchWriteItem, over all its tables.
	MaxBatchWrite = 25
	// MaxBatchGet is the most keys in one BatchGetItem, over all its
	// tables.
	MaxBatchGet = 100
	// MaxBatchBytes is the most item data one BatchGetItem answers
	// (16 MB); the keys past it come back in UnprocessedKeys. A
	// BatchWriteItem cannot reach it: 25 items of at most 400 KB.
	MaxBatchBytes = 16 << 20
)

// WriteRequest is one request of a BatchWriteItem: exactly one of
// PutRequest (a whole item, as PutItem without a condition) and
// DeleteRequest (a key, as DeleteItem without a condition).
type WriteRequest struct {
	PutRequest    *PutRequest    `json:"PutRequest,omitempty"`
	DeleteRequest *DeleteRequest `json:"DeleteRequest,omitempty"`
}

// PutRequest is a BatchWriteItem put: the whole item.
type PutRequest struct {
	Item Item `json:"Item"`
}

// DeleteRequest is a BatchWriteItem delete: the item's primary key.
type DeleteRequest struct {
	Key Item `json:"Key"`
}

// BatchWriteItemInput is BatchWriteItem's request: table name -> its
// requests. ReturnConsumedCapacity is NONE (default), TOTAL or INDEXES;
// ReturnItemCollectionMetrics (NONE or SIZE) is accepted and answered with
// no metrics.
type BatchWriteItemInput struct {
	RequestItems                map[string][]WriteRequest `json:"RequestItems"`
	ReturnConsumedCapacity      string                    `json:"ReturnConsumedCapacity,omitempty"`
	ReturnItemCollectionMetrics string                    `json:"ReturnItemCollectionMetrics,omitempty"`
}

// BatchWriteItemOutput holds the requests not written, in the request's
// shape (empty when every request was written), and the capacity per
// table when asked for.
type BatchWriteItemOutput struct {
	UnprocessedItems map[string][]WriteRequest `json:"UnprocessedItems"`
	ConsumedCapacity []ConsumedCapacity        `json:"ConsumedCapacity,omitempty"`
}

// batchWrite is one request of a BatchWriteItem, prepared.
type batchWrite struct {
	table string
	req   WriteRequest
	o     *op
	old   Item
	nw    Item
	err   error
}

// BatchWriteItem puts and deletes up to 25 items of one or several tables
// (API_BatchWriteItem,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html).
// Each request is atomic on its item; the batch is not: the requests of
// one table are written as one group (their change records appended in
// one log write, writeGroup), tables concurrently, and a request that
// could not be written (a write that failed, or an item held by a
// transaction in progress) is returned in UnprocessedItems, to be sent
// again. If no request could be written,
// the first request's error is returned instead.
//
// The whole batch is refused, nothing written, with a
// ValidationException when it has more than 25 requests ("Too many items
// requested for the BatchWriteItem call"), two requests on one item
// ("Provided list of item keys contains duplicates"), a request with not
// exactly one of PutRequest and DeleteRequest, a key that does not match
// the schema, an item over 400 KB, or a value of an index key of another
// type than its definition; ResourceNotFoundException when a table does
// not exist.
func (s *Service) BatchWriteItem(ctx context.Context, in BatchWriteItemInput) (*BatchWriteItemOutput, error) {
	if remote, out, err := forwardOut[BatchWriteItemOutput](ctx, s, "BatchWriteItem", in); remote {
		return out, err
	}
	var writes []*batchWrite
	err := eachBatchTable(s, in.RequestItems, func(r []WriteRequest) int { return len(r) }, MaxBatchWrite, "BatchWriteItem", func(name string, t *Table, reqs []WriteRequest) error {
		seen := keySet{}
		for _, r := range reqs {
			var err error
			w := &batchWrite{table: name, req: r}
			switch {
			case (r.PutRequest == nil) == (r.DeleteRequest == nil):
				return validation("Supplied AttributeValue has more than one datatypes set, must contain exactly one of the supported datatypes")
			case r.PutRequest != nil:
				if err = t.checkIndexKeys(r.PutRequest.Item); err == nil {
					w.o, err = s.putOp(t, r.PutRequest.Item, WriteExpr{})
					err = itemKeyMismatch(err)
				}
			default:
				w.o, err = s.deleteOp(t, r.DeleteRequest.Key, WriteExpr{})
			}
			if err != nil {
				return err
			}
			if err := seen.add(w.o.k); err != nil {
				return err
			}
			writes = append(writes, w)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	byTable := map[*Table][]*batchWrite{}
	var order []*Table
	for _, w := range writes {
		if byTable[w.o.t] == nil {
			order = append(order, w.o.t)
		}
		byTable[w.o.t] = append(byTable[w.o.t], w)
	}
	var wg sync.WaitGroup
	for i, t := range order {
		if i == 0 {
			continue // written below, by this goroutine
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			writeGroup(ctx, t, byTable[t])
		}()
	}
	if len(order) > 0 {
		writeGroup(ctx, order[0], byTable[order[0]])
	}
	wg.Wait()
	out := &BatchWriteItemOutput{UnprocessedItems: map[string][]WriteRequest{}}
	units := map[string]float64{}
	failed := 0
	for _, w := range writes {
		if w.err != nil {
			failed++
			out.UnprocessedItems[w.table] = append(out.UnprocessedItems[w.table], w.req)
			continue
		}
		if asked(in.ReturnConsumedCapacity) {
			units[w.table] += writeUnits(w.old, w.nw)
		}
	}
	if failed > 0 && failed == len(writes) {
		return nil, writes[0].err
	}
	out.ConsumedCapacity = capacities(in.ReturnConsumedCapacity, units)
	return out, nil
}

// writeGroup writes the requests of one table of a BatchWriteItem as one
// group: their items locked (in lockItems' order), each checked for a
// transaction holding it and prepared on its current item as a single
// write is, then every change appended in one log write (appendEach).
// Each request is atomic on its item and gets its own result in w.err;
// the group is not atomic.
func writeGroup(ctx context.Context, t *Table, ws []*batchWrite) {
	var live []*batchWrite
	ops := make([]*op, 0, len(ws))
	for _, w := range ws {
		if w.err = w.o.checkHeld(); w.err == nil {
			live = append(live, w)
			ops = append(ops, w.o)
		}
	}
	defer lockItems(ops)()
	var ps []*pending
	var written []*batchWrite
	for _, w := range live {
		if w.err = w.o.checkHeld(); w.err != nil {
			continue
		}
		var p *pending
		if w.old, p, w.err = w.o.prepare(ctx); w.err != nil {
			continue
		}
		if p == nil {
			w.nw, w.err = w.o.unchanged(w.old)
			continue
		}
		ps = append(ps, p)
		written = append(written, w)
	}
	errs, err := t.appendEach(ctx, ps)
	for i, w := range written {
		switch {
		case err != nil:
			w.err = err
		case errs[i] != nil:
			w.err = errs[i]
		default:
			w.nw = ps[i].change.NewImage
		}
	}
}

// capacities is the ConsumedCapacity list of a batch (nil unless asked
// for), one entry per table, sorted by name.
func capacities(mode string, units map[string]float64) []ConsumedCapacity {
	var out []ConsumedCapacity
	for _, name := range sortedKeys(units) {
		if c := capacity(mode, name, units[name]); c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// tooMany refuses a batch of more than limit requests over its tables,
// in DynamoDB's words.
// eachBatchTable checks the size of a batch's requests by table (more
// than limit in all: "Too many items requested for the <op> call"), then
// calls fn with each table, in name order, and its requests; it stops at
// the first error, a missing table's or fn's.
func eachBatchTable[V any](s *Service, m map[string]V, size func(V) int, limit int, op string, fn func(name string, t *Table, v V) error) error {
	n := 0
	for _, v := range m {
		n += size(v)
	}
	if n > limit {
		return validation("Too many items requested for the %s call", op)
	}
	for _, name := range sortedKeys(m) {
		t, err := s.table(name)
		if err != nil {
			return err
		}
		if err := fn(name, t, m[name]); err != nil {
			return err
		}
	}
	return nil
}

// keySet is the keys of one table's requests in a batch: a key twice is
// "Provided list of item keys contains duplicates".
type keySet map[string]bool

func (ks keySet) add(k key) error {
	if ks[k.id()] {
		return validation("Provided list of item keys contains duplicates")
	}
	ks[k.id()] = true
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// KeysAndAttributes is what BatchGetItem reads of one table: the keys,
// and per table the ProjectionExpression (with its
// ExpressionAttributeNames) and ConsistentRead (default false: runnel's
// reads are always consistent; only the capacity counted differs).
type KeysAndAttributes struct {
	Keys                     []Item            `json:"Keys"`
	ProjectionExpression     string            `json:"ProjectionExpression,omitempty"`
	ExpressionAttributeNames map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ConsistentRead           bool              `json:"ConsistentRead,omitempty"`
}

// BatchGetItemInput is BatchGetItem's request: table name -> what to read.
type BatchGetItemInput struct {
	RequestItems           map[string]KeysAndAttributes `json:"RequestItems"`
	ReturnConsumedCapacity string                       `json:"ReturnConsumedCapacity,omitempty"`
}

// BatchGetItemOutput holds the items found per table (a missing item is
// simply absent; every table asked for has an entry), the keys not read
// in UnprocessedKeys (past 16 MB of items), and the capacity per table
// when asked for.
type BatchGetItemOutput struct {
	Responses        map[string][]Item            `json:"Responses"`
	UnprocessedKeys  map[string]KeysAndAttributes `json:"UnprocessedKeys"`
	ConsumedCapacity []ConsumedCapacity           `json:"ConsumedCapacity,omitempty"`
}

// batchGet is one table of a BatchGetItem, prepared.
type batchGet struct {
	name string
	t    *Table
	ka   KeysAndAttributes
	keys []key
	proj *expr.Projection
}

// BatchGetItem reads up to 100 items of one or several tables
// (API_BatchGetItem,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchGetItem.html).
// Tables are read in name order and keys in request order; once the items
// read reach 16 MB (MaxBatchBytes), the keys left are returned in
// UnprocessedKeys with their table's projection and ConsistentRead. Each
// item is read as GetItem reads it; the batch is not one snapshot.
//
// Errors, before anything is read: ValidationException for more than 100
// keys ("Too many items requested for the BatchGetItem call"), a key
// twice in one table ("Provided list of item keys contains duplicates"),
// a key that does not match the schema, a bad ProjectionExpression or an
// unused name placeholder; ResourceNotFoundException for a missing table.
func (s *Service) BatchGetItem(ctx context.Context, in BatchGetItemInput) (*BatchGetItemOutput, error) {
	if remote, out, err := forwardOut[BatchGetItemOutput](ctx, s, "BatchGetItem", in); remote {
		return out, err
	}
	var gets []*batchGet
	err := eachBatchTable(s, in.RequestItems, func(ka KeysAndAttributes) int { return len(ka.Keys) }, MaxBatchGet, "BatchGetItem", func(name string, t *Table, ka KeysAndAttributes) error {
		g := &batchGet{name: name, t: t, ka: ka}
		seen := keySet{}
		for _, ki := range g.ka.Keys {
			k, err := t.schema.keyOf(ki, true)
			if err != nil {
				return err
			}
			if err := seen.add(k); err != nil {
				return err
			}
			g.keys = append(g.keys, k)
		}
		var err error
		if g.proj, err = projection(g.ka.ProjectionExpression, g.ka.ExpressionAttributeNames); err != nil {
			return err
		}
		gets = append(gets, g)
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := &BatchGetItemOutput{Responses: map[string][]Item{}, UnprocessedKeys: map[string]KeysAndAttributes{}}
	units := map[string]float64{}
	size, full := 0, false
	for _, g := range gets {
		out.Responses[g.name] = []Item{}
		for i, k := range g.keys {
			var it Item
			var err error
			if !full {
				if it, _, err = g.t.get(ctx, k); err != nil {
					return nil, err
				}
			}
			n := expr.ItemSize(it)
			if full = full || size+n > MaxBatchBytes; full {
				rest := g.ka
				rest.Keys = g.ka.Keys[i:]
				out.UnprocessedKeys[g.name] = rest
				break
			}
			size += n
			units[g.name] += readUnits(n, g.ka.ConsistentRead)
			if it != nil {
				out.Responses[g.name] = append(out.Responses[g.name], project(it, g.proj))
			}
		}
	}
	out.ConsumedCapacity = capacities(in.ReturnConsumedCapacity, units)
	return out, nil
}
