package eventbus

// PutEvents and the routing of an event to the targets of the rules it
// matches. https://docs.aws.amazon.com/eventbridge/latest/APIReference/API_PutEvents.html

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/internal/mapx"
	"github.com/runnel-dev/runnel/target"
)

// PutEventsRequestEntry is one event of PutEvents.
type PutEventsRequestEntry struct {
	// Source (required; one starting with "aws." fails the entry with
	// NotAuthorizedForSourceException, "Not authorized for the source."),
	// DetailType (required, at most 128 characters), Detail (required, a
	// JSON object, delivered as sent: not HTML-escaped).
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
// missing), NotAuthorizedForSourceException (Source starts with "aws."),
// MalformedDetail, ResourceNotFoundException (bus), InternalFailure (not
// stored; put it again).
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
	fail := func(i int, err error) {
		code, msg := "InternalFailure", err.Error()
		if ae, ok := err.(*awserr.Error); ok {
			code, msg = ae.Code, ae.Message
		}
		out.Entries[i].ErrorCode, out.Entries[i].ErrorMessage = code, msg
		out.FailedEntryCount++
	}
	now := s.eng.Clock.Now()
	var batch []*routed
	var index []int // entry of each routed event
	for i := range entries {
		raw, ev, err := s.newEvent(&entries[i], now)
		var r *routed
		if err == nil {
			r, err = s.match(BusName(entries[i].EventBusName), raw, ev, now, nil, false)
		}
		if err != nil {
			fail(i, err)
			continue
		}
		out.Entries[i].EventId = ev["id"].(string)
		batch, index = append(batch, r), append(index, i)
	}
	// The entries' deliveries are stored together: one failure fails them
	// all (InternalFailure; some may be stored: a retry may duplicate).
	if err := s.store(ctx, batch, true, now); err != nil {
		for _, i := range index {
			out.Entries[i].EventId = ""
			fail(i, err)
		}
	}
	return out, nil
}

// entryError is a PutEvents entry's error, with its code.
func entryError(code, format string, args ...any) error {
	return &awserr.Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// newEvent checks an entry and returns its event's JSON and the event as
// the matcher reads it (JSON's generic values).
func (s *Service) newEvent(e *PutEventsRequestEntry, now time.Time) ([]byte, map[string]any, error) {
	for _, f := range []struct{ name, v string }{{"Source", e.Source}, {"DetailType", e.DetailType}, {"Detail", e.Detail}} {
		if f.v == "" {
			return nil, nil, entryError("InvalidArgument", "Parameter %s is not valid. Reason: %s is a required argument.", f.name, f.name)
		}
	}
	if strings.HasPrefix(e.Source, "aws.") {
		// AWS answers a reserved source so (observed; SPEC-fanout-tables
		// §2.1: not retryable).
		return nil, nil, entryError("NotAuthorizedForSourceException", "Not authorized for the source.")
	}
	if len(e.DetailType) > 128 {
		return nil, nil, entryError("InvalidArgument", "Parameter DetailType is not valid. Reason: length %d is over 128.", len(e.DetailType))
	}
	var detail map[string]any
	if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil || detail == nil {
		return nil, nil, entryError("MalformedDetail", "Detail is malformed.")
	}
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
	raw, err := marshal(ev)
	rs := make([]any, len(resources))
	for i, r := range resources {
		rs[i] = r
	}
	return raw, map[string]any{"version": ev.Version, "id": ev.ID, "detail-type": ev.DetailType, "source": ev.Source,
		"account": ev.Account, "time": ev.Time, "region": ev.Region, "resources": rs, "detail": detail}, err
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

// marshal is json.Marshal without HTML escaping: an event or payload is
// delivered as its sender wrote it. json.Marshal writes <, > and & as
// \u003c, \u003e and \u0026 (6 bytes for 1), also inside a
// json.RawMessage (it re-compacts one), so a Detail of 60 KB of '<' grew
// to 360 KB and no longer fit a 256 KB queue message; AWS counts and
// delivers the Detail's own UTF-8 bytes (eb-putevent-size). A
// json.RawMessage is still compacted (insignificant white space dropped).
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// routed is an event matched against the rules of its bus: the
// deliveries to store, the rules it matched and how many deliveries each
// got (invocations, in the order of rules).
type routed struct {
	bus         string
	ev          map[string]any
	raw         []byte
	ds          []target.Delivery
	rules       []*storedRule
	invocations []int
}

// route stores the deliveries of an event (raw, its JSON) to the targets
// of the bus's matching rules, and, unless it is a replay, the event in
// the bus's matching archives. A replay (replayName set) goes only to the
// rules of onlyRules when that is not empty.
func (s *Service) route(ctx context.Context, bus string, raw []byte, now time.Time, replayName string, onlyRules map[string]bool) error {
	r, err := s.match(bus, raw, nil, now, onlyRules, false)
	if err != nil {
		return err
	}
	return s.store(ctx, []*routed{r}, replayName == "", now)
}

// isBusTarget reports whether a target's ARN is an event bus's.
func isBusTarget(arn string) bool {
	return strings.HasPrefix(arn, "arn:aws:events:") && strings.Contains(arn, ":event-bus/")
}

// match finds the enabled rules of the bus that an event matches (only
// those of onlyRules, when not empty) and shapes its deliveries. ev is
// raw decoded, or nil to decode it here. fromBus: the event was put on
// this bus by another bus's rule (an event bus target); it then goes to
// the matching rules' other targets only, never to their event bus
// targets: "EventBridge can't route events received from a sender event
// bus to a third event bus" (eb-bus-to-bus.html, Note). Each bus target
// so skipped is logged at debug level with the event id: it is AWS's
// rule, not a lost delivery.
func (s *Service) match(bus string, raw []byte, ev map[string]any, now time.Time, onlyRules map[string]bool, fromBus bool) (*routed, error) {
	st, err := s.busOf(bus)
	if err != nil {
		return nil, err
	}
	r := &routed{bus: bus, raw: raw, ev: ev}
	if ev == nil {
		if err := json.Unmarshal(raw, &r.ev); err != nil {
			return nil, entryError("MalformedDetail", "Detail is malformed.")
		}
	}
	id, _ := r.ev["id"].(string)
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, m := range st.matchers {
		rule := st.b.Rules[name]
		if !enabled(rule.State) || !m.Match(r.ev) || (len(onlyRules) > 0 && !onlyRules[rule.Arn]) {
			continue
		}
		ds := deliveries(rule, r.ev, raw, id, now)
		if fromBus {
			ds = slices.DeleteFunc(ds, func(d target.Delivery) bool {
				if !isBusTarget(d.TargetArn) {
					return false
				}
				s.log.Debug("eventbridge: an event received from another event bus is not routed to a third bus (eb-bus-to-bus)",
					"event", id, "bus", bus, "rule", rule.Arn, "target", d.TargetArn)
				return true
			})
		}
		r.ds = append(r.ds, ds...)
		r.rules = append(r.rules, rule)
		r.invocations = append(r.invocations, len(ds))
	}
	return r, nil
}

// store stores the deliveries of routed events in one go, counts them,
// then (archive) puts each event in its bus's matching archives.
func (s *Service) store(ctx context.Context, rs []*routed, archive bool, now time.Time) error {
	var ds []target.Delivery
	for _, r := range rs {
		ds = append(ds, r.ds...)
	}
	if err := s.targets.Deliver(ctx, ds); err != nil {
		return awserr.New(awserr.ErrInternalFailure, "storing the event: %v", err)
	}
	s.mu.Lock()
	for _, r := range rs {
		for i, rule := range r.rules {
			c := s.statsLocked(rule.Arn, r.invocations[i])
			c.matched.Add(1)
		}
	}
	s.mu.Unlock()
	if !archive {
		return nil
	}
	for _, r := range rs {
		if err := s.archiveEvent(ctx, r.bus, r.ev, r.raw, now); err != nil {
			return awserr.New(awserr.ErrInternalFailure, "archiving the event: %v", err)
		}
	}
	return nil
}

// statsLocked returns a rule's counters and counts its invocations;
// s.mu is held.
func (s *Service) statsLocked(arn string, invocations int) *ruleCounters {
	c := mapx.GetOrNew(s.stats, arn)
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
			if k, ok := lookup(raw, t.KinesisParameters.PartitionKeyPath); ok {
				d.PartitionKey = string(k) // a number's or an object's JSON
				if str, ok := value(k).(string); ok {
					d.PartitionKey = str
				}
			}
		}
		if strings.HasPrefix(t.Arn, "arn:aws:sqs:") && strings.HasSuffix(t.Arn, ".fifo") {
			d.ID = fifoDeduplicationID(id, r.Arn, t.Id, ev["replay-name"])
		}
		ds = append(ds, d)
	}
	return ds
}

// fifoDeduplicationID is the MessageDeduplicationId of an event's
// delivery to an SQS FIFO target: the event id, then a digest of the
// rule's ARN, the target's Id and the replay's name (none outside a
// replay). A retry of the delivery sends the same id, so the queue stores
// it once; each rule, target and replay gets its own. Target Ids are
// unique within a rule only (CDK names every first target "Target0"):
// with the event id and the target Id alone, a second rule's delivery to
// the same queue, or a replay within five minutes, was taken for a
// duplicate and dropped. AWS has the queue deduplicate by content instead
// (the target queue must use content-based deduplication), which drops
// two rules' identical payloads as one; runnel keeps both. 36 + 1 + 16
// characters, within SQS's 128.
func fifoDeduplicationID(eventID, ruleArn, targetID string, replay any) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%v", ruleArn, targetID, replay)
	return eventID + "-" + hex.EncodeToString(h.Sum(nil)[:8])
}

// putOnBus puts an event delivered to a bus target on that bus: it keeps
// its id and fields. payload is what the target delivers; original is the
// rule's event when payload is not it (Input, InputPath,
// InputTransformer), else nil. See busEvent. On the receiving bus the
// event goes to the matching rules' targets other than event buses (see
// match): before, it was forwarded again, so a chain A→B→C delivered to
// C's targets and a loop A→B→A never stopped. It is archived there,
// unless it is a replayed event (it has "replay-name"): replayed events
// are never archived.
func (s *Service) putOnBus(ctx context.Context, busArn string, payload, original []byte) error {
	now := s.eng.Clock.Now()
	raw, err := busEvent(payload, original, now)
	if err != nil {
		return err
	}
	r, err := s.match(BusName(busArn), raw, nil, now, nil, true)
	if err != nil {
		return err
	}
	_, replayed := r.ev["replay-name"]
	return s.store(ctx, []*routed{r}, !replayed, now)
}

// busEvent returns the event that a bus target's payload puts on its bus.
// The rule's whole event goes as it is. A transformed payload that is an
// event itself (a string source and detail-type, an object detail) goes
// with the original's id, time, version, account, region and resources
// where it lacks them; any other JSON object becomes the detail of an
// event with the original's envelope. AWS documents neither case; before,
// such a payload was routed as if it were an event, and one without a
// time crashed the archive, again after every restart. A replayed
// event's "replay-name" goes with it. A payload that is not a JSON object
// is refused (MalformedDetail): an event's detail is an object.
func busEvent(payload, original []byte, now time.Time) ([]byte, error) {
	if original == nil {
		return payload, nil
	}
	var p, o map[string]any
	if err := json.Unmarshal(payload, &p); err != nil || p == nil {
		return nil, entryError("MalformedDetail", "The payload of an event bus target must be a JSON object, got %.100s", payload)
	}
	if err := json.Unmarshal(original, &o); err != nil || o == nil {
		return nil, entryError("MalformedDetail", "Detail is malformed.")
	}
	_, src := p["source"].(string)
	_, dt := p["detail-type"].(string)
	_, det := p["detail"].(map[string]any)
	ev := p
	if !src || !dt || !det {
		ev = map[string]any{"detail": p}
		for _, k := range []string{"source", "detail-type"} {
			ev[k] = o[k]
		}
	}
	for _, k := range []string{"version", "id", "time", "account", "region", "resources", "replay-name"} {
		if _, ok := ev[k]; !ok && (k != "replay-name" || o[k] != nil) {
			ev[k] = o[k]
		}
	}
	if ts, _ := ev["time"].(string); ts == "" {
		ev["time"] = now.UTC().Format(time.RFC3339)
	}
	return marshal(ev)
}
