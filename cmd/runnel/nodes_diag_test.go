package main

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strconv"
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
	// Kinesis records: the JetStream message of a shard stream holding
	// each, and every on-failure record (which names a range of sequence
	// numbers, not the data) stored anywhere.
	inShard := map[string]uint64{}
	type onFailure struct {
		where    string
		from, to uint64 // positions
	}
	var failures []onFailure
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
				if a, b := startSeqRE.FindSubmatch(m.Data()), endSeqRE.FindSubmatch(m.Data()); a != nil && b != nil {
					seq := uint64(0)
					if md != nil {
						seq = md.Sequence.Stream
					}
					failures = append(failures, onFailure{fmt.Sprintf("%s %s seq %d", name, m.Subject(), seq), position(a[1]), position(b[1])})
				}
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
							if strings.HasPrefix(name, "KDS_") {
								inShard[id] = seq
							}
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
		if msg, ok := inShard[id]; ok {
			lo, hi := msg<<10, msg<<10|1023 // stream.Position of the message's records
			n := 0
			for _, f := range failures {
				if f.from <= hi && f.to >= lo {
					fmt.Fprintf(&b, "\n    on-failure record covering its message (positions %d-%d): %s", f.from, f.to, f.where)
					n++
				}
			}
			if n == 0 {
				fmt.Fprintf(&b, "\n    no on-failure record stored anywhere covers its message (positions %d-%d; %d on-failure records seen)", lo, hi, len(failures))
			}
		}
	}
	return b.String()
}

var (
	startSeqRE = regexp.MustCompile(`"startSequenceNumber":"(\d+)"`)
	endSeqRE   = regexp.MustCompile(`"endSequenceNumber":"(\d+)"`)
)

// position is the position in a sequence number: its last 20 digits
// (stream.AppendSequenceNumber).
func position(seqNum []byte) uint64 {
	if len(seqNum) > 20 {
		seqNum = seqNum[len(seqNum)-20:]
	}
	p, _ := strconv.ParseUint(string(seqNum), 10, 64)
	return p
}
