package awsapi

// CloudWatch Logs: reading events (GetLogEvents, FilterLogEvents) of
// package function/logs. Tokens are positions in the store
// (GetLogEvents: f/<position> forward, b/<position> backward;
// FilterLogEvents: <position>) and do not expire; a page holds up to
// 10,000 events and 1 MB. A log stream named that does not exist is
// ResourceNotFoundException, as a log group. Filter patterns: terms,
// ?terms, -terms and quoted phrases (logs.ParsePattern); JSON,
// space-delimited and regular expression patterns are refused.

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function/logs"
)

// maxEvents is the most events a page holds (and the default limit).
const maxEvents = 10000

// maxPageBytes is the most a page of GetLogEvents or FilterLogEvents
// holds ("as many log events as can fit in a response size of 1 MB (up
// to 10,000 log events)"), counting each event as its message's bytes
// plus eventOverhead, as PutLogEvents counts a batch.
const (
	maxPageBytes  = 1 << 20
	eventOverhead = 26
)

// pageBytes sums what events weigh against maxPageBytes.
type pageBytes int

// fits adds ev to the page's weight and reports whether the page still
// holds maxPageBytes at most; the first event always fits.
func (b *pageBytes) fits(ev logs.Event) bool {
	n := len(ev.Message) + eventOverhead
	if *b > 0 && int(*b)+n > maxPageBytes {
		return false
	}
	*b += pageBytes(n)
	return true
}

// existingStream checks that stream of group exists:
// ResourceNotFoundException "The specified log stream does not exist."
// as CloudWatch Logs answers (runnel used to answer 200 with no events).
func (rq *request) existingStream(s *logs.Store, group, stream string) error {
	ok, err := s.StreamExists(rq.ctx, group, stream)
	if err != nil {
		return err
	}
	if !ok {
		return awserr.New(awserr.ErrResourceNotFound, "The specified log stream does not exist.")
	}
	return nil
}

type eventOut struct {
	LogStreamName string `json:"logStreamName,omitempty"`
	Timestamp     int64  `json:"timestamp"`
	Message       string `json:"message"`
	IngestionTime int64  `json:"ingestionTime"`
	EventID       string `json:"eventId,omitempty"`
}

// eventRange is the time range and limit of the event reads.
type eventRange struct {
	StartTime *int64 `json:"startTime"`
	EndTime   *int64 `json:"endTime"`
	Limit     *int   `json:"limit"`
}

// in reports whether ev is in the range: startTime included, endTime
// excluded, as GetLogEvents takes it ("Events with a timestamp equal to or
// later than this time are not included").
func (r *eventRange) in(ev logs.Event) bool {
	return (r.StartTime == nil || ev.Timestamp >= *r.StartTime) && (r.EndTime == nil || ev.Timestamp < *r.EndTime)
}

// inClosed is in with endTime included, as FilterLogEvents takes it
// ("Events with a timestamp later than this time are not returned",
// API_FilterLogEvents). Trap: the two calls differ on an event stamped
// at endTime.
func (r *eventRange) inClosed(ev logs.Event) bool {
	return (r.StartTime == nil || ev.Timestamp >= *r.StartTime) && (r.EndTime == nil || ev.Timestamp <= *r.EndTime)
}

func (r *eventRange) limit() (int, error) {
	if r.Limit == nil {
		return maxEvents, nil
	}
	if *r.Limit < 1 || *r.Limit > maxEvents {
		return 0, awserr.New(awserr.ErrInvalidParameter, "limit: 1 to %d, got %d", maxEvents, *r.Limit)
	}
	return *r.Limit, nil
}

type getLogEventsInput struct {
	logGroupInput
	eventRange
	LogStreamName string `json:"logStreamName"`
	StartFromHead bool   `json:"startFromHead"`
	NextToken     string `json:"nextToken"`
}

func logsGetLogEvents(rq *request, in *getLogEventsInput) (any, error) {
	s, g, err := rq.existingGroup(&in.logGroupInput)
	if err != nil {
		return nil, err
	}
	if in.LogStreamName == "" {
		return nil, awserr.New(awserr.ErrInvalidParameter, "logStreamName is required")
	}
	limit, err := in.limit()
	if err != nil {
		return nil, err
	}
	// The token: f/<position> reads forward from it, b/<position> back
	// from before it; none reads from the head or back from the end.
	forward, pos := in.StartFromHead, uint64(0)
	if in.NextToken != "" {
		dir, n, ok := strings.Cut(in.NextToken, "/")
		p, err := strconv.ParseUint(n, 10, 64)
		if !ok || err != nil || (dir != "f" && dir != "b") {
			return nil, awserr.New(awserr.ErrInvalidParameter, "The specified nextToken is invalid.")
		}
		forward, pos = dir == "f", p
	}
	if err := rq.existingStream(s, g, in.LogStreamName); err != nil {
		return nil, err
	}
	// Forward: from the token's position (or the head) on, up to limit
	// events or maxPageBytes. Backward: the last limit events before the
	// token's position (or the end), read back from there, then the newest
	// of them that fit in maxPageBytes.
	var events []logs.Event
	var size pageBytes
	if forward {
		err = s.Read(rq.ctx, g, in.LogStreamName, pos, func(ev logs.Event) bool {
			if !in.eventRange.in(ev) {
				return true
			}
			if !size.fits(ev) {
				return false
			}
			events = append(events, ev)
			return len(events) < limit
		})
	} else {
		events, err = s.ReadBack(rq.ctx, g, in.LogStreamName, pos, limit, in.eventRange.in)
		for i := len(events) - 1; i >= 0; i-- {
			if !size.fits(events[i]) {
				events = events[i+1:]
				break
			}
		}
	}
	if err != nil {
		return nil, err
	}
	out := []eventOut{}
	for _, ev := range events {
		out = append(out, eventOut{Timestamp: ev.Timestamp, Message: ev.Message, IngestionTime: ev.IngestionTime})
	}
	// At either end the token given comes back in its own direction
	// (clients stop on equality), and the other direction's token is from
	// the same position: nextForwardToken is always an f/ token,
	// nextBackwardToken a b/ one. (Before, an empty page returned the
	// given token as both.)
	fwd, back := fmt.Sprintf("f/%d", pos), fmt.Sprintf("b/%d", pos)
	switch {
	case len(events) > 0:
		fwd = fmt.Sprintf("f/%d", events[len(events)-1].Seq+1)
		back = fmt.Sprintf("b/%d", events[0].Seq)
	case in.NextToken != "" && forward:
		fwd = in.NextToken
	case in.NextToken != "":
		back = in.NextToken
	}
	return map[string]any{"events": out, "nextForwardToken": fwd, "nextBackwardToken": back}, nil
}

type filterLogEventsInput struct {
	logGroupInput
	eventRange
	LogStreamNames      []string `json:"logStreamNames"`
	LogStreamNamePrefix string   `json:"logStreamNamePrefix"`
	FilterPattern       string   `json:"filterPattern"`
	NextToken           string   `json:"nextToken"`
	Interleaved         bool     `json:"interleaved"`
}

func logsFilterLogEvents(rq *request, in *filterLogEventsInput) (any, error) {
	s, g, err := rq.existingGroup(&in.logGroupInput)
	if err != nil {
		return nil, err
	}
	if len(in.LogStreamNames) > 0 && in.LogStreamNamePrefix != "" {
		return nil, awserr.New(awserr.ErrInvalidParameter, "logStreamNames and logStreamNamePrefix are mutually exclusive parameters.")
	}
	if len(in.LogStreamNames) > 100 {
		return nil, awserr.New(awserr.ErrInvalidParameter, "logStreamNames: at most 100, got %d", len(in.LogStreamNames))
	}
	limit, err := in.limit()
	if err != nil {
		return nil, err
	}
	pat, err := logs.ParsePattern(in.FilterPattern)
	if err != nil {
		return nil, awserr.New(awserr.ErrInvalidParameter, "%v", err)
	}
	var from uint64
	if in.NextToken != "" {
		if from, err = strconv.ParseUint(in.NextToken, 10, 64); err != nil {
			return nil, awserr.New(awserr.ErrInvalidParameter, "The specified nextToken is invalid.")
		}
	}
	streams := map[string]bool{}
	for _, n := range in.LogStreamNames {
		if err := rq.existingStream(s, g, n); err != nil {
			return nil, err
		}
		streams[n] = true
	}
	out := []eventOut{}
	next := ""
	var size pageBytes
	err = s.Read(rq.ctx, g, "", from, func(ev logs.Event) bool {
		if (len(streams) > 0 && !streams[ev.Stream]) || !strings.HasPrefix(ev.Stream, in.LogStreamNamePrefix) ||
			!in.eventRange.inClosed(ev) || !pat.Match(ev.Message) {
			return true
		}
		if len(out) == limit || !size.fits(ev) {
			next = strconv.FormatUint(ev.Seq, 10)
			return false
		}
		out = append(out, eventOut{LogStreamName: ev.Stream, Timestamp: ev.Timestamp, Message: ev.Message,
			IngestionTime: ev.IngestionTime, EventID: fmt.Sprintf("%056d", ev.Seq)})
		return true
	})
	if err != nil {
		return nil, err
	}
	res := map[string]any{"events": out, "searchedLogStreams": []any{}}
	if next != "" {
		res["nextToken"] = next
	}
	return res, nil
}
