package idempotency_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/jonboulle/clockwork"

	"github.com/runnel-dev/runnel/idempotency"
	"github.com/runnel-dev/runnel/idempotency/storetest"
)

// memStore is an in-memory Store that does not return the existing record
// on a refused Put (so the suite covers the Get path), with hooks for
// failures.
type memStore struct {
	mu      sync.Mutex
	recs    map[string]idempotency.Record
	putErr  func(n int) error // called before each Put; non-nil is returned
	getErr  func(n int) error
	puts    int
	gets    int
	deletes int
}

func newMem() *memStore { return &memStore{recs: map[string]idempotency.Record{}} }

func (m *memStore) Put(_ context.Context, r idempotency.Record, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.putErr != nil {
		if err := m.putErr(m.puts); err != nil {
			return err
		}
	}
	if old, ok := m.recs[r.ID]; ok {
		freed := old.Expiration < now.Unix() ||
			(old.Status == idempotency.StatusInProgress && old.InProgressExpiration != 0 && old.InProgressExpiration < now.UnixMilli())
		if !freed {
			return &idempotency.ExistsError{}
		}
	}
	m.recs[r.ID] = r
	return nil
}

func (m *memStore) Get(_ context.Context, id string) (*idempotency.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	if m.getErr != nil {
		if err := m.getErr(m.gets); err != nil {
			return nil, err
		}
	}
	r, ok := m.recs[id]
	if !ok {
		return nil, idempotency.ErrRecordNotFound
	}
	return &r, nil
}

// own reports whether the record id is still the INPROGRESS record put
// with in_progress_expiration held (idempotency.OwnCondition).
func (m *memStore) own(id string, held int64) bool {
	old, ok := m.recs[id]
	return ok && old.Status == idempotency.StatusInProgress && old.InProgressExpiration == held
}

func (m *memStore) Update(_ context.Context, r idempotency.Record, held int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.own(r.ID, held) {
		return idempotency.ErrRecordChanged
	}
	old := m.recs[r.ID]
	old.ID, old.Status, old.Expiration, old.Data = r.ID, r.Status, r.Expiration, r.Data
	if r.Validation != "" {
		old.Validation = r.Validation
	}
	m.recs[r.ID] = old
	return nil
}

func (m *memStore) Delete(_ context.Context, id string, held int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.deletes++
	if _, ok := m.recs[id]; ok && !m.own(id, held) {
		return idempotency.ErrRecordChanged
	}
	delete(m.recs, id)
	return nil
}

func TestConformanceInMemory(t *testing.T) {
	storetest.Run(t, storetest.Features{ReturnsExisting: false}, func(t *testing.T, _ clockwork.Clock) idempotency.Store { return newMem() })
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

func md5hex(s string) string {
	sum := md5.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func handle(ctx context.Context, ev json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"ok"`), nil
}

func TestKeyFormat(t *testing.T) {
	t.Setenv(idempotency.FunctionNameEnv, "orders")
	m := newMem()
	h, err := idempotency.Wrap(m, idempotency.Config{Logger: quiet()}, handle)
	if err != nil {
		t.Fatal(err)
	}
	// Key order and spacing of the payload do not matter: the hash is of
	// the canonical JSON.
	for _, ev := range []string{`{"b": "x", "a": 1}`, `{"a":1,"b":"x"}`} {
		if _, err := h(context.Background(), json.RawMessage(ev)); err != nil {
			t.Fatal(err)
		}
	}
	want := "orders.idempotency_test.handle#" + md5hex(`{"a":1,"b":"x"}`)
	if _, ok := m.recs[want]; !ok || len(m.recs) != 1 {
		t.Fatalf("records %v, want one under %s", keys(m), want)
	}
}

func keys(m *memStore) []string {
	var out []string
	for k := range m.recs {
		out = append(out, k)
	}
	return out
}

func TestFunctionNameDefaults(t *testing.T) {
	t.Setenv(idempotency.FunctionNameEnv, "")
	cases := []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"runnel in-process: the invoked ARN", lambdacontext.NewContext(context.Background(),
			&lambdacontext.LambdaContext{InvokedFunctionArn: "arn:aws:lambda:us-east-1:000000000000:function:payments:live"}), "payments.x#"},
		{"nothing: test-func as Powertools", context.Background(), "test-func.x#"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := newMem()
			idempotency.Do(c.ctx, m, idempotency.Config{Name: "x"}, "p", func(context.Context) (int, error) { return 1, nil })
			if k := keys(m); len(k) != 1 || !strings.HasPrefix(k[0], c.want) {
				t.Fatalf("keys %v, want prefix %s", k, c.want)
			}
		})
	}
}

func TestHash(t *testing.T) {
	a, _ := idempotency.Hash(json.RawMessage(`{"id":12345678901234567890}`))
	b, _ := idempotency.Hash(json.RawMessage(`{"id":12345678901234567891}`))
	if a == b {
		t.Fatal("integers above 2^53 must not hash alike")
	}
	c, _ := idempotency.Hash(json.RawMessage(`{"x":1.0,"y":[1,2]}`))
	d, _ := idempotency.Hash(map[string]any{"y": []int{1, 2}, "x": 1})
	if c != d {
		t.Fatal("the same JSON value must hash alike whatever its Go form")
	}
	if s, _ := idempotency.Hash("o-1"); s != md5hex(`"o-1"`) {
		t.Fatalf("Hash(string) = %s", s)
	}
}

func TestMissingKey(t *testing.T) {
	cases := []struct {
		payload string
		missing bool
	}{
		{`{"id":null}`, true},
		{`{"id":""}`, true},
		{`{"id":{}}`, true},
		{`{"id":[null,null]}`, true},
		{`{}`, true},
		{`{"id":0}`, false},
		{`{"id":false}`, false},
		{`{"id":[null,"x"]}`, false},
		{`{"id":"x"}`, false},
	}
	for _, c := range cases {
		_, err := idempotency.Do(context.Background(), newMem(), idempotency.Config{Name: "x", EventKeyJMESPath: "id", RaiseOnNoIdempotencyKey: true},
			json.RawMessage(c.payload), func(context.Context) (int, error) { return 1, nil })
		if got := errors.Is(err, idempotency.ErrNoIdempotencyKey); got != c.missing {
			t.Errorf("%s: err %v, want missing=%v", c.payload, err, c.missing)
		}
	}
}

func TestNoKeyWarns(t *testing.T) {
	var buf bytes.Buffer
	m := newMem()
	cfg := idempotency.Config{Name: "x", EventKeyJMESPath: "id", Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	if _, err := idempotency.Do(context.Background(), m, cfg, json.RawMessage(`{}`), func(context.Context) (int, error) { return 1, nil }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "level=WARN") || !strings.Contains(buf.String(), "no idempotency key") || m.puts != 0 {
		t.Fatalf("log %q, puts %d; want a warning and no persistence", buf.String(), m.puts)
	}
}

func TestValidate(t *testing.T) {
	for _, cfg := range []idempotency.Config{
		{EventKeyJMESPath: "a.["},
		{PayloadValidationJMESPath: "]"},
		{ExpiresAfter: -time.Second},
	} {
		if err := cfg.Validate(); !errors.Is(err, idempotency.ErrInvalidConfig) {
			t.Errorf("%+v: Validate = %v", cfg, err)
		}
		if _, err := idempotency.Wrap(newMem(), cfg, handle); !errors.Is(err, idempotency.ErrInvalidConfig) {
			t.Errorf("%+v: Wrap = %v", cfg, err)
		}
	}
	if err := (idempotency.Config{EventKeyJMESPath: "powertools_json(body).id"}).Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestInconsistentStateRetriedTwice(t *testing.T) {
	// The record refusing the Put is gone when read: Powertools retries the
	// whole sequence at most 2 more times.
	m := newMem()
	m.putErr = func(int) error { return &idempotency.ExistsError{} }
	runs := 0
	_, err := idempotency.Do(context.Background(), m, idempotency.Config{Name: "x"}, "p", func(context.Context) (int, error) { runs++; return 1, nil })
	if !errors.Is(err, idempotency.ErrInconsistentState) || m.puts != 3 || runs != 0 {
		t.Fatalf("err %v after %d puts, %d runs; want ErrInconsistentState after 3 puts", err, m.puts, runs)
	}

	m = newMem()
	m.putErr = func(n int) error {
		if n == 1 {
			return &idempotency.ExistsError{}
		}
		return nil
	}
	if v, err := idempotency.Do(context.Background(), m, idempotency.Config{Name: "x"}, "p", func(context.Context) (int, error) { return 7, nil }); err != nil || v != 7 {
		t.Fatalf("after one inconsistent read: %v, %v", v, err)
	}
}

func TestPersistenceErrors(t *testing.T) {
	down := errors.New("table unavailable")
	m := newMem()
	m.putErr = func(int) error { return down }
	runs := 0
	_, err := idempotency.Do(context.Background(), m, idempotency.Config{Name: "x"}, "p", func(context.Context) (int, error) { runs++; return 1, nil })
	if !errors.Is(err, idempotency.ErrPersistence) || !errors.Is(err, down) || runs != 0 {
		t.Fatalf("err %v, runs %d", err, runs)
	}

	m = newMem()
	m.putErr = func(int) error { return &idempotency.ExistsError{} }
	m.getErr = func(int) error { return down }
	if _, err := idempotency.Do(context.Background(), m, idempotency.Config{Name: "x"}, "p", func(context.Context) (int, error) { return 1, nil }); !errors.Is(err, idempotency.ErrPersistence) || !errors.Is(err, down) {
		t.Fatalf("get failure: %v", err)
	}
}

func TestResultTypes(t *testing.T) {
	// The stored result comes back as the handler's type, via JSON.
	type resp struct {
		Items []string `json:"items"`
		N     *int     `json:"n,omitempty"`
	}
	m := newMem()
	cfg := idempotency.Config{Name: "x"}
	first, _ := idempotency.Do(context.Background(), m, cfg, "p", func(context.Context) (resp, error) { return resp{Items: []string{"a"}}, nil })
	again, err := idempotency.Do(context.Background(), m, cfg, "p", func(context.Context) (resp, error) { t.Fatal("ran twice"); return resp{}, nil })
	if err != nil || len(again.Items) != 1 || again.Items[0] != "a" || again.N != nil || len(first.Items) != 1 {
		t.Fatalf("again = %+v, %v", again, err)
	}
	// A nil result is stored as null and comes back as the zero value.
	p, _ := idempotency.Do(context.Background(), m, cfg, "q", func(context.Context) (*resp, error) { return nil, nil })
	p2, err := idempotency.Do(context.Background(), m, cfg, "q", func(context.Context) (*resp, error) { return &resp{}, nil })
	if p != nil || p2 != nil || err != nil {
		t.Fatalf("nil result: %v, %v, %v", p, p2, err)
	}
}

func kinesisRecord(shard, seq, data string) events.KinesisEventRecord {
	return events.KinesisEventRecord{EventID: shard + ":" + seq, EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/s",
		Kinesis: events.KinesisRecord{SequenceNumber: seq, Data: []byte(data), PartitionKey: "pk"}}
}

func TestKinesisSequenceKey(t *testing.T) {
	cfg := idempotency.KinesisSequenceConfig(idempotency.Config{Name: "rec", ExpiresAfter: 48 * time.Hour}, 24*time.Hour, 24*time.Hour)
	m := newMem()
	runs := map[string]int{}
	process := func(r events.KinesisEventRecord) {
		t.Helper()
		if _, err := idempotency.Do(context.Background(), m, cfg, r, func(context.Context) (string, error) {
			runs[r.EventID]++
			return r.EventID, nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	a := kinesisRecord("shardId-000000000000", "1700000000000000000000000001", "same data")
	b := kinesisRecord("shardId-000000000001", "1700000000000000000000000001", "same data") // same number, other shard
	c := kinesisRecord("shardId-000000000000", "1700000000000000000000000002", "same data")
	for _, r := range []events.KinesisEventRecord{a, b, c, a, b, c} {
		process(r)
	}
	if len(runs) != 3 || runs[a.EventID] != 1 || runs[b.EventID] != 1 || runs[c.EventID] != 1 {
		t.Fatalf("runs %v, want each record once", runs)
	}
	// A deaggregated user record: its own key with the subsequence.
	k := idempotency.KinesisSequenceKey(a).WithSubSequence(3)
	if _, err := idempotency.Do(context.Background(), m, cfg, k, func(context.Context) (int, error) { return 3, nil }); err != nil || len(m.recs) != 4 {
		t.Fatalf("subsequence: %v, %d records", err, len(m.recs))
	}
	if _, err := idempotency.KinesisKey("nope"); err == nil {
		t.Fatal("KinesisKey of a string")
	}
}

func TestKinesisSequenceConfigWarnsOnShortExpiry(t *testing.T) {
	for _, c := range []struct {
		expires time.Duration
		warn    bool
	}{{0, true}, {24 * time.Hour, true}, {25 * time.Hour, false}} {
		var buf bytes.Buffer
		idempotency.KinesisSequenceConfig(idempotency.Config{ExpiresAfter: c.expires, Logger: slog.New(slog.NewTextHandler(&buf, nil))}, 24*time.Hour, time.Hour)
		if got := strings.Contains(buf.String(), "level=WARN"); got != c.warn {
			t.Errorf("ExpiresAfter %v: warned %v, want %v (%s)", c.expires, got, c.warn, buf.String())
		}
	}
}
