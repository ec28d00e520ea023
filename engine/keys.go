package engine

import (
	"context"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

// nameKeys is a key-value bucket whose keys are AWS resource names. A
// name that is not a NATS key (a stream or table name may begin or end
// with '.', or hold "..", which Kinesis and DynamoDB allow) is stored
// with each '.' as "=2E", and listed back as it was given: no AWS name
// the buckets hold has a '=', so a key with "=2E" is always an escaped
// one, and every other key is stored unchanged.
//
// On a replicated bucket (replicas > 1) Get reads from the stream's
// leader (leaderGet): a read through one node of what was written
// through another sees the write.
type nameKeys struct {
	jetstream.KeyValue
	leader *Engine // nil: a direct get
	bucket string
}

const escapedDot = "=2E"

// escapeKey is the bucket key of name.
func escapeKey(name string) string {
	if name != "" && (name[0] == '.' || name[len(name)-1] == '.' || strings.Contains(name, "..")) {
		return strings.ReplaceAll(name, ".", escapedDot)
	}
	return name
}

// unescapeKey is the name of a bucket key.
func unescapeKey(key string) string { return strings.ReplaceAll(key, escapedDot, ".") }

func (kv nameKeys) Get(ctx context.Context, key string) (jetstream.KeyValueEntry, error) {
	if kv.leader != nil {
		return kv.leader.leaderGet(ctx, kv.bucket, escapeKey(key))
	}
	return kv.KeyValue.Get(ctx, escapeKey(key))
}

func (kv nameKeys) GetRevision(ctx context.Context, key string, revision uint64) (jetstream.KeyValueEntry, error) {
	return kv.KeyValue.GetRevision(ctx, escapeKey(key), revision)
}

func (kv nameKeys) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	return kv.KeyValue.Put(ctx, escapeKey(key), value)
}

func (kv nameKeys) PutString(ctx context.Context, key string, value string) (uint64, error) {
	return kv.KeyValue.PutString(ctx, escapeKey(key), value)
}

func (kv nameKeys) Create(ctx context.Context, key string, value []byte, opts ...jetstream.KVCreateOpt) (uint64, error) {
	return kv.KeyValue.Create(ctx, escapeKey(key), value, opts...)
}

func (kv nameKeys) Update(ctx context.Context, key string, value []byte, revision uint64) (uint64, error) {
	return kv.KeyValue.Update(ctx, escapeKey(key), value, revision)
}

func (kv nameKeys) Delete(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return kv.KeyValue.Delete(ctx, escapeKey(key), opts...)
}

func (kv nameKeys) Purge(ctx context.Context, key string, opts ...jetstream.KVDeleteOpt) error {
	return kv.KeyValue.Purge(ctx, escapeKey(key), opts...)
}

func (kv nameKeys) History(ctx context.Context, key string, opts ...jetstream.WatchOpt) ([]jetstream.KeyValueEntry, error) {
	return kv.KeyValue.History(ctx, escapeKey(key), opts...)
}

func (kv nameKeys) Keys(ctx context.Context, opts ...jetstream.WatchOpt) ([]string, error) {
	keys, err := kv.KeyValue.Keys(ctx, opts...)
	for i, k := range keys {
		keys[i] = unescapeKey(k)
	}
	return keys, err
}
