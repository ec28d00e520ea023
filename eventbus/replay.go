package eventbus

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
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/engine"
)

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
	rev, err := s.replayKV.Create(ctx, r.ReplayName, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		return nil, awserr.New(awserr.ErrResourceAlreadyExists, "Replay %s already exists.", r.ReplayName)
	}
	if err != nil {
		return nil, err
	}
	s.startReplay(r, rev)
	return &r, nil
}

// startReplay runs a replay in the background (Passive services don't).
func (s *Service) startReplay(r Replay, rev uint64) {
	if s.passive || s.bg == nil || s.bg.Err() != nil {
		return
	}
	s.wg.Add(1)
	go func() { defer s.wg.Done(); s.runReplay(s.bg, r, rev) }()
}

// resumeReplays restarts the replays a stop interrupted.
func (s *Service) resumeReplays(ctx context.Context) {
	engine.LoadJSON(ctx, s.replayKV, func(k string, r Replay, err error) {
		if err != nil || (r.State != ReplayStarting && r.State != ReplayRunning && r.State != ReplayCancelling) {
			return
		}
		if e, err := s.replayKV.Get(ctx, k); err == nil {
			s.startReplay(r, e.Revision())
		}
	})
}

// saveReplay stores r with a compare-and-set; a cancel in between (a
// newer revision) is read back into r.
func (s *Service) saveReplay(ctx context.Context, r *Replay, rev *uint64) error {
	data, _ := json.Marshal(r)
	n, err := s.replayKV.Update(ctx, r.ReplayName, data, *rev)
	if err == nil {
		*rev = n
		return nil
	}
	e, gerr := s.replayKV.Get(ctx, r.ReplayName)
	if gerr != nil {
		return gerr
	}
	var cur Replay
	if json.Unmarshal(e.Value(), &cur) == nil && cur.State == ReplayCancelling {
		r.State = ReplayCancelling
	}
	*rev = e.Revision()
	return err
}

// runReplay sends the archive's events in the replay's time range to the
// bus, in archive order, storing progress after each event.
func (s *Service) runReplay(ctx context.Context, r Replay, rev uint64) {
	a, err := s.archive1(ctx, lastSegment(r.EventSourceArn))
	finish := func(state, reason string) {
		r.State, r.StateReason, r.ReplayEndTime = state, reason, s.eng.Clock.Now().UTC()
		for i := 0; i < 3 && s.saveReplay(context.WithoutCancel(ctx), &r, &rev) != nil; i++ {
		}
	}
	if err != nil {
		finish(ReplayFailed, "the archive no longer exists")
		return
	}
	if r.State == ReplayStarting {
		r.State = ReplayRunning
		s.saveReplay(ctx, &r, &rev)
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
		msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
		if ctx.Err() != nil {
			return // stopped: resumes at the next New
		}
		if err != nil {
			continue
		}
		meta, err := msg.Metadata()
		if err != nil {
			continue
		}
		if err := s.replayOne(ctx, &r, msg, cutoff, only); err != nil {
			if ctx.Err() != nil {
				return
			}
			finish(ReplayFailed, err.Error())
			return
		}
		r.Seq = meta.Sequence.Stream
		s.saveReplay(ctx, &r, &rev)
	}
	finish(ReplayCompleted, "")
}

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
