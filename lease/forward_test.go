package lease_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/lease"
)

// counter is a service whose methods the table below forwards.
type counter struct{ n int }

func (c *counter) Add(_ context.Context, by int) (int, error) { c.n += by; return c.n, nil }

func (c *counter) Set(_ context.Context, name string, to int) error {
	if name == "" {
		return errors.New("no name")
	}
	c.n = to
	return nil
}

// A forwarded call reaches the method its operation names, with the
// arguments the caller gave Forward, one value or a Two; an unknown
// operation and arguments of the wrong type are ServiceException, and the
// method's own error comes back as it is.
func TestOpsServeRunsTheMethodOfTheOperation(t *testing.T) {
	c := &counter{}
	serve := lease.Ops[*counter]{
		"Add": lease.Call((*counter).Add),
		"Set": lease.Do2((*counter).Set),
	}.Serve("counter", c)
	call := func(op string, args any) (any, error) {
		b, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		return serve(context.Background(), op, b)
	}
	if out, err := call("Add", 2); err != nil || out != 2 {
		t.Fatalf("Add 2 = %v, %v; want 2", out, err)
	}
	if out, err := call("Set", lease.Pair("n", 7)); err != nil || out != nil || c.n != 7 {
		t.Fatalf("Set n 7 = %v, %v (n %d); want nil, n 7", out, err, c.n)
	}
	if _, err := call("Set", lease.Pair("", 1)); err == nil || err.Error() != "no name" {
		t.Fatalf("Set with no name = %v; want the method's error", err)
	}
	if _, err := call("Add", "two"); !errors.Is(err, awserr.ErrService) || !strings.Contains(err.Error(), "counter: bad forwarded call") {
		t.Fatalf("Add \"two\" = %v; want ServiceException, bad forwarded call", err)
	}
	if _, err := call("Sub", 1); !errors.Is(err, awserr.ErrService) || !strings.Contains(err.Error(), `counter: unknown forwarded operation "Sub"`) {
		t.Fatalf("Sub = %v; want ServiceException, unknown forwarded operation", err)
	}
}
