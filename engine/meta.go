package engine

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
