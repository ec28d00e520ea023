package queue

import (
	"encoding/base64"
	"encoding/binary"

	"github.com/runnel-dev/runnel/awserr"
)

// receipt is a decoded receipt handle: the queue id, the message's record
// and position, and the nonce of the receive that issued it. On the wire
// it is URL-safe base64 of: version byte, uvarint length and bytes of the
// queue id, uvarint record number, position byte, 8-byte nonce.
type receipt struct {
	queueID string
	n       uint64
	idx     uint8
	nonce   uint64
}

const receiptV1 = 1

func encodeReceipt(queueID string, n uint64, idx uint8, nonce uint64) string {
	b := make([]byte, 0, 48)
	b = append(b, receiptV1)
	b = appendString(b, queueID)
	b = binary.AppendUvarint(b, n)
	b = append(b, idx)
	b = binary.BigEndian.AppendUint64(b, nonce)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeReceipt(h string) (receipt, error) {
	bad := awserr.New(awserr.ErrReceiptHandleIsInvalid, "The input receipt handle %q is not a valid receipt handle.", h)
	b, err := base64.RawURLEncoding.DecodeString(h)
	if err != nil || len(b) < 1 || b[0] != receiptV1 {
		return receipt{}, bad
	}
	r := &reader{b: b[1:]}
	var rc receipt
	rc.queueID = r.string()
	rc.n = r.uvarint()
	rc.idx = r.byte()
	rc.nonce = r.uint64()
	if r.err != nil || len(r.b) != 0 {
		return receipt{}, bad
	}
	return rc, nil
}

// lookup resolves a receipt handle of queue q to its message: nil (and no
// error) if the message is gone, awserr.ErrReceiptHandleIsInvalid if the handle
// is malformed or belongs to another queue. Under q.mu.
func (q *queue) lookup(handle string) (*message, receipt, error) {
	rc, err := decodeReceipt(handle)
	if err != nil {
		return nil, rc, err
	}
	if rc.queueID != q.id {
		return nil, rc, awserr.New(awserr.ErrReceiptHandleIsInvalid, "The receipt handle %q does not belong to queue %s.", handle, q.name)
	}
	rec := q.records[rc.n]
	if rec == nil {
		return nil, rc, nil
	}
	if int(rc.idx) >= len(rec.msgs) {
		return nil, rc, awserr.New(awserr.ErrReceiptHandleIsInvalid, "The input receipt handle %q is not a valid receipt handle.", handle)
	}
	m := rec.msgs[rc.idx]
	if m.st == stDeleted || m.st == stPending {
		return nil, rc, nil
	}
	return m, rc, nil
}
