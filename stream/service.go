// Package stream implements streams with the Amazon Kinesis Data Streams
// data model on JetStream: shards that own ranges of the 128-bit hash key
// space, records routed by the MD5 of their partition key, decimal sequence
// numbers increasing per shard, shard iterators and retention.
//
// Each shard is one JetStream stream (file storage, MaxAge = retention), so
// a shard's log, its trimming and its readers are JetStream's own. Stream
// descriptions live in the key-value bucket "runnel_streams". SplitShard,
// MergeShards and UpdateShardCount close shards and open children
// (reshard.go): a closed shard is sealed so that no record lands in it
// after its end, and stays readable until it expires.
//
// Method and field names follow the Kinesis API
// (https://docs.aws.amazon.com/kinesis/latest/APIReference/); refused calls
// return *awserr.Error values (errors.Is(err, awserr.ErrResourceNotFound)).
package stream

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

const metaBucket = "runnel_streams"

// Limits copied from Kinesis (API_CreateStream, API_PutRecords, Kinesis
// quotas page).
const (
	MinRetentionPeriodHours     = 24
	MaxRetentionPeriodHours     = 8760
	DefaultRetentionPeriodHours = 24
	// MaxShardCount is runnel's own limit on ShardCount (Kinesis sets it by
	// account quota).
	MaxShardCount = 1024
	// MaxRecordSize is the largest data blob plus partition key, 1 MiB.
	MaxRecordSize = 1 << 20
	// MaxPutRecords is the most entries one PutRecords call takes.
	MaxPutRecords = 500
	// MaxPutRecordsSize is the most bytes of data and partition keys one
	// PutRecords call takes, 5 MiB (API_PutRecords). A table's change log
	// (NewLog) is not held to it: a transaction writes up to 100 items of
	// 400 KB in one call.
	MaxPutRecordsSize = 5 << 20
	// MaxGetRecordsLimit is the largest Limit of GetRecords, and its default.
	MaxGetRecordsLimit = 10000
	// IteratorLifetime is how long a shard iterator stays valid.
	IteratorLifetime = 5 * time.Minute
	// LogIteratorLifetime is how long a shard iterator of NewLog's logs
	// stays valid: they are read as DynamoDB streams, whose iterators
	// expire "15 minutes after it is returned to the requester"
	// (API_streams_GetShardIterator).
	LogIteratorLifetime = 15 * time.Minute
)

var streamNameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]{1,128}$`)

// Stream statuses (API_StreamDescription.StreamStatus). runnel streams are
// ACTIVE as soon as CreateStream returns, and UPDATING while SplitShard,
// MergeShards, UpdateShardCount or UpdateRetentionPeriod runs (they
// return once it is ACTIVE again). While UPDATING, every other change of
// the stream is ResourceInUseException.
const (
	StatusActive   = "ACTIVE"
	StatusUpdating = "UPDATING"
)

// Shard describes one shard (API_Shard). A shard is OPEN until a
// SplitShard, MergeShards or UpdateShardCount closes it: a CLOSED shard
// takes no more records, stays readable until its records expire, and
// has an EndingSequenceNumber; its children name it in ParentShardId (and,
// for a merge, AdjacentParentShardId).
type Shard struct {
	ShardID               string              `json:"ShardId"`
	ParentShardID         string              `json:"ParentShardId,omitempty"`
	AdjacentParentShardID string              `json:"AdjacentParentShardId,omitempty"`
	HashKeyRange          HashKeyRange        `json:"HashKeyRange"`
	SequenceNumberRange   SequenceNumberRange `json:"SequenceNumberRange"`
	// CreatedMs is when the shard was created (Unix ms; 0 for the shards
	// of CreateStream before runnel recorded it: the stream's creation).
	CreatedMs int64 `json:"RunnelCreated,omitempty"`
	// ClosedMs is when a reshard closed the shard (Unix ms), 0 while open.
	// EndingSequenceNumber is set once the shard is sealed, right after.
	ClosedMs int64 `json:"RunnelClosed,omitempty"`
}

// SequenceNumberRange is the range of a shard's sequence numbers
// (API_SequenceNumberRange): EndingSequenceNumber is empty while the shard
// is open.
type SequenceNumberRange struct {
	StartingSequenceNumber string `json:"StartingSequenceNumber"`
	EndingSequenceNumber   string `json:"EndingSequenceNumber,omitempty"`
}

// Open reports whether the shard takes new records.
func (sh Shard) Open() bool { return sh.ClosedMs == 0 }

// StreamDescription describes a stream (API_StreamDescription).
type StreamDescription struct {
	StreamName              string    `json:"StreamName"`
	StreamARN               string    `json:"StreamARN"`
	StreamStatus            string    `json:"StreamStatus"`
	RetentionPeriodHours    int       `json:"RetentionPeriodHours"`
	StreamCreationTimestamp time.Time `json:"StreamCreationTimestamp"`
	Shards                  []Shard   `json:"Shards"`
	// ID names the stream's JetStream streams ("KDS_<ID>_<shard index>").
	ID string `json:"RunnelID"`
	// Epoch is the stream's creation time in Unix milliseconds, made unique
	// among the streams this process creates; it prefixes every sequence
	// number of the stream.
	Epoch int64 `json:"RunnelEpoch"`
	// SequenceDigits is LongSequenceDigits (56) for a stream whose
	// sequence numbers are as long as AWS's, 0 for the short layout
	// (Numbering).
	SequenceDigits int `json:"RunnelSequenceDigits,omitempty"`
	// Scalings are the times (Unix ms) of the UpdateShardCount calls of
	// the last 24 hours, for its limit of 10 per rolling 24 hours.
	Scalings []int64 `json:"RunnelScalings,omitempty"`
	// UpdatingMs is when the running reshard began (Unix ms), while
	// StreamStatus is UPDATING.
	UpdatingMs int64 `json:"RunnelUpdating,omitempty"`
	// Tags are the stream's tags (ListTagsForStream; not part of
	// API_StreamDescription).
	Tags map[string]string `json:"RunnelTags,omitempty"`
	// ShardLevelMetrics are the enhanced monitoring metrics enabled
	// (EnableEnhancedMonitoring); stored and reported only (settings.go).
	ShardLevelMetrics []string `json:"RunnelShardLevelMetrics,omitempty"`
	// EncryptionType is "KMS" after StartStreamEncryption ("" is NONE),
	// with the KeyId given; stored and reported only: runnel encrypts
	// nothing (settings.go).
	EncryptionType string `json:"RunnelEncryptionType,omitempty"`
	KeyID          string `json:"RunnelKeyId,omitempty"`
	// StreamMode is ON_DEMAND or PROVISIONED ("" is PROVISIONED; see
	// Mode and ondemand.go); ModeSwitches are the times (Unix ms) of the
	// UpdateStreamMode calls of the last 24 hours.
	StreamMode   string  `json:"RunnelStreamMode,omitempty"`
	ModeSwitches []int64 `json:"RunnelModeSwitches,omitempty"`
}

// OpenShardCount is the number of open shards.
func (d *StreamDescription) OpenShardCount() int {
	n := 0
	for i := range d.Shards {
		if d.Shards[i].Open() {
			n++
		}
	}
	return n
}

// shard returns the description of a shard, or nil.
func (d *StreamDescription) shard(id string) *Shard {
	for i := range d.Shards {
		if d.Shards[i].ShardID == id {
			return &d.Shards[i]
		}
	}
	return nil
}

// CreateStreamInput is the input of CreateStream (API_CreateStream).
type CreateStreamInput struct {
	// StreamName: 1..128 characters of [a-zA-Z0-9_.-]. Required.
	StreamName string `json:"StreamName" yaml:"StreamName"`
	// ShardCount: 1..MaxShardCount. Default 1.
	ShardCount int `json:"ShardCount" yaml:"ShardCount"`
	// RetentionPeriodHours: 24..8760. Default 24.
	RetentionPeriodHours int `json:"RetentionPeriodHours" yaml:"RetentionPeriodHours"`
	// Tags: up to 50, as AddTagsToStream takes them.
	Tags map[string]string `json:"Tags,omitempty" yaml:"Tags,omitempty"`
	// StreamModeDetails: StreamMode PROVISIONED (the default, also when
	// nil) or ON_DEMAND, whose shard count starts at
	// OnDemandInitialShards (unless ShardCount is given) and follows the
	// write rate (ondemand.go). A stack file writes it as CloudFormation
	// does: StreamModeDetails: {StreamMode: ON_DEMAND}.
	StreamModeDetails *StreamModeDetails `json:"StreamModeDetails,omitempty" yaml:"StreamModeDetails,omitempty"`
	// ShortSequenceNumbers gives the stream the short layout of sequence
	// numbers (Numbering) instead of AWS's 56 digits: a table's change
	// log, whose numbers DynamoDB Streams caps at 40 characters. Not part
	// of the Kinesis API (never read from a request).
	ShortSequenceNumbers bool `json:"-" yaml:"-"`
}

// StreamModeDetails is a stream's capacity mode (API_StreamModeDetails).
type StreamModeDetails struct {
	StreamMode string `json:"StreamMode" yaml:"StreamMode"`
}

// mode is the StreamMode asked for ("" when none).
func (in CreateStreamInput) mode() string {
	if in.StreamModeDetails == nil {
		return ""
	}
	return in.StreamModeDetails.StreamMode
}

// WithDefaults returns in with ShardCount 1 (OnDemandInitialShards for
// ON_DEMAND) and RetentionPeriodHours 24 (DefaultRetentionPeriodHours)
// where they are zero.
func (in CreateStreamInput) WithDefaults() CreateStreamInput {
	if in.mode() == StreamModeOnDemand {
		in.ShardCount = cmp.Or(in.ShardCount, OnDemandInitialShards)
	}
	in.ShardCount = cmp.Or(in.ShardCount, 1)
	in.RetentionPeriodHours = cmp.Or(in.RetentionPeriodHours, DefaultRetentionPeriodHours)
	return in
}

// Validate checks the input, with its defaults (WithDefaults), against
// Kinesis's ranges and returns an InvalidArgumentException naming the
// field. It does not change in.
func (in CreateStreamInput) Validate() error {
	in = in.WithDefaults()
	if !streamNameRE.MatchString(in.StreamName) {
		return invalidArg("StreamName: %q must be 1..128 characters of [a-zA-Z0-9_.-]", in.StreamName)
	}
	if in.ShardCount < 1 || in.ShardCount > MaxShardCount {
		return awserr.OutOfRange(awserr.ErrInvalidArgument, "ShardCount", in.ShardCount, 1, MaxShardCount)
	}
	if in.RetentionPeriodHours < MinRetentionPeriodHours || in.RetentionPeriodHours > MaxRetentionPeriodHours {
		return awserr.OutOfRange(awserr.ErrInvalidArgument, "RetentionPeriodHours", in.RetentionPeriodHours, MinRetentionPeriodHours, MaxRetentionPeriodHours)
	}
	if in.StreamModeDetails != nil {
		if err := validStreamMode("StreamModeDetails.StreamMode", in.mode()); err != nil {
			return err
		}
	}
	return validateTags("Tags", in.Tags)
}

// Service is the streams API over one engine. It is safe for concurrent use.
type Service struct {
	eng  *engine.Engine
	meta jetstream.KeyValue
	// consumers holds the enhanced fan-out consumers and their
	// subscription leases (consumers.go); nil for NewLog's streams.
	consumers jetstream.KeyValue
	// keep: the streams are logs kept whole (see NewLog): no MaxAge, and
	// TrimExpired leaves them alone.
	keep bool

	mu      sync.Mutex
	handles map[string]*handle
	// rates counts the writes of ON_DEMAND streams' open shards by
	// JetStream stream name (*writeRate; ondemand.go).
	rates sync.Map
	// gens counts, per stream, the Forget calls: a handle loaded before one
	// is not cached (it may hold the routing of before a reshard).
	gens map[string]uint64
	// tail keeps the messages put last for GetRecords (tail.go); nil for
	// NewLog's streams.
	tail *tailCache
	// staleReads, when set and true (tests only), makes direct gets
	// answer as a follower that has applied no message yet (see msgAt).
	staleReads func() bool
	// ackLost, when set and true (tests only), loses the acknowledgement
	// of a publish: its outcome is unknown to the writer (LoseAcks).
	ackLost atomic.Pointer[func() bool]
	// resolveWithin, when positive (tests only), replaces ResolveWithin.
	resolveWithin atomic.Int64
	// hook, when set (tests only, before any call), is called at the
	// named steps of a reshard and a retention change (at).
	hook func(step string)
}

// New opens the streams service on eng.
func New(ctx context.Context, eng *engine.Engine) (*Service, error) {
	var kv, consumers jetstream.KeyValue
	if err := eng.Buckets(ctx, map[string]*jetstream.KeyValue{metaBucket: &kv, consumersBucket: &consumers}); err != nil {
		return nil, err
	}
	return &Service{eng: eng, meta: kv, consumers: consumers, handles: map[string]*handle{}, gens: map[string]uint64{},
		tail: newTailCache(DefaultTailCacheBytes)}, nil
}

// NewLog opens a second, separate set of streams (their descriptions in
// the key-value bucket metaBucket) whose records are never trimmed: no
// MaxAge, and TrimExpired does nothing. The tables package keeps each
// table's change log in one; RetentionPeriodHours of these streams only
// describes how far back readers of the change stream may look.
func NewLog(ctx context.Context, eng *engine.Engine, metaBucket string) (*Service, error) {
	kv, err := eng.Bucket(ctx, metaBucket)
	if err != nil {
		return nil, err
	}
	return &Service{eng: eng, meta: kv, handles: map[string]*handle{}, gens: map[string]uint64{}, keep: true}, nil
}

// ARN returns the stream ARN for name:
// arn:aws:kinesis:<region>:<account>:stream/<name>.
func (s *Service) ARN(name string) string {
	return fmt.Sprintf("arn:aws:kinesis:%s:%s:stream/%s", s.eng.Region(), s.eng.AccountID(), name)
}

var streamARNRE = regexp.MustCompile(`^arn:aws:kinesis:[^:]*:[^:]*:stream/([a-zA-Z0-9_.-]{1,128})$`)

// NameFromARN returns the stream name of a Kinesis stream ARN, or false.
func NameFromARN(arn string) (string, bool) {
	m := streamARNRE.FindStringSubmatch(arn)
	if m == nil {
		return "", false
	}
	return m[1], true
}

func jsName(id string, shard int) string    { return fmt.Sprintf("KDS_%s_%04d", id, shard) }
func jsSubject(id string, shard int) string { return fmt.Sprintf("kds.%s.%d", id, shard) }

// sealSubject is where a closed shard's seal message is stored.
func sealSubject(id string, shard int) string { return fmt.Sprintf("kds.%s.%d.seal", id, shard) }

// ShardID formats a shard index as Kinesis does: shardId-000000000000.
func ShardID(i int) string { return fmt.Sprintf("shardId-%012d", i) }

// index returns the index of shard id of the stream, or
// ErrResourceNotFound.
func (h *handle) index(id string) (int, error) {
	var i int
	if _, err := fmt.Sscanf(id, "shardId-%012d", &i); err != nil || ShardID(i) != id || i < 0 || i >= len(h.shards) || h.shards[i] == nil {
		return 0, awserr.New(awserr.ErrResourceNotFound, "Shard %s does not exist", id)
	}
	return i, nil
}

// CreateStream creates a stream with in.ShardCount shards splitting the hash
// key space evenly. It fails with ErrResourceInUse if the name exists and
// with ErrInvalidArgument, naming the field and range, on bad input.
func (s *Service) CreateStream(ctx context.Context, in CreateStreamInput) (*StreamDescription, error) {
	in = in.WithDefaults()
	if err := in.Validate(); err != nil {
		return nil, err
	}
	now := s.eng.Clock.Now().UTC()
	d := StreamDescription{
		StreamName:              in.StreamName,
		StreamARN:               s.ARN(in.StreamName),
		StreamStatus:            StatusActive,
		RetentionPeriodHours:    in.RetentionPeriodHours,
		StreamCreationTimestamp: now.Truncate(time.Millisecond),
		ID:                      nuid.Next(),
		Epoch:                   nextEpoch(now.UnixMilli()),
		SequenceDigits:          LongSequenceDigits,
		Tags:                    in.Tags,
		StreamMode:              in.mode(),
	}
	if in.ShortSequenceNumbers {
		d.SequenceDigits = 0
	}
	for i, r := range splitHashKeySpace(in.ShardCount) {
		sh := Shard{ShardID: ShardID(i), HashKeyRange: r, CreatedMs: d.StreamCreationTimestamp.UnixMilli()}
		sh.SequenceNumberRange.StartingSequenceNumber = FormatSequenceNumber(d.Numbering(), i, FirstPosition)
		d.Shards = append(d.Shards, sh)
	}
	b, _ := json.Marshal(d)
	if _, err := s.meta.Create(ctx, in.StreamName, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil, awserr.New(awserr.ErrResourceInUse, "Stream %s under account %s already exists.", in.StreamName, s.eng.AccountID())
		}
		return nil, awserr.New(awserr.ErrService, "create stream %s: %v", in.StreamName, err)
	}
	for i := range d.Shards {
		if _, err := s.eng.CreateOrUpdateStream(ctx, s.shardConfig(&d, i)); err != nil {
			return nil, awserr.New(awserr.ErrService, "create shard %d of %s: %v", i, in.StreamName, err)
		}
	}
	return &d, nil
}

func (s *Service) shardConfig(d *StreamDescription, i int) jetstream.StreamConfig {
	maxAge := time.Duration(d.RetentionPeriodHours) * time.Hour
	var dupes time.Duration // JetStream's default: 2 minutes
	if s.keep {
		maxAge, dupes = 0, LogDuplicateWindow
	}
	return jetstream.StreamConfig{
		Duplicates:  dupes,
		Name:        jsName(d.ID, i),
		Description: fmt.Sprintf("runnel stream %s %s", d.StreamName, ShardID(i)),
		Subjects:    []string{jsSubject(d.ID, i), sealSubject(d.ID, i)},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      maxAge,
		Replicas:    s.eng.Replicas(),
		AllowDirect: true,
		MaxMsgSize:  maxMessageBody,
		Discard:     jetstream.DiscardOld,
	}
}

// DeleteStream deletes a stream and all its records, as API_DeleteStream
// with EnforceConsumerDeletion unset: a stream with registered consumers
// is ResourceInUseException, and stays. DeleteStreamEnforce with true
// deletes the consumers with it.
func (s *Service) DeleteStream(ctx context.Context, name string) error {
	return s.DeleteStreamEnforce(ctx, name, false)
}

// DeleteStreamEnforce is API_DeleteStream with its EnforceConsumerDeletion:
// "If this parameter is unset (null) or if you set it to false, and the
// stream has registered consumers, the call to DeleteStream fails with a
// ResourceInUseException." With true the consumers (DELETING ones too)
// are deleted with the stream and their subscriptions end.
func (s *Service) DeleteStreamEnforce(ctx context.Context, name string, enforceConsumerDeletion bool) error {
	d, err := s.DescribeStream(ctx, name)
	if err != nil {
		return err
	}
	if !enforceConsumerDeletion && s.consumers != nil {
		n, err := s.ConsumerCount(ctx, d)
		if err != nil {
			return err
		}
		if n > 0 {
			return awserr.New(awserr.ErrResourceInUse, "Stream %s under account %s has %d registered consumers: deregister them, or set EnforceConsumerDeletion.", name, s.eng.AccountID(), n)
		}
	}
	for _, sh := range d.Shards {
		i, _ := ShardIndex(sh.ShardID)
		if err := s.eng.JS.DeleteStream(ctx, jsName(d.ID, i)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			return awserr.New(awserr.ErrService, "delete shard %d of %s: %v", i, name, err)
		}
	}
	if err := s.meta.Purge(ctx, name); err != nil {
		return awserr.New(awserr.ErrService, "delete stream %s: %v", name, err)
	}
	s.Forget(name)
	if err := s.deleteConsumers(ctx, d); err != nil {
		return err
	}
	return nil
}

// DescribeStream returns the stream's description, or ErrResourceNotFound.
func (s *Service) DescribeStream(ctx context.Context, name string) (*StreamDescription, error) {
	if !streamNameRE.MatchString(name) {
		return nil, notFound(name, s.eng.AccountID())
	}
	e, err := s.meta.Get(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, notFound(name, s.eng.AccountID())
		}
		return nil, awserr.New(awserr.ErrService, "describe stream %s: %v", name, err)
	}
	var d StreamDescription
	if err := json.Unmarshal(e.Value(), &d); err != nil {
		return nil, awserr.New(awserr.ErrService, "stream %s: bad description: %v", name, err)
	}
	return &d, nil
}

func notFound(name, account string) error {
	return awserr.New(awserr.ErrResourceNotFound, "Stream %s under account %s not found.", name, account)
}

// ListStreams returns the names of all streams, sorted.
func (s *Service) ListStreams(ctx context.Context) ([]string, error) {
	keys, err := s.meta.Keys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, err
	}
	slices.Sort(keys)
	return keys, nil
}

// ListShards returns the shards of a stream.
func (s *Service) ListShards(ctx context.Context, name string) ([]Shard, error) {
	d, err := s.DescribeStream(ctx, name)
	if err != nil {
		return nil, err
	}
	return d.Shards, nil
}

// UpdateRetentionPeriod sets the stream's retention (IncreaseStreamRetentionPeriod
// and DecreaseStreamRetentionPeriod in one call), 24..8760 hours, else
// InvalidArgumentException naming RetentionPeriodHours. A missing stream
// is ResourceNotFoundException; one that is not ACTIVE (resharding) is
// ResourceInUseException: "For successful operation, the resource must
// be in the ACTIVE state" (API_IncreaseStreamRetentionPeriod).
//
// The stream is UPDATING while its shards' JetStream streams take the new
// MaxAge, and ACTIVE again when the call returns: the new period and the
// UPDATING status are one compare-and-set on the revision that found the
// stream ACTIVE, so no reshard runs (and seals a shard, whose JetStream
// metadata this rewrites) while the shards are updated, nor can this start
// during one.
func (s *Service) UpdateRetentionPeriod(ctx context.Context, name string, hours int) error {
	if hours < MinRetentionPeriodHours || hours > MaxRetentionPeriodHours {
		return awserr.OutOfRange(awserr.ErrInvalidArgument, "RetentionPeriodHours", hours, MinRetentionPeriodHours, MaxRetentionPeriodHours)
	}
	d, rev, err := s.changeDesc(ctx, name, func(d *StreamDescription) error {
		d.RetentionPeriodHours = hours
		d.StreamStatus, d.UpdatingMs = StatusUpdating, s.eng.Clock.Now().UnixMilli()
		return nil
	})
	if err != nil {
		return err
	}
	s.at("retention")
	var failed error
	for _, sh := range d.Shards {
		i, _ := ShardIndex(sh.ShardID)
		cfg := s.shardConfig(d, i)
		if info, err := s.eng.JS.Stream(ctx, cfg.Name); err == nil {
			// A sealed shard keeps its seal's record and stays without
			// its records' subject.
			cfg.Metadata, cfg.Subjects = info.CachedInfo().Config.Metadata, info.CachedInfo().Config.Subjects
		}
		if _, err := s.eng.UpdateStream(ctx, cfg); err != nil {
			failed = awserr.New(awserr.ErrService, "update shard %d of %s: %v", i, name, err)
			break
		}
	}
	d.StreamStatus, d.UpdatingMs = StatusActive, 0
	if _, err := s.writeDesc(ctx, d, rev); err != nil && failed == nil {
		failed = err
	}
	return failed
}

// Forget drops what this process has cached about a stream, so the next
// call reads its description again (after another process deleted and
// re-created it).
func (s *Service) Forget(name string) {
	s.mu.Lock()
	delete(s.handles, name)
	s.gens[name]++
	s.mu.Unlock()
}

// ShardIndex returns the index of a shard id ("shardId-000000000003" -> 3).
func ShardIndex(shardID string) (int, error) {
	var i int
	if _, err := fmt.Sscanf(shardID, "shardId-%012d", &i); err != nil || ShardID(i) != shardID {
		return 0, invalidArg("ShardId: %q is not a shard id (shardId-000000000000)", shardID)
	}
	return i, nil
}

// SequenceNumber returns the sequence number of log position pos of a
// shard, for comparisons with checkpoints and records.
func (s *Service) SequenceNumber(ctx context.Context, streamName, shardID string, pos uint64) (string, error) {
	h, sh, err := s.shardOf(ctx, streamName, shardID)
	if err != nil {
		return "", err
	}
	return FormatSequenceNumber(h.desc.Numbering(), sh, pos), nil
}

func invalidArg(format string, args ...any) error {
	return awserr.New(awserr.ErrInvalidArgument, format, args...)
}

// shardOf returns the handle of streamName and the index of shardID in it,
// or an error matching awserr.ErrResourceNotFound for either.
func (s *Service) shardOf(ctx context.Context, streamName, shardID string) (*handle, int, error) {
	h, err := s.handle(ctx, streamName)
	if err != nil {
		return nil, 0, err
	}
	sh, err := h.index(shardID)
	if err != nil {
		// A shard created by a reshard in another process: read the
		// description again, once.
		s.Forget(streamName)
		if h, err = s.handle(ctx, streamName); err != nil {
			return nil, 0, err
		}
		if sh, err = h.index(shardID); err != nil {
			return nil, 0, err
		}
	}
	return h, sh, nil
}
