// Package builtin registers the handlers that ship in the runnel binary,
// for stack files run with `runnel serve`:
//
//   - "noop": succeeds without looking at the records.
//   - "log": logs each record (shard, sequence number, partition key, data)
//     at info level and succeeds.
//   - "slow-log": like "log", then waits 20 ms per batch (to watch
//     checkpoints, lag and restarts at human speed).
//   - "fail": fails every batch (to see retries, bisect and on-failure
//     destinations at work).
//   - "fail-on-poison": fails any batch holding a record whose data
//     contains the bytes "poison"; with bisect, only those records end in
//     the on-failure destination.
//
// Programs that embed runnel register their own handlers with
// function.Register.
package builtin

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/runnel-dev/runnel/function"
)

// ErrPoison is the error of the "fail-on-poison" handler.
var ErrPoison = errors.New("batch holds a poison record")

// ErrAlwaysFails is the error of the "fail" handler.
var ErrAlwaysFails = errors.New("the fail handler fails every batch")

// Register registers the built-in handlers.
func Register(log *slog.Logger) {
	if log == nil {
		log = slog.Default()
	}
	function.Register("noop", function.KinesisHandler(func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, nil
	}))
	function.Register("log", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		for _, r := range ev.Records {
			log.Info("record", "eventID", r.EventID, "partitionKey", r.Kinesis.PartitionKey, "data", string(r.Kinesis.Data))
		}
		return events.KinesisEventResponse{}, nil
	}))
	function.Register("slow-log", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		for _, r := range ev.Records {
			log.Info("record", "eventID", r.EventID, "partitionKey", r.Kinesis.PartitionKey, "data", string(r.Kinesis.Data))
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return events.KinesisEventResponse{}, ctx.Err()
		}
		return events.KinesisEventResponse{}, nil
	}))
	function.Register("fail", function.KinesisHandler(func(context.Context, events.KinesisEvent) (events.KinesisEventResponse, error) {
		return events.KinesisEventResponse{}, ErrAlwaysFails
	}))
	function.Register("fail-on-poison", function.KinesisHandler(func(ctx context.Context, ev events.KinesisEvent) (events.KinesisEventResponse, error) {
		for _, r := range ev.Records {
			if bytes.Contains(r.Kinesis.Data, []byte("poison")) {
				return events.KinesisEventResponse{}, ErrPoison
			}
		}
		return events.KinesisEventResponse{}, nil
	}))
}
