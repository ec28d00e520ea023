package wire_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/wire"
)

func TestRetryEnvelope(t *testing.T) {
	now := time.Unix(1643667670, 0)
	first, err := wire.WrapRetry([]byte(`{"s3_bucket":"my_bucket"}`), now)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(first, &m)
	md := m["_retry_metadata"].(map[string]any)
	if md["attempt"] != 2.0 || md["initial_timestamp"] != 1643667670.0 || m["_original_payload"].(map[string]any)["s3_bucket"] != "my_bucket" {
		t.Fatalf("first envelope = %s", first)
	}
	second, _ := wire.WrapRetry(first, now.Add(time.Hour))
	env, ok := wire.UnwrapRetry(second)
	if !ok || env.Metadata.Attempt != 3 || env.Metadata.InitialTimestamp != 1643667670 || string(env.OriginalPayload) != `{"s3_bucket":"my_bucket"}` {
		t.Fatalf("second envelope = %s", second)
	}
	if _, ok := wire.UnwrapRetry([]byte(`{"a":1}`)); ok {
		t.Fatal("a plain payload unwrapped as an envelope")
	}
	nonJSON, _ := wire.WrapRetry([]byte("not json"), now)
	env, _ = wire.UnwrapRetry(nonJSON)
	if string(env.OriginalPayload) != `"not json"` {
		t.Fatalf("non-JSON payload wrapped as %s", env.OriginalPayload)
	}
}
