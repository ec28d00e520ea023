package trades

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/cockroachdb/apd/v3"
	json "github.com/goccy/go-json"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/table"
)

// errInjected is the failure the functions inject, as the sample's
// "Manually Introduced Random Failure!".
var errInjected = errors.New("Manually Introduced Random Failure!")

// stage counts one function's work.
type stage struct {
	invocations, injected, records atomic.Int64
	// replayed counts batches the reducer found applied already (their
	// marker item) after their token's 10 minutes.
	replayed atomic.Int64
}

// appliedKey is the aggregate table's key of the marker item of a reduce
// batch whose ClientRequestToken is token. The verifier reads the
// aggregates by their own keys, so the markers do not count.
func appliedKey(token string) string { return "applied/" + token }

// stateWriters is how many state-table writes the state function keeps in
// flight across its invocations (the functions' concurrency). The state
// table's writes are committed in groups (table.Table.appendEach): a
// writer waits for its group's log round trip, so the writers in flight
// bound the changes a round trip carries. In a 2M saturated run, 64
// writers made groups of 15 changes on average (128,788 log writes for
// 1,960,921 changes) and left the two cores idle about 14 % of the run;
// 256 make groups of 54 (36,305 writes). Alternated in the same hour:
// 64 writers 69,621–83,516 messages/s (mean 77,082, 11 runs), 256
// writers 71,178–90,370 (mean 81,538, 11 runs)
// (docs/benchmarks/trades-cpu.md, "Session 20").
const stateWriters = 256

// functions are the pipeline's three functions (seed 002), in process.
type functions struct {
	// tables is the engine's table service. It is replaced when the run
	// reopens the engine after a crash, while invocations started by the
	// crashed engine may still be running: they read it atomically.
	tables                       atomic.Pointer[table.Service]
	stateTable, reduceTable, agg string
	stateFail, mapFail, redFail  float64
	concurrency                  int // state writers: record writes in flight across state invocations

	// writes feeds the state writers: long-lived goroutines (a goroutine
	// per record would grow a fresh stack for every JSON decode).
	writersOnce sync.Once
	writes      chan stateWrite

	state, mapper, reducer stage

	rngMu sync.Mutex
	rng   *rand.Rand

	// latency of the messages the reducer applied, by token: a replayed
	// transaction (same token) is not counted twice.
	latMu   sync.Mutex
	applied map[string]bool
	lat     *histogram
	series  *series
}

type stateWrite struct {
	ctx  context.Context
	data []byte
	done func(error)
}

// errTablesNotOpen is a function error (the mapping retries the batch):
// an invocation came before the node's tables were set (NodeFunctions.Use).
var errTablesNotOpen = errors.New("trades: the tables are not open yet in this process")

// openTables returns the tables the functions write to, or
// errTablesNotOpen. A restarted node's mappings may invoke the functions
// before Use; the state function's writes run in goroutines of their own,
// where a nil table service crashed the process instead of failing the
// invocation.
func (f *functions) openTables() (*table.Service, error) {
	if t := f.tables.Load(); t != nil {
		return t, nil
	}
	return nil, errTablesNotOpen
}

// startWriters starts the state writers once; they live as long as the
// process (the demo runs one pipeline per process).
func (f *functions) startWriters() {
	f.writersOnce.Do(func() {
		f.writes = make(chan stateWrite)
		for range max(1, f.concurrency) {
			go func() {
				for w := range f.writes {
					w.done(f.writeState(w.ctx, w.data))
				}
			}()
		}
	})
}

// The environment variables of the functions that set their failure
// rates (a share of invocations, 0..1, as Config.StateFailure and the
// others; 0 disables). The cluster demo sets them, so that every node
// injects the same failures; without one the function's own rate holds.
const (
	EnvStateFailure  = "TRADES_STATE_FAILURE"
	EnvMapFailure    = "TRADES_MAP_FAILURE"
	EnvReduceFailure = "TRADES_REDUCE_FAILURE"
)

// rate is the failure rate in the invocation's environment variable key,
// or def when it is not set or not a number.
func (f *functions) rate(ctx context.Context, key string, def float64) float64 {
	if v, ok := function.Env(ctx)[key]; ok {
		if r, err := strconv.ParseFloat(v, 64); err == nil {
			return r
		}
	}
	return def
}

func (f *functions) fail(p float64) bool {
	if p <= 0 {
		return false
	}
	f.rngMu.Lock()
	defer f.rngMu.Unlock()
	return f.rng.Float64() < p
}

// State writes every message of the batch to the state table with the
// sample's conditional update: only if the trade is new or the stored
// Version is lower. Duplicates and out-of-order messages fail the
// condition and are skipped. The writes of one batch run concurrently
// (different trades; the condition makes the order of one trade's
// messages irrelevant). An injected failure strikes at a random point of
// the batch, after some writes: the retry finds them done.
func (f *functions) State(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
	f.state.invocations.Add(1)
	failAt := -1
	if f.fail(f.rate(ctx, EnvStateFailure, f.stateFail)) {
		f.rngMu.Lock()
		failAt = f.rng.IntN(len(ev.Records) + 1)
		f.rngMu.Unlock()
	}
	recs := ev.Records
	if failAt >= 0 {
		recs = recs[:failAt]
	}
	var wg sync.WaitGroup
	errs := make(chan error, 1)
	f.startWriters()
	for i := range recs {
		wg.Add(1)
		f.writes <- stateWrite{ctx: ctx, data: recs[i].Kinesis.Data, done: func(err error) {
			if err != nil {
				select {
				case errs <- err:
				default:
				}
			}
			wg.Done()
		}}
	}
	wg.Wait()
	select {
	case err := <-errs:
		return events.KinesisEventResponse{}, err
	default:
	}
	f.state.records.Add(int64(len(recs)))
	if failAt >= 0 {
		f.state.injected.Add(1)
		return events.KinesisEventResponse{}, errInjected
	}
	return events.KinesisEventResponse{}, nil
}

// stateNames is writeState's ExpressionAttributeNames, the same for every
// write (the table service only reads it).
var stateNames = map[string]string{"#value": "Value", "#version": "Version", "#rt": "RiskType", "#rg": "Region",
	"#td": "TradeDesk", "#ts": "Timestamp"}

func (f *functions) writeState(ctx context.Context, data []byte) error {
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("bad message: %w", err)
	}
	tables, err := f.openTables()
	if err != nil {
		return err
	}
	_, err = tables.UpdateItem(ctx, table.UpdateItemInput{
		TableName:        f.stateTable,
		Key:              table.Item{"TradeID": events.NewStringAttribute(m.TradeID)},
		UpdateExpression: "SET #value = :value, #version = :version, #rt = :rt, #rg = :rg, #td = :td, #ts = :ts",
		WriteExpr: table.WriteExpr{
			ConditionExpression:      "attribute_not_exists(TradeID) OR #version < :version",
			ExpressionAttributeNames: stateNames,
			ExpressionAttributeValues: table.Item{
				":value": events.NewNumberAttribute(m.Value.String()), ":version": events.NewNumberAttribute(strconv.Itoa(m.Version)),
				":rt": events.NewStringAttribute(m.Hierarchy.RiskType), ":rg": events.NewStringAttribute(m.Hierarchy.Region),
				":td": events.NewStringAttribute(m.Hierarchy.TradeDesk), ":ts": events.NewNumberAttribute(m.Timestamp.String()),
			},
		},
	})
	if errors.Is(err, awserr.ErrConditionalCheckFailed) {
		return nil // a duplicate or an older version
	}
	return err
}

// preAggregate is what the map function writes per batch: value deltas
// per aggregate key, how many state changes it covers, and when their
// messages were produced (10 ms buckets, for the latency report).
type preAggregate struct {
	Deltas  map[string]string `json:"deltas"`
	Changes int64             `json:"changes"`
	Trades  int64             `json:"trades"`
	Stamps  map[int64]int64   `json:"stamps"`
}

var decCtx = apd.BaseContext.WithPrecision(38)

func addDec(m map[string]*apd.Decimal, k string, v *apd.Decimal, sub bool) {
	d, ok := m[k]
	if !ok {
		d = new(apd.Decimal)
		m[k] = d
	}
	if sub {
		decCtx.Sub(d, d, v)
	} else {
		decCtx.Add(d, d, v)
	}
}

// failBefore counts an invocation of st and decides whether it fails
// before its writes: half of the stage's failure rate (the other half
// fails after them).
func (f *functions) failBefore(st *stage, rate float64) bool {
	st.invocations.Add(1)
	if f.fail(rate / 2) {
		st.injected.Add(1)
		return true
	}
	return false
}

// Map pre-aggregates the batch of state changes (new value minus old
// value per hierarchy level) and writes it to the reduce table with a
// conditional put keyed by the SHA-256 of the batch: a retried batch
// (the same records, which the mapping guarantees also across crashes)
// finds its hash there and writes nothing.
func (f *functions) Map(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	mapFail := f.rate(ctx, EnvMapFailure, f.mapFail)
	if f.failBefore(&f.mapper, mapFail) {
		return events.DynamoDBEventResponse{}, errInjected
	}
	deltas := map[string]*apd.Decimal{}
	agg := preAggregate{Stamps: map[int64]int64{}}
	h := sha256.New()
	for _, r := range ev.Records {
		h.Write([]byte(r.Change.SequenceNumber))
		h.Write([]byte{0})
		if r.EventName != "INSERT" && r.EventName != "MODIFY" {
			continue
		}
		agg.Changes++
		if r.EventName == "INSERT" {
			agg.Trades++
		}
		if old := r.Change.OldImage; old != nil {
			v, _, err := apd.NewFromString(old["Value"].Number())
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			for _, k := range imageKeys(old) {
				addDec(deltas, k, v, true)
			}
		}
		nw := r.Change.NewImage
		v, _, err := apd.NewFromString(nw["Value"].Number())
		if err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		for _, k := range imageKeys(nw) {
			addDec(deltas, k, v, false)
		}
		if ts, err := strconv.ParseFloat(nw["Timestamp"].Number(), 64); err == nil {
			agg.Stamps[int64(ts*100)]++
		}
	}
	if agg.Changes == 0 {
		return events.DynamoDBEventResponse{}, nil
	}
	agg.Deltas = make(map[string]string, len(deltas))
	for k, d := range deltas {
		agg.Deltas[k] = d.Text('f')
	}
	msg, _ := json.Marshal(&agg)
	hash := hex.EncodeToString(h.Sum(nil))
	tables, err := f.openTables()
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	_, err = tables.PutItem(ctx, table.PutItemInput{TableName: f.reduceTable,
		Item:      table.Item{"MessageHash": events.NewStringAttribute(hash), "Message": events.NewStringAttribute(string(msg))},
		WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(MessageHash)"}})
	if err != nil && !errors.Is(err, awserr.ErrConditionalCheckFailed) {
		return events.DynamoDBEventResponse{}, err
	}
	f.mapper.records.Add(int64(len(ev.Records)))
	if f.fail(mapFail / 2) { // after the write: the retry must find it
		f.mapper.injected.Add(1)
		return events.DynamoDBEventResponse{}, errInjected
	}
	return events.DynamoDBEventResponse{}, nil
}

func imageKeys(img table.Item) []string {
	h := Hierarchy{img["RiskType"].String(), img["Region"].String(), img["TradeDesk"].String()}
	k := h.aggregateKeys()
	return []string{k[0], k[1], k[2], KeyTotal}
}

// Reduce adds the batch's pre-aggregates to the aggregate table in one
// transaction of ADDs, with ClientRequestToken = MD5 of the batch: a
// retry within 10 minutes changes nothing. Its function has reserved
// concurrency 1.
//
// The trap of the token alone: DynamoDB keeps it 10 minutes
// (TransactWriteItems, ClientRequestToken), so a batch re-formed after a
// crash whose process stayed down longer would add its sums twice. The
// transaction therefore also puts the batch's marker item
// (appliedKey(token), attribute_not_exists): a later replay is cancelled
// on it, and Reduce counts the batch as applied.
func (f *functions) Reduce(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	redFail := f.rate(ctx, EnvReduceFailure, f.redFail)
	if f.failBefore(&f.reducer, redFail) {
		return events.DynamoDBEventResponse{}, errInjected
	}
	sums := map[string]*apd.Decimal{}
	counts := map[string]int64{}
	stamps := map[int64]int64{}
	h := md5.New()
	for _, r := range ev.Records {
		h.Write([]byte(r.Change.SequenceNumber))
		h.Write([]byte{0})
		if r.EventName != "INSERT" {
			continue
		}
		var agg preAggregate
		if err := json.Unmarshal([]byte(r.Change.NewImage["Message"].String()), &agg); err != nil {
			return events.DynamoDBEventResponse{}, err
		}
		for k, s := range agg.Deltas {
			v, _, err := apd.NewFromString(s)
			if err != nil {
				return events.DynamoDBEventResponse{}, err
			}
			addDec(sums, k, v, false)
		}
		counts[KeyChanges] += agg.Changes
		counts[KeyTrades] += agg.Trades
		for t, n := range agg.Stamps {
			stamps[t] += n
		}
	}
	if len(sums) == 0 && len(counts) == 0 {
		return events.DynamoDBEventResponse{}, nil
	}
	keys := make([]string, 0, len(sums))
	for k := range sums {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var items []table.TransactWriteItem
	add := func(k, v string) {
		items = append(items, table.TransactWriteItem{Update: &table.TransactUpdate{TableName: f.agg,
			Key: table.Item{"Key": events.NewStringAttribute(k)}, UpdateExpression: "ADD #v :v",
			WriteExpr: table.WriteExpr{
				ExpressionAttributeNames:  map[string]string{"#v": "Value"},
				ExpressionAttributeValues: table.Item{":v": events.NewNumberAttribute(v)},
			}}})
	}
	for _, k := range keys {
		add(k, sums[k].Text('f'))
	}
	for _, k := range []string{KeyChanges, KeyTrades} {
		if counts[k] != 0 {
			add(k, strconv.FormatInt(counts[k], 10))
		}
	}
	token := hex.EncodeToString(h.Sum(nil))
	items = append(items, table.TransactWriteItem{Put: &table.TransactPut{TableName: f.agg,
		Item:      table.Item{"Key": events.NewStringAttribute(appliedKey(token))},
		WriteExpr: table.WriteExpr{ConditionExpression: "attribute_not_exists(#k)", ExpressionAttributeNames: map[string]string{"#k": "Key"}}}})
	tables, err := f.openTables()
	if err != nil {
		return events.DynamoDBEventResponse{}, err
	}
	if err := tables.TransactWriteItems(ctx, table.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: token}); err != nil {
		var tc *table.TransactionCanceledError
		if errors.As(err, &tc) && len(tc.Reasons) == len(items) && tc.Reasons[len(items)-1].Code == "ConditionalCheckFailed" {
			f.reducer.replayed.Add(1) // applied before, past the token's 10 minutes
			return events.DynamoDBEventResponse{}, nil
		}
		return events.DynamoDBEventResponse{}, err
	}
	f.reducer.records.Add(int64(len(ev.Records)))
	f.observe(token, stamps, counts[KeyChanges])
	if f.fail(redFail / 2) { // after the commit: the retry is answered by the token
		f.reducer.injected.Add(1)
		return events.DynamoDBEventResponse{}, errInjected
	}
	return events.DynamoDBEventResponse{}, nil
}

// observe records the latency of a committed batch's messages, once per
// token; not in a node process (lat nil), where another node may commit
// the same token again.
func (f *functions) observe(token string, stamps map[int64]int64, changes int64) {
	if f.lat == nil {
		return
	}
	now := time.Now()
	f.latMu.Lock()
	defer f.latMu.Unlock()
	if f.applied[token] {
		return
	}
	f.applied[token] = true
	for t, n := range stamps {
		ms := now.Sub(time.UnixMilli(t * 10)).Milliseconds()
		f.lat.add(ms, n)
	}
	f.series.add(now, changes)
}
