package sns

// A message of a topic's internal queue stays invisible while its
// fan-out runs, however long that takes.

import (
	"context"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/queue"
)

// heartbeat is how often (engine clock) a message being handled has its
// visibility timeout set again to workVisibility: a third of it, so two
// renewals may fail before it shows again.
const heartbeat = workVisibility * time.Second / 3

// inflight is a message of the internal queue a handler of this process
// is delivering.
type inflight struct {
	mu      sync.Mutex
	receipt string // the latest receipt handle of the message
}

func (f *inflight) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.receipt
}

// begin marks m as being handled and keeps it invisible until the
// returned stop is called: every heartbeat (engine clock) it sets its
// visibility timeout to workVisibility again (for at most 12 hours of
// one receive, SQS's limit; then the message shows again and begin's
// guard below keeps it from a second fan-out in this process). A fan-out takes as long as its
// deliveries (an HTTP endpoint that does not answer takes 15 s an
// attempt, with the immediate retries of its delivery policy), so a
// fixed 300 s let a second receiver take the message and deliver it to
// every subscription again; AWS retries only the failed delivery of a
// subscription (sns-message-delivery-retries.html).
//
// ok is false when a handler of this process already has m (its
// visibility ran out all the same: the engine clock jumped, or a renewal
// failed): m's new receipt handle goes to that handler, and the caller
// drops m. stop is idempotent; it sets m.ReceiptHandle to the latest
// receipt handle, for the caller's delete or visibility change. A crash
// ends the renewals: the message shows again after at most
// workVisibility and is delivered again (at least once).
func (w *worker) begin(ctx context.Context, qname string, m *queue.Message) (stop func(), ok bool) {
	w.mu.Lock()
	if f := w.active[m.MessageId]; f != nil {
		f.mu.Lock()
		f.receipt = m.ReceiptHandle
		f.mu.Unlock()
		w.mu.Unlock()
		w.s.log.Info("sns: an internal message came back while this process delivers it; left to its handler", "topic", w.t.meta().Name, "messageId", m.MessageId)
		return func() {}, false
	}
	f := &inflight{receipt: m.ReceiptHandle}
	w.active[m.MessageId] = f
	w.mu.Unlock()
	hctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// A ticker, not a sleep after each renewal: the renewals keep
		// their schedule however late this goroutine runs.
		tk := w.s.eng.Clock.NewTicker(heartbeat)
		defer tk.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-tk.Chan():
			}
			if err := w.s.queues.ChangeMessageVisibility(hctx, qname, f.get(), workVisibility); err != nil {
				if hctx.Err() == nil {
					w.s.log.Warn("sns: could not keep an internal message invisible while it is delivered; it may be delivered again", "topic", w.t.meta().Name, "messageId", m.MessageId, "err", err)
				}
				continue
			}
			w.s.log.Debug("sns: an internal message kept invisible while it is delivered", "topic", w.t.meta().Name, "messageId", m.MessageId)
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			w.mu.Lock()
			delete(w.active, m.MessageId)
			w.mu.Unlock()
			m.ReceiptHandle = f.get()
		})
	}, true
}
