package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go"
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
