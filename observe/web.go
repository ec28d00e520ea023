package observe

// The web page `runnel serve --http` serves at /: the pipeline as a graph,
// the lag of every shard, the dead-letter queues with a page of their
// messages and a redrive button, refreshed every second by polling the
// JSON endpoints below. The page is plain HTML and JavaScript
// (web/index.html, embedded), with no build step.
//
//	GET  /                              the page
//	GET  /api/graph                     nodes (streams, queues, functions) and edges
//	GET  /api/lag                       every mapping's shards (iterator age, pending, counters)
//	GET  /api/nodes                     the runnel nodes and the work each runs (nodes.go)
//	GET  /api/dlq                       the dead-letter queues with their depth and redrive task
//	GET  /api/dlq/{queue}?limit=N       recovery.Inspect: counts, breakdowns, a page of messages; a dead-letter
//	                                    queue only (400 for another, 404 for a missing one), same-origin only (403)
//	POST /api/dlq/{queue}/redrive       recovery.Redrive in the background: the task, 200 if it ended
//	                                    within 0.5 s (4xx/5xx with its error if it was refused), else
//	                                    202 (?to= another queue, ?rate= messages/s, ?wait=1 answers when done)
//	GET  /api/dlq/{queue}/redrive       the queue's last redrive task
//
// The graph, lag and DLQ endpoints share one Snapshot, taken at most every
// half second whatever the number of open pages.
//
// Inspecting a queue receives its messages and releases them at once (see
// package recovery): it increments their receive counts. The page asks for
// messages only when a queue's depth changes (or every 10 s), and only of
// queues no mapping reads and with no RedrivePolicy of their own
// (DLQState.AutoInspect; the others on a click). A queue being redriven is
// not inspected (the endpoint answers with its counts and "busy").
//
// Cross-site requests are refused (403): the POSTs by Handler's
// http.CrossOriginProtection, GET /api/dlq/{queue}, which receives
// messages, by checkSameOrigin. Requests without Sec-Fetch-Site and
// Origin (curl, scripts) pass.

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runnel-dev/runnel"
	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/queue"
	"github.com/runnel-dev/runnel/recovery"
	"github.com/runnel-dev/runnel/stream"
)

//go:embed web/index.html
var webFiles embed.FS

// snapshotTTL is how long a Snapshot serves the JSON endpoints.
const snapshotTTL = 500 * time.Millisecond

// Graph is the pipeline: streams, queues, functions, event buses and
// schedules as nodes; mappings, destinations, redrive policies, rule
// targets and schedule targets as edges.
type Graph struct {
	Time    time.Time   `json:"time"`
	InAlarm int         `json:"inAlarm"`
	Alarms  []string    `json:"alarms,omitempty"` // names of the alarms in ALARM
	Nodes   []GraphNode `json:"nodes"`
	Edges   []GraphEdge `json:"edges"`
}

// GraphNode is a stream, a queue or a function. ID is "<kind>:<name>".
type GraphNode struct {
	ID   string `json:"id"`
	Kind string `json:"kind"` // stream, queue, function, topic, bus, schedule, other
	Name string `json:"name"`
	ARN  string `json:"arn,omitempty"`
	// Streams.
	Shards int `json:"shards,omitempty"`
	// Queues.
	Depth      int64 `json:"depth"`
	DeadLetter bool  `json:"deadLetter,omitempty"`
	// Functions (topics: deliveries that succeeded and that failed).
	Invocations int64 `json:"invocations"`
	Errors      int64 `json:"errors"`
}

// GraphEdge goes from a source to a function (a mapping), from a function
// to a destination (onFailure, onSuccess, deadLetter: a mapping's or the
// asynchronous invocation's), from a queue to its RedrivePolicy target
// (redrive), from a topic to a subscribed endpoint (subscription) or a
// subscription's dead-letter queue (deadLetter), from a bus to a rule's
// target (rule, labelled with the rule) or from a schedule to its target
// (schedule).
type GraphEdge struct {
	From    string `json:"from"`
	To      string `json:"to"`
	Kind    string `json:"kind"`
	Label   string `json:"label,omitempty"`
	Mapping string `json:"mapping,omitempty"` // the mapping's UUID
	State   string `json:"state,omitempty"`   // the mapping's state
}

// Lag is every mapping's per-shard (or queue poller) state.
type Lag struct {
	Time time.Time `json:"time"`
	// IteratorAgeThresholdMs is the iterator-age alarm's threshold
	// (Config.IteratorAge, --alarm-iterator-age; default 60000), in
	// milliseconds: the page marks a shard above it as lagging.
	IteratorAgeThresholdMs int64          `json:"iteratorAgeThresholdMs"`
	Mappings               []MappingState `json:"mappings"`
}

// DLQList is the dead-letter queues.
type DLQList struct {
	Time   time.Time  `json:"time"`
	Queues []DLQState `json:"queues"`
}

// DLQState is a dead-letter queue's depth and its last redrive task.
type DLQState struct {
	QueueState
	Depth int64 `json:"depth"`
	// Sources are the queues whose RedrivePolicy names this one: where a
	// redrive to source sends the messages they moved.
	Sources []string `json:"sources,omitempty"`
	// RedrivesTo is this queue's own RedrivePolicy target, if any, and
	// ConsumedBy the mappings reading it: looking at such a queue's
	// messages counts as a receive and may move them on or delay their
	// processing, so the page looks only when asked (AutoInspect false).
	RedrivesTo  string        `json:"redrivesTo,omitempty"`
	ConsumedBy  []string      `json:"consumedBy,omitempty"`
	AutoInspect bool          `json:"autoInspect"`
	Redrive     *RedriveState `json:"redrive,omitempty"`
}

// RedriveState is a redrive started from the page.
type RedriveState struct {
	Queue      string    `json:"queue"`
	To         string    `json:"to,omitempty"` // "" for each message's source
	Status     string    `json:"status"`       // RUNNING, COMPLETED, FAILED, CANCELLED
	Moved      int64     `json:"moved"`
	Total      int64     `json:"total"`
	Error      string    `json:"error,omitempty"`
	StartedAt  time.Time `json:"startedAt"`
	FinishedAt time.Time `json:"finishedAt,omitzero"`
}

func (s *RedriveState) running() bool { return s != nil && s.Status == queue.MoveTaskRunning }

// DLQPage is GET /api/dlq/{queue}: Inspect's answer, or Busy with the
// running redrive while one runs.
type DLQPage struct {
	*recovery.Inspection
	Busy    bool          `json:"busy,omitempty"`
	Redrive *RedriveState `json:"redrive,omitempty"`
}

// web serves the page and its endpoints.
type web struct {
	rn *runnel.Runnel
	a  *Alarms

	mu     sync.Mutex
	snap   *Snapshot
	snapAt time.Time
	tasks  map[string]*RedriveState
	locks  map[string]*sync.Mutex // per queue: one Inspect or Redrive at a time
}

// registerWeb adds the page and its endpoints to mux.
func registerWeb(mux *http.ServeMux, rn *runnel.Runnel, a *Alarms) {
	w := &web{rn: rn, a: a, tasks: map[string]*RedriveState{}, locks: map[string]*sync.Mutex{}}
	mux.HandleFunc("GET /{$}", w.page)
	mux.HandleFunc("GET /api/graph", w.graph)
	mux.HandleFunc("GET /api/lag", w.lag)
	mux.HandleFunc("GET /api/nodes", w.nodes)
	mux.HandleFunc("GET /api/dlq", w.dlqs)
	mux.HandleFunc("GET /api/dlq/{queue}", w.inspect)
	mux.HandleFunc("POST /api/dlq/{queue}/redrive", w.startRedrive)
	mux.HandleFunc("GET /api/dlq/{queue}/redrive", w.redriveState)
}

func (w *web) page(rw http.ResponseWriter, r *http.Request) {
	b, err := webFiles.ReadFile("web/index.html")
	if err != nil {
		http.Error(rw, err.Error(), http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "text/html; charset=utf-8")
	rw.Header().Set("Cache-Control", "no-cache")
	rw.Write(b)
}

// snapshot returns a Snapshot at most snapshotTTL old (wall time, so a
// fake engine clock does not freeze it).
func (w *web) snapshot(ctx context.Context) *Snapshot {
	w.mu.Lock()
	if w.snap != nil && time.Since(w.snapAt) < snapshotTTL {
		s := w.snap
		w.mu.Unlock()
		return s
	}
	w.mu.Unlock()
	s := Take(ctx, w.rn, w.a.takeOptions())
	w.mu.Lock()
	w.snap, w.snapAt = s, time.Now()
	w.mu.Unlock()
	return s
}

// forget drops the cached Snapshot (after a redrive changed the depths).
func (w *web) forget() {
	w.mu.Lock()
	w.snap = nil
	w.mu.Unlock()
}

func (w *web) graph(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	snap := w.snapshot(ctx)
	g := &Graph{Time: snap.Time, Nodes: []GraphNode{}, Edges: []GraphEdge{}}
	for _, al := range w.a.Alarms() {
		if al.State == StateAlarm {
			g.InAlarm++
			g.Alarms = append(g.Alarms, al.Name)
		}
	}
	nodes := map[string]*GraphNode{}
	var order []string
	add := func(n GraphNode) *GraphNode {
		if p, ok := nodes[n.ID]; ok {
			return p
		}
		nodes[n.ID] = &n
		order = append(order, n.ID)
		return &n
	}
	// node returns the node of an ARN (stream, queue or function),
	// adding it if it is not known yet.
	node := func(arn string) string {
		if n, _, ok := stream.SourceOfARN(arn); ok { // a stream, or a consumer of it
			return add(GraphNode{ID: "stream:" + n, Kind: "stream", Name: n, ARN: arn}).ID
		}
		if n, ok := queue.NameFromARN(arn); ok {
			return add(GraphNode{ID: "queue:" + n, Kind: "queue", Name: n, ARN: arn}).ID
		}
		if n, ok := function.FunctionNameFromARN(arn); ok {
			return add(GraphNode{ID: "function:" + n, Kind: "function", Name: n, ARN: arn}).ID
		}
		if n, ok := busNode(arn); ok {
			return add(n).ID
		}
		return add(GraphNode{ID: "other:" + arn, Kind: "other", Name: arn, ARN: arn}).ID
	}

	if names, err := w.rn.Streams.ListStreams(ctx); err == nil {
		for _, n := range names {
			gn := GraphNode{ID: "stream:" + n, Kind: "stream", Name: n, ARN: w.rn.Streams.ARN(n)}
			if d, err := w.rn.Streams.DescribeStream(ctx, n); err == nil {
				gn.Shards = len(d.Shards)
			}
			add(gn)
		}
	}
	for _, q := range snap.Queues {
		add(GraphNode{ID: "queue:" + q.Name, Kind: "queue", Name: q.Name, ARN: w.rn.Queues.ARN(q.Name), Depth: q.Depth(), DeadLetter: q.DeadLetter})
	}
	for _, f := range snap.Functions {
		add(GraphNode{ID: "function:" + f.Name, Kind: "function", Name: f.Name, ARN: w.rn.Functions.ARN(f.Name), Invocations: f.Invocations, Errors: f.Errors})
	}
	for _, m := range snap.Mappings {
		fn := add(GraphNode{ID: "function:" + m.Function, Kind: "function", Name: m.Function}).ID
		g.Edges = append(g.Edges, GraphEdge{From: node(m.SourceArn), To: fn, Kind: "mapping", Label: m.State, Mapping: m.UUID, State: m.State})
		if m.OnFailure != "" {
			g.Edges = append(g.Edges, GraphEdge{From: fn, To: node(m.OnFailure), Kind: "onFailure", Label: "on failure", Mapping: m.UUID})
		}
	}
	if w.rn.Async != nil {
		for _, f := range snap.Functions {
			c, err := w.rn.Async.GetFunctionEventInvokeConfig(ctx, f.Name)
			if err != nil || c == nil {
				continue
			}
			from := "function:" + f.Name
			if d := c.DestinationConfig; d != nil {
				if d.OnFailure != nil && d.OnFailure.Destination != "" {
					g.Edges = append(g.Edges, GraphEdge{From: from, To: node(d.OnFailure.Destination), Kind: "onFailure", Label: "async on failure"})
				}
				if d.OnSuccess != nil && d.OnSuccess.Destination != "" {
					g.Edges = append(g.Edges, GraphEdge{From: from, To: node(d.OnSuccess.Destination), Kind: "onSuccess", Label: "async on success"})
				}
			}
			if c.DeadLetterConfig != nil && c.DeadLetterConfig.TargetArn != "" {
				g.Edges = append(g.Edges, GraphEdge{From: from, To: node(c.DeadLetterConfig.TargetArn), Kind: "deadLetter", Label: "dead-letter config"})
			}
		}
	}
	for _, q := range snap.Queues {
		attrs, err := w.rn.Queues.GetQueueAttributes(ctx, q.URL, []string{queue.AttrRedrivePolicy})
		if err != nil || attrs[queue.AttrRedrivePolicy] == "" {
			continue
		}
		rp, err := queue.ParseRedrivePolicy(attrs[queue.AttrRedrivePolicy])
		if err != nil {
			continue
		}
		g.Edges = append(g.Edges, GraphEdge{From: "queue:" + q.Name, To: node(rp.DeadLetterTargetArn), Kind: "redrive",
			Label: strconv.Itoa(rp.MaxReceiveCount) + " receives"})
	}
	g.Edges = append(g.Edges, w.topicEdges(snap, add, node)...)
	g.Edges = append(g.Edges, eventsGraph(w.rn, add, node)...)
	for _, id := range order {
		g.Nodes = append(g.Nodes, *nodes[id])
	}
	writeJSON(rw, http.StatusOK, g)
}

// topicEdges adds the SNS topics as nodes and returns their
// subscriptions (topic to endpoint; label: protocol, "filtered" with a
// FilterPolicy) and subscriptions' dead-letter queues (topic to queue,
// deadLetter) as edges.
func (w *web) topicEdges(snap *Snapshot, add func(GraphNode) *GraphNode, node func(arn string) string) []GraphEdge {
	var edges []GraphEdge
	for _, t := range snap.Topics {
		add(GraphNode{ID: "topic:" + t.Name, Kind: "topic", Name: t.Name, ARN: w.rn.SNS.TopicARN(t.Name), Invocations: t.Delivered, Errors: t.Failed})
	}
	subs, _ := w.rn.SNS.ListSubscriptions("")
	for _, sub := range subs {
		from := "topic:" + sub.TopicArn[strings.LastIndexByte(sub.TopicArn, ':')+1:]
		attrs, _ := w.rn.SNS.GetSubscriptionAttributes(sub.SubscriptionArn) // nil while pending
		label := sub.Protocol
		if attrs["FilterPolicy"] != "" {
			label += ", filtered"
		}
		edges = append(edges, GraphEdge{From: from, To: node(sub.Endpoint), Kind: "subscription", Label: label})
		if rp := attrs["RedrivePolicy"]; rp != "" {
			var p struct{ DeadLetterTargetArn string }
			if json.Unmarshal([]byte(rp), &p) == nil {
				edges = append(edges, GraphEdge{From: from, To: node(p.DeadLetterTargetArn), Kind: "deadLetter", Label: "subscription DLQ"})
			}
		}
	}
	return edges
}

func (w *web) lag(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	snap := w.snapshot(ctx)
	l := &Lag{Time: snap.Time, IteratorAgeThresholdMs: w.a.Config().IteratorAge.Milliseconds(), Mappings: snap.Mappings}
	if l.Mappings == nil {
		l.Mappings = []MappingState{}
	}
	writeJSON(rw, http.StatusOK, l)
}

func (w *web) dlqs(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	snap := w.snapshot(ctx)
	out := &DLQList{Time: snap.Time, Queues: []DLQState{}}
	sources, targets, consumers := map[string][]string{}, map[string]string{}, map[string][]string{}
	if all, err := recovery.ListQueues(ctx, w.rn.Queues, recovery.ListOptions{}); err == nil {
		for _, q := range all {
			sources[q.Name], targets[q.Name] = q.Sources, q.RedriveTarget
		}
	}
	for _, m := range snap.Mappings {
		if m.SourceKind == "queue" {
			consumers[m.Source] = append(consumers[m.Source], "mapping "+m.UUID+" ("+m.Function+")")
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, q := range snap.Queues {
		if !q.DeadLetter {
			continue
		}
		d := DLQState{QueueState: q, Depth: q.Depth(), Sources: sources[q.Name], RedrivesTo: targets[q.Name], ConsumedBy: consumers[q.Name]}
		d.AutoInspect = d.RedrivesTo == "" && len(d.ConsumedBy) == 0
		if t := w.tasks[q.Name]; t != nil {
			c := *t
			d.Redrive = &c
		}
		out.Queues = append(out.Queues, d)
	}
	sort.Slice(out.Queues, func(i, j int) bool { return out.Queues[i].Name < out.Queues[j].Name })
	writeJSON(rw, http.StatusOK, out)
}

// queueLock returns the lock of a queue's Inspect and Redrive.
func (w *web) queueLock(name string) *sync.Mutex {
	w.mu.Lock()
	defer w.mu.Unlock()
	l := w.locks[name]
	if l == nil {
		l = &sync.Mutex{}
		w.locks[name] = l
	}
	return l
}

func (w *web) task(name string) *RedriveState {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.tasks[name]; t != nil {
		c := *t
		return &c
	}
	return nil
}

func (w *web) inspect(rw http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	name := r.PathValue("queue")
	limit := 10
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 100 {
			writeError(rw, http.StatusBadRequest, errors.New("limit: 1..100"))
			return
		}
		limit = n
	}
	if err := checkSameOrigin(r); err != nil {
		writeError(rw, http.StatusForbidden, err)
		return
	}
	if status, err := w.checkDeadLetter(ctx, name); err != nil {
		writeError(rw, status, err)
		return
	}
	if t := w.task(name); t.running() {
		w.busy(rw, ctx, name, t)
		return
	}
	l := w.queueLock(name)
	if !l.TryLock() {
		w.busy(rw, ctx, name, w.task(name))
		return
	}
	defer l.Unlock()
	in, err := recovery.Inspect(ctx, w.rn.Queues, name, recovery.InspectOptions{Limit: limit, Scan: max(limit, 200), Now: w.rn.Engine.Clock.Now()})
	if err != nil {
		writeError(rw, errorStatus(err), err)
		return
	}
	if in.Messages == nil {
		in.Messages = []recovery.MessageView{}
	}
	writeJSON(rw, http.StatusOK, &DLQPage{Inspection: in, Redrive: w.task(name)})
}

// crossOrigin refuses cross-origin browser requests: by Sec-Fetch-Site
// (anything but same-origin or none), else by an Origin whose host is not
// the Host. Requests with neither header (curl, scripts) pass.
var crossOrigin = http.NewCrossOriginProtection()

// checkSameOrigin applies crossOrigin's check to a GET, which
// CrossOriginProtection lets through as a safe method: GET
// /api/dlq/{queue} receives the queue's messages (their receive counts go
// up), so an <img src> or a fetch from another site must not run it. The
// page's own fetches are same-origin and pass. The error is 403's body.
func checkSameOrigin(r *http.Request) error {
	probe := r.WithContext(r.Context()) // a shallow copy
	probe.Method = http.MethodPost
	if err := crossOrigin.Check(probe); err != nil {
		return errors.New("cross-origin request refused: inspecting a queue receives its messages, so only the page served here may ask (Sec-Fetch-Site " +
			strconv.Quote(r.Header.Get("Sec-Fetch-Site")) + ", Origin " + strconv.Quote(r.Header.Get("Origin")) + ", Host " + strconv.Quote(r.Host) + ")")
	}
	return nil
}

// checkDeadLetter refuses to inspect a queue that is not a dead-letter
// queue (Snapshot's QueueState.DeadLetter): receiving from a work queue
// counts toward its RedrivePolicy's maxReceiveCount and would move its
// messages to its DLQ. It answers 404 for a missing queue, 400 (naming
// the queue) for one that is no DLQ, and 0 for a DLQ. A queue the cached
// Snapshot does not know (created since) is looked up in a fresh one.
func (w *web) checkDeadLetter(ctx context.Context, name string) (int, error) {
	find := func(s *Snapshot) (QueueState, bool) {
		for _, q := range s.Queues {
			if q.Name == name {
				return q, true
			}
		}
		return QueueState{}, false
	}
	q, ok := find(w.snapshot(ctx))
	if !ok {
		w.forget()
		q, ok = find(w.snapshot(ctx))
	}
	if !ok {
		if _, err := w.rn.Queues.GetQueueURL(ctx, name); err != nil {
			return errorStatus(err), err
		}
		return http.StatusInternalServerError, errors.New("queue " + name + " could not be read; try again")
	}
	if !q.DeadLetter {
		return http.StatusBadRequest, errors.New("queue " + name + " is not a dead-letter queue (no RedrivePolicy, mapping or async on-failure destination, " +
			"DeadLetterConfig or SNS subscription names it, and its name does not match the dead-letter pattern): " +
			"inspecting it would receive its messages, which counts toward its maxReceiveCount")
	}
	return 0, nil
}

// busy answers an inspection of a queue being redriven with its counts
// only.
func (w *web) busy(rw http.ResponseWriter, ctx context.Context, name string, t *RedriveState) {
	in := &recovery.Inspection{Queue: name, Messages: []recovery.MessageView{}}
	if u, err := w.rn.Queues.GetQueueURL(ctx, name); err == nil {
		in.URL = u
		if attrs, err := w.rn.Queues.GetQueueAttributes(ctx, u, []string{queue.AttrAll}); err == nil {
			in.ARN = attrs[queue.AttrQueueArn]
			in.Visible = int(atoi(attrs[queue.AttrApproximateNumberOfMessages]))
			in.InFlight = int(atoi(attrs[queue.AttrApproximateNumberOfMessagesNotVisible]))
			in.Delayed = int(atoi(attrs[queue.AttrApproximateNumberOfMessagesDelayed]))
		}
	}
	writeJSON(rw, http.StatusOK, &DLQPage{Inspection: in, Busy: true, Redrive: t})
}

func (w *web) startRedrive(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	q := r.URL.Query()
	o := recovery.RedriveOptions{To: q.Get("to")}
	if s := q.Get("rate"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 500 {
			writeError(rw, http.StatusBadRequest, errors.New("rate: 1..500 messages per second"))
			return
		}
		o.Rate = n
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	if _, err := w.rn.Queues.GetQueueURL(ctx, name); err != nil {
		cancel()
		writeError(rw, errorStatus(err), err)
		return
	}
	cancel()

	w.mu.Lock()
	if t := w.tasks[name]; t.running() {
		c := *t
		w.mu.Unlock()
		writeJSON(rw, http.StatusConflict, &c)
		return
	}
	t := &RedriveState{Queue: name, To: o.To, Status: queue.MoveTaskRunning, StartedAt: time.Now()}
	w.tasks[name] = t
	w.mu.Unlock()

	o.Progress = func(moved, total int64) {
		w.mu.Lock()
		t.Moved, t.Total = moved, total
		w.mu.Unlock()
	}
	done := make(chan struct{})
	var redriveErr error
	go func() {
		defer close(done)
		// The task outlives the request; it ends with the process.
		l := w.queueLock(name)
		l.Lock()
		defer l.Unlock()
		res, err := recovery.Redrive(context.WithoutCancel(r.Context()), w.rn.Queues, name, o)
		redriveErr = err
		w.mu.Lock()
		defer w.mu.Unlock()
		t.FinishedAt = time.Now()
		if res != nil {
			t.Status = res.Status
			t.Moved, t.Total = res.ApproximateNumberOfMessagesMoved, res.ApproximateNumberOfMessagesToMove
			if res.FailureReason != "" {
				t.Error = res.FailureReason
			}
		}
		if err != nil {
			if t.Status == queue.MoveTaskRunning || t.Status == "" {
				t.Status = queue.MoveTaskFailed
			}
			t.Error = err.Error()
		} else if t.Status == queue.MoveTaskRunning || t.Status == "" {
			t.Status = queue.MoveTaskCompleted
		}
		w.snap = nil // depths changed
	}()
	// Answer when the task ends (?wait=1), or after a short wait so that
	// a refused task (a queue no RedrivePolicy names, a bad destination)
	// is answered as an error; otherwise 202 with the running task.
	var timeout <-chan time.Time
	if q.Get("wait") == "" {
		timeout = time.After(500 * time.Millisecond)
	}
	select {
	case <-done:
		t := w.task(name)
		status := http.StatusOK
		if redriveErr != nil {
			status = errorStatus(redriveErr)
		}
		writeJSON(rw, status, t)
	case <-timeout:
		w.forget()
		writeJSON(rw, http.StatusAccepted, w.task(name))
	case <-r.Context().Done():
	}
}

func (w *web) redriveState(rw http.ResponseWriter, r *http.Request) {
	name := r.PathValue("queue")
	t := w.task(name)
	if t == nil {
		writeError(rw, http.StatusNotFound, errors.New("no redrive of "+name+" since this process started"))
		return
	}
	writeJSON(rw, http.StatusOK, t)
}

func writeJSON(rw http.ResponseWriter, status int, v any) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	rw.WriteHeader(status)
	json.NewEncoder(rw).Encode(v)
}

func writeError(rw http.ResponseWriter, status int, err error) {
	writeJSON(rw, status, map[string]string{"error": err.Error()})
}

func errorStatus(err error) int {
	switch {
	case errors.Is(err, awserr.ErrQueueDoesNotExist), errors.Is(err, awserr.ErrResourceNotFound):
		return http.StatusNotFound
	case errors.Is(err, awserr.ErrInvalidParameterValue), errors.Is(err, awserr.ErrSQSInvalidParameterValue),
		errors.Is(err, awserr.ErrUnsupportedOperation):
		return http.StatusBadRequest
	}
	return http.StatusInternalServerError
}
