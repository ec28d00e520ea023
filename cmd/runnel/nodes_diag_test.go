package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// missingIDs lists the ids put or sent that are neither processed nor in
// a DLQ.
func (p *producers) missingIDs(processed, dlq map[string]bool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var miss []string
	for _, id := range append(append([]string(nil), p.put...), p.sent...) {
		if !processed[id] && !dlq[id] {
			miss = append(miss, id)
		}
	}
	return miss
}

// traceIDs says, for each of ids (at most 10), every stored JetStream
// message of the cluster whose data holds it: stream, subject, sequence,
// headers. A fault test that loses an item prints where its copies are
// (a DLQ stream holding a copy its queue's index does not know, or no
// copy at all) instead of only that it is missing.
func traceIDs(ctx context.Context, js jetstream.JetStream, ids []string) string {
	ids = ids[:min(len(ids), 10)]
	found := make(map[string][]string, len(ids))
	var names []string
	l := js.StreamNames(ctx)
	for n := range l.Name() {
		names = append(names, n)
	}
	for _, name := range names {
		st, err := js.Stream(ctx, name)
		if err != nil {
			continue
		}
		info, err := st.Info(ctx)
		if err != nil || info.State.Msgs == 0 {
			continue
		}
		cons, err := st.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{DeliverPolicy: jetstream.DeliverAllPolicy})
		if err != nil {
			continue
		}
		for read := uint64(0); read < info.State.Msgs; {
			batch, err := cons.Fetch(1000, jetstream.FetchMaxWait(2*time.Second))
			if err != nil {
				break
			}
			got := 0
			for m := range batch.Messages() {
				got++
				md, _ := m.Metadata()
				for _, id := range ids {
					// Whole ids only: "q-poison-43" must not match "q-poison-439".
					for i := 0; ; {
						j := bytes.Index(m.Data()[i:], []byte(id))
						if j < 0 {
							break
						}
						end := i + j + len(id)
						if end == len(m.Data()) || m.Data()[end] < '0' || m.Data()[end] > '9' {
							seq := uint64(0)
							if md != nil {
								seq = md.Sequence.Stream
							}
							found[id] = append(found[id], fmt.Sprintf("%s %s seq %d hdr %v", name, m.Subject(), seq, m.Headers()))
							break
						}
						i = end
					}
				}
			}
			if got == 0 {
				break
			}
			read += uint64(got)
		}
	}
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "\n  %s: %d stored copies", id, len(found[id]))
		for _, f := range found[id] {
			fmt.Fprintf(&b, "\n    %s", f)
		}
	}
	return b.String()
}
