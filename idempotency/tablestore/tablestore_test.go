package tablestore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/idempotency"
	"github.com/runnel-dev/runnel/idempotency/storetest"
	"github.com/runnel-dev/runnel/idempotency/tablestore"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func TestConformance(t *testing.T) {
	var n atomic.Int32
	storetest.Run(t, storetest.Features{ReturnsExisting: true}, func(t *testing.T, clock clockwork.Clock) idempotency.Store {
		rn := testenv.Start(t, testenv.Options{Clock: clock})
		s, err := tablestore.CreateTable(context.Background(), rn.Tables, fmt.Sprintf("idempotency-%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
