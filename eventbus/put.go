package eventbus

// PutEvents and the routing of an event to the targets of the rules it
// matches. https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/target"
)

// PutEventsRequestEntry is one event of PutEvents.
type PutEventsRequestEntry struct {
	// Source (required, not starting with "aws."), DetailType (required,
	// at most 128 characters), Detail (required, a JSON object).
	Source     string
	DetailType string
	Detail     string
	// Resources: ARNs the event concerns.
	Resources []string
	// Time: the event's time; default now (engine clock).
	Time *time.Time
	// EventBusName: name or ARN; default "default".
	EventBusName string
	TraceHeader  string
}

// PutEventsResultEntry is an entry's result: EventId, or ErrorCode and
// ErrorMessage.
type PutEventsResultEntry struct {
	EventId      string `json:",omitempty"`
	ErrorCode    string `json:",omitempty"`
	ErrorMessage string `json:",omitempty"`
}

// PutEventsOutput is PutEvents' result; Entries are in request order.
type PutEventsOutput struct {
	FailedEntryCount int
	Entries          []PutEventsResultEntry
}

// entrySize is an entry's size as AWS counts it (eb-putevent-size).
func entrySize(e *PutEventsRequestEntry) int {
	n := len(e.Source) + len(e.DetailType) + len(e.Detail)
	if e.Time != nil {
		n += 14
	}
	for _, r := range e.Resources {
		n += len(r)
	}
	return n
}

// PutEvents accepts up to 10 events, at most 256 KB in all (ErrValidation
// otherwise); each entry succeeds (EventId, once its deliveries and archive
// copies are stored) or fails on its own: InvalidArgument (a required field
// missing), MalformedDetail, ResourceNotFoundException (bus),
// InternalFailure (not stored; put it again).
func (s *Service) PutEvents(ctx context.Context, entries []PutEventsRequestEntry) (*PutEventsOutput, error) {
	if len(entries) < 1 || len(entries) > MaxPutEvents {
		return nil, invalid("1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length less than or equal to %d and greater than or equal to 1", MaxPutEvents)
	}
	total := 0
	for i := range entries {
		total += entrySize(&entries[i])
	}
	if total > MaxPutEventsSize {
		return nil, invalid("Total size of the entries in the request is over the limit.")
	}
	out := &PutEventsOutput{Entries: make([]PutEventsResultEntry, len(entries))}
	for i := range entries {
		res := &out.Entries[i]
		id, err := s.putEntry(ctx, &entries[i])
		if err != nil {
			code, msg := "InternalFailure", err.Error()
			if ae, ok := err.(*awserr.Error); ok {
				code, msg = ae.Code, ae.Message
			}
			res.ErrorCode, res.ErrorMessage = code, msg
			out.FailedEntryCount++
			continue
		}
		res.EventId = id
	}
	return out, nil
}

// entryError is a PutEvents entry's error, with its code.
func entryError(code, format string, args ...any) error {
	return &awserr.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

func (s *Service) putEntry(ctx context.Context, e *PutEventsRequestEntry) (string, error) {
	for _, f := range []struct{ name, v string }{{"Source", e.Source}, {"DetailType", e.DetailType}, {"Detail", e.Detail}} {
		if f.v == "" {
			return "", entryError("InvalidArgument", "Parameter %s is not valid. Reason: %s is a required argument.", f.name, f.name)
		}
	}
	if strings.HasPrefix(e.Source, "aws.") {
		return "", entryError("InvalidArgument", "Parameter Source is not valid. Reason: You are not authorized to send events with the source %s.", e.Source)
	}
	if len(e.DetailType) > 128 {
		return "", entryError("InvalidArgument", "Parameter DetailType is not valid. Reason: length %d is over 128.", len(e.DetailType))
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil || detail == nil {
		return "", entryError("MalformedDetail", "Detail is malformed.")
	}
	now := s.eng.Clock.Now()
	t := now
	if e.Time != nil {
		t = *e.Time
	}
	resources := e.Resources
	if resources == nil {
		resources = []string{}
	}
	ev := event{Version: "0", ID: uuid.NewString(), DetailType: e.DetailType, Source: e.Source, Account: s.eng.AccountID(),
		Time: t.UTC().Format(time.RFC3339), Region: s.eng.Region(), Resources: resources, Detail: json.RawMessage(e.Detail)}
	raw, err := json.Marshal(ev)
	if err != nil {
		return "", err
	}
	if err := s.route(ctx, BusName(e.EventBusName), raw, now, "", nil); err != nil {
		return "", err
	}
	return ev.ID, nil
}

// event is the envelope of an event on a bus (eb-events).
type event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
}

// route stores the deliveries of an event (raw, its JSON) to the targets
// of the bus's matching rules, and, unless it is a replay, the event in
// the bus's matching archives. A replay (replayName set) goes only to the
// rules of onlyRules when that is not empty.
func (s *Service) route(ctx context.Context, bus string, raw []byte, now time.Time, replayName string, onlyRules map[string]bool) error {
	st, err := s.busOf(bus)
	if err != nil {
		return err
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		return entryError("MalformedDetail", "Detail is malformed.")
	}
	id, _ := ev["id"].(string)
	var ds []target.Delivery
	var matched []*ruleCounters
	s.mu.Lock()
	for name, m := range st.matchers {
		r := st.b.Rules[name]
		if r.State != Enabled || !m.Match(ev) || (len(onlyRules) > 0 && !onlyRules[r.Arn]) {
			continue
		}
		ds = append(ds, deliveries(r, ev, raw, id, now)...)
		matched = append(matched, s.statsLocked(r.Arn, len(r.Targets)))
	}
	s.mu.Unlock()
	if err := s.targets.Enqueue(ctx, ds); err != nil {
		return awserr.New(awserr.ErrInternalFailure, "storing the event: %v", err)
	}
	for _, c := range matched {
		c.matched.Add(1)
	}
	if replayName == "" {
		if err := s.archiveEvent(ctx, bus, ev, raw, now); err != nil {
			return awserr.New(awserr.ErrInternalFailure, "archiving the event: %v", err)
		}
	}
	return nil
}

// statsLocked returns a rule's counters and counts its invocations;
// s.mu is held.
func (s *Service) statsLocked(arn string, invocations int) *ruleCounters {
	c := s.stats[arn]
	if c == nil {
		c = &ruleCounters{}
		s.stats[arn] = c
	}
	c.invocations.Add(int64(invocations))
	return c
}

// deliveries are an event's deliveries to a rule's targets.
func deliveries(r *storedRule, ev map[string]any, raw []byte, id string, now time.Time) []target.Delivery {
	ds := make([]target.Delivery, 0, len(r.Targets))
	for i := range r.Targets {
		t := &r.Targets[i]
		d := target.Delivery{ID: id, RuleArn: r.Arn, TargetArn: t.Arn, Payload: payload(t, ev, raw, &r.Rule, now)}
		if d.Payload != string(raw) {
			d.Event = string(raw)
		}
		d.Set(t.RetryPolicy, t.DeadLetterConfig, t.SqsParameters)
		if t.KinesisParameters != nil {
			if k, ok := lookup(ev, t.KinesisParameters.PartitionKeyPath); ok {
				d.PartitionKey = strings.Trim(k, `"`)
			}
		}
		if strings.HasPrefix(t.Arn, "arn:aws:sqs:") && strings.HasSuffix(t.Arn, ".fifo") {
			d.ID = id + "-" + t.Id // dedup per target
		}
		ds = append(ds, d)
	}
	return ds
}

// putOnBus puts an event delivered to a bus target on that bus: it keeps
// its id and fields.
func (s *Service) putOnBus(ctx context.Context, busArn string, raw []byte) error {
	return s.route(ctx, BusName(busArn), raw, s.eng.Clock.Now(), "", nil)
}
