package function_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestASlotKeyThatIsThereCountsAsTaken: a reserved function's invocation
// takes a slot key with a KV Create, and a key that is there means the
// slot is taken (try another, or throttle). For a key whose last entry is
// a delete marker (a slot released), nats.go's Create passes the server's
// wrong-last-sequence error on as is when another invocation took the key
// first, instead of ErrKeyExists; the invocation then answered
// ServiceException (500) where Lambda runs it or throttles it. Both
// answers, as the engine gives them, now count as taken, and other errors
// do not.
func TestASlotKeyThatIsThereCountsAsTaken(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	ctx := context.Background()
	kv, err := rn.Engine.EnsureBucket(ctx, jetstream.KeyValueConfig{Bucket: "slot_rules"})
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Create(ctx, "f.0", []byte("a"))
	if err != nil {
		t.Fatal(err)
	}
	_, exists := kv.Create(ctx, "f.0", []byte("b"))
	_, wrongSeq := kv.Update(ctx, "f.0", []byte("b"), rev+7)
	var apiErr *jetstream.APIError
	if !errors.As(wrongSeq, &apiErr) || apiErr.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence {
		t.Fatalf("the engine answered %v; want its wrong-last-sequence error", wrongSeq)
	}
	// A replicated bucket (Replicas > 1) answers 10164 where one replica
	// answers 10071; this engine has one replica, so that answer is built
	// here as nats.go hands it over (an *APIError with the server's code).
	replicated := &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequenceConstant, Description: "wrong last sequence"}
	for _, err := range []error{exists, wrongSeq, replicated} {
		if !function.SlotTaken(err) {
			t.Errorf("SlotTaken(%v) = false; the key is there", err)
		}
	}
	if function.SlotTaken(context.DeadlineExceeded) || function.SlotTaken(nil) {
		t.Error("a timeout, or no error, counted as a taken slot")
	}
}

// TestAFunctionDeletedThroughAnotherNodeGivesBackItsReservation: the
// account's unreserved concurrency is 1,000 less the reservations
// (configuration-concurrency.html); a node's pool for the functions
// without one is sized by the reservations it knows. DeleteFunction
// through this node gave a reservation back; a deletion through another
// node, seen by the watch, did not, so this node's pool stayed short
// until it next built a function.
func TestAFunctionDeletedThroughAnotherNodeGivesBackItsReservation(t *testing.T) {
	reg := function.NewRegistry()
	if err := reg.Register("noop", func(ctx context.Context, in []byte) ([]byte, error) { return in, nil }); err != nil {
		t.Fatal(err)
	}
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0", Registry: reg})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL(), Registry: reg})
	ctx := context.Background()
	n := 900
	if _, err := a.Functions.PutFunction(ctx, function.Config{FunctionName: "big", Handler: "noop", ReservedConcurrentExecutions: &n}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "b's pool sized by the reservation", func() bool { return b.Functions.UnreservedPoolSize() == 100 })
	if err := a.Functions.DeleteFunction(ctx, "big"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "b's pool back to 1,000", func() bool { return b.Functions.UnreservedPoolSize() == 1000 })
}
