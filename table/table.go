// Package table is runnel's DynamoDB model: tables of items keyed by a
// partition key (and an optional sort key), conditional writes with
// DynamoDB's expression language (package table/expr), all-or-nothing
// transactions with ClientRequestToken idempotency, time to live, and
// change streams (DynamoDB Streams) that event source mappings read like
// Kinesis shards.
//
// # Storage
//
// A table's durable form is its change log: one record per change
// (INSERT, MODIFY, REMOVE) holding the keys and the old and new images,
// appended to a log stream of the stream package (NewLog: never trimmed)
// and routed to a shard by the MD5 of the item's primary key, so the
// changes of one item are in one shard, in order. The same log is the
// table's change stream: readers see it for 24 hours as DynamoDB Streams
// does, and mappings read it with the Kinesis mapping rules.
//
// The items themselves are a projection of the log: an ordered index
// (key -> log position of the item's latest change, and its image), in
// an embedded Pebble store on disk (store.go, the default of an embedded
// node) or in the heap (Options.Index). An open reads the positions the
// index covers and replays only the log after them (snapshot.go). A
// write locks its item, checks
// its condition against the current image, appends the change and waits
// for JetStream's acknowledgement before the index moves and the lock is
// released: an acknowledged write is on disk, and every write of one item
// sees the one before it.
//
// Transactions first write one commit record (every change of the
// transaction) to the transaction log RUNNEL_TXLOG, then the changes to
// the tables' logs. If the process dies between the two, Open finds the
// committed transaction's missing changes and appends them before serving:
// a transaction is applied entirely or not at all. While it runs, its
// items are held (conflict.go): another transaction that meets one is
// cancelled with TransactionConflict, a single write fails with
// TransactionConflictException, as in DynamoDB.
//
// A committed transaction whose change to some item has not landed yet
// (its log's answer lost: resolve.go) is never read half applied by
// TransactGetItems: an item so held is a TransactionConflict, and a retry
// with the transaction's ClientRequestToken is
// TransactionInProgressException, until a resolver has applied every
// change. The trap: GetItem, Query and Scan read the index meanwhile, so
// they return such an item's value from before the transaction (DynamoDB
// would return the committed one); a single write of it is refused with a
// retryable error.
//
// Items handed out are the caller's own (clone.go): every item a read,
// ReturnValues, ConditionalCheckFailedError.Item, a CancellationReason or a
// stream record (EventRecord) carries is a copy of the table's cached
// item, nested maps, lists, binaries and sets included, and an item or
// value a write stores is copied in from the request; changing either
// never changes the table, as on AWS, where every response and Lambda
// event is decoded afresh. The copy costs about as much as the top-level
// map (nested values and slices are copied only when present).
// RecentChange and EventRecordShared share the table's maps: read-only.
//
// Secondary indexes (secondary.go) hold, in memory, the keys of the items
// they have; they move with each acknowledged change and are rebuilt from
// the table's items on open.
//
// Traps: the log grows with every change (there is no compaction yet). One
// process serves the tables (the "dynamodb" lease); the others forward
// their calls to it. A heap index opens in time proportional to the items
// (about 10 s at 10 million), and takes about 60 bytes an item.
package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/google/uuid"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/lease"
	"github.com/runnel-dev/runnel/stream"
)

// Item is a DynamoDB item: attribute name -> value, in DynamoDB's JSON
// form ({"S":"x"}, {"N":"1.5"}) when marshalled.
type Item = map[string]events.DynamoDBAttributeValue

// Key types of KeySchema attributes.
const (
	TypeS = "S"
	TypeN = "N"
	TypeB = "B"
)

// Key roles.
const (
	KeyTypeHash  = "HASH"
	KeyTypeRange = "RANGE"
)

// Stream view types (StreamSpecification.StreamViewType).
const (
	ViewKeysOnly        = "KEYS_ONLY"
	ViewNewImage        = "NEW_IMAGE"
	ViewOldImage        = "OLD_IMAGE"
	ViewNewAndOldImages = "NEW_AND_OLD_IMAGES"
)

const (
	metaBucket    = "runnel_tables"
	logBucket     = "runnel_table_logs"
	txlogStream   = "RUNNEL_TXLOG"
	txlogSubject  = "runnel.txlog"
	tableStatus   = "ACTIVE"
	streamEnabled = "ENABLED"
	// DefaultShards is the number of change-log shards of a table when
	// CreateTableInput.RunnelShards is 0. DynamoDB sizes its stream shards
	// itself; runnel's count bounds a mapping's parallelism over the
	// change stream (one batch in flight per shard and lane).
	DefaultShards = 4
	// MaxShards is the most change-log shards of a table (RunnelShards).
	MaxShards = 64
	// MaxItemSize is DynamoDB's item size limit, 400 KB.
	MaxItemSize = 400 * 1024
	// StreamRetention is how far back the change stream can be read, as in
	// DynamoDB Streams.
	StreamRetention = 24 * time.Hour
)

// KeySchemaElement names a key attribute and its role (HASH or RANGE).
type KeySchemaElement struct {
	AttributeName string `json:"AttributeName"`
	KeyType       string `json:"KeyType"`
}

// AttributeDefinition gives a key attribute's type: S, N or B.
type AttributeDefinition struct {
	AttributeName string `json:"AttributeName"`
	AttributeType string `json:"AttributeType"`
}

// StreamSpecification turns the table's change stream on or off.
// StreamViewType is KEYS_ONLY, NEW_IMAGE, OLD_IMAGE or NEW_AND_OLD_IMAGES.
type StreamSpecification struct {
	StreamEnabled  bool   `json:"StreamEnabled"`
	StreamViewType string `json:"StreamViewType,omitempty"`
}

// TimeToLiveSpecification names the TTL attribute (a Number of epoch
// seconds) and turns expiry on or off.
type TimeToLiveSpecification struct {
	AttributeName string `json:"AttributeName"`
	Enabled       bool   `json:"Enabled"`
}

// CreateTableInput is CreateTable's request (API_CreateTable,
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_CreateTable.html).
// Throughput is stored, never enforced.
type CreateTableInput struct {
	TableName            string                `json:"TableName"`
	KeySchema            []KeySchemaElement    `json:"KeySchema"`
	AttributeDefinitions []AttributeDefinition `json:"AttributeDefinitions"`
	StreamSpecification  *StreamSpecification  `json:"StreamSpecification,omitempty"`
	// BillingMode and ProvisionedThroughput: see Throughput.
	BillingMode           string      `json:"BillingMode,omitempty"`
	ProvisionedThroughput *Throughput `json:"ProvisionedThroughput,omitempty"`
	// RunnelShards is the number of change-log shards (runnel's own
	// field): 1..64, default DefaultShards.
	RunnelShards int `json:"RunnelShards,omitempty"`
	// Tags are the table's first tags (at most MaxTags; see TagResource).
	Tags []Tag `json:"Tags,omitempty"`
	// GlobalSecondaryIndexes (at most 20) and LocalSecondaryIndexes (at
	// most 5, only here): see secondary.go. Their key attributes must be
	// in AttributeDefinitions.
	GlobalSecondaryIndexes    []SecondaryIndex `json:"GlobalSecondaryIndexes,omitempty"`
	LocalSecondaryIndexes     []SecondaryIndex `json:"LocalSecondaryIndexes,omitempty"`
	DeletionProtectionEnabled bool             `json:"DeletionProtectionEnabled,omitempty"` // DeleteTable refused while true (see deletable)
}

// TableDescription describes a table (DescribeTable's Table).
type TableDescription struct {
	TableName            string                `json:"TableName"`
	TableArn             string                `json:"TableArn"`
	TableId              string                `json:"TableId"`
	TableStatus          string                `json:"TableStatus"`
	KeySchema            []KeySchemaElement    `json:"KeySchema"`
	AttributeDefinitions []AttributeDefinition `json:"AttributeDefinitions"`
	CreationDateTime     float64               `json:"CreationDateTime"`
	ItemCount            int64                 `json:"ItemCount"`
	TableSizeBytes       int64                 `json:"TableSizeBytes"`
	StreamSpecification  *StreamSpecification  `json:"StreamSpecification,omitempty"`
	// GlobalSecondaryIndexes and LocalSecondaryIndexes describe the
	// table's indexes (none: absent).
	GlobalSecondaryIndexes    []IndexDescription `json:"GlobalSecondaryIndexes,omitempty"`
	LocalSecondaryIndexes     []IndexDescription `json:"LocalSecondaryIndexes,omitempty"`
	LatestStreamLabel         string             `json:"LatestStreamLabel,omitempty"`
	LatestStreamArn           string             `json:"LatestStreamArn,omitempty"`
	DeletionProtectionEnabled bool               `json:"DeletionProtectionEnabled"` // stored; see deletable
	// TimeToLive is the table's TTL setting (DescribeTimeToLive).
	TimeToLive TimeToLiveSpecification `json:"-"`
	// Shards is the number of change-log shards; Log the name of the log
	// stream (in the package's own stream namespace).
	Shards int    `json:"-"`
	Log    string `json:"-"`
	// Provisioned is the throughput of a provisioned table; nil: on
	// demand.
	Provisioned *Throughput `json:"-"`
}

// stored is what the metadata bucket keeps per table.
type stored struct {
	TableDescription
	TTL         TimeToLiveSpecification `json:"RunnelTTL"`
	Shards      int                     `json:"RunnelShards"`
	Log         string                  `json:"RunnelLog"`
	Provisioned *Throughput             `json:"RunnelProvisioned,omitempty"`
	// TTLVersion counts the changes of the TTL attribute made while the
	// table held items (UpdateTimeToLive). The expiry a log record's
	// header carries was computed under the attribute of its time, so a
	// table with TTLVersion > 0 has expiries in its log that may be
	// stale: an index rebuilt from the whole log, or loaded from a
	// snapshot taken under another version, has them recomputed from the
	// items (refreshTTL) before the table serves.
	TTLVersion int `json:"RunnelTTLVersion,omitempty"`
	// TTLChangedMs is when (the engine clock, Unix ms) UpdateTimeToLive
	// last changed the TTL setting: another change within TTLInterval
	// after it is refused. Stored with the setting, so the rule holds
	// across restarts and in every process.
	TTLChangedMs int64 `json:"RunnelTTLChangedMs,omitempty"`
	// Tags are the table's tags (TagResource).
	Tags map[string]string `json:"RunnelTags,omitempty"`
}

// Service is the tables API over one engine. Open it with New; it is safe
// for concurrent use.
type Service struct {
	eng        *engine.Engine
	cacheBytes int64 // Options.ItemCacheBytes
	logs       *stream.Service
	meta       jetstream.KeyValue
	txlog      jetstream.Stream

	mu     sync.RWMutex
	tables map[string]*Table // by name

	tokens *tokenCache
	held   heldItems

	// bg is the context of background work (the TTL sweeper, GSI
	// backfills), ended by Close; backfills counts the backfills running.
	bg        context.Context
	backfills sync.WaitGroup
	// indexBuilds counts the secondary indexes built from their table's
	// items (tests: an index in the store is not built at an open).
	indexBuilds atomic.Int64

	cancel context.CancelFunc
	done   chan struct{}

	// own is this process's hold on the tables (owner.go); loaded is set
	// while the tables are loaded here (under loadMu).
	own *lease.Owner
	// holdingHook, when set (tests only), answers mayAct.
	holdingHook func() bool
	// replyLost, when set (tests only), is asked after each log append
	// that JetStream acknowledged: an error makes the append's outcome
	// unknown to the writer although it landed (a reply lost).
	replyLost func(table string) error
	// commitLost, when set (tests only), is asked after each transaction
	// commit record JetStream acknowledged, as replyLost.
	commitLost func() error
	// unsure holds the items of writes whose outcome is unknown, and
	// resolving counts their resolvers (resolve.go); resolvePause and
	// resolveWithin (tests only, when positive) replace the resolvers'
	// first pause and commitResolveWithin.
	unsure        unsureItems
	resolving     sync.WaitGroup
	resolvePause  time.Duration
	resolveWithin time.Duration
	wakeMu        sync.Mutex
	wake          chan struct{}
	// resolveAttempts counts the resolvers' attempts (tests).
	resolveAttempts atomic.Int64
	// holding counts the holdings of the tables ended (drop): a resolver
	// of an earlier holding lets go. resolveClosed: Close began, no
	// resolver starts (under wakeMu).
	holding       atomic.Int64
	resolveClosed bool
	loadMu        sync.Mutex
	loaded        atomic.Bool

	// Index snapshots (snapshot.go): snaps is their object store (nil:
	// off); every log write holds snapGate for reading, a snapshot takes
	// it exclusively; snapMu serializes snapshots.
	snaps jetstream.ObjectStore
	// store holds the tables' item indexes on disk (store.go); nil: they
	// are in the heap (Options.Index).
	store *store
	// storeHeaders: the index store's headers are written and read
	// (Options.SnapshotInterval not negative).
	storeHeaders bool
	// writeObjects: snapshots are written to snaps too (always for the
	// heap's indexes; for the store when another process may serve next).
	writeObjects bool
	// snapClock times the periodic snapshots (Options.SnapshotClock).
	snapClock clockwork.Clock
	snapGate  sync.RWMutex
	snapMu    sync.Mutex
	// snapPause is how long the last snapshot held writes (ns).
	snapPause atomic.Int64
}

// Logs returns the stream service holding the tables' change logs, for the
// mappings and the DynamoDB Streams API.
func (s *Service) Logs() *stream.Service { return s.logs }

var tableNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{3,255}$`)

// New opens the tables service on eng. The tables are loaded by the
// process that serves them (owner.go: Serve, or the first call that finds
// nobody serving): it loads each table's index from its snapshot and the
// log after it, or from the whole log (snapshot.go), then
// completes any transaction that was committed but not fully applied when
// the tables were last served.
func New(ctx context.Context, eng *engine.Engine, opts Options) (*Service, error) {
	meta, err := eng.Bucket(ctx, metaBucket)
	if err != nil {
		return nil, err
	}
	logs, err := stream.NewLog(ctx, eng, logBucket)
	if err != nil {
		return nil, err
	}
	txlog, err := eng.EnsureStream(ctx, jetstream.StreamConfig{
		Name:        txlogStream,
		Description: "runnel table transactions: one commit record per TransactWriteItems",
		Subjects:    []string{txlogSubject},
		Storage:     jetstream.FileStorage,
		Replicas:    eng.Replicas(),
		MaxAge:      StreamRetention,
		AllowDirect: true,
		MaxMsgSize:  8 << 20,
	})
	if err != nil {
		return nil, fmt.Errorf("table: open transaction log: %w", err)
	}
	s := &Service{eng: eng, logs: logs, meta: meta, txlog: txlog, tables: map[string]*Table{}, done: make(chan struct{})}
	s.tokens = newTokenCache(eng.Clock, func(ids []string) bool { return s.unsure.busy(ids) != nil })
	bg, cancel := context.WithCancel(context.Background())
	s.bg, s.cancel = bg, cancel
	s.own = lease.NewOwner(bg, lease.OwnerConfig{
		Key: leaseKey, Subject: rpcSubject, What: "the tables",
		Conn: eng.NC, Leases: eng.Leases, Logger: eng.Logger.With("service", "table"),
		Serve: forwarded.Serve("table", s),
		Lost:  s.drop, Detail: errorDetail, Undetail: errorUndetail,
	})
	s.snapClock = opts.SnapshotClock
	s.cacheBytes = opts.ItemCacheBytes
	if s.cacheBytes <= 0 {
		s.cacheBytes = DefaultItemCacheBytes
	}
	snapEvery := opts.SnapshotInterval
	if snapEvery == 0 {
		snapEvery = DefaultSnapshotInterval
	}
	if s.store, err = openIndexStore(eng, opts); err != nil {
		cancel()
		return nil, err
	}
	s.storeHeaders = s.store != nil && snapEvery > 0
	// Snapshot objects are for the next process to serve the tables: the
	// heap's indexes always write them; the index store only when another
	// process may serve next (its store is this process's alone). Both
	// read one when they have nothing better.
	s.writeObjects = s.store == nil || sharedEngine(eng)
	if snapEvery > 0 {
		s.snaps, err = eng.EnsureObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket:      snapBucket,
			Description: "runnel table index snapshots: one object per table (table/snapshot.go)",
			Storage:     jetstream.FileStorage,
			Replicas:    eng.Replicas(),
		})
		if err != nil {
			cancel()
			return nil, fmt.Errorf("table: open index snapshots: %w", err)
		}
	}
	interval := opts.TTLInterval
	if interval == 0 {
		interval = 30 * time.Second
	}
	var loops sync.WaitGroup
	if interval > 0 {
		loops.Go(func() { s.runTTL(bg, interval) })
	}
	if s.snaps != nil || s.storeHeaders {
		loops.Go(func() { s.runSnapshots(bg, snapEvery) })
	}
	go func() {
		defer close(s.done)
		loops.Wait()
	}()
	return s, nil
}

// Close stops the TTL sweeper, the snapshot writer and the GSI backfills
// (an index whose backfill is cut short is built when the service opens
// again), writes the index snapshot of each table changed since its last
// one (when this process serves the tables and the engine is up; at most
// a minute), and releases the tables to another process. The engine
// stays open.
func (s *Service) Close() {
	if s.cancel != nil {
		s.cancel()
		<-s.done
		s.backfills.Wait()
		s.wakeMu.Lock()
		s.resolveClosed = true // no resolver starts after this
		s.wakeMu.Unlock()
		s.resolving.Wait() // they stop with bg, their items left to the next open
		if (s.snaps != nil || s.storeHeaders) && !s.eng.NC.IsClosed() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			if err := s.writeSnapshots(ctx); err != nil {
				s.eng.Logger.Warn("table index snapshot at close failed: the next open replays more of the log", "err", err)
			}
			cancel()
		}
		s.own.Release()
		s.cancel = nil
	}
	if s.store != nil {
		// After a crash of the engine (no snapshot written), the store
		// holds what its last flush did: the next open replays the log
		// from the last header it holds, over them.
		if err := s.store.close(!s.eng.Crashed()); err != nil {
			s.eng.Logger.Warn("table index store close failed", "err", err)
		}
	}
}

// ARN returns the table ARN: arn:aws:dynamodb:<region>:<account>:table/<name>.
func (s *Service) ARN(name string) string {
	return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", s.eng.Region(), s.eng.AccountID(), name)
}

var tableARNRE = regexp.MustCompile(`^arn:aws:dynamodb:[^:]*:[^:]*:table/([a-zA-Z0-9_.-]{3,255})$`)

var streamARNRE = regexp.MustCompile(`^arn:aws:dynamodb:[^:]*:[^:]*:table/([a-zA-Z0-9_.-]{3,255})/stream/(.+)$`)

// ParseStreamARN returns the table name and stream label of a DynamoDB
// stream ARN (arn:aws:dynamodb:<region>:<account>:table/<T>/stream/<label>).
func ParseStreamARN(arn string) (tableName, label string, ok bool) {
	m := streamARNRE.FindStringSubmatch(arn)
	if m == nil {
		return "", "", false
	}
	return m[1], m[2], true
}

func validation(format string, args ...any) error {
	return awserr.New(awserr.ErrValidation, format, args...)
}

func tableNotFound(name string) error {
	return awserr.New(awserr.ErrResourceNotFound, "Requested resource not found: Table: %s not found", name)
}

// CreateTable creates a table (API_CreateTable). The table is ACTIVE when
// CreateTable returns. Errors: ValidationException naming the field
// (TableName 3..255 of [a-zA-Z0-9_.-]; KeySchema one HASH and at most one
// RANGE, each defined in AttributeDefinitions with type S, N or B;
// StreamViewType one of the four; RunnelShards 1..64; the indexes' rules
// in checkIndexes: at most 20 GSIs and 5 LSIs, an LSI on the table's
// partition key with its own sort key, unique names, projections, at most
// 100 NonKeyAttributes in all, every definition a key of the table or an
// index), LimitExceededException for more than 50 tags,
// ResourceInUseException if the name is taken.
func (s *Service) CreateTable(ctx context.Context, in CreateTableInput) (*TableDescription, error) {
	if remote, d, err := s.forwardDesc(ctx, "CreateTable", in); remote {
		return d, err
	}
	if !tableNameRE.MatchString(in.TableName) {
		return nil, validation("1 validation error detected: Value '%s' at 'tableName' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_.-]+ and have length between 3 and 255", in.TableName)
	}
	schema, err := newSchema(in.KeySchema, in.AttributeDefinitions)
	if err != nil {
		return nil, err
	}
	types, _ := definitionTypes(in.AttributeDefinitions)
	gsis, lsis, err := checkIndexes(schema, types, in.GlobalSecondaryIndexes, in.LocalSecondaryIndexes)
	if err != nil {
		return nil, err
	}
	shards := in.RunnelShards
	if shards == 0 {
		shards = DefaultShards
	}
	if shards < 1 || shards > MaxShards {
		return nil, awserr.OutOfRange(awserr.ErrValidation, "RunnelShards", shards, 1, MaxShards)
	}
	if sp := in.StreamSpecification; sp != nil && sp.StreamEnabled {
		if err := checkView(sp.StreamViewType); err != nil {
			return nil, err
		}
	}
	provisioned, err := billing(in.BillingMode, in.ProvisionedThroughput, nil)
	if err != nil {
		return nil, err
	}
	for i, g := range in.GlobalSecondaryIndexes {
		if gsis[i].ProvisionedThroughput, err = gsiThroughput(provisioned, g); err != nil {
			return nil, err
		}
	}
	now := s.eng.Clock.Now().UTC()
	st := stored{Shards: shards, Provisioned: provisioned}
	if len(in.Tags) > 0 {
		st.Tags = map[string]string{}
		for _, tg := range in.Tags {
			st.Tags[tg.Key] = tg.Value
		}
		if len(st.Tags) > MaxTags {
			return nil, tooManyTags(s.ARN(in.TableName))
		}
	}
	st.TableDescription = TableDescription{
		TableName: in.TableName, TableArn: s.ARN(in.TableName), TableId: uuid.NewString(), TableStatus: tableStatus,
		KeySchema: schema.elements(), AttributeDefinitions: in.AttributeDefinitions,
		CreationDateTime:       float64(now.UnixMilli()) / 1000,
		GlobalSecondaryIndexes: gsis, LocalSecondaryIndexes: lsis, DeletionProtectionEnabled: in.DeletionProtectionEnabled,
	}
	st.Log = "tbl-" + st.TableId
	if sp := in.StreamSpecification; sp != nil && sp.StreamEnabled {
		st.StreamSpecification = &StreamSpecification{StreamEnabled: true, StreamViewType: sp.StreamViewType}
		st.LatestStreamLabel = streamLabel(now)
		st.LatestStreamArn = st.TableArn + "/stream/" + st.LatestStreamLabel
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.tables[in.TableName]; ok {
		return nil, awserr.New(awserr.ErrResourceInUse, "Table already exists: %s", in.TableName)
	}
	if _, err := s.logs.CreateStream(ctx, stream.CreateStreamInput{StreamName: st.Log, ShardCount: shards, RetentionPeriodHours: int(StreamRetention / time.Hour), ShortSequenceNumbers: true}); err != nil {
		return nil, err
	}
	b, _ := json.Marshal(st)
	if _, err := s.meta.Create(ctx, in.TableName, b); err != nil {
		_ = s.logs.DeleteStream(ctx, st.Log)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, awserr.New(awserr.ErrResourceInUse, "Table already exists: %s", in.TableName)
		}
		return nil, awserr.New(awserr.ErrService, "create table %s: %v", in.TableName, err)
	}
	t, err := s.openTable(st)
	if err != nil {
		return nil, err
	}
	if err := t.markReady(t.indexes()); err != nil { // a new table's indexes are empty
		return nil, awserr.New(awserr.ErrService, "create table %s: %v", in.TableName, err)
	}
	s.tables[in.TableName] = t
	return t.describe(), nil
}

func streamLabel(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000") }

func checkView(v string) error {
	switch v {
	case ViewKeysOnly, ViewNewImage, ViewOldImage, ViewNewAndOldImages:
		return nil
	}
	return validation("1 validation error detected: Value '%s' at 'streamSpecification.streamViewType' failed to satisfy constraint: Member must satisfy enum value set: [NEW_IMAGE, OLD_IMAGE, NEW_AND_OLD_IMAGES, KEYS_ONLY]", v)
}

// DeleteTable deletes a table and its items. Its change log goes too,
// unless the table ever had a stream: that stays readable, DISABLED, for
// StreamRetention (DeletedStreams). Errors: see deletable (a table with
// DeletionProtectionEnabled is refused, ResourceNotFound for none).
func (s *Service) DeleteTable(ctx context.Context, name string) (*TableDescription, error) {
	if remote, d, err := s.forwardDesc(ctx, "DeleteTable", name); remote {
		return d, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t, d, kept, err := s.deletable(ctx, name)
	if err != nil {
		return nil, err
	}
	if !kept {
		if err := s.logs.DeleteStream(ctx, t.logName); err != nil && !errors.Is(err, awserr.ErrResourceNotFound) {
			return nil, err
		}
	}
	if err := s.meta.Purge(ctx, name); err != nil {
		return nil, awserr.New(awserr.ErrService, "delete table %s: %v", name, err)
	}
	if s.snaps != nil {
		// Best effort: a snapshot left behind is of another log, never used.
		if err := s.snaps.Delete(ctx, name); err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
			s.eng.Logger.Warn("delete table: index snapshot left behind", "table", name, "err", err)
		}
	}
	if dx, ok := t.idx.(*diskIndex); ok {
		t.idxMu.Lock()
		err := dx.reset()
		t.idxMu.Unlock()
		if err != nil {
			s.eng.Logger.Warn("delete table: its keys are left in the index store (never read: a table created again has another TableId)", "table", name, "err", err)
		}
	}
	delete(s.tables, name)
	return d, nil
}

// DescribeTable returns a table's description, ItemCount included (exact,
// unlike DynamoDB's six-hourly figure).
func (s *Service) DescribeTable(ctx context.Context, name string) (*TableDescription, error) {
	if remote, d, err := s.forwardDesc(ctx, "DescribeTable", name); remote {
		return d, err
	}
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	return t.describe(), nil
}

// ListTables returns the table names, sorted.
func (s *Service) ListTables(ctx context.Context) []string {
	var names []string
	if remote, err := s.forward(ctx, "ListTables", nil, &names); remote {
		if err != nil {
			s.eng.Logger.Warn("ListTables: the process serving the tables did not answer", "err", err)
		}
		return names
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	names = make([]string, 0, len(s.tables))
	for n := range s.tables {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (s *Service) saveMeta(ctx context.Context, st stored) error {
	b, _ := json.Marshal(st)
	if _, err := s.meta.Put(ctx, st.TableName, b); err != nil {
		return awserr.New(awserr.ErrService, "update table %s: %v", st.TableName, err)
	}
	return nil
}

// table returns an open table by name, or ResourceNotFoundException.
func (s *Service) table(name string) (*Table, error) {
	s.mu.RLock()
	t, ok := s.tables[name]
	s.mu.RUnlock()
	if !ok {
		return nil, tableNotFound(name)
	}
	if err := t.idx.Err(); err != nil {
		return nil, awserr.New(awserr.ErrService, "table %s: %v", name, err)
	}
	return t, nil
}
