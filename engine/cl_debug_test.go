package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/engine"
	"github.com/runnel-dev/runnel/internal/testenv"
)

func TestClusterDebug(t *testing.T) {
	ports := testenv.FreePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("127.0.0.1:%d", p))
	}
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			e, err := engine.Open(context.Background(), engine.Config{DataDir: t.TempDir(), Cluster: engine.ClusterConfig{Listen: routes[i], Routes: routes, Name: fmt.Sprint("n", i)}})
			t.Logf("node %d: %v after %v", i, err, time.Since(start))
			if e != nil {
				defer e.Close()
			}
		}()
	}
	wg.Wait()
}
