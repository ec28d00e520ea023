package table

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/awserr"
)

// TestTokenWindow checks the ClientRequestToken rules of TransactWriteItems
// on virtual time (testing/synctest): a completed token answers identical
// calls for exactly 10 minutes after completion, refuses different
// parameters meanwhile, refuses any call while the first is running, and a
// failed call frees the token.
func TestTokenWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTokenCache(clockwork.NewRealClock(), nil) // time.Now is virtual in the bubble
		done, err := c.begin("tok", "h1")
		if done || err != nil {
			t.Fatalf("first call: done=%v err=%v", done, err)
		}
		if _, err := c.begin("tok", "h1"); !errors.Is(err, awserr.ErrTransactionInProgress) {
			t.Fatalf("while running: %v", err)
		}
		time.Sleep(3 * time.Second) // the transaction takes 3 s
		c.end("tok", true, nil)

		time.Sleep(TokenWindow - time.Second)
		if done, err := c.begin("tok", "h1"); !done || err != nil {
			t.Fatalf("same call 9:59 after completion: done=%v err=%v, want answered from the token", done, err)
		}
		if _, err := c.begin("tok", "h2"); !errors.Is(err, awserr.ErrIdempotentParameterMismatch) {
			t.Fatalf("other parameters within the window: %v", err)
		}
		time.Sleep(2 * time.Second) // 10:01 after completion
		if done, err := c.begin("tok", "h2"); done || err != nil {
			t.Fatalf("after the window the token is new: done=%v err=%v", done, err)
		}
		c.end("tok", false, nil) // the call failed: the token is free again
		if done, err := c.begin("tok", "h3"); done || err != nil {
			t.Fatalf("after a failed call: done=%v err=%v", done, err)
		}
	})
}
