package queue

import (
	"encoding/binary"
	"errors"
)

// Stored formats. A queue's JetStream stream holds, per send call n:
//
//	sqs.<id>.m.<n>  the body record: the call's messages (1..10)
//	sqs.<id>.s.<n>  the state record: runnel state of those messages,
//	                replaced on every receive, visibility change and delete
//	sqs.<id>.d.<n>  a FIFO queue's deduplication ids of call n that a
//	                PurgeQueue kept (a tombstone in goneV1's layout)
//
// The stream keeps one message per subject, so each publish on a subject
// replaces the previous one; when every message of a call is gone, the
// body is deleted (JetStream DeleteMsg: queue.deleteBody says why a
// replacement will not do) and a tombstone (header Runnel-Gone) replaces
// the state and expires by its own TTL; a FIFO call's tombstone on the
// body subject keeps its deduplication ids. All integers are varints; strings are a uvarint length and
// bytes.

const (
	bodyV1 = 1
	// bodyMoved is bodyV1's layout for the copies a move wrote (a
	// redrive to or from a dead-letter queue, a move task): their
	// deduplication ids are not this queue's sends, and are not
	// remembered when the queue is loaded.
	bodyMoved = 3
	stateV1   = 1
	goneV1    = 1
)

// goneHeader marks a tombstone.
const goneHeader = "Runnel-Gone"

var errBadRecord = errors.New("queue: stored record has an unknown format")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendBytes(b []byte, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

type reader struct {
	b   []byte
	err error
}

// readVarint decodes one varint of r with decode (binary.Uvarint or
// binary.Varint) and moves past it; a bad one sets errBadRecord.
func readVarint[T uint64 | int64](r *reader, decode func([]byte) (T, int)) T {
	if r.err != nil {
		return 0
	}
	v, n := decode(r.b)
	if n <= 0 {
		r.err = errBadRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) uvarint() uint64 { return readVarint(r, binary.Uvarint) }

func (r *reader) varint() int64 { return readVarint(r, binary.Varint) }

// take returns the next n bytes of r and moves past them; when fewer
// remain (or after an error) it sets errBadRecord and returns nil.
func (r *reader) take(n uint64) []byte {
	if r.err != nil || uint64(len(r.b)) < n {
		r.err = errBadRecord
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) bytes() []byte { return r.take(r.uvarint()) }

func (r *reader) string() string { return string(r.bytes()) }

func (r *reader) uint64() uint64 {
	if b := r.take(8); b != nil {
		return binary.BigEndian.Uint64(b)
	}
	return 0
}

// body record, per message: id, sentAt, initial visibleAt, group id,
// deduplication id, dead-letter source ARN, trace header, body,
// attributes (count; name, data type, transport 1 string / 2 binary,
// value).
func encodeBody(dst []byte, msgs []*message, moved bool) []byte {
	if moved {
		dst = append(dst, bodyMoved)
	} else {
		dst = append(dst, bodyV1)
	}
	dst = binary.AppendUvarint(dst, uint64(len(msgs)))
	for _, m := range msgs {
		dst = appendString(dst, m.id)
		dst = binary.AppendVarint(dst, m.sentAt)
		dst = binary.AppendVarint(dst, m.visibleAt)
		dst = appendString(dst, m.group)
		dst = appendString(dst, m.dedup)
		dst = appendString(dst, m.dlqSource)
		dst = appendString(dst, m.trace)
		dst = appendString(dst, m.payload.body)
		dst = binary.AppendUvarint(dst, uint64(len(m.payload.attrs)))
		for name, v := range m.payload.attrs {
			dst = appendString(dst, name)
			dst = appendString(dst, v.DataType)
			if v.BinaryValue != nil {
				dst = append(dst, 2)
				dst = appendBytes(dst, v.BinaryValue)
			} else {
				dst = append(dst, 1)
				s := ""
				if v.StringValue != nil {
					s = *v.StringValue
				}
				dst = appendString(dst, s)
			}
		}
	}
	return dst
}

// decodeBody returns the messages of a body record with their stored
// fields and payloads; state fields are the initial ones. moved says a
// move wrote them (bodyMoved).
func decodeBody(b []byte) (msgs []*message, moved bool, err error) {
	if len(b) < 1 || (b[0] != bodyV1 && b[0] != bodyMoved) {
		return nil, false, errBadRecord
	}
	moved = b[0] == bodyMoved
	msgs, err = decodeBodyV1(b)
	return msgs, moved, err
}

func decodeBodyV1(b []byte) ([]*message, error) {
	r := &reader{b: b[1:]}
	n := r.uvarint()
	if n > MaxBatchEntries {
		return nil, errBadRecord
	}
	msgs := make([]*message, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		m := &message{idx: uint8(i)}
		m.id = r.string()
		m.sentAt = r.varint()
		m.visibleAt = r.varint()
		m.group = r.string()
		m.dedup = r.string()
		m.dlqSource = r.string()
		m.trace = r.string()
		p := &payload{body: r.string()}
		na := r.uvarint()
		if na > MaxMessageAttributes {
			return nil, errBadRecord
		}
		if na > 0 {
			p.attrs = make(map[string]MessageAttributeValue, na)
		}
		for j := uint64(0); j < na && r.err == nil; j++ {
			name := r.string()
			v := MessageAttributeValue{DataType: r.string()}
			switch r.byte() {
			case 2:
				v.BinaryValue = append([]byte{}, r.bytes()...)
			default:
				s := r.string()
				v.StringValue = &s
			}
			p.attrs[name] = v
		}
		m.setPayload(p)
		msgs = append(msgs, m)
	}
	if r.err != nil {
		return nil, r.err
	}
	return msgs, nil
}

// state record, per message of the body record: deleted flag, receive
// count, visibleAt, first receive, latest receive, receipt nonce.
func encodeState(dst []byte, rec *record) []byte {
	dst = append(dst, stateV1)
	dst = binary.AppendUvarint(dst, uint64(len(rec.msgs)))
	for _, m := range rec.msgs {
		var flags byte
		if m.st == stDeleted {
			flags = 1
		}
		dst = append(dst, flags)
		dst = binary.AppendUvarint(dst, uint64(m.receiveCount))
		dst = binary.AppendVarint(dst, m.visibleAt)
		dst = binary.AppendVarint(dst, m.firstReceive)
		dst = binary.AppendVarint(dst, m.receivedAt)
		dst = binary.BigEndian.AppendUint64(dst, m.nonce)
	}
	return dst
}

// applyState sets the stored state on the messages of rec (the body
// record must have been read first). Deleted messages are flagged
// stDeleted.
func applyState(b []byte, rec *record) error {
	if len(b) < 1 || b[0] != stateV1 {
		return errBadRecord
	}
	r := &reader{b: b[1:]}
	n := r.uvarint()
	if r.err != nil || n != uint64(len(rec.msgs)) {
		return errBadRecord
	}
	for _, m := range rec.msgs {
		flags := r.byte()
		m.receiveCount = uint32(r.uvarint())
		m.visibleAt = r.varint()
		m.firstReceive = r.varint()
		m.receivedAt = r.varint()
		m.nonce = r.uint64()
		if flags&1 != 0 {
			m.st = stDeleted
		}
	}
	return r.err
}

// goneEntry is what a FIFO tombstone remembers of a message so that its
// deduplication id keeps working for DeduplicationInterval after delete.
type goneEntry struct {
	idx    uint8
	id     string
	group  string
	dedup  string
	sentAt int64
}

func encodeGone(dst []byte, entries []goneEntry) []byte {
	dst = append(dst, goneV1)
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for _, e := range entries {
		dst = append(dst, e.idx)
		dst = appendString(dst, e.id)
		dst = appendString(dst, e.group)
		dst = appendString(dst, e.dedup)
		dst = binary.AppendVarint(dst, e.sentAt)
	}
	return dst
}

func decodeGone(b []byte) ([]goneEntry, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if b[0] != goneV1 {
		return nil, errBadRecord
	}
	r := &reader{b: b[1:]}
	n := r.uvarint()
	if n > MaxBatchEntries {
		return nil, errBadRecord
	}
	out := make([]goneEntry, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		out = append(out, goneEntry{idx: r.byte(), id: r.string(), group: r.string(), dedup: r.string(), sentAt: r.varint()})
	}
	return out, r.err
}
