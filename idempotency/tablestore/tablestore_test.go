package tablestore_test

import (
	"context"
	"fmt"
	"os"
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

// The same suite on runnels connected to an external 3-server NATS
// cluster with replicas 3 (the table conformance suite on a cluster, issue
// 13): the store contract and the Powertools state machine hold unchanged.
func TestConformanceOnAThreeServerNATSCluster(t *testing.T) {
	if testing.Short() || os.Getenv("RUNNEL_CLUSTER_TESTS") == "" {
		t.Skip("starts a 3-server NATS cluster (30 to 70 s); run with RUNNEL_CLUSTER_TESTS=1")
	}
	cluster := testenv.StartNATSCluster(t, 3)
	var n atomic.Int32
	storetest.Run(t, storetest.Features{ReturnsExisting: true}, func(t *testing.T, clock clockwork.Clock) idempotency.Store {
		rn := testenv.Start(t, testenv.Options{Clock: clock, NATSURL: cluster.URL(), Replicas: 3})
		s, err := tablestore.CreateTable(context.Background(), rn.Tables, fmt.Sprintf("idempotency-%d", n.Add(1)))
		if err != nil {
			t.Fatal(err)
		}
		return s
	})
}
