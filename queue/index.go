package queue

// The in-memory index of a queue: every live message with its runnel
// state, in three heaps (ready by send order, timers by visibleAt, expiry
// by sentAt) and, for FIFO queues, in per-group lists. Every method here
// runs under queue.mu.

// status is where a message is in its life.
type status uint8

const (
	// stPending: published, JetStream has not acknowledged it yet. Not
	// receivable; in a FIFO group it blocks the messages after it.
	stPending status = iota
	// stVisible: receivable. Standard: in the ready heap. FIFO: in the
	// ready heap only while it heads its group and the group has nothing
	// in flight.
	stVisible
	// stDelayed: never received, visible at visibleAt (DelaySeconds).
	stDelayed
	// stInflight: received, invisible until visibleAt.
	stInflight
	// stMoving: being moved to a dead-letter queue or a move task's
	// destination; counted as in flight.
	stMoving
	// stDeleted: deleted, expired, moved or purged.
	stDeleted
)

// payload is what a message carries: kept in memory within the service's
// cache budget, read back from JetStream otherwise.
type payload struct {
	body  string
	attrs map[string]MessageAttributeValue
}

// message is one SQS message. The fields above st never change after the
// message is created; the ones from st on are the runnel state that the
// state record persists.
type message struct {
	rec       *record
	idx       uint8
	id        string
	sentAt    int64 // Unix ms
	group     string
	dedup     string
	dlqSource string // ARN of the queue redrive moved the message from
	trace     string // AWSTraceHeader
	md5Body   string
	md5Attrs  string
	size      int      // body and attributes, bytes
	payload   *payload // nil when evicted from the cache

	st           status
	visibleAt    int64 // Unix ms
	receiveCount uint32
	firstReceive int64 // Unix ms, 0 before the first receive
	receivedAt   int64 // Unix ms of the latest receive
	nonce        uint64

	readyIdx, timerIdx, expIdx int // positions in the heaps, -1 if absent
}

func (m *message) setPayload(p *payload) {
	m.payload = p
	m.size = len(p.body) + attributesSize(p.attrs)
}

// record is the messages of one send call, stored together as one body
// record (subject m.<n>) and one state record (s.<n>).
type record struct {
	n uint64
	// seq is the body's stream sequence (0: not known yet, its publish
	// not acknowledged); n is only its subject's number.
	seq      uint64
	msgs     []*message
	live     int  // messages not deleted
	hasState bool // a state record was published
	dirty    bool // in queue.dirty
	purged   bool // PurgeQueue removed it while its publish was pending
	// moved: a move wrote it (store with dedup false): its messages'
	// deduplication ids are not remembered, at a load or in its tombstone.
	moved bool

	// acked is closed once JetStream answered the body publish; failed
	// then tells whether it was refused.
	acked  chan struct{}
	failed bool
}

// group is a FIFO message group: its messages in send order (deleted ones
// are dropped from the front lazily) and how many are in flight.
type group struct {
	id       string
	msgs     []*message
	inflight int
}

// mheap is a binary min-heap of messages that records each message's
// position so it can be removed or fixed in O(log n).
type mheap struct {
	items []*message
	less  func(a, b *message) bool
	pos   func(m *message) *int
}

func (h *mheap) len() int { return len(h.items) }

func (h *mheap) peek() *message { return h.items[0] }

func (h *mheap) push(m *message) {
	*h.pos(m) = len(h.items)
	h.items = append(h.items, m)
	h.up(len(h.items) - 1)
}

func (h *mheap) pop() *message {
	m := h.items[0]
	h.remove(m)
	return m
}

func (h *mheap) remove(m *message) {
	i := *h.pos(m)
	if i < 0 {
		return
	}
	last := len(h.items) - 1
	if i != last {
		h.swap(i, last)
	}
	h.items[last] = nil
	h.items = h.items[:last]
	*h.pos(m) = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h *mheap) fix(m *message) {
	i := *h.pos(m)
	h.down(i)
	h.up(i)
}

func (h *mheap) swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	*h.pos(h.items[i]) = i
	*h.pos(h.items[j]) = j
}

func (h *mheap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.swap(i, p)
		i = p
	}
}

func (h *mheap) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			return
		}
		h.swap(i, c)
		i = c
	}
}

// before orders messages by send: record number, then position.
func before(a, b *message) bool {
	if a.rec.n != b.rec.n {
		return a.rec.n < b.rec.n
	}
	return a.idx < b.idx
}

func newHeaps(q *queue) {
	q.ready = mheap{less: before, pos: func(m *message) *int { return &m.readyIdx }}
	q.timer = mheap{less: func(a, b *message) bool {
		if a.visibleAt != b.visibleAt {
			return a.visibleAt < b.visibleAt
		}
		return before(a, b)
	}, pos: func(m *message) *int { return &m.timerIdx }}
	q.exp = mheap{less: func(a, b *message) bool {
		if a.sentAt != b.sentAt {
			return a.sentAt < b.sentAt
		}
		return before(a, b)
	}, pos: func(m *message) *int { return &m.expIdx }}
}

// setStatus moves m to st and keeps the counters GetQueueAttributes
// reports.
func (q *queue) setStatus(m *message, st status) {
	switch m.st {
	case stVisible:
		q.nVisible--
	case stDelayed:
		q.nDelayed--
	case stInflight, stMoving:
		q.nInflight--
	}
	m.st = st
	switch st {
	case stVisible:
		q.nVisible++
	case stDelayed:
		q.nDelayed++
	case stInflight, stMoving:
		q.nInflight++
	}
}

// activate makes a message that was pending (or just read back from
// JetStream) part of the index: visible, delayed or in flight according
// to its state.
func (q *queue) activate(m *message, now int64) {
	m.readyIdx, m.timerIdx, m.expIdx = -1, -1, -1
	q.exp.push(m)
	switch {
	case m.visibleAt > now && m.receiveCount > 0:
		q.setStatus(m, stInflight)
		q.schedule(m)
		if q.fifo {
			q.groups[m.group].inflight++
		}
	case m.visibleAt > now:
		q.setStatus(m, stDelayed)
		q.schedule(m)
	default:
		q.makeVisible(m)
	}
}

// redelay applies the FIFO queue's DelaySeconds to the messages never
// received: "For FIFO queues, the per-queue delay setting is
// retroactive—changing the setting affects the delay of messages already
// in the queue" (sqs-delay-queues.html). Their delay runs from their send;
// those past it become visible. Copies written by a move are left as
// they are (they were not sent with a delay). Before, a message kept the
// delay of its send. q.mu is held.
func (q *queue) redelay(now int64) {
	d := q.cfg.delay.Milliseconds()
	for _, rec := range q.records {
		if rec.moved {
			continue
		}
		for _, m := range rec.msgs {
			switch {
			case m.st == stPending && m.receiveCount == 0:
				m.visibleAt = m.sentAt + d
			case m.st == stDelayed:
				m.visibleAt = max(m.sentAt+d, now)
				q.schedule(m)
			case m.st == stVisible && m.receiveCount == 0 && m.sentAt+d > now:
				// Visible, never received, and now within its delay.
				if m.readyIdx >= 0 {
					q.ready.remove(m)
				}
				q.setStatus(m, stDelayed)
				m.visibleAt = m.sentAt + d
				q.schedule(m)
			}
		}
	}
	q.advance(now)
}

// makeVisible makes m receivable (its delay or visibility timeout ended,
// or it was just stored).
func (q *queue) makeVisible(m *message) {
	wasInflight := m.st == stInflight || m.st == stMoving
	q.setStatus(m, stVisible)
	if !q.fifo {
		q.pushReady(m)
		return
	}
	g := q.groups[m.group]
	if wasInflight {
		g.inflight--
	}
	q.refreshGroup(g)
}

// refreshGroup drops deleted messages from the front of a FIFO group and
// puts its head in the ready heap when the group may deliver.
func (q *queue) refreshGroup(g *group) {
	i := 0
	for i < len(g.msgs) && g.msgs[i].st == stDeleted {
		g.msgs[i] = nil
		i++
	}
	g.msgs = g.msgs[i:]
	if len(g.msgs) == 0 && g.inflight == 0 {
		delete(q.groups, g.id)
		return
	}
	if len(g.msgs) == 0 {
		return
	}
	h := g.msgs[0]
	if g.inflight == 0 && h.st == stVisible && h.readyIdx < 0 {
		q.pushReady(h)
	}
}

// pushReady makes m receivable and wakes waiting receives.
func (q *queue) pushReady(m *message) {
	q.ready.push(m)
	q.wake()
}

// addToGroup appends a new message to its FIFO group.
func (q *queue) addToGroup(m *message) {
	g := q.groups[m.group]
	if g == nil {
		g = &group{id: m.group}
		q.groups[m.group] = g
	}
	g.msgs = append(g.msgs, m)
}

// remove deletes m from the index (delete, expiry, move, failed publish)
// and marks its record dirty so the change is persisted.
func (q *queue) remove(m *message) {
	prev := m.st
	switch prev {
	case stDeleted:
		return
	case stVisible:
		q.ready.remove(m)
	case stDelayed, stInflight:
		q.timer.remove(m)
	}
	if m.expIdx >= 0 {
		q.exp.remove(m)
	}
	q.setStatus(m, stDeleted)
	q.releasePayload(m)
	rec := m.rec
	rec.live--
	if rec.live == 0 {
		delete(q.records, rec.n)
	}
	q.markDirty(rec)
	if q.fifo {
		if g := q.groups[m.group]; g != nil {
			if prev == stInflight || prev == stMoving {
				g.inflight--
			}
			q.refreshGroup(g)
		}
	}
}

func (q *queue) releasePayload(m *message) {
	if m.payload != nil {
		q.svc.cached.Add(-int64(m.size))
		m.payload = nil
	}
}

// cachePayload keeps m's payload if the service's cache budget allows.
func (q *queue) cachePayload(m *message) {
	if m.payload == nil {
		return
	}
	if q.svc.cached.Add(int64(m.size)) > q.svc.cacheBudget {
		q.svc.cached.Add(-int64(m.size))
		m.payload = nil
	}
}

func (q *queue) markDirty(rec *record) {
	if !rec.dirty {
		rec.dirty = true
		q.dirty = append(q.dirty, rec)
	}
}

// advance applies the passage of time up to now: delays and visibility
// timeouts that ended make messages visible, messages older than the
// retention period are deleted, deduplication ids older than five minutes
// are forgotten.
func (q *queue) advance(now int64) {
	for q.timer.len() > 0 && q.timer.peek().visibleAt <= now {
		m := q.timer.pop()
		q.makeVisible(m)
	}
	ret := q.cfg.retention.Milliseconds()
	for q.exp.len() > 0 && q.exp.peek().sentAt+ret <= now {
		m := q.exp.peek()
		q.svc.countExpired(q.name)
		q.svc.log.Warn("queue: message expired (MessageRetentionPeriod) and deleted", "queue", q.name, "messageId", m.id,
			"sentTimestamp", m.sentAt, "approximateReceiveCount", m.receiveCount, "retentionSeconds", ret/1000)
		q.remove(m)
	}
	if q.fifo {
		q.pruneDedup(now)
	}
}

// schedule puts m in the timer heap at its visibleAt, or moves it there
// if it is in the heap already. Waiting receives armed their timers on
// the earliest due time they saw (queue.armed); when m is due before
// that, they are woken to re-arm on it, so a shorter delay, visibility
// timeout or ChangeMessageVisibility is seen when it ends, not when the
// wait does.
func (q *queue) schedule(m *message) {
	if m.timerIdx >= 0 {
		q.timer.fix(m)
	} else {
		q.timer.push(m)
	}
	if q.armed != 0 && m.visibleAt < q.armed {
		q.wake()
	}
}

// nextDue is when the next delayed or in-flight message becomes visible,
// or 0.
func (q *queue) nextDue() int64 {
	if q.timer.len() == 0 {
		return 0
	}
	return q.timer.peek().visibleAt
}
