package eventbus

// Archives (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-archive.html):
// CreateArchive, DescribeArchive, ListArchives, DeleteArchive. An archive
// keeps the events put on its bus that match its EventPattern (all when
// none), RetentionDays days by ingestion time on the engine's clock (0:
// for ever); replayed events are never archived. Every process of a
// cluster holds every archive (its watch of runnel_event_archives,
// watch.go), so an archive keeps the events put through any node, and
// EventCount, read from the stream's leader, counts them all (SizeBytes
// is 0: the stream does not size a subject).
//
// Replays (https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-replay-archived-event.html):
// StartReplay sends the archived events whose time is in
// [EventStartTime, EventEndTime) to the rules of the archive's own bus
// (Destination.FilterArns: only those rules), each with the top-level
// field "replay-name"; they are not archived again. States STARTING →
// RUNNING → COMPLETED, or CANCELLING → CANCELLED, FAILED. Progress (the
// archive sequence reached) is stored, so a replay that a stop
// interrupted resumes where it was at the next New.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/mapping/filter"
)

const (
	archiveStream        = "RUNNEL_EB_ARCHIVE"
	archiveSubjectPrefix = "ebarchive."
	// hdrIngested is an archived event's ingestion time (Unix ms, engine
	// clock); hdrTime its event time.
	hdrIngested = "Runnel-Ingested"
	hdrTime     = "Runnel-Event-Time"
)

// Archive is an archive (API_DescribeArchive's fields).
type Archive struct {
	ArchiveName    string
	ArchiveArn     string
	EventSourceArn string
	Description    string `json:",omitempty"`
	EventPattern   string `json:",omitempty"`
	// RetentionDays: 0 (default) keeps events for ever.
	RetentionDays int
	State         string
	// EventCount and SizeBytes are read at Describe time.
	EventCount   int64
	SizeBytes    int64
	CreationTime time.Time `json:"-"`
	// ID names the archive's subject.
	ID      string `json:"Id"`
	Created int64
}

var archiveNameRE = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,48}$`)

// ArchiveARN returns an archive's ARN.
func (s *Service) ArchiveARN(name string) string {
	return "arn:aws:events:" + s.eng.Region() + ":" + s.eng.AccountID() + ":archive/" + name
}

// lastSegment returns the name of a name or ARN (after the last '/').
func lastSegment(ref string) string {
	if strings.HasPrefix(ref, "arn:") {
		return ref[strings.LastIndexByte(ref, '/')+1:]
	}
	return ref
}

// CreateArchive creates an archive of a bus (API_CreateArchive). Errors:
// ErrValidation (name 1..48 of [.\-_A-Za-z0-9], RetentionDays >= 0),
// ErrInvalidEventPattern, ErrResourceNotFound (bus),
// ErrResourceAlreadyExists.
func (s *Service) CreateArchive(ctx context.Context, a Archive) (*Archive, error) {
	if !archiveNameRE.MatchString(a.ArchiveName) {
		return nil, invalid("1 validation error detected: Value '%s' at 'archiveName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ (1..48 characters)", a.ArchiveName)
	}
	if a.RetentionDays < 0 {
		return nil, invalid("1 validation error detected: Value '%d' at 'retentionDays' failed to satisfy constraint: Member must have value greater than or equal to 0", a.RetentionDays)
	}
	if a.EventPattern != "" {
		if _, err := filter.CompileEventPattern(a.EventPattern); err != nil {
			return nil, err
		}
	}
	bus := BusName(a.EventSourceArn)
	if _, err := s.busOf(bus); err != nil {
		return nil, err
	}
	a.EventSourceArn, a.ArchiveArn, a.State = s.ARN(bus), s.ArchiveARN(a.ArchiveName), Enabled
	a.ID, a.Created = strings.ReplaceAll(uuid.NewString(), "-", ""), s.eng.Clock.Now().UnixMilli()
	data, _ := json.Marshal(a)
	rev, err := s.archKV.Create(ctx, a.ArchiveName, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, awserr.New(awserr.ErrResourceAlreadyExists, "Archive %s already exists.", a.ArchiveName)
	} else if err != nil {
		return nil, err
	}
	s.cacheArchive(a, rev)
	s.wake() // its retention may start the trim timer
	return &a, nil
}

// loadArchives reads the stored archives into memory (at revision 0:
// the watch of the bucket, watch.go, replaces them with what it
// reads, and keeps them up to date).
func (s *Service) loadArchives(ctx context.Context) error {
	return engine.LoadJSON(ctx, s.archKV, func(k string, a Archive, err error) {
		if err != nil {
			s.log.Warn("unreadable archive ignored", "archive", k, "err", err)
			return
		}
		s.cacheArchive(a, 0)
	})
}

// cachedArchive is an archive with its compiled pattern (nil: all) and
// the revision of its entry in the archives bucket. gone marks an archive
// this process deleted, until the watch brings the deletion (its older
// entries are skipped meanwhile, and it archives nothing).
type cachedArchive struct {
	a    Archive
	m    *filter.Matcher
	rev  uint64
	gone bool
}

// cacheArchive holds a as of revision rev (0: loaded at start).
func (s *Service) cacheArchive(a Archive, rev uint64) {
	c := cachedArchive{a: a, rev: rev}
	if a.EventPattern != "" {
		var err error
		if c.m, err = filter.CompileEventPattern(a.EventPattern); err != nil {
			// Stored before a stricter check (mapping/filter): the archive
			// keeps every event of its bus rather than none.
			s.log.Warn("eventbridge: an archive's stored EventPattern no longer compiles; it archives every event of its bus",
				"archive", a.ArchiveName, "err", err)
		}
	}
	s.mu.Lock()
	// Not over a newer state (a write of this process, applied while
	// the watch read an older entry).
	if old, ok := s.arch[a.ArchiveName]; !ok || old.rev == 0 || rev > old.rev {
		s.arch[a.ArchiveName] = c
	}
	s.mu.Unlock()
}

// archives returns the archives (of one bus's ARN when busArn is not
// empty), in name order.
func (s *Service) archives(busArn string) []cachedArchive {
	s.mu.Lock()
	var out []cachedArchive
	for _, c := range s.arch {
		if !c.gone && (busArn == "" || c.a.EventSourceArn == busArn) {
			out = append(out, c)
		}
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].a.ArchiveName < out[j].a.ArchiveName })
	return out
}

// DescribeArchive returns an archive with its event count and size.
func (s *Service) DescribeArchive(ctx context.Context, name string) (*Archive, error) {
	a, err := s.archive1(ctx, lastSegment(name))
	if err != nil {
		return nil, err
	}
	info, err := s.archive.Info(ctx, jetstream.WithSubjectFilter(archiveSubjectPrefix+a.ID))
	if err == nil {
		a.EventCount = int64(info.State.Subjects[archiveSubjectPrefix+a.ID])
	}
	a.CreationTime = time.UnixMilli(a.Created).UTC()
	return a, nil
}

func (s *Service) archive1(ctx context.Context, name string) (*Archive, error) {
	a, _, err := s.archive1Rev(ctx, name)
	return a, err
}

// archive1Rev reads a stored archive and the revision of its entry.
func (s *Service) archive1Rev(ctx context.Context, name string) (*Archive, uint64, error) {
	e, err := s.archKV.Get(ctx, name)
	if err != nil {
		return nil, 0, notFound("Archive %s does not exist.", name)
	}
	var a Archive
	if err := json.Unmarshal(e.Value(), &a); err != nil {
		return nil, 0, err
	}
	return &a, e.Revision(), nil
}

// ListArchives lists archives by name prefix and source bus ARN.
func (s *Service) ListArchives(prefix, busArn string) []Archive {
	var out []Archive
	for _, c := range s.archives(busArn) {
		if a := c.a; strings.HasPrefix(a.ArchiveName, prefix) {
			a.CreationTime = time.UnixMilli(a.Created).UTC()
			out = append(out, a)
		}
	}
	return out
}

// DeleteArchive deletes an archive and its events. Every process stops
// archiving into it when its watch brings the deletion, and purges its
// events again then (watch.go): events another process archived
// meanwhile are not left behind.
func (s *Service) DeleteArchive(ctx context.Context, name string) error {
	var a *Archive
	var rev uint64
	for try := 0; ; try++ {
		var err error
		if a, rev, err = s.archive1Rev(ctx, lastSegment(name)); err != nil {
			return err
		}
		// Only the archive read: one deleted and made again meanwhile,
		// through another process, is not deleted with the old one's
		// events.
		err = s.archKV.Delete(ctx, a.ArchiveName, jetstream.LastRevision(rev))
		if err == nil {
			break
		}
		if try == 2 {
			return err
		}
	}
	s.mu.Lock()
	if c := s.arch[a.ArchiveName]; c.rev <= rev {
		s.arch[a.ArchiveName] = cachedArchive{a: *a, rev: rev, gone: true}
	}
	s.mu.Unlock()
	return s.archive.Purge(ctx, jetstream.WithPurgeSubject(archiveSubjectPrefix+a.ID))
}

// archiveEvent stores an event in each archive of its bus that matches it.
func (s *Service) archiveEvent(ctx context.Context, bus string, ev map[string]any, raw []byte, now time.Time) error {
	for _, c := range s.archives(s.ARN(bus)) {
		a := c.a
		if c.m != nil && !c.m.Match(ev) {
			continue
		}
		// An event's time is set by PutEvents; an event put by a bus target
		// is made whole by busEvent. A missing or bad one is archived as
		// now (a type assertion here once panicked, in a loop across
		// restarts, on a transformed payload).
		ts, _ := ev["time"].(string)
		t, err := time.Parse(time.RFC3339, ts)
		if err != nil {
			t = now
		}
		msg := &nats.Msg{Subject: archiveSubjectPrefix + a.ID, Data: raw, Header: nats.Header{}}
		msg.Header.Set(hdrIngested, strconv.FormatInt(now.UnixMilli(), 10))
		msg.Header.Set(hdrTime, strconv.FormatInt(t.UnixMilli(), 10))
		if _, err := s.eng.JS.PublishMsg(ctx, msg); err != nil {
			return err
		}
	}
	return nil
}

// trimInterval is how often archives are trimmed to their retention.
const trimInterval = time.Hour

// retained reports whether an archive keeps its events for a limited
// time (RetentionDays > 0).
func (s *Service) retained() bool {
	for _, c := range s.archives("") {
		if c.a.RetentionDays > 0 {
			return true
		}
	}
	return false
}

// trimArchives deletes the archived events older than their archive's
// RetentionDays (by ingestion time, engine clock).
func (s *Service) trimArchives(ctx context.Context, now time.Time) {
	for _, c := range s.archives("") {
		if c.a.RetentionDays <= 0 {
			continue
		}
		cutoff := now.Add(-time.Duration(c.a.RetentionDays) * 24 * time.Hour)
		subject := archiveSubjectPrefix + c.a.ID
		if err := s.trimSubject(ctx, subject, cutoff); err != nil {
			s.log.Warn("eventbridge: archive not trimmed", "archive", c.a.ArchiveName, "err", err)
		}
	}
}

// trimSubject purges the messages of subject ingested before cutoff (in
// ingestion order: they are the first ones).
func (s *Service) trimSubject(ctx context.Context, subject string, cutoff time.Time) error {
	last, err := s.archive.GetLastMsgForSubject(ctx, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	cons, err := s.archive.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject}})
	if err != nil {
		return err
	}
	keep := uint64(0) // the first sequence to keep
	for keep == 0 {
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if err != nil {
			return err
		}
		meta, err := msg.Metadata()
		if err != nil {
			return err
		}
		ing, _ := strconv.ParseInt(msg.Headers().Get(hdrIngested), 10, 64)
		switch {
		case !time.UnixMilli(ing).Before(cutoff):
			keep = meta.Sequence.Stream
		case meta.Sequence.Stream >= last.Sequence:
			keep = last.Sequence + 1
		}
	}
	return s.archive.Purge(ctx, jetstream.WithPurgeSubject(subject), jetstream.WithPurgeSequence(keep))
}

// Replay states.
const (
	ReplayStarting   = "STARTING"
	ReplayRunning    = "RUNNING"
	ReplayCancelling = "CANCELLING"
	ReplayCompleted  = "COMPLETED"
	ReplayCancelled  = "CANCELLED"
	ReplayFailed     = "FAILED"
)

// ReplayDestination is where a replay sends events: the archive's own bus
// (Arn), optionally only some of its rules (FilterArns).
type ReplayDestination struct {
	Arn        string
	FilterArns []string `json:",omitempty"`
}

// Replay is a replay (API_DescribeReplay's fields; times as Unix seconds
// on the wire, see awsapi).
type Replay struct {
	ReplayName            string
	ReplayArn             string
	Description           string `json:",omitempty"`
	EventSourceArn        string
	Destination           ReplayDestination
	State                 string
	StateReason           string `json:",omitempty"`
	EventStartTime        time.Time
	EventEndTime          time.Time
	EventLastReplayedTime time.Time
	ReplayStartTime       time.Time
	ReplayEndTime         time.Time
	// Seq is the last archive sequence replayed (runnel's progress).
	Seq uint64
}

var replayNameRE = regexp.MustCompile(`^[\.\-_A-Za-z0-9]{1,64}$`)

// StartReplay starts a replay (API_StartReplay) and returns it in state
// STARTING. Errors: ErrValidation (name 1..64, EventStartTime before
// EventEndTime, a destination other than the archive's bus: "Cross event
// bus replay is not permitted."), ErrResourceNotFound (archive),
// ErrResourceAlreadyExists (name).
func (s *Service) StartReplay(ctx context.Context, r Replay) (*Replay, error) {
	if !replayNameRE.MatchString(r.ReplayName) {
		return nil, invalid("1 validation error detected: Value '%s' at 'replayName' failed to satisfy constraint: Member must satisfy regular expression pattern: [\\.\\-_A-Za-z0-9]+ (1..64 characters)", r.ReplayName)
	}
	if !r.EventStartTime.Before(r.EventEndTime) {
		return nil, invalid("Parameter EventStartTime is not valid. Reason: EventStartTime must be before EventEndTime.")
	}
	a, err := s.archive1(ctx, lastSegment(r.EventSourceArn))
	if err != nil {
		return nil, err
	}
	if BusName(r.Destination.Arn) != BusName(a.EventSourceArn) {
		return nil, invalid("Parameter Destination.Arn is not valid. Reason: Cross event bus replay is not permitted.")
	}
	r.EventSourceArn, r.Destination.Arn = a.ArchiveArn, a.EventSourceArn
	r.ReplayArn = "arn:aws:events:" + s.eng.Region() + ":" + s.eng.AccountID() + ":replay/" + r.ReplayName
	r.State, r.ReplayStartTime = ReplayStarting, s.eng.Clock.Now().UTC()
	data, _ := json.Marshal(r)
	_, err = s.replayKV.Create(ctx, r.ReplayName, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, awserr.New(awserr.ErrResourceAlreadyExists, "Replay %s already exists.", r.ReplayName)
	}
	if err != nil {
		return nil, err
	}
	// The holder of the lease ReplayLease, in this process or another,
	// sees the new replay in the bucket and runs it (replay_lease.go).
	return &r, nil
}

// saveReplay stores r with a compare-and-set on *rev, the revision this
// runner wrote last. When the stored replay was written since, it is read:
// a CancelReplay (state CANCELLING, its progress not past r's) is taken
// in (r.State becomes CANCELLING, *rev the stored revision) and
// errReplayCancelSeen returned: the caller may save again. Any other
// write is another runner's: errReplayTaken, and the caller stops without
// writing. Other errors (the store not answering) are returned as they
// are; the caller stops too (its supervisor starts it again from the
// stored state).
func (s *Service) saveReplay(ctx context.Context, r *Replay, rev *uint64) error {
	data, _ := json.Marshal(r)
	n, err := s.replayKV.Update(ctx, r.ReplayName, data, *rev)
	if err == nil {
		*rev = n
		return nil
	}
	e, gerr := s.replayKV.Get(ctx, r.ReplayName)
	if errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted) {
		return errReplayTaken // deleted: nobody runs it
	}
	if gerr != nil {
		return fmt.Errorf("saving replay %s: %w (reading it back: %v)", r.ReplayName, err, gerr)
	}
	if e.Revision() == *rev {
		return fmt.Errorf("saving replay %s: %w", r.ReplayName, err) // not a conflict
	}
	var cur Replay
	if json.Unmarshal(e.Value(), &cur) == nil && cur.State == ReplayCancelling && cur.Seq <= r.Seq {
		r.State = ReplayCancelling
		*rev = e.Revision()
		return errReplayCancelSeen
	}
	return errReplayTaken
}

// runReplay sends the archive's events in the replay's time range to the
// bus, in archive order, storing progress after each event.
func (s *Service) runReplay(ctx context.Context, r Replay, rev uint64) {
	a, err := s.archive1(ctx, lastSegment(r.EventSourceArn))
	// taken logs that the replay's record was written by another runner:
	// this one stops.
	taken := func(err error) {
		if errors.Is(err, errReplayTaken) {
			s.log.Info("replay: another process runs it now; this one stops", "replay", r.ReplayName, "seq", r.Seq)
		} else {
			s.log.Warn("replay: its progress could not be saved; it starts again from the saved progress", "replay", r.ReplayName, "err", err)
		}
	}
	finish := func(state, reason string) {
		// The state is set before each try: a save that finds a
		// CancelReplay sets CANCELLING and may be tried again.
		for i := 0; i < 3; i++ {
			r.State, r.StateReason, r.ReplayEndTime = state, reason, s.eng.Clock.Now().UTC()
			err := s.saveReplay(context.WithoutCancel(ctx), &r, &rev)
			if err == nil {
				return
			}
			if errors.Is(err, errReplayTaken) {
				taken(err)
				return
			}
		}
		s.log.Error("replay: its final state could not be saved", "replay", r.ReplayName, "state", state)
	}
	if err != nil {
		finish(ReplayFailed, "the archive no longer exists")
		return
	}
	if r.State == ReplayStarting {
		r.State = ReplayRunning
		if err := s.saveReplay(ctx, &r, &rev); err != nil && !errors.Is(err, errReplayCancelSeen) {
			taken(err)
			return
		}
	}
	only := map[string]bool{}
	for _, arn := range r.Destination.FilterArns {
		only[arn] = true
	}
	subject := archiveSubjectPrefix + a.ID
	// The last archived event, from the archive stream's leader: a direct
	// get may be answered by a replica behind it, and the replay would
	// end before the latest events.
	last, err := s.eng.LeaderLastMsg(ctx, archiveStream, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		finish(ReplayCompleted, "")
		return
	} else if err != nil {
		finish(ReplayFailed, err.Error())
		return
	}
	cutoff := time.Time{}
	if a.RetentionDays > 0 {
		cutoff = s.eng.Clock.Now().Add(-time.Duration(a.RetentionDays) * 24 * time.Hour)
	}
	cons, err := s.archive.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subject},
		DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: r.Seq + 1})
	if err != nil {
		finish(ReplayFailed, err.Error())
		return
	}
	for r.Seq < last.Sequence {
		if r.State == ReplayCancelling {
			finish(ReplayCancelled, "")
			return
		}
		msg, err := cons.Next(jetstream.FetchMaxWait(time.Second))
		if ctx.Err() != nil {
			return // stopped (Close, or the lease lost): resumed by the lease's next holder
		}
		if err != nil {
			if !errors.Is(err, nats.ErrTimeout) && !errors.Is(err, jetstream.ErrNoMessages) {
				s.log.Warn("replay: reading the archive failed; trying again", "replay", r.ReplayName, "err", err)
			}
			// Nothing came: the events left may be gone (the archive
			// deleted or trimmed), or the replay cancelled. Before, the
			// loop waited for them for ever, and a cancel was seen only
			// after the next replayed event: the replay stayed RUNNING or
			// CANCELLING until a restart.
			if state, reason, done := s.replayStalled(ctx, &r, a.ID, subject); done {
				finish(state, reason)
				return
			}
			continue
		}
		meta, err := msg.Metadata()
		if err != nil {
			continue
		}
		if err := s.replayOneRetried(ctx, &r, a.ID, msg, cutoff, only); err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, errReplayCancelledWhileRetrying) {
				finish(ReplayCancelled, "")
				return
			}
			finish(ReplayFailed, err.Error())
			return
		}
		r.Seq = meta.Sequence.Stream
		// A cancel seen here ends the replay at the loop's top, saving
		// this progress with it.
		if err := s.saveReplay(ctx, &r, &rev); err != nil && !errors.Is(err, errReplayCancelSeen) {
			if ctx.Err() == nil {
				taken(err)
			}
			return
		}
		if f := replayStepped.Load(); f != nil {
			(*f)(r.ReplayName)
		}
	}
	finish(ReplayCompleted, "")
}

// replayStepped, set by tests, runs after each archived event a replay
// has read and saved.
var replayStepped atomic.Pointer[func(replay string)]

// replayStalled decides, when a replay's next archived event does not
// come, whether the replay is over: cancelled (its stored state is
// CANCELLING), failed (its archive, of id archiveID, was deleted), or
// completed (no event past r.Seq is left on the archive's subject:
// trimmed by retention). A failed check says not over.
func (s *Service) replayStalled(ctx context.Context, r *Replay, archiveID, subject string) (state, reason string, done bool) {
	if e, err := s.replayKV.Get(ctx, r.ReplayName); err == nil {
		var cur Replay
		if json.Unmarshal(e.Value(), &cur) == nil && cur.State == ReplayCancelling {
			return ReplayCancelled, "", true
		}
	}
	e, err := s.archKV.Get(ctx, lastSegment(r.EventSourceArn))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return ReplayFailed, "the archive no longer exists", true
	}
	if err == nil {
		var a Archive
		if json.Unmarshal(e.Value(), &a) == nil && a.ID != archiveID {
			return ReplayFailed, "the archive no longer exists", true // deleted, and another made with its name
		}
	}
	last, err := s.eng.LeaderLastMsg(ctx, archiveStream, subject)
	if errors.Is(err, jetstream.ErrMsgNotFound) || (err == nil && last.Sequence <= r.Seq) {
		return ReplayCompleted, "", true
	}
	return "", "", false
}

// Backoff of a replayed event whose sending failed with a retryable
// error: replayRetryFirst, doubled after each failure up to
// replayRetryMax, on the engine's clock.
const (
	replayRetryFirst = time.Second
	replayRetryMax   = 30 * time.Second
)

// errReplayCancelledWhileRetrying: a CancelReplay was stored while the
// replay waited to send an event again.
var errReplayCancelledWhileRetrying = errors.New("replay cancelled while retrying")

// replayOneRetried is replayOne, tried again while it fails with a
// retryable error (awserr.IsRetryable: an InternalFailure of the target
// or internal deliveries queue, a store timeout during an election),
// after a backoff on the engine's clock (1 s, doubled up to 30 s), for as
// long as ctx lasts (the replay's lease held, the service open). Between
// tries it reads the replay's and the archive's records: a CancelReplay
// ends it with errReplayCancelledWhileRetrying, a deleted archive with an
// error (FAILED). A non-retryable error (the bus deleted, an unreadable
// event's routing refused) is returned at once: the replay ends FAILED.
// Before, any failure ended the replay FAILED, and the user had to start
// a new one, which sent again what the first had sent. A retried event
// may reach a target it had reached before the failure (at least once).
func (s *Service) replayOneRetried(ctx context.Context, r *Replay, archiveID string, msg jetstream.Msg, cutoff time.Time, only map[string]bool) error {
	backoff := replayRetryFirst
	for {
		err := s.replayOne(ctx, r, msg, cutoff, only)
		if err == nil || !awserr.IsRetryable(err) || ctx.Err() != nil {
			return err
		}
		s.log.Warn("replay: sending an archived event failed; trying again", "replay", r.ReplayName, "in", backoff, "err", err)
		if err := engine.Sleep(ctx, s.eng.Clock, backoff); err != nil {
			return err
		}
		backoff = min(2*backoff, replayRetryMax)
		if e, gerr := s.replayKV.Get(ctx, r.ReplayName); gerr == nil {
			var cur Replay
			if json.Unmarshal(e.Value(), &cur) == nil && cur.State == ReplayCancelling {
				return errReplayCancelledWhileRetrying
			}
		}
		e, gerr := s.archKV.Get(ctx, lastSegment(r.EventSourceArn))
		var a Archive
		if errors.Is(gerr, jetstream.ErrKeyNotFound) || (gerr == nil && json.Unmarshal(e.Value(), &a) == nil && a.ID != archiveID) {
			return errors.New("the archive no longer exists")
		}
	}
}

// replayRouteFault, set by tests, is called before each archived event a
// replay sends; its error is returned as the sending's.
var replayRouteFault atomic.Pointer[func(replay string) error]

// replayOne sends one archived event if it is in the replay's range and
// not past the archive's retention.
func (s *Service) replayOne(ctx context.Context, r *Replay, msg jetstream.Msg, cutoff time.Time, only map[string]bool) error {
	ms, _ := strconv.ParseInt(msg.Headers().Get(hdrTime), 10, 64)
	ing, _ := strconv.ParseInt(msg.Headers().Get(hdrIngested), 10, 64)
	t := time.UnixMilli(ms)
	if t.Before(r.EventStartTime) || !t.Before(r.EventEndTime) || time.UnixMilli(ing).Before(cutoff) {
		return nil
	}
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(msg.Data(), &ev); err != nil {
		s.log.Error("replay: unreadable archived event skipped", "replay", r.ReplayName, "err", err)
		return nil
	}
	ev["replay-name"], _ = json.Marshal(r.ReplayName)
	raw, _ := json.Marshal(ev)
	if f := replayRouteFault.Load(); f != nil {
		if err := (*f)(r.ReplayName); err != nil {
			return err
		}
	}
	if err := s.route(ctx, BusName(r.Destination.Arn), raw, s.eng.Clock.Now(), r.ReplayName, only); err != nil {
		return err
	}
	if t.After(r.EventLastReplayedTime) {
		r.EventLastReplayedTime = t.UTC()
	}
	return nil
}

// DescribeReplay returns a replay.
func (s *Service) DescribeReplay(ctx context.Context, name string) (*Replay, error) {
	r, _, err := s.replay1(ctx, name)
	return r, err
}

// replay1 reads a stored replay and its revision.
func (s *Service) replay1(ctx context.Context, name string) (*Replay, uint64, error) {
	e, err := s.replayKV.Get(ctx, lastSegment(name))
	if err != nil {
		return nil, 0, notFound("Replay %s does not exist.", lastSegment(name))
	}
	var r Replay
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return nil, 0, err
	}
	return &r, e.Revision(), nil
}

// ListReplays lists replays by name prefix, state and archive ARN.
func (s *Service) ListReplays(ctx context.Context, prefix, state, archiveArn string) ([]Replay, error) {
	var out []Replay
	err := engine.LoadJSON(ctx, s.replayKV, func(k string, r Replay, err error) {
		if err == nil && strings.HasPrefix(r.ReplayName, prefix) && (state == "" || r.State == state) &&
			(archiveArn == "" || r.EventSourceArn == archiveArn) {
			out = append(out, r)
		}
	})
	sort.Slice(out, func(i, j int) bool { return out[i].ReplayName < out[j].ReplayName })
	return out, err
}

// CancelReplay asks a STARTING or RUNNING replay to stop
// (ErrIllegalStatus otherwise); it becomes CANCELLED once the events being
// sent are stored.
func (s *Service) CancelReplay(ctx context.Context, name string) (*Replay, error) {
	for {
		r, rev, err := s.replay1(ctx, name)
		if err != nil {
			return nil, err
		}
		if r.State != ReplayStarting && r.State != ReplayRunning {
			return nil, awserr.New(awserr.ErrIllegalStatus, "Replay %s is not in a state that can be cancelled: %s.", r.ReplayName, r.State)
		}
		r.State = ReplayCancelling
		data, _ := json.Marshal(r)
		if _, err := s.replayKV.Update(ctx, r.ReplayName, data, rev); err == nil {
			return r, nil
		}
	}
}
