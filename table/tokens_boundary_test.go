package table

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/jonboulle/clockwork"
)

// wantBegin begins a call with token and hash and checks whether it was
// answered from the token cache (done), with no error.
func wantBegin(t *testing.T, c *tokenCache, token, hash string, done bool, when string) {
	t.Helper()
	if got, err := c.begin(token, hash); got != done || err != nil {
		t.Fatalf("%s: done=%v err=%v, want done=%v", when, got, err, done)
	}
}

// TestTokenIsRememberedThroughTheEndOfItsWindow: a completed token
// answers an identical call at exactly 10:00 after completion, also when
// the cache sweeps its expired tokens at that moment; at 10:00.001 it is
// new.
func TestTokenIsRememberedThroughTheEndOfItsWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTokenCache(clockwork.NewRealClock(), nil) // time.Now is virtual in the bubble
		wantBegin(t, c, "tok", "h", false, "first call")
		c.end("tok", true, nil)
		time.Sleep(TokenWindow) // over a minute since the last sweep: this call sweeps
		wantBegin(t, c, "tok", "h", true, "same call 10:00 after completion")
		time.Sleep(time.Millisecond)
		wantBegin(t, c, "tok", "h", false, "10:00.001 after completion")
	})
}
