package function_test

import (
	"context"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// listed reports whether a process lists function name (ListFunctions
// reads what the process knows; no read-through from the bucket).
func listed(s *function.Service, name string) (function.Config, bool) {
	for _, c := range s.ListFunctions() {
		if c.FunctionName == name {
			return c, true
		}
	}
	return function.Config{}, false
}

// A function created, changed and deleted through one process is seen by
// the others sharing its JetStream (nodes of a cluster): a process that
// opens later loads it, and one already open follows the changes.
func TestAFunctionChangedThroughAnotherProcessIsSeenByThisOne(t *testing.T) {
	ctx := context.Background()
	a := testenv.Start(t, testenv.Options{ListenAddr: "127.0.0.1:0"})
	create(t, a.Functions, function.Config{FunctionName: "f", Environment: map[string]string{"COLOR": "red"}})
	b := testenv.Start(t, testenv.Options{NATSURL: a.Engine.ClientURL()})
	if c, ok := listed(b.Functions, "f"); !ok || c.Environment["COLOR"] != "red" {
		t.Fatalf("a process opened after the create lists %+v (listed %v), want f with COLOR red", c, ok)
	}
	if _, err := a.Functions.PutFunction(ctx, function.Config{FunctionName: "f", Handler: echoHandler, Environment: map[string]string{"COLOR": "blue"}}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the change seen by the other process", func() bool {
		c, ok := listed(b.Functions, "f")
		return ok && c.Environment["COLOR"] == "blue"
	})
	if err := a.Functions.DeleteFunction(ctx, "f"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the deletion seen by the other process", func() bool {
		_, ok := listed(b.Functions, "f")
		return !ok
	})
}
