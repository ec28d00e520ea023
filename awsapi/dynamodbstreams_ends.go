package awsapi

// Where a DynamoDB stream begins and ends in its table's change log.
//
// A stream is the log's changes written under its label (table.Change.
// Label): they start at the label's time (the stream turned on) and stop
// when the stream is turned off; every change written in between carries
// the label. The log keeps no other record of a table's past streams, so
// an earlier label is known to be real by its changes (labelIsReal), and
// a disabled stream's end in a shard is its last change there
// (streamEnd), found by reading the log forward from the label's time.
// Both answers never change once known (a label's time is past; a
// disabled stream takes no more changes) and are cached per process.

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/runnel-dev/runnel/stream"
	"github.com/runnel-dev/runnel/table"
)

// streamScanMargin is how far around a label's time the scans look: a
// write takes its time just before it reads the table's stream label, and
// UpdateTable takes the label's time just before the label is set, so a
// change may be a little older than its label, or of the stream before it
// and a little newer.
const streamScanMargin = time.Second

// scanPage is the log page size of the scans (the log's largest).
const scanPage = 10000

// labelScanPages bounds labelIsReal's reading per shard: the changes
// within streamScanMargin of a label's time.
const labelScanPages = 5

// streamCacheMax bounds each cache; a full cache is emptied (its entries
// are found again by reading the log).
const streamCacheMax = 10000

// shardEnd is how far a disabled stream's changes go in one log shard.
type shardEnd struct {
	// done: last (has) is the stream's last change in the shard for good:
	// the scan reached the log's end, or a change of a later stream.
	done bool
	has  bool
	last uint64 // the last change's log position (stream.Record.Seq)
	// lastSeq is its sequence number.
	lastSeq string
	// resume is the sequence number of the last log record scanned ("":
	// none yet, the scan starts at the label's time).
	resume string
}

var streamCaches = struct {
	sync.Mutex
	ends map[string]shardEnd // log/label/shard
	real map[string]bool     // log/label
}{ends: map[string]shardEnd{}, real: map[string]bool{}}

// streamEnd returns the end of disabled stream s in log shard i, reading
// at most pages log pages on from where the last call stopped (done false
// when that was not enough: the caller keeps the shard open and asks
// again later).
func (rq *request) streamEnd(ctx context.Context, s *ddbStream, i, pages int) (shardEnd, error) {
	key := s.log + "/" + s.label + "/" + strconv.Itoa(i)
	streamCaches.Lock()
	e := streamCaches.ends[key]
	streamCaches.Unlock()
	if e.done {
		return e, nil
	}
	logs := rq.h.rn.Tables.Logs()
	gi := stream.GetShardIteratorInput{StreamName: s.log, ShardID: stream.ShardID(i)}
	if e.resume == "" {
		gi.ShardIteratorType, gi.Timestamp = stream.AtTimestamp, time.UnixMilli(s.labelMs).Add(-streamScanMargin)
	} else {
		gi.ShardIteratorType, gi.StartingSequenceNumber = stream.AfterSequenceNumber, e.resume
	}
	inner, err := logs.GetShardIterator(ctx, gi)
	if err != nil {
		return e, logNotFound(err, s.arn)
	}
	for p := 0; p < pages && !e.done; p++ {
		var bad error
		n := 0 // records in the page (GetRecordsFunc's output has none)
		o, err := logs.GetRecordsFunc(ctx, inner, scanPage, func(r *stream.PageRecord) {
			n++
			if e.done || bad != nil {
				return
			}
			c, err := table.DecodeChange(r.Data)
			if err != nil {
				bad = err
				return
			}
			switch {
			case c.Label == s.label:
				e.has, e.last, e.lastSeq = true, r.Seq, string(r.AppendSequenceNumber(nil))
			case c.Label > s.label:
				e.done = true // a later stream: this one was off before it
				return
			}
			e.resume = string(r.AppendSequenceNumber(nil))
		})
		if err != nil {
			return e, logNotFound(err, s.arn)
		}
		if bad != nil {
			return e, bad
		}
		if n == 0 || o.NextShardIterator == "" {
			e.done = true // the log's end: s, disabled, takes no more
		}
		inner = o.NextShardIterator
	}
	streamCaches.Lock()
	if len(streamCaches.ends) >= streamCacheMax {
		clear(streamCaches.ends)
	}
	streamCaches.ends[key] = e
	streamCaches.Unlock()
	return e, nil
}

// labelIsReal reports whether the table had a stream with s's label: a
// change written under it. Turned on at the label's time, the stream
// labels every change written while on, so in each shard the first
// changes after that time carry it, unless the stream had none there. A
// label no stream had (made up between two real ones) meets a change
// of another stream, or of no stream, past the margin, or of a later
// stream, first. The log is the only trace of a table's earlier streams:
// one turned on by UpdateTable that got no change is not found either
// (one given at CreateTable is known by the table's creation time).
func (rq *request) labelIsReal(ctx context.Context, s *ddbStream) (bool, error) {
	key := s.log + "/" + s.label
	streamCaches.Lock()
	real, known := streamCaches.real[key]
	streamCaches.Unlock()
	if known {
		return real, nil
	}
	logs := rq.h.rn.Tables.Logs()
	after := s.labelMs + streamScanMargin.Milliseconds()
	for i := 0; i < s.shards && !real; i++ {
		inner, err := logs.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: s.log, ShardID: stream.ShardID(i),
			ShardIteratorType: stream.AtTimestamp, Timestamp: time.UnixMilli(s.labelMs).Add(-streamScanMargin)})
		if err != nil {
			return false, logNotFound(err, s.arn)
		}
		stop := false
		for p := 0; p < labelScanPages && !stop && !real; p++ {
			n := 0
			o, err := logs.GetRecordsFunc(ctx, inner, scanPage, func(r *stream.PageRecord) {
				n++
				if stop || real {
					return
				}
				c, err := table.DecodeChange(r.Data)
				switch {
				case err != nil:
				case c.Label == s.label:
					real = true
				case c.Label > s.label || c.TimeMs > after:
					stop = true
				}
			})
			if err != nil {
				return false, logNotFound(err, s.arn)
			}
			if n == 0 || o.NextShardIterator == "" {
				break
			}
			inner = o.NextShardIterator
		}
	}
	streamCaches.Lock()
	if len(streamCaches.real) >= streamCacheMax {
		clear(streamCaches.real)
	}
	streamCaches.real[key] = real
	streamCaches.Unlock()
	return real, nil
}
