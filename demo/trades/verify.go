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

// verify compares every aggregate with the producer's expected totals,
// exactly (decimals), and counts duplicates and losses per stage:
//   - state: trades in the state table vs trades produced;
//   - map: state changes covered by the reduce table's pre-aggregates vs
//     change records in the state table's log;
//   - reduce: changes counted in the aggregate table vs changes in the
//     reduce table's pre-aggregates.
func verify(ctx context.Context, rn *runnel.Runnel, p *producer, fns *functions, res *Result) error {
	res.Exact = true
	// Aggregates.
	keys := make([]string, 0, len(p.expected))
	for k := range p.expected {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out, err := rn.Tables.GetItem(ctx, table.GetItemInput{TableName: aggTable, Key: table.Item{"Key": events.NewStringAttribute(k)}})
		if err != nil {
			return err
		}
		got := "0"
		if out.Item != nil {
			got = out.Item["Value"].Number()
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
	stage := func(name string, s *stage, uuid string) *StageReport {
		r := &StageReport{Invocations: s.invocations.Load(), FailuresInjected: s.injected.Load()}
		res.Stages[name] = r
		return r
	}
	st := stage("state", &fns.state, "")
	mp := stage("map", &fns.mapper, "")
	rd := stage("reduce", &fns.reducer, "")
	for _, m := range rn.Mappings.ListEventSourceMappings() {
		s, err := rn.Mappings.Status(m.UUID)
		if err != nil {
			continue
		}
		var retries int64
		for _, sh := range s.Shards {
			retries += sh.Retries
		}
		switch m.FunctionName {
		case "state":
			st.Retries = retries
		case "map":
			mp.Retries = retries
		case "reduce":
			rd.Retries = retries
		}
	}
	d, err := rn.Tables.DescribeTable(ctx, stateTable)
	if err != nil {
		return err
	}
	diff := func(r *StageReport, got, want int64) {
		if got > want {
			r.Duplicates = got - want
			res.Exact = false
		} else if got < want {
			r.Losses = want - got
			res.Exact = false
		}
	}
	diff(st, d.ItemCount, p.expected[KeyTrades])
	changes, err := stateChanges(ctx, rn)
	if err != nil {
		return err
	}
	var covered int64
	var start table.Item
	for {
		out, err := rn.Tables.Scan(ctx, table.ScanInput{TableName: reduceTable, ExclusiveStartKey: start})
		if err != nil {
			return err
		}
		for _, it := range out.Items {
			var agg preAggregate
			if err := json.Unmarshal([]byte(it["Message"].String()), &agg); err != nil {
				return err
			}
			covered += agg.Changes
		}
		if out.LastEvaluatedKey == nil {
			break
		}
		start = out.LastEvaluatedKey
	}
	diff(mp, covered, changes)
	diff(rd, aggInt(ctx, rn, KeyChanges), covered)
	return nil
}

func decEqual(a, b string) bool {
	x, _, err1 := apd.NewFromString(a)
	y, _, err2 := apd.NewFromString(b)
	return err1 == nil && err2 == nil && x.Cmp(y) == 0
}
