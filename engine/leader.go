package engine

// What runnel asks of JetStream's leaders: the meta leader (who it is,
// for runnel cluster status; the creations other nodes ask its node
// for), and a stream's leader (reads that must see every acknowledged
// write, which a replica may not have applied yet).

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// metaSubject is where every embedded cluster node answers who the
// JetStream meta leader is (see MetaLeader).
const metaSubject = "runnel.cluster.meta"

// MetaInfo is a node's view of the JetStream cluster.
type MetaInfo struct {
	// Node is the answering server's name.
	Node string `json:"node"`
	// Leader is the JetStream meta leader's server name; empty while one
	// is being elected.
	Leader string `json:"leader"`
	// Peers is the meta group's size, the answering node included.
	Peers int `json:"peers"`
}

// ErrNoMetaInfo is returned by MetaLeader when no embedded cluster node
// answered: a single server, an external cluster (whose servers do not
// run runnel), or every node busy electing.
var ErrNoMetaInfo = errors.New("engine: no embedded cluster node answered with the JetStream meta leader")

// metaInfo reads the embedded server's view; ok is false without an
// embedded cluster node.
func (e *Engine) metaInfo() (MetaInfo, bool) {
	if e.srv == nil || e.cfg.Cluster.Listen == "" {
		return MetaInfo{}, false
	}
	info := MetaInfo{Node: e.srv.Name()}
	if jsz, err := e.srv.Jsz(nil); err == nil && jsz.Meta != nil {
		info.Leader, info.Peers = jsz.Meta.Leader, jsz.Meta.Size
	}
	return info, true
}

// serveMetaInfo answers metaSubject for the other processes (runnel
// cluster status with --nats-url): only an embedded cluster node knows
// the meta leader, since the JetStream API tells it only to the system
// account.
func (e *Engine) serveMetaInfo() error {
	if _, ok := e.metaInfo(); !ok {
		return nil
	}
	if err := e.serveEnsure(); err != nil {
		return err
	}
	_, err := e.NC.Subscribe(metaSubject, func(m *nats.Msg) {
		info, _ := e.metaInfo()
		b, _ := json.Marshal(info)
		_ = m.Respond(b)
	})
	return err
}

// MetaLeader returns the JetStream meta leader as seen by this process's
// embedded cluster node, or else by the first embedded cluster node that
// answers over NATS within 2 s. It returns ErrNoMetaInfo when none does.
func (e *Engine) MetaLeader(ctx context.Context) (MetaInfo, error) {
	if info, ok := e.metaInfo(); ok {
		return info, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	m, err := e.NC.RequestWithContext(ctx, metaSubject, nil)
	if err != nil {
		return MetaInfo{}, errors.Join(ErrNoMetaInfo, err)
	}
	var info MetaInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return MetaInfo{}, errors.Join(ErrNoMetaInfo, err)
	}
	return info, nil
}

// ensureSubject is where the meta leader's node takes requests to create
// a resource (see ensure).
const ensureSubject = "runnel.cluster.ensure"

const (
	kindStream      = "stream"
	kindBucket      = "bucket"
	kindObjectStore = "object-store"
)

// ensureRequest asks the meta leader's node to create a resource: one of
// the configurations, by Kind.
type ensureRequest struct {
	Kind        string                       `json:"kind"`
	Stream      *jetstream.StreamConfig      `json:"stream,omitempty"`
	Bucket      *jetstream.KeyValueConfig    `json:"bucket,omitempty"`
	ObjectStore *jetstream.ObjectStoreConfig `json:"object_store,omitempty"`
}

// askLeaderToCreate sends req to the meta leader's node, without waiting
// for the creation (the caller looks the resource up).
func (e *Engine) askLeaderToCreate(req ensureRequest) {
	b, err := json.Marshal(req)
	if err == nil {
		err = e.NC.Publish(ensureSubject, b)
	}
	if err != nil {
		e.Logger.Warn("engine: asking the meta leader to create a resource", "kind", req.Kind, "err", err)
	}
}

// serveEnsure creates, on the meta leader's node, what other nodes ask
// for (ensureSubject); the other nodes ignore the requests.
func (e *Engine) serveEnsure() error {
	_, err := e.NC.Subscribe(ensureSubject, func(m *nats.Msg) {
		if !e.srv.JetStreamIsLeader() {
			return
		}
		var req ensureRequest
		if err := json.Unmarshal(m.Data, &req); err != nil {
			e.Logger.Warn("engine: a create request does not parse", "err", err)
			return
		}
		go func() {
			e.ensureMu.Lock()
			defer e.ensureMu.Unlock()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var err error
			switch {
			case req.Kind == kindStream && req.Stream != nil:
				_, err = e.EnsureStream(ctx, *req.Stream)
			case req.Kind == kindBucket && req.Bucket != nil:
				_, err = e.EnsureBucket(ctx, *req.Bucket)
			case req.Kind == kindObjectStore && req.ObjectStore != nil:
				_, err = e.EnsureObjectStore(ctx, *req.ObjectStore)
			default:
				err = fmt.Errorf("unknown kind %q", req.Kind)
			}
			if err != nil {
				e.Logger.Warn("engine: creating a resource another node asked for", "kind", req.Kind, "err", err)
			}
		}()
	})
	return err
}

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
	m, err := e.leaderMsgGet(ctx, "KV_"+bucket, leaderMsgReq{LastBySubject: "$KV." + bucket + "." + key})
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, jetstream.ErrKeyNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("engine: read %s/%s from the stream leader: %w", bucket, key, err)
	}
	op := jetstream.KeyValuePut
	switch m.Header.Get("KV-Operation") {
	case "DEL":
		op = jetstream.KeyValueDelete
	case "PURGE":
		op = jetstream.KeyValuePurge
	}
	if op != jetstream.KeyValuePut {
		return nil, jetstream.ErrKeyNotFound // as KeyValue.Get answers a deleted key
	}
	return kvEntry{bucket: bucket, key: key, value: m.Data, rev: m.Sequence, created: m.Time}, nil
}

// LeaderMsg reads message seq of stream from the stream's leader, or,
// with atOrAfter, the first message at or after seq; the error is
// jetstream.ErrMsgNotFound when there is none. Use it where a direct get
// (jetstream.Stream.GetMsg on a stream that allows direct gets, every
// runnel stream) answered "not found" for a message the stream's leader
// says is written: on a replicated stream the direct get may have been
// answered by a follower that has not applied it yet (see leaderGet), and
// taking its answer for "gone" skips records. Waits at most 10 s when
// ctx has no deadline.
func (e *Engine) LeaderMsg(ctx context.Context, stream string, seq uint64, atOrAfter bool) (*jetstream.RawStreamMsg, error) {
	req := leaderMsgReq{Seq: seq}
	if atOrAfter {
		req.NextBySubject = ">"
	}
	return e.leaderMsgGet(ctx, stream, req)
}

// LeaderLastMsg reads the last message of subject in stream from the
// stream's leader (see LeaderMsg); jetstream.ErrMsgNotFound when there is
// none.
func (e *Engine) LeaderLastMsg(ctx context.Context, stream, subject string) (*jetstream.RawStreamMsg, error) {
	return e.leaderMsgGet(ctx, stream, leaderMsgReq{LastBySubject: subject})
}

// leaderMsgReq is a $JS.API.STREAM.MSG.GET request.
type leaderMsgReq struct {
	Seq           uint64 `json:"seq,omitempty"`
	LastBySubject string `json:"last_by_subj,omitempty"`
	NextBySubject string `json:"next_by_subj,omitempty"`
}

// leaderMsgGet sends req to the leader of stream ($JS.API.STREAM.MSG.GET,
// answered by the leader only). While the stream has no leader (an
// election after a node died: "no responders") it asks again, after 50 ms
// doubling to 1 s, and a request left unanswered (sent as the leader
// died) is sent again every AskEvery, until ctx ends (10 s when it has no
// deadline).
func (e *Engine) leaderMsgGet(ctx context.Context, stream string, req leaderMsgReq) (*jetstream.RawStreamMsg, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	var msg *nats.Msg
	for pause := 50 * time.Millisecond; ; pause = min(2*pause, time.Second) {
		msg, err = AskAgain(ctx, func(c context.Context) (*nats.Msg, error) {
			return e.NC.RequestWithContext(c, "$JS.API.STREAM.MSG.GET."+stream, body)
		})
		if !errors.Is(err, nats.ErrNoResponders) {
			break
		}
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(pause):
		}
	}
	if err != nil {
		return nil, err
	}
	var resp struct {
		Message *struct {
			Subject  string    `json:"subject"`
			Sequence uint64    `json:"seq"`
			Header   []byte    `json:"hdrs"`
			Data     []byte    `json:"data"`
			Time     time.Time `json:"time"`
		} `json:"message"`
		Error *jetstream.APIError `json:"error"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, fmt.Errorf("bad answer: %w", err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, jetstream.ErrMsgNotFound
		}
		return nil, resp.Error
	}
	if resp.Message == nil {
		return nil, jetstream.ErrMsgNotFound
	}
	m := &jetstream.RawStreamMsg{Subject: resp.Message.Subject, Sequence: resp.Message.Sequence, Data: resp.Message.Data, Time: resp.Message.Time}
	if len(resp.Message.Header) > 0 {
		if h, err := nats.DecodeHeadersMsg(resp.Message.Header); err == nil {
			m.Header = h
		}
	}
	return m, nil
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
