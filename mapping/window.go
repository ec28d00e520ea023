package mapping

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/jonboulle/clockwork"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/stream"
)

// Tumbling windows (TumblingWindowInSeconds) of a Kinesis or DynamoDB
// stream mapping, after
// https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-windows.html
// and services-ddb-windows.html:
//
//   - A record belongs to the window its arrival time falls in; windows
//     start at multiples of their length (Unix time), so a 120 s window
//     runs 07:04:00–07:06:00.
//   - Each lane of a shard keeps one open window and its state. Every
//     invocation carries window {start, end}, the state the previous
//     invocation of the window returned ({} at first), shardId and
//     eventSourceARN. A batch never spans two windows.
//   - The response must have a "state" (an object, or null for {}): without
//     it the invocation failed. A failed batch is retried whole with the
//     state it was first given; BisectBatchOnFunctionError does not split
//     windowed batches. With ReportBatchItemFailures the records before the
//     lowest failure are processed and the response's state is kept.
//   - Once the engine clock passes the window's end and the lane has every
//     record of the window, the final invocation (isFinalInvokeForWindow,
//     no Records, the window's state) is made; it is retried until it
//     succeeds, holding the lane. A closed shard ends its windows the same
//     way, and its children start fresh ones.
//   - A state over 1 MB terminates the window early: an invocation with
//     isWindowTerminatedEarly and that state, no Records, then the window
//     goes on with a fresh state.
//   - The state is durable: it is stored in the checkpoint bucket, with the
//     last sequence number folded into it, after every successful
//     invocation, so a restart continues the window with its state and does
//     not fold a record twice. A closed shard is done only when no window
//     of it is stored open (processedToEnd).
//   - A window stored under a former ParallelizationFactor or
//     TumblingWindowInSeconds (an update) gets its final invocation when
//     the shard's worker starts, before any record (closeRetired); the
//     records folded into it are not delivered again (retiredFolded),
//     across later restarts too: its Through is kept in the shard's
//     retired record (storedRetired), which the new lanes' window records
//     do not overwrite.

// Ranges of the tumbling window parameters.
const (
	MaxTumblingWindowInSeconds = 900
	// MaxWindowStateBytes is the most state a window carries from one
	// invocation to the next (1 MB per shard on AWS).
	MaxWindowStateBytes = 1 << 20
)

// tumblingWindow is the mapping's window length, 0 when off.
func (c *Config) tumblingWindow() time.Duration {
	if c.TumblingWindowInSeconds == nil {
		return 0
	}
	return time.Duration(*c.TumblingWindowInSeconds) * time.Second
}

// windowState is a lane's open window.
type windowState struct {
	length time.Duration
	// start is the open window's start; zero when none is open.
	start time.Time
	state json.RawMessage
	// through is the last position folded into a state of this lane:
	// after a restart, records up to it are not delivered again.
	through uint64
}

// windowOf returns the start of r's window: a multiple of the length in
// Unix time. (time.Truncate counts from year 1, which agrees with Unix
// time only for lengths that divide 62,135,596,800 s: a 7 s window then
// started at ...603.)
func (s *windowState) windowOf(r *stream.Record) time.Time {
	ms, l := r.ApproximateArrivalTimestamp.UnixMilli(), s.length.Milliseconds()
	return time.UnixMilli(ms - ((ms%l)+l)%l).UTC()
}

func (s *windowState) end() time.Time { return s.start.Add(s.length) }

// storedWindow is a lane's window record in the checkpoint bucket.
type storedWindow struct {
	StreamID string
	Lanes    int
	// Seconds is the window length it was stored with (0 in records
	// written before it was kept: taken as the mapping's length).
	Seconds int   `json:",omitempty"`
	Start   int64 // Unix ms; 0: no open window
	State   json.RawMessage
	Through uint64
}

// current reports whether sw was stored under the mapping's present lane
// count and window length.
func (sw *storedWindow) current(r *runner) bool {
	secs := int(r.cfg.tumblingWindow() / time.Second)
	return sw.Lanes == r.cfg.ParallelizationFactor && secs > 0 && (sw.Seconds == 0 || sw.Seconds == secs)
}

func windowKey(uuid, shardID string, lane int) string {
	return laneKey(uuid, shardID, lane) + ".window"
}

// loadWindow restores a lane's window (a fresh one when none is stored
// for this stream and lane count).
func (s *Service) loadWindow(ctx context.Context, r *runner, shardID string, lane int) *windowState {
	ws := &windowState{length: r.cfg.tumblingWindow()}
	e, err := s.ckGet(ctx, windowKey(r.cfg.UUID, shardID, lane))
	if err != nil {
		return ws
	}
	var sw storedWindow
	if json.Unmarshal(e.Value(), &sw) != nil || sw.StreamID != r.streamID || !sw.current(r) {
		return ws // none, or retired (retiredWindows)
	}
	ws.through = sw.Through
	if sw.Start != 0 {
		ws.start, ws.state = time.UnixMilli(sw.Start).UTC(), sw.State
	}
	return ws
}

// storeWindow writes the lane's window record, retrying until it is
// stored; it returns an error only when ctx ends.
func (l *lane) storeWindow(ctx context.Context) error {
	r := l.w.r
	l.mu.Lock()
	sw := storedWindow{StreamID: r.streamID, Lanes: r.cfg.ParallelizationFactor, Seconds: int(l.win.length / time.Second),
		State: l.win.state, Through: l.win.through}
	if !l.win.start.IsZero() {
		sw.Start = l.win.start.UnixMilli()
	}
	l.mu.Unlock()
	body, _ := json.Marshal(sw)
	return l.storeUntilDone(ctx, "window state write failed; retrying", func() error {
		return r.svc.ckPut(ctx, unitKey(r.cfg.UUID, l.w.shardID), windowKey(r.cfg.UUID, l.w.shardID, l.index), body)
	})
}

// windowOpen reports whether the lane has an open window.
func (l *lane) windowOpen() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.win != nil && !l.win.start.IsZero()
}

// openWindow opens the window of the batch's first record if none is
// open.
func (l *lane) openWindow(first *stream.Record) {
	l.mu.Lock()
	if l.win.start.IsZero() {
		l.win.start, l.win.state = l.win.windowOf(first), json.RawMessage("{}")
	}
	l.mu.Unlock()
}

// closeDue says, under l.mu, whether the open window may be closed: the
// clock passed its end (or the shard ended) and no queued record belongs
// to it. caughtUp is false when the lane must still check that no record
// of the window is left unread in the shard.
func (l *lane) closeDue(now time.Time) (due, caughtUp bool) {
	ws := l.win
	if ws == nil || ws.start.IsZero() {
		return false, false
	}
	if len(l.queue) > 0 {
		if !ws.windowOf(&l.queue[0]).After(ws.start) {
			return false, false // records of the window are waiting
		}
		return true, true // the next record is of a later window
	}
	if l.w.ended.Load() {
		return true, true
	}
	return !now.Before(ws.end()), false
}

// readAllOf reports whether the shard worker has dispatched every record
// written to the shard so far (so none of a closed window is unread).
func (l *lane) readAllOf(ctx context.Context) bool {
	r := l.w.r
	_, last, err := r.streams.ShardBounds(ctx, r.streamName, l.w.shardID)
	return err == nil && l.w.seen.Load() >= last
}

// waitWindow waits for a record, the window's end or, when the window
// is due but the shard may hold unread records, a short poll.
func (l *lane) waitWindow(ctx context.Context, due bool) {
	clock := l.w.r.svc.eng.Clock
	var timer <-chan time.Time
	if due {
		timer = clockwork.NewRealClock().After(20 * time.Millisecond)
	} else if l.windowOpen() {
		l.mu.Lock()
		d := l.win.end().Sub(clock.Now())
		l.mu.Unlock()
		timer = clock.After(max(d, 0))
	}
	select {
	case <-l.notify:
	case <-timer:
	case <-ctx.Done():
	}
}

// cut returns how many of the queue's first n records a windowed batch
// may take: those of the first record's window (or of the open one).
func (l *lane) cut(n int) (k int, boundary bool) {
	ws := l.win
	w := ws.windowOf(&l.queue[0])
	if !ws.start.IsZero() && w.Before(ws.start) {
		w = ws.start // a record stamped a little out of order: the open window
	}
	for k = 0; k < n; k++ {
		if ws.windowOf(&l.queue[k]).After(w) {
			return k, true
		}
	}
	return n, false
}

// windowEvent builds a windowed invocation's event. It is sent as JSON:
// aws-lambda-go's TimeWindowProperties.State is a map[string]string, while
// the state is any JSON object the function returned.
func (b *batchRun) windowEvent(recs []stream.Record, final, early bool) any {
	l := b.l
	l.mu.Lock()
	props := events.TimeWindowProperties{
		Window:                  events.Window{Start: events.RFC3339EpochTime{Time: l.win.start}, End: events.RFC3339EpochTime{Time: l.win.end()}},
		ShardID:                 b.w.shardID,
		EventSourceARN:          b.r.cfg.EventSourceArn,
		IsFinalInvokeForWindow:  final,
		IsWindowTerminatedEarly: early,
	}
	state := l.win.state
	l.mu.Unlock()
	if b.r.ddb != nil {
		ev := b.r.ddb.event(b.r, recs)
		if ev.Records == nil {
			ev.Records = []events.DynamoDBEventRecord{}
		}
		return &struct {
			events.DynamoDBTimeWindowEvent
			State json.RawMessage `json:"state"`
		}{events.DynamoDBTimeWindowEvent{DynamoDBEvent: *ev, TimeWindowProperties: props}, state}
	}
	ev := b.kinesisEvent(recs)
	if ev.Records == nil {
		ev.Records = []events.KinesisEventRecord{}
	}
	return &struct {
		events.KinesisTimeWindowEvent
		State json.RawMessage `json:"state"`
	}{events.KinesisTimeWindowEvent{KinesisEvent: *ev, TimeWindowProperties: props}, state}
}

// errNoState fails a windowed invocation whose response has no state.
var errNoState = errors.New("the response of a tumbling window invocation has no state")

// windowResponseState returns the state of a windowed invocation's
// response ({} for null).
func windowResponseState(res *function.Result) (json.RawMessage, error) {
	p := bytes.TrimSpace(res.Payload)
	if res.Response != nil {
		var err error
		if p, err = json.Marshal(res.Response); err != nil {
			return nil, err
		}
	}
	var top map[string]json.RawMessage
	if len(p) == 0 || p[0] != '{' || json.Unmarshal(p, &top) != nil {
		return nil, errNoState
	}
	st, ok := top["state"]
	if !ok {
		return nil, errNoState
	}
	st = bytes.TrimSpace(st)
	if bytes.Equal(st, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if len(st) == 0 || st[0] != '{' {
		return nil, errors.New("the state of a tumbling window response must be a JSON object")
	}
	return st, nil
}

// fold keeps the state a successful invocation returned for the
// processed records recs, and stores it. A state over MaxWindowStateBytes
// terminates the window early (an invocation with it and no records) and
// the window goes on with a fresh state.
func (b *batchRun) fold(ctx context.Context, recs []stream.Record, state json.RawMessage) error {
	l := b.l
	l.mu.Lock()
	if len(recs) > 0 {
		l.win.through = max(l.win.through, recs[len(recs)-1].Seq)
	}
	l.win.state = state
	l.mu.Unlock()
	if len(state) > MaxWindowStateBytes {
		b.w.counters.windowsTerminatedEarly.Add(1)
		b.r.svc.eng.Logger.Warn("window state over 1 MB: window terminated early", "mapping", b.r.cfg.UUID, "shard", b.w.shardID, "bytes", len(state))
		if err := b.invokeUntilOK(ctx, false, true); err != nil {
			return err
		}
		l.mu.Lock()
		l.win.state = json.RawMessage("{}")
		l.mu.Unlock()
	}
	return l.storeWindow(ctx)
}

// closeWindow makes the open window's final invocation, retried until it
// succeeds, then stores the lane's window as closed.
func (b *batchRun) closeWindow(ctx context.Context) error {
	if err := b.invokeUntilOK(ctx, true, false); err != nil {
		return err
	}
	b.w.counters.windowsClosed.Add(1)
	l := b.l
	l.mu.Lock()
	l.win.start, l.win.state = time.Time{}, nil
	l.mu.Unlock()
	return l.storeWindow(ctx)
}

// invokeUntilOK makes an invocation without records (final or
// terminating the window early), retrying after a backoff until the
// function succeeds: "If the invocation fails, your Lambda function
// suspends further processing until a successful invocation" (Lambda
// docs). As for a batch (batchRun.invoke), a response without a "state"
// (windowResponseState) is a failed invocation: "If the response doesn't
// contain a state property, Lambda considers this a failed invocation"
// (services-kinesis-windows.html, services-ddb-windows.html); it is
// retried, counted as a function error and a retry. Its state is not
// used. A function whose handler does not take the mapping's event type
// (replaced since by PutFunction) is not invoked: the shard waits, as
// for a batch, not counted as a retry. Returns an error only when ctx
// ends.
func (b *batchRun) invokeUntilOK(ctx context.Context, final, early bool) error {
	for attempt, wait := 1, 1; ; {
		fn, err := b.r.function()
		if err == nil {
			if kind := b.r.eventKind(); !fn.Accepts(kind) {
				b.w.setResult("PROBLEM: Function's handler takes no " + kind + " events")
				b.w.setErr(fmt.Errorf("the handler of %s does not take %s events; the shard waits for a handler that does", b.r.cfg.FunctionName, kind))
				if err := b.r.svc.backoff(ctx, wait); err != nil {
					return err
				}
				wait++
				continue
			}
			var res *function.Result
			res, err = fn.Invoke(ctx, b.windowEvent(nil, final, early))
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if err == nil {
				if res.Failed() {
					if res.Error != nil {
						b.w.setErr(res.Error)
					}
				} else if _, serr := windowResponseState(res); serr != nil {
					b.w.setErr(serr)
				} else {
					b.w.setResult("OK")
					b.w.counters.invocations.Add(1)
					return nil
				}
				b.w.setResult("PROBLEM: Function call failed")
				b.w.counters.invocations.Add(1)
				b.w.counters.functionErrors.Add(1)
			}
		}
		if err != nil {
			b.w.setErr(err)
		}
		b.w.counters.retries.Add(1)
		if err := b.r.svc.backoff(ctx, attempt); err != nil {
			return err
		}
		attempt++
	}
}

// waitWindowsClosed waits until no lane of the worker has an open window
// (a closed shard ends its windows), and reports whether it got there
// before ctx ended.
func (w *shardWorker) waitWindowsClosed(ctx context.Context) bool {
	clk := clockwork.NewRealClock()
	for {
		open := false
		for _, l := range w.lanes {
			if l.windowOpen() {
				open = true
				signal(l.notify)
			}
		}
		if !open {
			return true
		}
		if engine.Sleep(ctx, clk, 10*time.Millisecond) != nil {
			return false
		}
	}
}

// retiredWindow is a lane window stored under another lane count or
// window length than the mapping's now: UpdateEventSourceMapping changed
// ParallelizationFactor or TumblingWindowInSeconds (to 0 included).
type retiredWindow struct {
	index int
	sw    storedWindow
}

// retiredKey names the shard's record of retired lane windows
// (storedRetired).
func retiredKey(uuid, shardID string) string { return uuid + "." + shardID + ".windows.retired" }

// storedRetired is the shard's record of the retired lane windows' Through,
// as JSON: {"StreamID": id, "Lanes": [{"Lanes": n, "Index": i, "Through":
// seq}]}, Lanes being the lane count (ParallelizationFactor, 1–10) the
// window was stored under, Index its lane (0 to Lanes-1), Through the last
// position folded into it. A lane of the new lane count stores its window
// under the key of the former lane of its index (windowKey), overwriting
// the former lane's Through: this record keeps it, so a restart (an
// update, a disable, a hand-over, a crash) does not deliver the records
// folded into the former window again. An entry is dropped once the
// worker starts past its Through (nothing of it is left to read).
type storedRetired struct {
	StreamID string
	Lanes    []retiredThrough
}

type retiredThrough struct {
	Lanes, Index int
	Through      uint64
}

// retiredWindows reads the shard's retired lane windows: those stored
// under another lane count or window length (windowKey), and those kept
// in the shard's retired record (retiredKey), merged by lane count and
// index (the highest Through). A closed one whose Through is before from,
// the first position the worker reads, is left out. Before, they were
// ignored: an open window's state, and the records folded into it, were
// never given their final invocation.
func (s *Service) retiredWindows(ctx context.Context, r *runner, shardID string, from uint64) ([]retiredWindow, error) {
	var out []retiredWindow
	add := func(index int, sw storedWindow) {
		if sw.Start == 0 && sw.Through < from {
			return
		}
		for i := range out {
			if out[i].index == index && out[i].sw.Lanes == sw.Lanes {
				out[i].sw.Through = max(out[i].sw.Through, sw.Through)
				return
			}
		}
		out = append(out, retiredWindow{index: index, sw: sw})
	}
	for i := range MaxParallelizationFactor {
		e, err := s.ckGet(ctx, windowKey(r.cfg.UUID, shardID, i))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		} else if err != nil {
			return nil, err
		}
		var sw storedWindow
		if json.Unmarshal(e.Value(), &sw) != nil || sw.StreamID != r.streamID || sw.current(r) || sw.Lanes < 1 {
			continue
		}
		add(i, sw)
	}
	e, err := s.ckGet(ctx, retiredKey(r.cfg.UUID, shardID))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return out, nil
	} else if err != nil {
		return nil, err
	}
	var sr storedRetired
	if json.Unmarshal(e.Value(), &sr) != nil || sr.StreamID != r.streamID {
		return out, nil
	}
	for _, t := range sr.Lanes {
		if t.Lanes >= 1 && t.Index >= 0 && t.Index < t.Lanes {
			add(t.Index, storedWindow{StreamID: r.streamID, Lanes: t.Lanes, Through: t.Through})
		}
	}
	return out, nil
}

// storeRetired writes the Through of every retired window of the worker
// to the shard's retired record (retiredKey), unless it holds them
// already, fenced as every checkpoint write; it retries until stored and
// returns an error only when ctx ends. closeRetired calls it before any
// lane of the new lane count stores its window.
func (w *shardWorker) storeRetired(ctx context.Context) error {
	sr := storedRetired{StreamID: w.r.streamID}
	for _, rw := range w.retired {
		if rw.sw.Through > 0 {
			sr.Lanes = append(sr.Lanes, retiredThrough{Lanes: rw.sw.Lanes, Index: rw.index, Through: rw.sw.Through})
		}
	}
	key := retiredKey(w.r.cfg.UUID, w.shardID)
	body, _ := json.Marshal(sr)
	l := newLane(w, 1)
	return l.storeUntilDone(ctx, "retired window write failed; retrying", func() error {
		e, err := w.r.svc.ck.Get(ctx, key) // not ckGet: the fence stays on the revision retiredWindows read
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			if len(sr.Lanes) == 0 {
				return nil
			}
		} else if err != nil {
			return err
		} else if bytes.Equal(e.Value(), body) {
			return nil
		}
		return w.r.svc.ckPut(ctx, unitKey(w.r.cfg.UUID, w.shardID), key, body)
	})
}

// openWindowStored reports whether a lane window of the shard is stored
// open, under any lane count or length: its final invocation is still to
// be made, so the shard is not done, whatever its checkpoint says.
func (s *Service) openWindowStored(ctx context.Context, uuid, streamID, shardID string) (bool, error) {
	for i := range MaxParallelizationFactor {
		e, err := s.ck.Get(ctx, windowKey(uuid, shardID, i))
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		} else if err != nil {
			return false, err
		}
		var sw storedWindow
		if json.Unmarshal(e.Value(), &sw) == nil && sw.StreamID == streamID && sw.Start != 0 {
			return true, nil
		}
	}
	return false, nil
}

// closeRetired makes the final invocation of each retired open window,
// before the worker's lanes take any record (the shard's processing waits
// for it, as for any final invocation), and stores it closed. The
// invocation may come before the window's end: the window cannot go on
// under the new lanes. Records folded into a retired window are not
// delivered again (retiredFolded), after a restart too: their Through is
// first kept in the shard's retired record (storeRetired). Returns an
// error only when ctx ends.
func (w *shardWorker) closeRetired(ctx context.Context) error {
	if len(w.retired) > 0 {
		if err := w.storeRetired(ctx); err != nil {
			return err
		}
	}
	for i := range w.retired {
		rw := &w.retired[i]
		if rw.sw.Start == 0 {
			continue
		}
		length := time.Duration(rw.sw.Seconds) * time.Second
		if length <= 0 {
			length = w.r.cfg.tumblingWindow()
		}
		l := newLane(w, 1)
		l.index = rw.index
		l.win = &windowState{length: length, start: time.UnixMilli(rw.sw.Start).UTC(), state: rw.sw.State, through: rw.sw.Through}
		b := &batchRun{l: l, w: w, r: w.r}
		if err := b.invokeUntilOK(ctx, true, false); err != nil {
			return err
		}
		w.counters.windowsClosed.Add(1)
		w.r.svc.eng.Logger.Info("a window of the mapping's former lanes or length got its final invocation",
			"mapping", w.r.cfg.UUID, "shard", w.shardID, "lane", rw.index, "lanes", rw.sw.Lanes, "windowStart", l.win.start)
		rw.sw.Start, rw.sw.State = 0, nil
		body, _ := json.Marshal(rw.sw)
		if err := l.storeUntilDone(ctx, "window state write failed; retrying", func() error {
			return w.r.svc.ckPut(ctx, unitKey(w.r.cfg.UUID, w.shardID), windowKey(w.r.cfg.UUID, w.shardID, rw.index), body)
		}); err != nil {
			return err
		}
	}
	return nil
}

// retiredFolded reports whether the record at seq, whose lane hash is h,
// was folded into a retired window's state (its former lane's Through):
// it is not delivered again.
func (w *shardWorker) retiredFolded(seq uint64, h uint32) bool {
	for i := range w.retired {
		rw := &w.retired[i]
		if seq <= rw.sw.Through && int(h%uint32(rw.sw.Lanes)) == rw.index {
			return true
		}
	}
	return false
}
