package idempotency_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/runnel-dev/runnel/idempotency"
)

// TestAKeyFuncResultEmptyAsJSONIsNoKey: a KeyFunc result is judged as
// JSON, as a JMESPath result is: a struct whose fields are all omitted
// ({}), the text null, or a pointer to "" is no key. Each such event runs
// its handler without persistence (or is refused with
// RaiseOnNoIdempotencyKey), instead of sharing one record, where the
// second event got the first one's result and never ran.
func TestAKeyFuncResultEmptyAsJSONIsNoKey(t *testing.T) {
	type orderKey struct {
		OrderID string `json:"orderId,omitempty"`
	}
	empty := ""
	keys := map[string]func(any) (any, error){
		"all fields omitted": func(p any) (any, error) { return orderKey{}, nil },
		"json null":          func(p any) (any, error) { return json.RawMessage("null"), nil },
		"pointer to empty":   func(p any) (any, error) { return &empty, nil },
	}
	for name, kf := range keys {
		t.Run(name, func(t *testing.T) {
			s := newMem()
			cfg := idempotency.Config{Name: "charge", FunctionName: "f", Logger: quiet(), KeyFunc: kf}
			ran := 0
			for _, amount := range []string{"10", "99"} {
				out, err := idempotency.Do(context.Background(), s, cfg, map[string]string{"amount": amount}, func(ctx context.Context) (string, error) {
					ran++
					return "charged " + amount, nil
				})
				if err != nil || out != "charged "+amount {
					t.Fatalf("amount %s: %q, %v; want its own result", amount, out, err)
				}
			}
			if ran != 2 || len(s.recs) != 0 {
				t.Fatalf("the handler ran %d times with %d records; want 2 runs, nothing stored", ran, len(s.recs))
			}
			cfg.RaiseOnNoIdempotencyKey = true
			if _, err := idempotency.Do(context.Background(), s, cfg, map[string]string{}, func(ctx context.Context) (string, error) { return "", nil }); !errors.Is(err, idempotency.ErrNoIdempotencyKey) {
				t.Fatalf("with RaiseOnNoIdempotencyKey: %v, want ErrNoIdempotencyKey", err)
			}
		})
	}
}

// TestAHandlersInconsistentStateErrorIsNotARetry: Do tries again only
// when the store's records are inconsistent, not when the handler's own
// error wraps ErrInconsistentState (a nested Do's): the handler runs
// once, and its error is returned.
func TestAHandlersInconsistentStateErrorIsNotARetry(t *testing.T) {
	s := newMem()
	cfg := idempotency.Config{Name: "outer", FunctionName: "f", Logger: quiet()}
	ran := 0
	_, err := idempotency.Do(context.Background(), s, cfg, map[string]string{"id": "1"}, func(ctx context.Context) (string, error) {
		ran++
		return "", fmt.Errorf("inner step: %w", idempotency.ErrInconsistentState)
	})
	if ran != 1 || !errors.Is(err, idempotency.ErrInconsistentState) {
		t.Fatalf("the handler ran %d times, err %v; want once, its own error", ran, err)
	}
}
