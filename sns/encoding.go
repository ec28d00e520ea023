package sns

// How SNS writes what it delivers and what it stores: JSON as AWS writes
// it (no HTML escaping), and the internal queue's form of a record.

import (
	"bytes"
	"encoding/base64"
	"encoding/gob"
	"encoding/json"
	"errors"
)

// marshalJSON is v's JSON as AWS writes envelopes and events: '<', '>'
// and '&' raw (json.Marshal writes each as a 6-byte \u003c escape, so an
// XML message of about 75 KB no longer fit a queue's 256 KiB in its
// envelope), no trailing newline.
func marshalJSON(v any) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// packedPrefix begins a record stored packed (a JSON record begins with
// '{').
const packedPrefix = "~"

// recordSlack is what a record's JSON may take beyond 4/3 of its text
// (field names, timestamp, ids) before it is stored packed.
const recordSlack = 2048

// rawSize is the bytes of r's text: message, subject, ids and
// attributes.
func (r *record) rawSize() int {
	n := len(r.Message) + len(r.Subject) + len(r.GroupId) + len(r.DedupId) + len(r.MessageStructure)
	for k, a := range r.Attributes {
		n += len(k) + len(a.DataType) + len(a.StringValue) + len(a.BinaryValue)
	}
	return n
}

// body is r as the internal queue stores it: its JSON, unless escaping
// inflates it beyond 4/3 of its text (control characters take 6 bytes
// each in JSON: a 256 KiB message of them would be 1.5 MiB, over the
// internal queue's 1 MiB); then "~" and the base64 of its gob, at most
// 4/3 of its text and a few hundred bytes. So any valid message (at most
// MaxMessageSize with its attributes), and any PublishBatch (at most
// MaxMessageSize in all), fits the internal queue's message and batch
// limits (1 MiB each).
func (r *record) body() string {
	j := marshalJSON(r)
	if j != nil && len(j) <= r.rawSize()*4/3+recordSlack {
		return string(j)
	}
	var b bytes.Buffer
	if err := gob.NewEncoder(&b).Encode(r); err != nil {
		return string(j)
	}
	return packedPrefix + base64.StdEncoding.EncodeToString(b.Bytes())
}

// decodeRecord reads a body written by record.body.
func decodeRecord(body string, r *record) error {
	if len(body) > 0 && body[:1] == packedPrefix {
		b, err := base64.StdEncoding.DecodeString(body[1:])
		if err != nil {
			return err
		}
		return gob.NewDecoder(bytes.NewReader(b)).Decode(r)
	}
	if body == "" {
		return errors.New("an empty internal message")
	}
	return json.Unmarshal([]byte(body), r)
}
