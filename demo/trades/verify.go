package trades

import (
	"context"
	"encoding/json"
	"sort"
	"strconv"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cockroachdb/apd/v3"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/table"
)

// source is where verify reads the pipeline's results: the engine in
// one process (engineSource), or the nodes' AWS endpoints.
type source interface {
	// aggregate is the aggregate table's Value of key ("0" when absent).
	aggregate(ctx context.Context, key string) (string, error)
	// stateItems is the state table's ItemCount.
	stateItems(ctx context.Context) (int64, error)
	// stateChanges counts the state table's change records (INSERT and
	// MODIFY: it has no deletes).
	stateChanges(ctx context.Context) (int64, error)
	// reduceMessages calls fn with every reduce-table item's Message.
	reduceMessages(ctx context.Context, fn func(msg string) error) error
	// retries are the mappings' retries by function name.
	retries(ctx context.Context) map[string]int64
}

// verify compares every aggregate with the producer's expected totals,
// exactly (decimals), and counts duplicates and losses per stage:
//   - state: trades in the state table vs trades produced;
//   - map: state changes covered by the reduce table's pre-aggregates vs
//     change records in the state table's log;
//   - reduce: changes counted in the aggregate table vs changes in the
//     reduce table's pre-aggregates.
//
// counts are each stage's invocations and failures injected.
func verify(ctx context.Context, src source, p *producer, counts map[string][2]int64, res *Result) error {
	res.Exact = true
	// Aggregates.
	keys := make([]string, 0, len(p.expected))
	for k := range p.expected {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		got, err := src.aggregate(ctx, k)
		if err != nil {
			return err
		}
		want := strconv.FormatInt(p.expected[k], 10)
		if k != KeyTrades {
			want = formatCents(p.expected[k])
		}
		c := AggregateCheck{Key: k, Expected: want, Got: got, OK: decEqual(got, want)}
		if !c.OK {
			res.Exact = false
		}
		res.Aggregates = append(res.Aggregates, c)
	}
	// Stages.
	retries := src.retries(ctx)
	stage := func(name string) *StageReport {
		r := &StageReport{Invocations: counts[name][0], FailuresInjected: counts[name][1], Retries: retries[name]}
		res.Stages[name] = r
		return r
	}
	st, mp, rd := stage("state"), stage("map"), stage("reduce")
	diff := func(r *StageReport, got, want int64) {
		if got > want {
			r.Duplicates = got - want
			res.Exact = false
		} else if got < want {
			r.Losses = want - got
			res.Exact = false
		}
	}
	items, err := src.stateItems(ctx)
	if err != nil {
		return err
	}
	diff(st, items, p.expected[KeyTrades])
	changes, err := src.stateChanges(ctx)
	if err != nil {
		return err
	}
	var covered int64
	if err := src.reduceMessages(ctx, func(msg string) error {
		var agg preAggregate
		if err := json.Unmarshal([]byte(msg), &agg); err != nil {
			return err
		}
		covered += agg.Changes
		return nil
	}); err != nil {
		return err
	}
	diff(mp, covered, changes)
	aggChanges, err := src.aggregate(ctx, KeyChanges)
	if err != nil {
		return err
	}
	n, _ := strconv.ParseInt(aggChanges, 10, 64)
	diff(rd, n, covered)
	return nil
}

// engineSource reads the results in the process that ran the pipeline.
type engineSource struct{ rn *runnel.Runnel }

func (e engineSource) aggregate(ctx context.Context, key string) (string, error) {
	out, err := e.rn.Tables.GetItem(ctx, table.GetItemInput{TableName: aggTable, Key: table.Item{"Key": events.NewStringAttribute(key)}})
	if err != nil || out.Item == nil {
		return "0", err
	}
	return out.Item["Value"].Number(), nil
}

func (e engineSource) stateItems(ctx context.Context) (int64, error) {
	d, err := e.rn.Tables.DescribeTable(ctx, stateTable)
	if err != nil {
		return 0, err
	}
	return d.ItemCount, nil
}

func (e engineSource) stateChanges(ctx context.Context) (int64, error) {
	return stateChanges(ctx, e.rn)
}

func (e engineSource) reduceMessages(ctx context.Context, fn func(string) error) error {
	var start table.Item
	for {
		out, err := e.rn.Tables.Scan(ctx, table.ScanInput{ReadInput: table.ReadInput{TableName: reduceTable, ExclusiveStartKey: start}})
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			if err := fn(it["Message"].String()); err != nil {
				return err
			}
		}
		if out.LastEvaluatedKey == nil {
			return nil
		}
		start = out.LastEvaluatedKey
	}
}

func (e engineSource) retries(ctx context.Context) map[string]int64 { return mappingRetries(e.rn) }

// mappingRetries sums each mapping's retries over its shards, by function
// name, as the mappings' status tells them (in another process: as its
// holder last published them).
func mappingRetries(rn *runnel.Runnel) map[string]int64 {
	out := map[string]int64{}
	for _, m := range rn.Mappings.ListEventSourceMappings() {
		s, err := rn.Mappings.Status(m.UUID)
		if err != nil {
			continue
		}
		for _, sh := range s.Shards {
			out[m.FunctionName] += sh.Retries
		}
	}
	return out
}

func decEqual(a, b string) bool {
	x, _, err1 := apd.NewFromString(a)
	y, _, err2 := apd.NewFromString(b)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}
