package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// Which process serves the tables.
//
// A table's index (the key of every item and where its latest image is in
// the change log) lives in one process's memory, and every conditional
// write and transaction is decided against it. Two processes with an
// index each would both accept writes the other does not see: a condition
// checked in one would not hold in the other, a transaction's locks would
// not exclude the other's writes. So, as with the queues (queue/owner.go),
// exactly one process at a time serves the tables: the holder of the
// lease "dynamodb" (lease.Owner). It loads the tables and answers every
// call; every other process sharing the JetStream (another node of a
// cluster, a CLI command run against a serve with --nats-url) forwards its
// calls to it over NATS request-reply on "runnel.dynamodb.rpc". Conditions
// and transactions therefore hold across processes exactly as in one.
//
// The holder loads the tables when it takes the lease (Serve, or the first
// call that finds nobody serving): it loads each table's index from its
// snapshot and the log after it, or rebuilds it from the whole log
// (snapshot.go), then completes any committed transaction not fully
// applied, as at a restart. A holder that stops cleanly (Close) writes
// the snapshots before it releases the lease. When it loses the lease it drops the tables; the new
// holder loads them from JetStream. A write a stale holder had already
// checked the lease for may still reach the log within the lease's safety
// margin (lease.Lease.Valid: half the TTL).
//
// Any process can read a table's change log (the DynamoDB Streams API and
// the mappings read it from JetStream): Table returns, in a process that
// does not serve the tables, a view with the table's stored description
// and no index.
const (
	rpcSubject = "runnel.dynamodb.rpc"
	leaseKey   = "dynamodb"
)

// mayAct reports whether this process may still count its writes as the
// tables' holder: it holds the lease and the lease is valid now
// (lease.Lease.Valid), or no other process can reach its JetStream
// (engine.Engine.Shared).
//
// The rule it keeps: a holder whose renewals fail stops being valid TTL/2
// after its last renewal, but learns that the lease is lost (and drops
// its tables) only a whole TTL after it, when another process may already
// hold the lease and have read a table's log. A write acknowledged while
// the lease was valid landed at least TTL/2 before anyone else could read
// the log; one acknowledged later may not be in the new holder's index,
// so it is answered with a retryable error (errLeaseEnded).
func (s *Service) mayAct() bool {
	if h := s.holdingHook; h != nil {
		return h()
	}
	return !s.eng.Shared() || s.own.Holding()
}

// errLeaseEnded answers a write acknowledged after the lease on the
// tables stopped being valid (mayAct): retryable, like a lost answer. It
// is a leaseEnded, which wraps the *awserr.Error.
func errLeaseEnded(table string) error {
	return leaseEnded{awserr.New(awserr.ErrService, "table %s: the write was stored after this runnel process stopped serving the tables; it may or may not be visible: retry", table)}
}

// leaseEnded marks errLeaseEnded: the write was applied here all the same.
type leaseEnded struct{ err error }

func (e leaseEnded) Error() string { return e.err.Error() }
func (e leaseEnded) Unwrap() error { return e.err }

// forwarded are the calls a process that does not serve the tables
// forwards to the one that does (forward), by operation: each takes the
// value its method takes after the context (the AWS request, a table
// name or ARN, a lease.Two or lease.Three of several) and answers what the
// method returns (a table description as a *stored).
var forwarded = lease.Ops[*Service]{
	"Ping":                         lease.Do(func(*Service, context.Context, struct{}) error { return nil }),
	"PutItem":                      lease.Call((*Service).PutItem),
	"GetItem":                      lease.Call((*Service).GetItem),
	"UpdateItem":                   lease.Call((*Service).UpdateItem),
	"DeleteItem":                   lease.Call((*Service).DeleteItem),
	"Query":                        lease.Call((*Service).Query),
	"Scan":                         lease.Call((*Service).Scan),
	"BatchWriteItem":               lease.Call((*Service).BatchWriteItem),
	"BatchGetItem":                 lease.Call((*Service).BatchGetItem),
	"TransactWriteItems":           lease.Do((*Service).TransactWriteItems),
	"TransactGetItems":             lease.Call((*Service).TransactGetItems),
	"CreateTable":                  describing(lease.Call((*Service).CreateTable)),
	"DeleteTable":                  describing(lease.Call((*Service).DeleteTable)),
	"DescribeTable":                describing(lease.Call((*Service).DescribeTable)),
	"ListTables":                   lease.Call(func(s *Service, ctx context.Context, _ struct{}) ([]string, error) { return s.ListTables(ctx), nil }),
	"UpdateBilling":                describing(lease.Call3((*Service).UpdateBilling)),
	"UpdateGlobalSecondaryIndexes": describing(lease.Call3((*Service).UpdateGlobalSecondaryIndexes)),
	"UpdateStream":                 describing(lease.Call2((*Service).UpdateStream)),
	"UpdateTable":                  describing(lease.Call2((*Service).UpdateTable)),
	"UpdateTimeToLive":             lease.Call2((*Service).UpdateTimeToLive),
	"DescribeTimeToLive":           lease.Call((*Service).DescribeTimeToLive),
	"SweepExpired":                 lease.Call(func(s *Service, ctx context.Context, _ struct{}) (int, error) { return s.SweepExpired(ctx) }),
	"TagResource":                  lease.Do2((*Service).TagResource),
	"UntagResource":                lease.Do2((*Service).UntagResource),
	"ListTagsOfResource":           lease.Call((*Service).ListTagsOfResource),
	"DescribeContinuousBackups":    lease.Call((*Service).DescribeContinuousBackups),
}

// describing answers the table description of a call as forwarded
// (described).
func describing(op lease.Op[*Service]) lease.Op[*Service] {
	return func(s *Service, ctx context.Context, args json.RawMessage) (any, error) {
		out, err := op(s, ctx, args)
		if err != nil {
			return nil, err
		}
		return described(out.(*TableDescription), nil)
	}
}

// wireDescription is a TableDescription as forwarded: stored carries the
// fields TableDescription keeps out of its JSON (TTL, shards, log,
// throughput).
func described(d *TableDescription, err error) (any, error) {
	if err != nil {
		return nil, err
	}
	return &stored{TableDescription: *d, TTL: d.TimeToLive, Shards: d.Shards, Log: d.Log, Provisioned: d.Provisioned}, nil
}

func (st *stored) description() *TableDescription {
	d := st.TableDescription
	d.TimeToLive, d.Shards, d.Log, d.Provisioned = st.TTL, st.Shards, st.Log, st.Provisioned
	return &d
}

// errorDetail and errorUndetail carry the table errors that hold more
// than a code across a forwarded call (lease.OwnerConfig.Detail).
func errorDetail(err error) (string, any, bool) {
	var cf *ConditionalCheckFailedError
	var tc *TransactionCanceledError
	switch {
	case errors.As(err, &cf):
		return "ConditionalCheckFailed", cf, true
	case errors.As(err, &tc):
		return "TransactionCanceled", tc, true
	}
	return "", nil, false
}

func errorUndetail(kind string, raw json.RawMessage) (error, bool) {
	switch kind {
	case "ConditionalCheckFailed":
		var e ConditionalCheckFailedError
		return &e, json.Unmarshal(raw, &e) == nil
	case "TransactionCanceled":
		var e TransactionCanceledError
		return &e, json.Unmarshal(raw, &e) == nil
	}
	return nil, false
}

// forward runs the call op(in) at the process serving the tables when
// that is not this one (in: the value the method takes after its context,
// see forwarded), decoding the answer into out (nil: none). remote is
// false when the caller must run the call here; the tables are then
// loaded.
func (s *Service) forward(ctx context.Context, op string, in, out any) (remote bool, err error) {
	if remote, err = s.own.Forward(ctx, op, in, out); remote {
		return true, err
	}
	if s.loaded.Load() || ctx.Value(loadingKey{}) != nil {
		return false, nil
	}
	if err := s.load(ctx); err != nil {
		return true, err
	}
	return false, nil
}

// forwardOut is forward for the calls that answer a *T.
func forwardOut[T any](ctx context.Context, s *Service, op string, in any) (remote bool, out *T, err error) {
	out = new(T)
	if remote, err = s.forward(ctx, op, in, out); !remote || err != nil {
		out = nil
	}
	return remote, out, err
}

// forwardDesc is forward for the calls that answer a table description.
func (s *Service) forwardDesc(ctx context.Context, op string, in any) (remote bool, d *TableDescription, err error) {
	remote, st, err := forwardOut[stored](ctx, s, op, in)
	if st != nil {
		d = st.description()
	}
	return remote, d, err
}

// Serve makes this process serve the tables: it takes the lease now if it
// is free (and loads the tables), and keeps trying while another process
// holds it, until Close. `runnel serve` and the demos call it; a CLI
// command does not (it serves only when nobody else does).
func (s *Service) Serve(ctx context.Context) error {
	if err := s.own.Serve(ctx); err != nil {
		return err
	}
	if s.own.Holding() {
		return s.load(ctx)
	}
	return nil
}

// load opens every table, loading its index from its snapshot and the
// log after it, or rebuilding it from the whole log (snapshot.go), then
// completes any transaction that was committed but not fully applied, and
// builds the secondary indexes; once per hold of the lease.
func (s *Service) load(ctx context.Context) error {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	if s.loaded.Load() {
		return nil
	}
	// The loading's own calls (building the secondary indexes scans the
	// tables) run here without waiting for it.
	ctx = context.WithValue(ctx, loadingKey{}, true)
	names, err := s.meta.Keys(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoKeysFound) {
		return awserr.New(awserr.ErrService, "table: list tables: %v", err)
	}
	seen := txnSeen{}
	tx, err := s.txlog.Info(ctx)
	if err != nil {
		return awserr.New(awserr.ErrService, "table: transaction log: %v", err)
	}
	tables := map[string]*Table{}
	for _, name := range names {
		st, err := s.stored(ctx, name)
		if err != nil {
			return err
		}
		t, err := s.openTable(*st)
		if err != nil {
			return err
		}
		if err := t.openIndex(ctx, seen, tx); err != nil {
			return fmt.Errorf("table %s: rebuild index: %w", name, err)
		}
		tables[name] = t
	}
	s.mu.Lock()
	s.tables = tables
	s.mu.Unlock()
	s.startImageFills(tables)
	if err := s.recoverTransactions(ctx, seen); err != nil {
		return err
	}
	// The indexes are built from the tables as they are now, so they agree
	// with them whatever happened before (a crash, a backfill cut short).
	for _, t := range tables {
		if err := t.openedIndexes(ctx); err != nil {
			return fmt.Errorf("table %s: build indexes: %w", t.tableName, err)
		}
	}
	s.loaded.Store(true)
	return nil
}

type loadingKey struct{}

// stored reads a table's stored description.
func (s *Service) stored(ctx context.Context, name string) (*stored, error) {
	e, err := s.meta.Get(ctx, name)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return nil, tableNotFound(name)
	}
	if err != nil {
		return nil, awserr.New(awserr.ErrService, "table %s: %v", name, err)
	}
	var st stored
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return nil, fmt.Errorf("table %s: bad description: %w", name, err)
	}
	return &st, nil
}

// drop forgets the loaded tables when the lease is lost; the next hold
// loads them again.
func (s *Service) drop() {
	s.loadMu.Lock()
	defer s.loadMu.Unlock()
	s.mu.Lock()
	s.tables = map[string]*Table{}
	s.holding.Add(1) // the resolvers of this holding let go (resolve.go)
	s.mu.Unlock()
	s.loaded.Store(false)
}

// Table returns the table name, for callers that need its change log
// (mappings, the Streams API). In a process that does not serve the
// tables it is a view: the table's stored description, read now, without
// an index (RecentChange finds nothing, ChangeRecords is 0).
func (s *Service) Table(name string) (*Table, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if remote, err := s.forward(ctx, "Ping", nil, nil); remote {
		if err != nil {
			return nil, err
		}
		st, err := s.stored(ctx, name)
		if err != nil {
			return nil, err
		}
		return &Table{s: s, st: *st, tableName: st.TableName, logName: st.Log}, nil
	}
	return s.table(name)
}
