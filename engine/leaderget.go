package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// leaderGet reads the latest entry of key in bucket from the leader of the
// bucket's stream ($JS.API.STREAM.MSG.GET), not by a direct get.
//
// Why: nats.go's KeyValue.Get is a direct get when the bucket allows it
// (every bucket nats.go creates does), and on a replicated bucket any
// replica answers it, a follower that has not applied the latest writes
// among them. A value written through one runnel node (CreateFunction)
// and read at once through another (CreateEventSourceMapping naming the
// function) then looked absent: a read-after-write that AWS keeps and a
// cluster broke (TestThreeNodeCluster, under -race on a loaded machine).
// The leader has every acknowledged write. The cost: one request to the
// leader, wherever it is, instead of the nearest replica.
func (e *Engine) leaderGet(ctx context.Context, bucket, key string) (jetstream.KeyValueEntry, error) {
	req, err := json.Marshal(struct {
		LastBySubject string `json:"last_by_subj"`
	}{"$KV." + bucket + "." + key})
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	msg, err := e.NC.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
	if err != nil {
		return nil, fmt.Errorf("engine: read %s/%s from the stream leader: %w", bucket, key, err)
	}
	var resp struct {
		Message *struct {
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs"`
			Data     []byte    `json:"data"`
			Time     time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("engine: read %s/%s: bad answer: %w", bucket, key, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrKeyNotFound
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, jetstream.ErrKeyNotFound
	}
	op := jetstream.KeyValuePut
	if len(resp.Message.Header) > 0 {
		h, err := nats.DecodeHeadersMsg(resp.Message.Header)
		if err == nil {
			switch h.Get("KV-Operation") {
			case "DEL":
				op = jetstream.KeyValueDelete
			case "PURGE":
				op = jetstream.KeyValuePurge
			}
		}
	}
	if op != jetstream.KeyValuePut {
		return nil, jetstream.ErrKeyNotFound // as KeyValue.Get answers a deleted key
	}
	return kvEntry{bucket: bucket, key: key, value: resp.Message.Data, rev: resp.Message.Sequence, created: resp.Message.Time}, nil
}

// kvEntry is a key-value entry read by leaderGet.
type kvEntry struct {
	bucket, key string
	value       []byte
	rev         uint64
	created     time.Time
}

func (e kvEntry) Bucket() string                  { return e.bucket }
func (e kvEntry) Key() string                     { return e.key }
func (e kvEntry) Value() []byte                   { return e.value }
func (e kvEntry) Revision() uint64                { return e.rev }
func (e kvEntry) Created() time.Time              { return e.created }
func (e kvEntry) Delta() uint64                   { return 0 }
func (e kvEntry) Operation() jetstream.KeyValueOp { return jetstream.KeyValuePut }
