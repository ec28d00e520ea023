// Package queue implements Amazon SQS queues on JetStream: standard and
// FIFO queues, visibility timeouts, delays, retention, long polling,
// dead-letter redrive and message move tasks, with the attribute names,
// defaults, ranges and errors of the SQS API
// (https://docs.aws.amazon.com/AWSSimpleQueueService/latest/APIReference/).
//
// # Time
//
// Every time rule (visibility timeouts, DelaySeconds, retention, long
// polling, the FIFO five-minute deduplication window, PurgeQueue's 60 s,
// move task rates) reads the engine's clock (engine.Engine.Clock), so
// tests run them on a fake clock. JetStream's own timers (AckWait,
// NakWithDelay, MaxAge) are not used for any rule: they run on the
// server's wall clock. MaxAge is set only as a backstop.
//
// # Storage
//
// Each queue is one JetStream stream SQS_<id> (file storage, one message
// per subject, per-message TTLs allowed, MaxAge = retention + 1 minute as a
// backstop), where <id> is a NUID given at CreateQueue so a re-created
// queue never sees old data:
//
//   - sqs.<id>.m.<n>: the body record of send call n: its 1..10 messages
//     (id, send time, delay, group and deduplication ids, body, attributes).
//   - sqs.<id>.s.<n>: the state record of call n: per message the receive
//     count, visible-at time, first and latest receive times, receipt nonce
//     and a deleted flag. Each change publishes the whole record again and
//     the stream keeps only the latest.
//   - when all messages of call n are gone, its body is deleted
//     (DeleteMsg, recorded in the store's blocks, so that an unclean stop
//     cannot bring it back) and a tombstone (header Runnel-Gone, a TTL of
//     its own) replaces the state; on a FIFO queue a tombstone on the body
//     subject remembers the deduplication ids for five minutes.
//
// Every write is an asynchronous publish; a call waits for the
// acknowledgements of its own writes before it returns, so a sent message
// is on disk when SendMessage returns, and a receive or delete is durable
// when its call returns. One call touches one or two records whatever its
// batch size, which is what makes batches of 10 cheap.
//
// Each queue's messages and state also live in memory, in an index built
// on first use from the stream (after a restart: in-flight messages stay
// invisible until their timeout, receive counts are kept). Bodies are
// kept in memory up to a budget shared by all queues (CacheBytes) and
// read back from JetStream beyond it. Queue metadata (name, id,
// attributes, creation time) is in the key-value bucket "runnel_queues".
//
// The indexes are held by one process at a time, the holder of the
// queues' lease; the Service of every other process sharing the JetStream
// forwards its calls to that process (owner.go), so a purge run from the
// CLI against a running serve acts on the index the serve delivers from.
//
// # Receipt handles
//
// A receipt handle encodes the queue id, the message's record and
// position, and a random nonce drawn at each receive. ChangeMessageVisibility
// accepts only the handle of the latest receive (ReceiptHandleIsInvalid
// otherwise). DeleteMessage on a standard queue deletes the message with
// any of its handles, as SQS does in practice; on a FIFO queue it needs
// the latest handle while the message is still in flight (SQS: "The
// receipt handle has expired").
//
// # Long polling
//
// There is no separate wait API: ReceiveMessage with WaitTimeSeconds (or
// the queue's ReceiveMessageWaitTimeSeconds) blocks, without polling,
// until a message is available (a send, an ended delay or visibility
// timeout, a ChangeMessageVisibility to 0, a delete that unblocks a FIFO
// group wakes it) or the wait ends on the engine clock. A waiting receive
// holds exactly one timer of the engine clock, armed on the earlier of
// the wait's end and the next delay or visibility end; whatever brings
// that next end forward (a shorter delay, receive or
// ChangeMessageVisibility) makes it re-arm, so a test on a fake clock
// knows it waits with BlockUntilContext. An event source mapping polls
// with WaitTimeSeconds 20, as Lambda does; GetQueueAttributes gives it the
// queue's VisibilityTimeout.
//
// # Concurrency
//
// Service.mu guards the map of loaded queues and the move tasks; each
// queue's mu guards its index and is held while the call's writes are
// published (so the writes of one subject reach JetStream in order), never
// while their acknowledgements are awaited. No goroutine holds two queue
// locks: redrive and move tasks release the source's lock before storing
// in the destination.
package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/lease"
)

const metaBucket = "runnel_queues"

// CacheBytes is the default budget, shared by the queues of a Service,
// for message bodies and attributes kept in memory. Messages beyond it
// are read back from JetStream when received.
const CacheBytes = 256 << 20

var (
	queueNameRE     = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,80}$`)
	fifoQueueNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,75}\.fifo$`)
	queueARNRE      = regexp.MustCompile(`^arn:aws[a-z-]*:sqs:[^:]*:[^:]*:([a-zA-Z0-9_-]{1,80}|[a-zA-Z0-9_-]{1,75}\.fifo)$`)
)

// Service is the SQS API over one engine. It is safe for concurrent use.
type Service struct {
	eng  *engine.Engine
	meta jetstream.KeyValue
	// deleted holds, per queue name, when DeleteQueue last deleted it
	// (deletedMarker): CreateQueue refuses the name for DeletedQueueWait.
	deleted jetstream.KeyValue
	log     *slog.Logger

	cacheBudget int64
	cached      atomic.Int64
	// expired counts the messages deleted by their queue's
	// MessageRetentionPeriod, by queue name (ExpiredMessages).
	expiredMu sync.Mutex
	expired   map[string]int64

	bg     context.Context // move tasks
	cancel context.CancelFunc

	mu      sync.Mutex
	queues  map[string]*queue // by name, loaded
	loading map[string]chan struct{}
	tasks   map[string]*moveTask // by handle
	bySrc   map[string][]*moveTask
	// moveTasks stores every source's tasks (movetask_store.go);
	// tasksLoaded is closed once this holder has read them back.
	moveTasks   jetstream.KeyValue
	tasksLoaded atomic.Pointer[chan struct{}]
	saveMu      sync.Mutex // orders the writes of moveTasks
	tasksWG     sync.WaitGroup

	// own is this process's hold on the queues (owner.go).
	own *lease.Owner
	// holdingHook, when set (tests only), answers mayAct.
	holdingHook func() bool
	// Tests only: staleReads makes direct gets of message bodies answer
	// "not found", as a follower that has not applied them; readFault,
	// when it returns an error, fails every read of a body with it.
	staleReads func() bool
	readFault  func() error
	// deleteHook, when set (tests only), runs in DeleteQueue once the
	// queue is marked deleted, before its metadata and stream go.
	deleteHook func()
}

// queueMeta is what "runnel_queues" stores per queue.
type queueMeta struct {
	Name         string            `json:"Name"`
	ID           string            `json:"RunnelID"`
	FIFO         bool              `json:"FifoQueue"`
	Created      int64             `json:"CreatedTimestamp"` // Unix s
	LastModified int64             `json:"LastModifiedTimestamp"`
	Attributes   map[string]string `json:"Attributes"`
	// Tags are the queue's cost allocation tags (tags.go).
	Tags map[string]string `json:"Tags,omitempty"`
	// LastPurge is when PurgeQueue last ran (Unix ms, engine clock): its
	// 60 s rule holds across a restart and a hand-over.
	LastPurge int64 `json:"RunnelLastPurge,omitempty"`
}

// queue is a loaded queue: its metadata, config and index.
type queue struct {
	svc    *Service
	name   string
	id     string
	fifo   bool
	arn    string
	stream string // JetStream stream name
	subj   string // "sqs.<id>."
	js     jetstream.Stream

	mu      sync.Mutex
	meta    queueMeta
	cfg     config
	deleted bool
	// moved is set with deleted when this process dropped the index
	// (owner.go: it lost the queues' lease, or found the index behind its
	// stream): calls answer errMoved and nothing more is written. Trap: a
	// receive parked on the index wakes and looks again; with moved set
	// alone it went on delivering from the dropped index, beside the new
	// one.
	moved     bool
	records   map[uint64]*record
	nextN     uint64
	ready     mheap
	timer     mheap
	exp       mheap
	groups    map[string]*group
	nVisible  int
	nDelayed  int
	nInflight int
	dirty     []*record
	// unsynced: records whose delete or visibility change was answered
	// with a storage error (applyBatch). A retry of a DeleteMessage whose
	// message is already gone from memory writes such a record again and
	// waits for it, instead of answering success with nothing stored.
	unsynced  map[uint64]*record
	nUnsynced atomic.Int32 // len(unsynced), read without q.mu
	// movedUnsynced: by receipt handle, the records of messages whose
	// MoveToDeadLetterQueue stored the copy but not the removal.
	movedUnsynced map[string]*record
	dedup         map[string]*dedupEntry
	dedupFIFO     []*dedupEntry // by sentAt, for pruning
	// attempts: the FIFO receives kept for a retry with their
	// ReceiveRequestAttemptId (receive_attempt.go), in this process only.
	attempts map[string]*receiveAttempt
	notify   chan struct{}
	waiters  int
	// armed is the latest due time (Unix ms; math.MaxInt64 for none) a
	// receive waiting on notify armed its timer on, 0 when none waits on
	// it: a message due before it must wake them (schedule).
	armed     int64
	lastPurge time.Time
}

// New opens the SQS service on eng. Queues are loaded on first use.
func New(ctx context.Context, eng *engine.Engine) (*Service, error) {
	var kv, deleted, tasks jetstream.KeyValue
	if err := eng.Buckets(ctx, map[string]*jetstream.KeyValue{metaBucket: &kv, deletedBucket: &deleted, moveTasksBucket: &tasks}); err != nil {
		return nil, err
	}
	bg, cancel := context.WithCancel(context.Background())
	s := &Service{
		eng: eng, meta: kv, deleted: deleted, log: eng.Logger.With("service", "queue"),
		cacheBudget: CacheBytes, bg: bg, cancel: cancel,
		queues: map[string]*queue{}, loading: map[string]chan struct{}{},
		tasks: map[string]*moveTask{}, bySrc: map[string][]*moveTask{},
		moveTasks: tasks,
	}
	s.own = s.newOwner()
	return s, nil
}

// ExpiredMessages is how many messages of queue name (every queue: "")
// this process has deleted because they outlived the queue's
// MessageRetentionPeriod, since it started. SQS deletes them without a
// trace; runnel also logs each (WARN "queue: message expired", with its
// queue, MessageId, SentTimestamp and ApproximateReceiveCount).
func (s *Service) ExpiredMessages(name string) int64 {
	s.expiredMu.Lock()
	defer s.expiredMu.Unlock()
	if name != "" {
		return s.expired[name]
	}
	var n int64
	for _, c := range s.expired {
		n += c
	}
	return n
}

// countExpired counts one message of queue name expired.
func (s *Service) countExpired(name string) {
	s.expiredMu.Lock()
	if s.expired == nil {
		s.expired = map[string]int64{}
	}
	s.expired[name]++
	s.expiredMu.Unlock()
}

// Close stops running message move tasks; their stored state stays
// RUNNING, and the next process to serve the queues resumes them
// (movetask_store.go). Queues need no closing: everything accepted is
// already in JetStream.
func (s *Service) Close() {
	s.cancel()
	s.tasksWG.Wait()
	s.own.Release()
}

// goneErr is the error of a call on q once deleted is set: errMoved
// when the index was dropped for another process, else QueueDoesNotExist.
func (q *queue) goneErr(ref string) error {
	if q.moved {
		return errMoved
	}
	return notExist(ref)
}

// ARN returns the queue ARN for name: arn:aws:sqs:<region>:<account>:<name>.
func (s *Service) ARN(name string) string {
	return fmt.Sprintf("arn:aws:sqs:%s:%s:%s", s.eng.Region(), s.eng.AccountID(), name)
}

// QueueURL returns the URL runnel gives queue name:
// http://sqs.<region>.localhost:4566/<account>/<name>. Every call that
// takes a queue URL also accepts the plain name or the queue ARN.
func (s *Service) QueueURL(name string) string {
	return fmt.Sprintf("http://sqs.%s.localhost:4566/%s/%s", s.eng.Region(), s.eng.AccountID(), name)
}

// NameFromARN returns the queue name of an SQS queue ARN, or false.
func NameFromARN(arn string) (string, bool) {
	m := queueARNRE.FindStringSubmatch(arn)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// nameOf returns the queue name of a URL, ARN or name.
func nameOf(ref string) (string, bool) {
	if strings.HasPrefix(ref, "arn:") {
		return NameFromARN(ref)
	}
	if i := strings.LastIndexByte(strings.TrimSuffix(ref, "/"), '/'); i >= 0 {
		ref = strings.TrimSuffix(ref, "/")[i+1:]
	}
	return ref, queueNameRE.MatchString(ref) || fifoQueueNameRE.MatchString(ref)
}

func notExist(ref string) error {
	return awserr.New(awserr.ErrQueueDoesNotExist, "The specified queue %s does not exist.", ref)
}

func jsName(id string) string { return "SQS_" + id }

func (s *Service) streamConfig(m *queueMeta) jetstream.StreamConfig {
	ret := time.Duration(atoi(attr(m.Attributes, AttrMessageRetentionPeriod))) * time.Second
	return jetstream.StreamConfig{
		Name:              jsName(m.ID),
		Description:       "runnel queue " + m.Name,
		Subjects:          []string{"sqs." + m.ID + ".>"},
		Storage:           jetstream.FileStorage,
		Retention:         jetstream.LimitsPolicy,
		MaxMsgsPerSubject: 1,
		MaxAge:            ret + time.Minute,
		AllowMsgTTL:       true,
		AllowDirect:       true,
		Replicas:          s.eng.Replicas(),
		Discard:           jetstream.DiscardOld,
	}
}

// CreateQueue creates a queue and returns its URL (API_CreateQueue). A
// queue is FIFO when attributes has FifoQueue "true"; its name must then
// end in ".fifo" (and only then). Names are 1..80 characters of
// [a-zA-Z0-9_-] (".fifo" included for FIFO queues). Attributes are
// checked against their ranges (see the Attr* constants and
// SetQueueAttributes): awserr.ErrInvalidAttributeValue names the attribute and
// range, awserr.ErrInvalidAttributeName an unknown one. If the queue exists,
// CreateQueue returns its URL when every given attribute has the queue's
// value, and awserr.ErrQueueNameExists otherwise. A name whose queue was
// deleted less than 60 s before is awserr.ErrQueueDeletedRecently.
func (s *Service) CreateQueue(ctx context.Context, name string, attributes map[string]string) (string, error) {
	return s.CreateQueueWithTags(ctx, name, attributes, nil)
}

// CreateQueueWithTags is CreateQueue with the new queue's tags (checked
// as TagQueue checks them). The tags of an existing queue are left as
// they are: CreateQueue compares attributes only.
func (s *Service) CreateQueueWithTags(ctx context.Context, name string, attributes, tags map[string]string) (string, error) {
	var url string
	if remote, err := s.forward(ctx, "CreateQueue", lease.Triple(name, attributes, tags), &url); remote {
		return url, err
	}
	return s.createQueue(ctx, name, attributes, tags, true)
}

// EnsureQueue is CreateQueue for the queues runnel keeps for itself (a
// function's asynchronous events, the targets' deliveries, a topic's
// messages, the built-in dead-letter stores): a name deleted less than 60 s
// before is created again at once. Under CreateQueue's rule the service
// that needs the queue would refuse its callers for a minute.
func (s *Service) EnsureQueue(ctx context.Context, name string, attributes map[string]string) (string, error) {
	var url string
	if remote, err := s.forward(ctx, "EnsureQueue", lease.Pair(name, attributes), &url); remote {
		return url, err
	}
	return s.createQueue(ctx, name, attributes, nil, false)
}

// createQueue is CreateQueueWithTags in the queues' holder; with
// deletedWait, a name deleted less than DeletedQueueWait before is
// refused.
func (s *Service) createQueue(ctx context.Context, name string, attributes, tags map[string]string, deletedWait bool) (string, error) {
	if err := checkTags(name, tags); err != nil {
		return "", err
	}
	fifo := strings.EqualFold(attributes[AttrFifoQueue], "true")
	if fifo && !fifoQueueNameRE.MatchString(name) {
		return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Can not create queue %q: the name of a FIFO queue can only include alphanumeric characters, hyphens, or underscores, must end with .fifo suffix and be 1 to 80 in length.", name)
	}
	if !fifo && !queueNameRE.MatchString(name) {
		if fifoQueueNameRE.MatchString(name) {
			return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Can not create queue %q: a name ending in .fifo needs the attribute FifoQueue=true.", name)
		}
		return "", awserr.New(awserr.ErrSQSInvalidParameterValue, "Can not create queue %q: queue names can only include alphanumeric characters, hyphens, or underscores, 1 to 80 in length.", name)
	}
	attrs, err := validateAttributes(attributes, fifo, true)
	if err != nil {
		return "", err
	}
	if err := checkThroughputScope(attrs); fifo && err != nil {
		return "", err
	}
	delete(attrs, AttrFifoQueue)
	if err := s.checkRedrive(ctx, name, fifo, attrs[AttrRedrivePolicy]); err != nil {
		return "", err
	}
	if q, err := s.queue(ctx, name); err == nil {
		return s.sameQueue(q, fifo, attrs)
	} else if !errors.Is(err, awserr.ErrQueueDoesNotExist) {
		return "", err
	}
	if err := s.checkDeletedRecently(ctx, name); deletedWait && err != nil {
		return "", err
	}
	now := s.eng.Clock.Now().Unix()
	meta := queueMeta{Name: name, ID: nuid.Next(), FIFO: fifo, Created: now, LastModified: now, Attributes: attrs, Tags: tags}
	for k, v := range attrs {
		if v == "" { // an empty policy means none
			delete(attrs, k)
		}
	}
	b, _ := json.Marshal(meta)
	if _, err := s.meta.Create(ctx, name, b); err != nil {
		if errors.Is(err, jetstream.ErrKeyExists) {
			q, lerr := s.queue(ctx, name)
			if lerr != nil {
				return "", lerr
			}
			return s.sameQueue(q, fifo, attrs)
		}
		return "", awserr.New(awserr.ErrInternal, "create queue %s: %v", name, err)
	}
	if _, err := s.eng.CreateOrUpdateStream(ctx, s.streamConfig(&meta)); err != nil {
		return "", awserr.New(awserr.ErrInternal, "create queue %s: %v", name, err)
	}
	return s.QueueURL(name), nil
}

// sameQueue is CreateQueue on an existing queue.
func (s *Service) sameQueue(q *queue, fifo bool, attrs map[string]string) (string, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.meta.FIFO != fifo {
		return "", awserr.New(awserr.ErrQueueNameExists, "A queue already exists with the same name and a different value for attribute FifoQueue")
	}
	for k, v := range attrs {
		if attr(q.meta.Attributes, k) != v {
			return "", awserr.New(awserr.ErrQueueNameExists, "A queue already exists with the same name and a different value for attribute %s", k)
		}
	}
	return s.QueueURL(q.name), nil
}

// checkRedrive checks a RedrivePolicy about to be set on queue name: the
// dead-letter queue exists, is of the same type, is not the queue itself,
// and its RedriveAllowPolicy admits the source.
func (s *Service) checkRedrive(ctx context.Context, name string, fifo bool, policy string) error {
	if policy == "" {
		return nil
	}
	p, _ := ParseRedrivePolicy(policy)
	dlqName, _ := NameFromARN(p.DeadLetterTargetArn)
	if dlqName == name {
		return awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter RedrivePolicy. Reason: a queue can't be its own dead-letter queue.")
	}
	dlq, err := s.queue(ctx, p.DeadLetterTargetArn)
	if err != nil {
		if errors.Is(err, awserr.ErrQueueDoesNotExist) {
			return awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter RedrivePolicy. Reason: Dead letter target does not exist: %s.", p.DeadLetterTargetArn)
		}
		return err
	}
	dlq.mu.Lock()
	dfifo, allow := dlq.fifo, dlq.cfg.redriveAllow
	dlq.mu.Unlock()
	if dfifo != fifo {
		return awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter RedrivePolicy. Reason: the dead-letter queue of a %s queue must also be a %s queue.", kind(fifo), kind(fifo))
	}
	if !allow.allows(s.ARN(name)) {
		return awserr.New(awserr.ErrInvalidAttributeValue, "Invalid value for the parameter RedrivePolicy. Reason: the RedriveAllowPolicy of %s does not allow %s as a source queue.", dlqName, name)
	}
	return nil
}

func kind(fifo bool) string {
	if fifo {
		return "FIFO"
	}
	return "standard"
}

// GetQueueURL returns the URL of queue name, or awserr.ErrQueueDoesNotExist.
func (s *Service) GetQueueURL(ctx context.Context, name string) (string, error) {
	if _, err := s.loadMeta(ctx, name); err != nil {
		return "", err
	}
	return s.QueueURL(name), nil
}

// ListQueues returns the URLs of the queues whose names start with
// prefix (all with ""), sorted, every one of them. API_ListQueues'
// answer of at most 1000 without MaxResults is the endpoint's to cut
// (with MaxResults, NextToken pages through them all).
func (s *Service) ListQueues(ctx context.Context, prefix string) ([]string, error) {
	keys, err := s.meta.Keys(ctx)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoKeysFound) {
			return nil, nil
		}
		return nil, awserr.New(awserr.ErrInternal, "list queues: %v", err)
	}
	sort.Strings(keys)
	var out []string
	for _, k := range keys {
		if strings.HasPrefix(k, prefix) {
			out = append(out, s.QueueURL(k))
		}
	}
	return out, nil
}

// DeleteQueue deletes a queue and all its messages (API_DeleteQueue).
// Receives waiting on it return awserr.ErrQueueDoesNotExist; running move tasks
// from it fail. CreateQueue refuses the name with
// awserr.ErrQueueDeletedRecently for DeletedQueueWait (60 s, engine clock)
// afterwards, in every process on the engine.
func (s *Service) DeleteQueue(ctx context.Context, queueURL string) error {
	if remote, err := s.forward(ctx, "DeleteQueue", queueURL, nil); remote {
		return err
	}
	q, err := s.queue(ctx, queueURL)
	if err != nil {
		return err
	}
	q.mu.Lock()
	q.deleted = true
	for _, rec := range q.records {
		for _, m := range rec.msgs {
			q.releasePayload(m)
		}
	}
	q.records = map[uint64]*record{}
	q.wake()
	name, id := q.name, q.id
	q.mu.Unlock()
	// The deleted index stays this name's until the metadata and the
	// stream are gone: a call meanwhile finds it and answers
	// QueueDoesNotExist. Forgotten first, it let a concurrent call load a
	// new index from the metadata and stream still there, which outlived
	// them: a send after the deletion then went to the deleted stream
	// ("no response from stream") instead of QueueDoesNotExist.
	defer func() {
		s.mu.Lock()
		if s.queues[name] == q {
			delete(s.queues, name)
		}
		s.mu.Unlock()
	}()
	if h := s.deleteHook; h != nil {
		h()
	}
	// The marker before the metadata: deleted, the name is free, and a
	// CreateQueue must find the marker by then. A marker left by a failed
	// deletion is harmless: CreateQueue finds the queue first.
	b, _ := json.Marshal(deletedMarker{At: s.eng.Clock.Now().UnixMilli()})
	if _, err := s.deleted.Put(ctx, name, b); err != nil {
		return awserr.New(awserr.ErrInternal, "delete queue %s: %v", name, err)
	}
	// Metadata first: a later load must not find it and re-create the
	// stream.
	if err := s.meta.Purge(ctx, name); err != nil {
		return awserr.New(awserr.ErrInternal, "delete queue %s: %v", name, err)
	}
	if err := s.eng.JS.DeleteStream(ctx, jsName(id)); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return awserr.New(awserr.ErrInternal, "delete queue %s: %v", name, err)
	}
	s.forgetTasks(ctx, name)
	return nil
}

// loadMeta reads a queue's metadata from the bucket.
func (s *Service) loadMeta(ctx context.Context, ref string) (*queueMeta, error) {
	name, ok := nameOf(ref)
	if !ok {
		return nil, notExist(ref)
	}
	e, err := s.meta.Get(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, notExist(ref)
		}
		return nil, awserr.New(awserr.ErrInternal, "read queue %s: %v", name, err)
	}
	var m queueMeta
	if err := json.Unmarshal(e.Value(), &m); err != nil {
		return nil, awserr.New(awserr.ErrInternal, "queue %s: bad metadata: %v", name, err)
	}
	if m.Attributes == nil {
		m.Attributes = map[string]string{}
	}
	return &m, nil
}

// liveQueue is queue, returned locked (q.mu held: the caller unlocks it);
// a queue deleted since it was found is not locked but answered with its
// gone error (goneErr: the queue does not exist, or moved).
func (s *Service) liveQueue(ctx context.Context, ref string) (*queue, error) {
	q, err := s.queue(ctx, ref)
	if err != nil {
		return nil, err
	}
	q.mu.Lock()
	if q.deleted {
		q.mu.Unlock()
		return nil, q.goneErr(ref)
	}
	return q, nil
}

// queue returns the loaded queue that ref (URL, ARN or name) names,
// loading it from JetStream on first use.
func (s *Service) queue(ctx context.Context, ref string) (*queue, error) {
	name, ok := nameOf(ref)
	if !ok {
		return nil, notExist(ref)
	}
	for {
		s.mu.Lock()
		if q, ok := s.queues[name]; ok {
			s.mu.Unlock()
			return q, nil
		}
		if ch, ok := s.loading[name]; ok {
			s.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		ch := make(chan struct{})
		s.loading[name] = ch
		s.mu.Unlock()
		q, err := s.load(ctx, ref)
		s.mu.Lock()
		delete(s.loading, name)
		if err == nil {
			s.queues[name] = q
		}
		close(ch)
		s.mu.Unlock()
		return q, err
	}
}
