package bench

// The tables scenario: DynamoDB's item operations through runnel's AWS
// endpoint with the real aws-sdk-go-v2 DynamoDB client, against dynalite
// (the npm package, a DynamoDB emulator in Node.js) through the same client
// code in the same run, and on table.Service in this process. `runnel
// bench tables` runs it; docs/benchmarks/tables.md records runs.

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/runnel-dev/runnel/table"
)

// Table targets besides TargetRunnel (runnel's endpoint).
const (
	// TargetRunnelInProcess is table.Service called directly, no HTTP.
	TargetRunnelInProcess = "runnel-in-process"
	TargetDynalite        = "dynalite"
)

// NoDynalite as TablesConfig.Dynalite measures runnel alone.
const NoDynalite = noPeer

// The operations of the tables scenario, in the order they run.
const (
	OpDescribeTable = "DescribeTable"
	OpPutItem       = "PutItem"
	OpGetItem       = "GetItem"
	// OpUpdateItem is the conditional UpdateItem: ADD n :one if
	// attribute_exists(pk).
	OpUpdateItem     = "UpdateItem"
	OpBatchWriteItem = "BatchWriteItem"
	OpBatchGetItem   = "BatchGetItem"
	OpQuery          = "Query"
	// OpScan is one caller scanning the whole table, page after page.
	OpScan = "Scan"
	// OpParallelScan is ScanSegments callers, one per Segment.
	OpParallelScan = "ParallelScan"
)

// tableOps lists the operations in the order they run and are reported.
var tableOps = []string{OpDescribeTable, OpPutItem, OpGetItem, OpUpdateItem, OpBatchWriteItem, OpBatchGetItem, OpQuery, OpScan, OpParallelScan}

// The batch sizes: DynamoDB's maxima.
const (
	tableBatchWrite = 25
	tableBatchGet   = 100
)

// TablesConfig configures RunTables. The zero value runs the defaults.
type TablesConfig struct {
	// Items is how many items PutItem writes, one call each, and how many
	// other items BatchWriteItem writes, 25 a call: the table holds
	// 2×Items at the end. Default 20_000.
	Items int
	// ItemSize is the bytes of each item's data attribute (an item also
	// has its key, pk and sk, and a number n). Default 100; at least 10
	// (the data starts with the item's index, so that every read is
	// checked).
	ItemSize int
	// PartitionItems is the items per partition key, what one Query
	// reads. Default 25; 1..1000.
	PartitionItems int
	// Callers is how many calls of an operation are in flight at once
	// (goroutines sharing one client). Default 8.
	Callers int
	// Describes is how many DescribeTable calls the baseline makes.
	// Default Items.
	Describes int
	// ScanSegments is the TotalSegments of the parallel Scan, one caller
	// per segment. Default Callers; 1..1,000,000.
	ScanSegments int
	// RunnelEndpoint is the URL of a running runnel's AWS endpoint
	// (`runnel serve --aws ADDR`: http://ADDR) to measure instead of one
	// served in this process, which shares this process's CPUs with the
	// client. Its table, bench-tables-<suffix>, is deleted after. Default
	// "": runnel's endpoint in this process.
	RunnelEndpoint string
	// Dynalite is the dynalite package (its directory, or its
	// node_modules/.bin/dynalite script). Empty: found with FindDynalite.
	// NoDynalite: runnel only.
	Dynalite string
	// DataDir is the parent directory of the fresh temporary engines.
	// Default os.TempDir().
	DataDir string
	// TableIndex is where runnel's tables keep their item indexes in
	// this process (table.Options.Index): "" (the default: the index
	// store), table.IndexDisk or table.IndexMemory (the heap).
	TableIndex string
	// Progress, when set, receives one line per operation and target as
	// it finishes.
	Progress io.Writer `json:"-"`
}

func (c *TablesConfig) setDefaults() {
	orDefault(&c.Items, 20_000)
	orDefault(&c.ItemSize, 100)
	orDefault(&c.PartitionItems, 25)
	orDefault(&c.Callers, 8)
	orDefault(&c.Describes, c.Items)
	orDefault(&c.ScanSegments, c.Callers)
	if c.DataDir == "" {
		c.DataDir = os.TempDir()
	}
}

func (c *TablesConfig) validate() error {
	switch {
	case c.Items < 1 || c.Callers < 1 || c.Describes < 1:
		return fmt.Errorf("bench: Items %d, Callers %d and Describes %d must be at least 1", c.Items, c.Callers, c.Describes)
	case c.ItemSize < indexDigits:
		return fmt.Errorf("bench: ItemSize %d: the tables scenario needs at least %d bytes per item", c.ItemSize, indexDigits)
	case c.PartitionItems < 1 || c.PartitionItems > 1000:
		return fmt.Errorf("bench: PartitionItems %d: must be 1..1000", c.PartitionItems)
	case c.ScanSegments < 1 || c.ScanSegments > 1_000_000:
		return fmt.Errorf("bench: ScanSegments %d: must be 1..1000000", c.ScanSegments)
	}
	return nil
}

// TableOp is one operation measured on one target.
type TableOp struct {
	Name string
	// Calls made (with the ones repeating unprocessed requests and
	// following pages); Items written or read (each checked).
	Calls, Items int
	Seconds      float64
	// OpsPerS is Calls/Seconds, ItemsPerS Items/Seconds.
	OpsPerS, ItemsPerS float64
}

// rate is what the ratios compare: items/s, or calls/s for an operation
// that moves no item (DescribeTable).
func (o TableOp) rate() float64 {
	if o.Items == 0 {
		return o.OpsPerS
	}
	return o.ItemsPerS
}

// TableTarget is the measurement of one target.
type TableTarget struct {
	Name string
	// Server describes the server measured (version, how it ran).
	Server string
	Ops    []TableOp
}

// Op returns the target's measurement of op (the zero TableOp if none).
func (t TableTarget) Op(name string) TableOp {
	for _, o := range t.Ops {
		if o.Name == name {
			return o
		}
	}
	return TableOp{}
}

// TableRatio compares one operation's rates in the run.
type TableRatio struct {
	Op string
	// VsDynalite is runnel's endpoint items/s over dynalite's (calls/s
	// for DescribeTable; 0 when dynalite was not measured).
	VsDynalite float64
	// VsDescribe is runnel's endpoint calls/s over its DescribeTable
	// calls/s, the client's and HTTP's own ceiling.
	VsDescribe float64
	// InProcessVsEndpoint is runnel's in-process items/s (calls/s for
	// DescribeTable) over its endpoint's: what the HTTP round trip and the
	// client cost.
	InProcessVsEndpoint float64
}

// TableGoal is one of issue 12's done-when targets read against the run.
type TableGoal struct {
	// Goal says what is compared, Want the least ratio that meets it, Got
	// the run's ratio (0 when it could not be measured, without dynalite).
	Goal      string
	Want, Got float64
	Met       bool
	// Unmeasured says why the goal could not be read ("" when it was).
	Unmeasured string `json:",omitempty"`
}

// TablesReport is the result of RunTables.
type TablesReport struct {
	Machine string
	Config  TablesConfig
	// Targets in the order measured: runnel in-process, runnel's
	// endpoint, dynalite.
	Targets []TableTarget
	// PeerSkipped says why dynalite was not measured ("" when it was).
	PeerSkipped string
	Ratios      []TableRatio
	Goals       []TableGoal
}

// Target returns the measurement of the target named (nil if none).
func (r *TablesReport) Target(name string) *TableTarget {
	for i := range r.Targets {
		if r.Targets[i].Name == name {
			return &r.Targets[i]
		}
	}
	return nil
}

// FindDynalite returns the dynalite package to run: $RUNNEL_DYNALITE, else
// bench/dynalite/node_modules/dynalite of this checkout (found from the
// working directory upwards; `npm install` in bench/dynalite puts it
// there), else a dynalite on PATH. It fails, saying what to install, when
// there is none or no node to run it.
func FindDynalite() (string, error) { return dynalite.find() }

// dynalite runs with createTableMs, deleteTableMs and updateTableMs 0
// (nodePeer.script).
var dynalite = nodePeer{name: "dynalite", env: "RUNNEL_DYNALITE", flag: "--dynalite",
	zeroMs: []string{"createTableMs", "deleteTableMs", "updateTableMs"}}

// RunTables measures, one target after the other, each on a fresh server
// and table: table.Service in this process, runnel's endpoint through
// aws-sdk-go-v2, and, when found, dynalite through the same client code.
// On each it creates the table (pk S, sk N; untimed), then times, with
// cfg.Callers calls in flight: DescribeTable; PutItem of Items items;
// GetItem of each; the conditional UpdateItem of each; BatchWriteItem of
// Items other items, 25 a call; BatchGetItem of those, 100 keys a call;
// Query of every partition key; a Scan of the table; a parallel Scan of
// cfg.ScanSegments segments. Unprocessed requests are sent again. Every
// item read is checked (key, data, n) and every read phase must return
// each item exactly once: RunTables fails otherwise. Speed is reported,
// never judged: the goals say whether the run met issue 12's targets.
func RunTables(ctx context.Context, cfg TablesConfig) (*TablesReport, error) {
	cfg.setDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	rep := &TablesReport{Machine: Machine(), Config: cfg}
	var peer string
	peer, rep.PeerSkipped = dynalite.resolve(cfg.Dynalite, cfg.Progress)
	if peer != "" {
		if _, _, err := dynalite.pkg(peer); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
	}
	w := newTableWorkload(cfg)

	rn, dir, err := openTemp(ctx, cfg.DataDir, "runnel-bench-tables-", "", table.Options{Index: cfg.TableIndex})
	if err != nil {
		return nil, err
	}
	in, err := measureTables(ctx, w, TargetRunnelInProcess, "runnel table.Service called in this process (embedded JetStream, file storage)", newServiceTables(rn.Tables, w))
	rn.Close()
	os.RemoveAll(dir)
	if err != nil {
		return nil, fmt.Errorf("bench: %s: %w", TargetRunnelInProcess, err)
	}
	rep.Targets = append(rep.Targets, in)

	measureSDK := func(name string, start func() (*endpointServer, error), external bool) error {
		srv, err := start()
		if err != nil {
			return fmt.Errorf("bench: %s: %w", name, err)
		}
		defer srv.stop()
		c := newSDKTables(srv.url, w)
		t, err := measureTables(ctx, w, name, srv.description, c)
		if external {
			if derr := c.deleteTable(ctx); err == nil && derr != nil {
				err = fmt.Errorf("DeleteTable: %w", derr)
			}
		}
		if err != nil {
			return fmt.Errorf("bench: %s: %w", name, err)
		}
		rep.Targets = append(rep.Targets, t)
		return nil
	}
	startRunnel := func() (*endpointServer, error) {
		return startRunnelEndpoint(ctx, EndpointConfig{Workload: Workload{DataDir: cfg.DataDir}, tableIndex: cfg.TableIndex})
	}
	if cfg.RunnelEndpoint != "" {
		startRunnel = func() (*endpointServer, error) {
			return &endpointServer{url: cfg.RunnelEndpoint, description: "runnel at " + cfg.RunnelEndpoint + " (a separate process, started before the benchmark)", stop: func() {}}, nil
		}
	}
	if err := measureSDK(TargetRunnel, startRunnel, cfg.RunnelEndpoint != ""); err != nil {
		return nil, err
	}
	if peer != "" {
		if err := measureSDK(TargetDynalite, func() (*endpointServer, error) { return dynalite.start(ctx, peer) }, false); err != nil {
			return nil, err
		}
	}
	rep.compare()
	return rep, nil
}

// compare fills the ratios and the goals.
func (r *TablesReport) compare() {
	in, ep, dy := r.Target(TargetRunnelInProcess), r.Target(TargetRunnel), r.Target(TargetDynalite)
	ratio := func(a, b float64) float64 {
		if b <= 0 {
			return 0
		}
		return a / b
	}
	describe := ep.Op(OpDescribeTable).OpsPerS
	for _, name := range tableOps {
		o := ep.Op(name)
		rt := TableRatio{Op: name, VsDescribe: ratio(o.OpsPerS, describe), InProcessVsEndpoint: ratio(in.Op(name).rate(), o.rate())}
		if dy != nil {
			rt.VsDynalite = ratio(o.rate(), dy.Op(name).rate())
		}
		r.Ratios = append(r.Ratios, rt)
	}
	for _, name := range []string{OpPutItem, OpGetItem, OpUpdateItem} {
		got := ratio(ep.Op(name).OpsPerS, describe)
		r.Goals = append(r.Goals, TableGoal{Goal: name + " calls/s through the endpoint / DescribeTable calls/s", Want: 0.9, Got: got, Met: got >= 0.9})
	}
	for _, name := range []string{OpBatchWriteItem, OpBatchGetItem} {
		g := TableGoal{Goal: name + " items/s through the endpoint, runnel / dynalite", Want: 10, Unmeasured: "dynalite not measured"}
		if dy != nil {
			g.Got = ratio(ep.Op(name).ItemsPerS, dy.Op(name).ItemsPerS)
			g.Met, g.Unmeasured = g.Got >= 10, ""
		}
		r.Goals = append(r.Goals, g)
	}
}

// tableWorkload is the items of a run, the same for every target: item i
// of [0, 2×Items) has the key pk "p%08d" (i / PartitionItems), sk
// i % PartitionItems, the data of ItemSize bytes starting with i in
// indexDigits digits, and n 0. Items [0, Items) are written by PutItem,
// the rest by BatchWriteItem.
type tableWorkload struct {
	cfg    TablesConfig
	filler string
	// name is the table's: bench-tables, or with cfg.RunnelEndpoint
	// bench-tables-<the run's start in base-36 nanoseconds>, a table that
	// is not there yet.
	name string
}

func newTableWorkload(cfg TablesConfig) *tableWorkload {
	b := make([]byte, cfg.ItemSize-indexDigits)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	w := &tableWorkload{cfg: cfg, filler: string(b), name: "bench-tables"}
	if cfg.RunnelEndpoint != "" {
		w.name += "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	return w
}

func (w *tableWorkload) total() int { return 2 * w.cfg.Items }
func (w *tableWorkload) partitions() int {
	return (w.total() + w.cfg.PartitionItems - 1) / w.cfg.PartitionItems
}
func (w *tableWorkload) pk(partition int) string {
	return fmt.Sprintf("p%08d", partition)
}
func (w *tableWorkload) key(i int) (pk string, sk int) {
	return w.pk(i / w.cfg.PartitionItems), i % w.cfg.PartitionItems
}
func (w *tableWorkload) data(i int) string { return fmt.Sprintf("%0*d", indexDigits, i) + w.filler }

// tableRow is an item as read back.
type tableRow struct {
	pk, data string
	sk, n    int
}

// index returns the item a row's key names, or an error if no item of
// the workload has it.
func (w *tableWorkload) index(r tableRow) (int, error) {
	p, err := strconv.Atoi(r.pk[min(1, len(r.pk)):])
	i := p*w.cfg.PartitionItems + r.sk
	if err != nil || len(r.pk) != 9 || r.pk[0] != 'p' || r.sk < 0 || r.sk >= w.cfg.PartitionItems || i >= w.total() {
		return 0, fmt.Errorf("an item that was not written: pk %q sk %d", r.pk, r.sk)
	}
	return i, nil
}

// check returns the item a row is, failing unless it is as written (n:
// 1 for the items PutItem wrote once updated is set, else 0).
func (w *tableWorkload) check(r tableRow, updated bool) (int, error) {
	i, err := w.index(r)
	if err != nil {
		return 0, err
	}
	wantN := 0
	if updated && i < w.cfg.Items {
		wantN = 1
	}
	if r.data != w.data(i) || r.n != wantN {
		return 0, fmt.Errorf("item %d read back as data %q n %d, want n %d and the data written", i, r.data, r.n, wantN)
	}
	return i, nil
}

// seenItems records the items a phase read, failing on one read twice.
type seenItems struct {
	seen []atomic.Bool
	n    atomic.Int64
}

func newSeen(n int) *seenItems { return &seenItems{seen: make([]atomic.Bool, n)} }

func (s *seenItems) mark(i int) error {
	if s.seen[i].Swap(true) {
		return fmt.Errorf("item %d read twice", i)
	}
	s.n.Add(1)
	return nil
}

// tableClient is how a target is called: aws-sdk-go-v2 through an
// endpoint (sdkTables) or table.Service in this process (serviceTables).
// Items are named by their workload index; each client builds its own
// requests' items before the clock starts.
type tableClient interface {
	// createTable creates the table and waits until it is ACTIVE.
	createTable(ctx context.Context) error
	describeTable(ctx context.Context) error
	putItem(ctx context.Context, i int) error
	// getItem reads item i (found false if there is none).
	getItem(ctx context.Context, i int) (r tableRow, found bool, err error)
	// updateItem adds 1 to item i's n if it exists.
	updateItem(ctx context.Context, i int) error
	// batchWrite puts the items; it returns those left unprocessed.
	batchWrite(ctx context.Context, items []int) (unprocessed []int, err error)
	// batchGet reads the items; it returns those read and those left
	// unprocessed.
	batchGet(ctx context.Context, items []int) (rows []tableRow, unprocessed []int, err error)
	// query reads a page of a partition's items from cursor (nil: the
	// first); next is nil after the last page.
	query(ctx context.Context, pk string, cursor any) (rows []tableRow, next any, err error)
	// scan reads a page of segment of total (total 1: the whole table).
	scan(ctx context.Context, segment, total int, cursor any) (rows []tableRow, next any, err error)
}

// tableWarmUp is the untimed DescribeTable calls per caller before the
// first phase.
const tableWarmUp = 10

// maxUnprocessedRounds bounds how often a batch's unprocessed requests are
// sent again.
const maxUnprocessedRounds = 50

// tableMeter counts a phase's calls and items.
type tableMeter struct{ calls, items atomic.Int64 }

// measureTables runs every phase on one target.
func measureTables(ctx context.Context, w *tableWorkload, name, server string, c tableClient) (TableTarget, error) {
	if err := c.createTable(ctx); err != nil {
		return TableTarget{}, fmt.Errorf("CreateTable: %w", err)
	}
	t := TableTarget{Name: name, Server: server}
	cfg := w.cfg
	n := cfg.Items
	// phase times units of work, callers at once, and records it.
	phase := func(op string, units, callers int, run func(ctx context.Context, j int, m *tableMeter) error) error {
		runtimeGC()
		var m tableMeter
		t0 := time.Now()
		err := fanOut(ctx, min(callers, units), units, func(ctx context.Context, j int) error { return run(ctx, j, &m) })
		sec := time.Since(t0).Seconds()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		calls, items := m.calls.Load(), m.items.Load()
		o := TableOp{Name: op, Calls: int(calls), Items: int(items), Seconds: sec, OpsPerS: float64(calls) / sec, ItemsPerS: float64(items) / sec}
		t.Ops = append(t.Ops, o)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "%-17s %-14s %8d calls %8d items %7.2f s %9.0f calls/s %9.0f items/s\n", name, op, o.Calls, o.Items, o.Seconds, o.OpsPerS, o.ItemsPerS)
		}
		return nil
	}
	// all fails unless a read phase returned every one of want items.
	all := func(op string, seen *seenItems, want int) error {
		if got := int(seen.n.Load()); got != want {
			return fmt.Errorf("%s: %d of %d items read back", op, got, want)
		}
		return nil
	}
	// pages reads every page of a Query or Scan, checking each item.
	pages := func(m *tableMeter, seen *seenItems, read func(cursor any) ([]tableRow, any, error), check func(i int, r tableRow) error) error {
		var cursor any
		for {
			rows, next, err := read(cursor)
			if err != nil {
				return err
			}
			m.calls.Add(1)
			for _, r := range rows {
				i, err := w.check(r, true)
				if err == nil && check != nil {
					err = check(i, r)
				}
				if err == nil {
					err = seen.mark(i)
				}
				if err != nil {
					return err
				}
			}
			m.items.Add(int64(len(rows)))
			if next == nil {
				return nil
			}
			cursor = next
		}
	}

	// Untimed, a few DescribeTable calls from every caller: the client's
	// connections are open before the first phase.
	err := fanOut(ctx, cfg.Callers, tableWarmUp*cfg.Callers, func(ctx context.Context, j int) error { return c.describeTable(ctx) })
	if err != nil {
		return t, fmt.Errorf("warm-up: %w", err)
	}
	err = phase(OpDescribeTable, cfg.Describes, cfg.Callers, func(ctx context.Context, j int, m *tableMeter) error {
		m.calls.Add(1)
		return c.describeTable(ctx)
	})
	if err == nil {
		err = phase(OpPutItem, n, cfg.Callers, oneItem(c.putItem))
	}
	if err == nil {
		err = phase(OpGetItem, n, cfg.Callers, func(ctx context.Context, i int, m *tableMeter) error {
			r, found, err := c.getItem(ctx, i)
			if err != nil {
				return err
			}
			if !found {
				return fmt.Errorf("item %d not found", i)
			}
			if got, err := w.check(r, false); err != nil || got != i {
				return fmt.Errorf("item %d: read item %d (%v)", i, got, err)
			}
			m.calls.Add(1)
			m.items.Add(1)
			return nil
		})
	}
	if err == nil {
		err = phase(OpUpdateItem, n, cfg.Callers, oneItem(c.updateItem))
	}
	if err == nil {
		err = phase(OpBatchWriteItem, (n+tableBatchWrite-1)/tableBatchWrite, cfg.Callers, func(ctx context.Context, j int, m *tableMeter) error {
			items := indexRange(n+j*tableBatchWrite, min(n+(j+1)*tableBatchWrite, 2*n))
			m.items.Add(int64(len(items)))
			return untilProcessed(items, m, func(items []int) ([]int, error) { return c.batchWrite(ctx, items) })
		})
	}
	if err == nil {
		seen := newSeen(w.total())
		err = phase(OpBatchGetItem, (n+tableBatchGet-1)/tableBatchGet, cfg.Callers, func(ctx context.Context, j int, m *tableMeter) error {
			items := indexRange(n+j*tableBatchGet, min(n+(j+1)*tableBatchGet, 2*n))
			return untilProcessed(items, m, func(items []int) ([]int, error) {
				rows, unprocessed, err := c.batchGet(ctx, items)
				if err != nil {
					return nil, err
				}
				for _, r := range rows {
					i, err := w.check(r, true)
					if err == nil && (i < items[0] || i > items[len(items)-1]) {
						err = fmt.Errorf("item %d read, not asked for", i)
					}
					if err == nil {
						err = seen.mark(i)
					}
					if err != nil {
						return nil, err
					}
				}
				m.items.Add(int64(len(rows)))
				return unprocessed, nil
			})
		})
		if err == nil {
			err = all(OpBatchGetItem, seen, n)
		}
	}
	if err == nil {
		seen := newSeen(w.total())
		err = phase(OpQuery, w.partitions(), cfg.Callers, func(ctx context.Context, p int, m *tableMeter) error {
			pk := w.pk(p)
			return pages(m, seen, func(cursor any) ([]tableRow, any, error) { return c.query(ctx, pk, cursor) }, func(i int, r tableRow) error {
				if r.pk != pk {
					return fmt.Errorf("Query of %s returned item %d", pk, i)
				}
				return nil
			})
		})
		if err == nil {
			err = all(OpQuery, seen, w.total())
		}
	}
	for _, scan := range []struct {
		op       string
		segments int
	}{{OpScan, 1}, {OpParallelScan, cfg.ScanSegments}} {
		if err != nil {
			break
		}
		seen := newSeen(w.total())
		err = phase(scan.op, scan.segments, scan.segments, func(ctx context.Context, segment int, m *tableMeter) error {
			return pages(m, seen, func(cursor any) ([]tableRow, any, error) { return c.scan(ctx, segment, scan.segments, cursor) }, nil)
		})
		if err == nil {
			err = all(scan.op, seen, w.total())
		}
	}
	return t, err
}

// oneItem is a phase's call of an operation on one item, item i: it
// counts one call and one item, then calls op.
func oneItem(op func(ctx context.Context, i int) error) func(ctx context.Context, i int, m *tableMeter) error {
	return func(ctx context.Context, i int, m *tableMeter) error {
		m.calls.Add(1)
		m.items.Add(1)
		return op(ctx, i)
	}
}

// untilProcessed calls batch with the items, then with those it left
// unprocessed, until none is left (at most maxUnprocessedRounds calls,
// each counted in m).
func untilProcessed(items []int, m *tableMeter, batch func(items []int) (unprocessed []int, err error)) error {
	for round := 0; len(items) > 0; round++ {
		if round == maxUnprocessedRounds {
			return fmt.Errorf("%d items still unprocessed after %d calls", len(items), round)
		}
		var err error
		m.calls.Add(1)
		if items, err = batch(items); err != nil {
			return err
		}
	}
	return nil
}

// indexRange is the items [from, to).
func indexRange(from, to int) []int {
	items := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		items = append(items, i)
	}
	return items
}

// fanOut calls fn for j in [0, n), callers calls at once; the first error
// stops the rest and is returned.
func fanOut(ctx context.Context, callers, n int, fn func(ctx context.Context, j int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				j := int(next.Add(1) - 1)
				if j >= n {
					return
				}
				if err := fn(ctx, j); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// Markdown renders the report for docs/benchmarks/tables.md.
func (r *TablesReport) Markdown() string {
	var b strings.Builder
	c := r.Config
	fmt.Fprintf(&b, "Machine: %s\n\n", r.Machine)
	fmt.Fprintf(&b, "Workload: a table of pk (S, %d items a partition) and sk (N); %d items of %d bytes of data written by PutItem and %d more by BatchWriteItem (%d a call); "+
		"%d calls in flight (parallel Scan: %d segments); every item read is checked. Endpoint targets: aws-sdk-go-v2 DynamoDB client, the same code for both. "+
		"The ratios compare items/s (DescribeTable: calls/s).\n\n",
		c.PartitionItems, c.Items, c.ItemSize, c.Items, tableBatchWrite, c.Callers, c.ScanSegments)
	b.WriteString("| target | server |\n|---|---|\n")
	for _, t := range r.Targets {
		fmt.Fprintf(&b, "| %s | %s |\n", t.Name, t.Server)
	}
	b.WriteString("\n| operation | items | in-process calls/s | in-process items/s | endpoint calls/s | endpoint items/s | dynalite calls/s | dynalite items/s | endpoint/dynalite | endpoint calls/s / DescribeTable's | in-process/endpoint |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	in, ep, dy := r.Target(TargetRunnelInProcess), r.Target(TargetRunnel), r.Target(TargetDynalite)
	rate := func(t *TableTarget, op string) (string, string) {
		if t == nil {
			return "-", "-"
		}
		o := t.Op(op)
		return group(o.OpsPerS), group(o.ItemsPerS)
	}
	for _, rt := range r.Ratios {
		inC, inI := rate(in, rt.Op)
		epC, epI := rate(ep, rt.Op)
		dyC, dyI := rate(dy, rt.Op)
		vsDy := "-"
		if rt.VsDynalite > 0 {
			vsDy = fmt.Sprintf("%.1f×", rt.VsDynalite)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %s | %s | %s | %s | %.0f%% | %.1f× |\n", rt.Op, ep.Op(rt.Op).Items, inC, inI, epC, epI, dyC, dyI, vsDy, 100*rt.VsDescribe, rt.InProcessVsEndpoint)
	}
	if r.PeerSkipped != "" {
		fmt.Fprintf(&b, "\ndynalite not measured: %s\n", r.PeerSkipped)
	}
	b.WriteString("\n| issue 12's target | want | got | met |\n|---|---:|---:|---|\n")
	for _, g := range r.Goals {
		met := "**missed**"
		if g.Met {
			met = "met"
		}
		want, got := fmt.Sprintf("≥ %.0f%%", 100*g.Want), fmt.Sprintf("%.1f%%", 100*g.Got)
		if g.Want >= 2 {
			want, got = fmt.Sprintf("≥ %.0f×", g.Want), fmt.Sprintf("%.1f×", g.Got)
		}
		if g.Unmeasured != "" {
			got, met = "-", g.Unmeasured
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s |\n", g.Goal, want, got, met)
	}
	return b.String()
}
