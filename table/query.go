package table

import (
	"bytes"
	"context"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/table/expr"
)

// MaxPageBytes is the most item data one Query or Scan page reads, 1 MB
// as in DynamoDB; the page then ends with a LastEvaluatedKey.
const MaxPageBytes = 1 << 20

// MaxTotalSegments is the most segments of a parallel Scan (TotalSegments
// 1..1000000, Segment 0..TotalSegments-1; API_Scan).
const MaxTotalSegments = 1000000

// Select values.
const (
	SelectAllAttributes = "ALL_ATTRIBUTES"
	SelectCount         = "COUNT"
	SelectSpecific      = "SPECIFIC_ATTRIBUTES"
	SelectAllProjected  = "ALL_PROJECTED_ATTRIBUTES"
)

// ReadInput is what Query and Scan share: the table or its index
// IndexName, the FilterExpression and ProjectionExpression with their
// placeholders, the page (Limit items read before the filter, from after
// ExclusiveStartKey), Select, ConsistentRead and ReturnConsumedCapacity.
// Its fields are promoted, so the requests' JSON is DynamoDB's.
type ReadInput struct {
	TableName                 string            `json:"TableName"`
	IndexName                 string            `json:"IndexName,omitempty"`
	FilterExpression          string            `json:"FilterExpression,omitempty"`
	ProjectionExpression      string            `json:"ProjectionExpression,omitempty"`
	ExpressionAttributeNames  map[string]string `json:"ExpressionAttributeNames,omitempty"`
	ExpressionAttributeValues Item              `json:"ExpressionAttributeValues,omitempty"`
	Limit                     int               `json:"Limit,omitempty"`
	ExclusiveStartKey         Item              `json:"ExclusiveStartKey,omitempty"`
	Select                    string            `json:"Select,omitempty"`
	ConsistentRead            bool              `json:"ConsistentRead,omitempty"`
	ReturnConsumedCapacity    string            `json:"ReturnConsumedCapacity,omitempty"`
}

// QueryInput is Query's request (API_Query): the items of one partition
// key, in sort-key order (ScanIndexForward false: descending), optionally
// narrowed by a sort-key condition, then filtered. Limit counts items
// read before the filter, as in DynamoDB. With IndexName, the index's
// key and order (see secondary.go).
type QueryInput struct {
	ReadInput
	KeyConditionExpression string `json:"KeyConditionExpression"`
	ScanIndexForward       *bool  `json:"ScanIndexForward,omitempty"`

	// KeyConditions is the legacy form of KeyConditionExpression, by key
	// attribute; a Query gives one of the two.
	KeyConditions map[string]LegacyCondition `json:"KeyConditions,omitempty"`
}

// ScanInput is Scan's request (API_Scan): every item, in the order of
// the partition keys' hashes, optionally one Segment of TotalSegments
// (parallel scan), then filtered.
type ScanInput struct {
	ReadInput
	Segment       *int `json:"Segment,omitempty"`
	TotalSegments *int `json:"TotalSegments,omitempty"`
}

// QueryOutput is the answer of Query and Scan. Items is nil with Select
// COUNT (and not written then, as DynamoDB's answer has none).
// LastEvaluatedKey is set when there may be more items.
type QueryOutput struct {
	Items            []Item `json:"Items"`
	Count            int    `json:"Count"`
	ScannedCount     int    `json:"ScannedCount"`
	LastEvaluatedKey Item   `json:"LastEvaluatedKey,omitempty"`
	// ConsumedCapacity counts every item read, the ones the filter
	// dropped too.
	ConsumedCapacity *ConsumedCapacity `json:"ConsumedCapacity,omitempty"`
}

// MarshalJSON writes the answer as DynamoDB does: Items always, [] when
// none matched, except with Select COUNT (Items nil).
func (o QueryOutput) MarshalJSON() ([]byte, error) {
	return o.AppendJSON(nil)
}

// reader holds what Query and Scan share: filter, projection, paging.
type reader struct {
	t      *Table
	filter *expr.Condition
	proj   *expr.Projection
	limit  int
	count  bool
	// selectAll: Select ALL_ATTRIBUTES was asked (an LSI then reads whole
	// items).
	selectAll bool
	out       *QueryOutput
	bytes     int
	// rcc and consistent: the capacity to report, and how it is counted.
	rcc        string
	consistent bool
	// index: the index read (nil: the table), whose units INDEXES reports
	index *secondary
	// fetched: the bytes of the whole items an LSI read fetched from the
	// table (Select ALL_ATTRIBUTES beyond its projection), which cost the
	// table units of their own
	fetched int
}

// result is the answer, with the capacity read if it was asked for.
func (r *reader) result() *QueryOutput {
	units, tableUnits := readUnits(r.bytes, r.consistent), 0.0
	if r.fetched > 0 {
		tableUnits = readUnits(r.fetched, r.consistent)
	}
	cc := capacity(r.rcc, r.t.tableName, units+tableUnits)
	if cc != nil && cc.Table != nil && r.index != nil {
		// a read of an index costs the index, and the table only what
		// was fetched from it
		cc.Table.CapacityUnits = tableUnits
		by := map[string]*Capacity{r.index.name: {CapacityUnits: units}}
		if r.index.global {
			cc.GlobalSecondaryIndexes = by
		} else {
			cc.LocalSecondaryIndexes = by
		}
	}
	r.out.ConsumedCapacity = cc
	return r.out
}

func (s *Service) newReader(t *Table, in *ReadInput, c *expr.Context, x *secondary) (*reader, error) {
	if in.Limit < 0 {
		return nil, awserr.OutOfRange(awserr.ErrValidation, "limit", in.Limit, 1, "2147483647")
	}
	r := &reader{t: t, limit: in.Limit, out: &QueryOutput{Items: []Item{}}, rcc: in.ReturnConsumedCapacity, consistent: in.ConsistentRead, index: x}
	switch in.Select {
	case "", SelectAllAttributes, SelectSpecific:
		r.selectAll = in.Select == SelectAllAttributes
	case SelectAllProjected: // with an IndexName (checkSelectGiven)
	case SelectCount:
		r.count, r.out.Items = true, nil
	default:
		return nil, validation("1 validation error detected: Value '%s' at 'select' failed to satisfy constraint: Member must satisfy enum value set: [SPECIFIC_ATTRIBUTES, COUNT, ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES]", in.Select)
	}
	if in.ProjectionExpression != "" && in.Select != "" && in.Select != SelectSpecific {
		// "If you use the ProjectionExpression parameter, then the value
		// for Select can only be SPECIFIC_ATTRIBUTES" (API_Query,
		// API_Scan); DynamoDB's words, as clients report them.
		what := in.Select
		if what == SelectCount {
			what = "only the Count"
		}
		return nil, validation("Cannot specify the ProjectionExpression when choosing to get %s", what)
	}
	var err error
	if in.FilterExpression != "" {
		if r.filter, err = expr.ParseFilter(in.FilterExpression, c); err != nil {
			return nil, exprErr(err)
		}
	}
	if in.ProjectionExpression != "" {
		if r.proj, err = expr.ParseProjection(in.ProjectionExpression, c); err != nil {
			return nil, exprErr(err)
		}
	}
	return r, nil
}

// checkSelectGiven refuses, before the table is looked up, a Select its
// request cannot have (ValidationException, DynamoDB's words, a Query's
// with "1 validation error detected: " in front, a Scan's without; moto's
// tests verified against AWS, tests/test_dynamodb/test_dynamodb_select.py):
//   - SPECIFIC_ATTRIBUTES without a ProjectionExpression (AttributesToGet
//     arrives as one): "Must specify the AttributesToGet or
//     ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES";
//   - ALL_PROJECTED_ATTRIBUTES without an IndexName:
//     "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an
//     IndexName" (a Scan's words too).
//
// query: the request is a Query's.
func checkSelectGiven(in *ReadInput, query bool) error {
	prefix := ""
	if query {
		prefix = "1 validation error detected: "
	}
	switch {
	case in.Select == SelectSpecific && in.ProjectionExpression == "":
		return validation("%sMust specify the AttributesToGet or ProjectionExpression when choosing to get SPECIFIC_ATTRIBUTES", prefix)
	case in.Select == SelectAllProjected && in.IndexName == "":
		return validation("%sALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName", prefix)
	}
	return nil
}

// checkSelect refuses Select ALL_ATTRIBUTES on a global secondary index
// that does not project every attribute; DynamoDB checks it after the
// ExclusiveStartKey and the filter's key attributes.
func (r *reader) checkSelect() error {
	if x := r.index; x != nil && x.global && r.selectAll && x.proj.ProjectionType != ProjectAll {
		return validation("One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", x.name)
	}
	return nil
}

// visit reads one entry; it returns true when the page is full (1 MB).
func (r *reader) visit(ctx context.Context, e entry) (bool, error) {
	k := key{h: e.h, rk: e.rk}
	it, err := r.t.fetch(ctx, k, e)
	if err != nil {
		return false, err
	}
	return r.visitItem(it, int(e.size), keyAttrs(it, r.t.schema))
}

// keyAttrs is the part of it that is a key of the schemas.
func keyAttrs(it Item, schemas ...schema) Item {
	lk := Item{}
	for _, sc := range schemas {
		for _, a := range []string{sc.hash, sc.rng} {
			if v, ok := it[a]; ok && a != "" {
				lk[a] = v
			}
		}
	}
	return lk
}

// visitItem counts item it read (size bytes) into the page, lek its
// LastEvaluatedKey; it returns true when the page is full (1 MB).
func (r *reader) visitItem(it Item, size int, lek Item) (bool, error) {
	r.out.ScannedCount++
	r.bytes += size
	r.out.LastEvaluatedKey = lek
	if r.filter != nil {
		ok, err := r.filter.Eval(it)
		if err != nil {
			return false, exprErr(err)
		}
		if !ok {
			return r.bytes >= MaxPageBytes, nil
		}
	}
	r.out.Count++
	if !r.count {
		if r.proj != nil {
			r.out.Items = append(r.out.Items, ownValues(r.proj.Apply(it)))
		} else {
			r.out.Items = append(r.out.Items, cloneItem(it))
		}
	}
	return r.bytes >= MaxPageBytes, nil
}

// page visits n entries (step visits entry i, or skips it) until the
// limit or the page size; it leaves LastEvaluatedKey set if entries remain
// or the limit was reached.
//
// truncated says the n entries are not the whole rest of the table.
func (r *reader) page(n int, truncated bool, step func(i int) (full bool, err error)) error {
	more := truncated
	for i := range n {
		if r.limit > 0 && r.out.ScannedCount >= r.limit {
			more = true
			break
		}
		full, err := step(i)
		if err != nil {
			return err
		}
		if full {
			more = more || i < n-1
			break
		}
	}
	// Stopped by Limit, even on the last entry, the page has a
	// LastEvaluatedKey, as DynamoDB's does.
	if !more && (r.limit == 0 || r.out.ScannedCount < r.limit) {
		r.out.LastEvaluatedKey = nil
	}
	return nil
}

// readFrom is the table a read names, its expressions' context and the
// index it names (nil: none).
func (s *Service) readFrom(in *ReadInput) (*Table, *expr.Context, *secondary, error) {
	t, err := s.table(in.TableName)
	if err != nil {
		return nil, nil, nil, err
	}
	var x *secondary
	if in.IndexName != "" {
		if x, err = t.readableIndex(in.IndexName, in.ConsistentRead); err != nil {
			return nil, nil, nil, err
		}
	}
	return t, newContext(in.ExpressionAttributeNames, in.ExpressionAttributeValues), x, nil
}

// Query returns the items of one partition key (see QueryInput).
func (s *Service) Query(ctx context.Context, in QueryInput) (*QueryOutput, error) {
	if remote, out, err := forwardOut[QueryOutput](ctx, s, "Query", in); remote {
		return out, err
	}
	if err := checkSelectGiven(&in.ReadInput, true); err != nil {
		return nil, err
	}
	t, c, x, err := s.readFrom(&in.ReadInput)
	if err != nil {
		return nil, err
	}
	sc := t.schema
	if x != nil {
		sc = x.sc
	}
	terms, err := queryTerms(&in, c)
	if err != nil {
		return nil, err
	}
	kc, err := t.queryKey(x, terms, in.ExclusiveStartKey)
	if err != nil {
		return nil, err
	}
	r, err := s.newReader(t, &in.ReadInput, c, x)
	if err != nil {
		return nil, err
	}
	if r.filter != nil {
		// DynamoDB filters a Query on the other attributes only.
		for _, a := range r.filter.Attributes() {
			if a == sc.hash || a == sc.rng {
				return nil, validation("Filter Expression can only contain non-primary key attributes: Primary key attribute: %s", a)
			}
		}
	}
	if err := r.checkProjectedFilter(); err != nil {
		return nil, err
	}
	if err := r.checkSelect(); err != nil {
		return nil, err
	}
	if err := r.checkProjectedProjection(); err != nil {
		return nil, err
	}
	if r.filter != nil {
		if err := t.scalarKeyNames(r.filter.NestedAttributes()); err != nil {
			return nil, err
		}
	}
	if err := c.CheckUnused(); err != nil {
		return nil, exprErr(err)
	}
	forward := in.ScanIndexForward == nil || *in.ScanIndexForward
	if x != nil {
		return r.queryIndex(ctx, x, kc, forward, in.ExclusiveStartKey)
	}
	pk, err := t.schema.partitionOf(kc.HashValue)
	if err != nil {
		return nil, err
	}
	var start *key
	if in.ExclusiveStartKey != nil {
		// queryKey has checked it: of this partition
		sk, err := t.schema.keyOf(in.ExclusiveStartKey, true)
		if err != nil {
			return nil, startKeyInvalid(err)
		}
		start = &sk
	}
	rng := t.schema.sortRangeOf(kc)
	err = pageWalk(r, func(visit func(partitionEntry) bool) error {
		t.walkPartition(pk.h, forward, start, &rng, func(e entry, img []byte) bool {
			return visit(partitionEntry{e, img})
		})
		return nil
	}, func(pe partitionEntry) (bool, error) {
		e := pe.e
		it, _ := decodeImage(pe.img)
		if it == nil {
			var err error
			if it, err = t.fetch(ctx, key{h: e.h, rk: e.rk}, e); err != nil {
				return false, err
			}
		}
		if t.schema.rng != "" {
			if rv := it[t.schema.rng]; !kc.MatchRange(&rv) {
				return false, nil
			}
		}
		return r.visitItem(it, int(e.size), keyAttrs(it, t.schema))
	})
	if err != nil {
		return nil, err
	}
	return r.result(), nil
}

// partitionEntry is an entry of a Query's partition walk, with its
// item's image from the index store (nil: none).
type partitionEntry struct {
	e   entry
	img []byte
}

// Scan returns every item (see ScanInput), a page at a time.
func (s *Service) Scan(ctx context.Context, in ScanInput) (*QueryOutput, error) {
	if remote, out, err := forwardOut[QueryOutput](ctx, s, "Scan", in); remote {
		return out, err
	}
	if err := checkSelectGiven(&in.ReadInput, false); err != nil {
		return nil, err
	}
	t, c, x, err := s.readFrom(&in.ReadInput)
	if err != nil {
		return nil, err
	}
	r, err := s.newReader(t, &in.ReadInput, c, x)
	if err != nil {
		return nil, err
	}
	if err := c.CheckUnused(); err != nil {
		return nil, exprErr(err)
	}
	seg, total, err := segments(in.Segment, in.TotalSegments)
	if err != nil {
		return nil, err
	}
	from, exclusive, err := r.scanStart(x, in.ExclusiveStartKey, seg, total)
	if err != nil {
		return nil, err
	}
	if err := r.checkProjectedProjection(); err != nil {
		return nil, err
	}
	if r.filter != nil {
		if err := t.scalarKeyNames(r.filter.NestedAttributes()); err != nil {
			return nil, err
		}
	}
	if x != nil {
		return r.scanIndex(ctx, x, seg, total, in.ExclusiveStartKey)
	}
	// Collect the page's entries under the read lock, then read the items.
	// The index store hands each entry's image over with it (imgs), so
	// the page is read in one pass of its iterator.
	t.idxMu.RLock()
	var entries []entry
	var imgs [][]byte
	budget, size, truncated := r.limit, 0, false
	add := func(e entry, img []byte) bool {
		if exclusive && e.h == from.h && e.rk == from.rk {
			return true
		}
		if total > 1 && segmentOf(e.h, total) != seg {
			return true
		}
		entries = append(entries, e)
		if img != nil {
			imgs = append(imgs, bytes.Clone(img))
		}
		size += int(e.size)
		// One entry past the page tells page() that more remain.
		if (budget > 0 && len(entries) > budget) || size > MaxPageBytes {
			truncated = true
			return false
		}
		return true
	}
	if dx, ok := t.idx.(*diskIndex); ok {
		dx.iterate(dx.seekKey(from), true, add)
	} else {
		t.idx.AscendGreaterOrEqual(from, func(e entry) bool { return add(e, nil) })
	}
	t.idxMu.RUnlock()
	err = r.page(len(entries), truncated, func(i int) (bool, error) {
		if len(imgs) == len(entries) {
			if it, ok := decodeImage(imgs[i]); ok {
				return r.visitItem(it, int(entries[i].size), keyAttrs(it, t.schema))
			}
		}
		return r.visit(ctx, entries[i])
	})
	if err != nil {
		return nil, err
	}
	return r.result(), nil
}

// scanStart checks a Scan's ExclusiveStartKey esk (nil: none) in
// DynamoDB's order and words: against the index's key when it reads index
// x (x.startKeyIndex), then Select (checkSelect), then against the table's
// key ("The provided starting key is invalid: " and the key's error), then
// against the segment. It returns the table entry to start after
// (exclusive: there is one).
func (r *reader) scanStart(x *secondary, esk Item, seg, total int) (from entry, exclusive bool, err error) {
	if x != nil {
		if err := x.startKeyIndex(esk); err != nil {
			return from, false, err
		}
	}
	if err := r.checkSelect(); err != nil {
		return from, false, err
	}
	if esk == nil {
		return from, false, nil
	}
	if x == nil && len(esk) != len(keyNames(r.t.schema)) {
		return from, false, validation("The provided starting key is invalid: The provided key element does not match the schema")
	}
	sk, err := r.t.schema.keyOf(keyAttrs(esk, r.t.schema), true)
	if err != nil {
		return from, false, startKeyInvalid(err)
	}
	h := sk.h
	if x != nil {
		if ik, err := x.sc.keyOf(keyAttrs(esk, x.sc), true); err == nil {
			h = ik.h
		}
	}
	if total > 1 && segmentOf(h, total) != seg {
		return from, false, validation("The provided starting key is invalid: Invalid ExclusiveStartKey. Please use ExclusiveStartKey with correct Segment. TotalSegments: %d Segment: %d", total, seg)
	}
	return entry{h: sk.h, rk: sk.rk}, true, nil
}

// segments checks a parallel Scan's Segment (0..TotalSegments-1) and
// TotalSegments (1..1000000), given both or neither (default: segment 0
// of 1), in DynamoDB's words.
func segments(segment, totalSegments *int) (seg, total int, err error) {
	if segment == nil && totalSegments == nil {
		return 0, 1, nil
	}
	if totalSegments == nil {
		return 0, 0, validation("The TotalSegments parameter is required but was not present in the request when Segment parameter is present")
	}
	if segment == nil {
		return 0, 0, validation("The Segment parameter is required but was not present in the request when parameter TotalSegments is present")
	}
	total, seg = *totalSegments, *segment
	if total < 1 || total > MaxTotalSegments {
		return 0, 0, awserr.OutOfRange(awserr.ErrValidation, "totalSegments", total, 1, MaxTotalSegments)
	}
	if seg < 0 || seg >= total {
		return 0, 0, validation("The Segment parameter is zero-based and must be less than parameter TotalSegments: Segment: %d is not less than TotalSegments: %d", seg, total)
	}
	return seg, total, nil
}

// startKeyInvalid is an ExclusiveStartKey's key error as DynamoDB words
// it: "The provided starting key is invalid: " and the error's message.
func startKeyInvalid(err error) error {
	msg := err.Error()
	if e, ok := err.(*awserr.Error); ok {
		msg = e.Message
	}
	return validation("The provided starting key is invalid: %s", msg)
}

// CheckSegments is segments' verdict alone, for the checks made before a
// table is looked up.
func CheckSegments(segment, totalSegments *int) error {
	_, _, err := segments(segment, totalSegments)
	return err
}

// segmentOf spreads partition hashes evenly over total segments.
func segmentOf(h [16]byte, total int) int {
	v := uint64(h[0])<<24 | uint64(h[1])<<16 | uint64(h[2])<<8 | uint64(h[3])
	return int(v * uint64(total) >> 32)
}
