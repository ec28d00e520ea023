package async_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/function/async"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// A payload over an invocation type's limit is refused (413) in Lambda's
// words: "<n> byte payload is too large for the Event invocation type
// (limit <limit> bytes)" for an Event, "Request must be smaller than
// 6291456 bytes for the InvokeFunction operation" for a synchronous call
// (API_Invoke: 6 MB synchronous, 1 MB asynchronous; runnel's Event limit
// is 512 bytes less, see MaxEventPayloadSize). Before, the message was
// runnel's own ("Request must be smaller than … (payload: n bytes)").
func TestAnOversizedPayloadIsRefusedInLambdasWords(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{Clock: newClock()})
	newFunction(t, rn, function.Config{}, nil)
	for _, c := range []struct {
		typ   string
		limit int
		want  string
	}{
		{async.Event, async.MaxEventPayloadSize, fmt.Sprintf("%d byte payload is too large for the Event invocation type (limit %d bytes)", async.MaxEventPayloadSize+1, async.MaxEventPayloadSize)},
		{async.RequestResponse, 6291456, "Request must be smaller than 6291456 bytes for the InvokeFunction operation"},
	} {
		n := c.limit + 1
		payload := []byte(`"` + strings.Repeat("a", n-2) + `"`)
		_, err := rn.Async.Invoke(context.Background(), "f", c.typ, payload)
		want := c.want
		if !errors.Is(err, async.ErrRequestTooLarge) || !strings.Contains(err.Error(), want) {
			t.Fatalf("%s payload of %d bytes: %v, want RequestTooLarge %q", c.typ, n, err, want)
		}
	}
}
