package mapping

// Where a mapping's shard and lanes stand: the checkpoint key and lane
// batch records, in the checkpoint store.

import (
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
)

func checkpointKey(uuid, shardID string) string { return uuid + "." + shardID }

// laneKey names the batch record of one lane of a shard.
func laneKey(uuid, shardID string, lane int) string {
	return uuid + "." + shardID + ".lane" + strconv.Itoa(lane)
}

// A lane's batch record, "<stream id>:<lanes>:<first>:<last>", is written
// before each invocation of a new batch: the lane's records before first
// are resolved, and [first, last] is the batch being resolved. After a
// crash the lane re-forms exactly that batch before any other, so a
// function that keys its idempotency on the batch (a hash of its records,
// as the map and reduce functions of the exactly-once aggregation
// pipeline do) sees the same batch again, never an overlapping one.
type laneBatch struct {
	first, last uint64
}

func (s *Service) loadLaneBatch(ctx context.Context, uuid, shardID, streamID string, lane, lanes int) (laneBatch, bool) {
	e, err := s.ckGet(ctx, laneKey(uuid, shardID, lane))
	if err != nil {
		return laneBatch{}, false
	}
	f := strings.Split(string(e.Value()), ":")
	if len(f) != 4 || f[0] != streamID || f[1] != strconv.Itoa(lanes) {
		return laneBatch{}, false
	}
	first, err1 := strconv.ParseUint(f[2], 10, 64)
	last, err2 := strconv.ParseUint(f[3], 10, 64)
	if err1 != nil || err2 != nil || first > last {
		return laneBatch{}, false
	}
	return laneBatch{first, last}, true
}

func (s *Service) storeLaneBatch(ctx context.Context, uuid, shardID, streamID string, lane, lanes int, b laneBatch) error {
	v := streamID + ":" + strconv.Itoa(lanes) + ":" + strconv.FormatUint(b.first, 10) + ":" + strconv.FormatUint(b.last, 10)
	return s.ckPut(ctx, unitKey(uuid, shardID), laneKey(uuid, shardID, lane), []byte(v))
}

// A checkpoint is stored as "<stream id>:<next position>": positions mean
// something only in the stream (incarnation) they were read from.

// loadCheckpoint returns the stored next position of a shard, and the id
// of the stream it belongs to ("" for a checkpoint without one).
func (s *Service) loadCheckpoint(ctx context.Context, uuid, shardID string) (next uint64, streamID string, ok bool, err error) {
	e, err := s.ckGet(ctx, checkpointKey(uuid, shardID))
	return parseCheckpoint(e, err)
}

// peekCheckpoint is loadCheckpoint without remembering the key's
// revision: a read of a shard this process may not hold (its lineage, a
// status, the balance) must not let a later write of this process pass
// the fence.
func (s *Service) peekCheckpoint(ctx context.Context, uuid, shardID string) (next uint64, streamID string, ok bool, err error) {
	e, err := s.ck.Get(ctx, checkpointKey(uuid, shardID))
	return parseCheckpoint(e, err)
}

func parseCheckpoint(e jetstream.KeyValueEntry, err error) (next uint64, streamID string, ok bool, _ error) {
	if err != nil {
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			return 0, "", false, nil
		}
		return 0, "", false, err
	}
	v := string(e.Value())
	if i := strings.LastIndexByte(v, ':'); i >= 0 {
		streamID, v = v[:i], v[i+1:]
	}
	next, err = strconv.ParseUint(v, 10, 64)
	return next, streamID, err == nil, err
}

func (s *Service) storeCheckpoint(ctx context.Context, uuid, shardID, streamID string, next uint64) error {
	if err := stalled(ctx, "position"); err != nil {
		return err
	}
	return s.ckPut(ctx, unitKey(uuid, shardID), checkpointKey(uuid, shardID), []byte(streamID+":"+strconv.FormatUint(next, 10)))
}
