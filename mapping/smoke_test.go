package mapping_test

import (
	"fmt"
	"testing"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/mapping"
)

func TestSmoke(t *testing.T) {
	rn := testenv.Start(t, testenv.Options{})
	arn := createStream(t, rn, "s", 2)
	r := newRecorder(t, rn, function.Config{}, nil)
	var data []string
	for i := 0; i < 1000; i++ {
		data = append(data, fmt.Sprintf("r%d", i))
	}
	put(t, rn, "s", "k1", data[:500]...)
	put(t, rn, "s", "k2", data[500:]...)
	createMapping(t, rn, mapping.Config{EventSourceArn: arn, FunctionName: r.name, BatchSize: 100})
	testenv.Eventually(t, wait, "all processed", func() bool { return r.processed() == 1000 })
	t.Log(len(r.Calls()))
}
