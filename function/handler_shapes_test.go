package function_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
)

type orderIn struct {
	ID    string `json:"id"`
	Items int    `json:"items"`
}

type orderOut struct {
	ID     string `json:"id"`
	Double int    `json:"double"`
}

func sampleEvent() *events.KinesisEvent {
	return &events.KinesisEvent{Records: []events.KinesisEventRecord{{
		AwsRegion:      "us-east-1",
		EventID:        "shardId-000000000000:49590338271490256608559692538361571095921575989136588898",
		EventName:      "aws:kinesis:record",
		EventSource:    "aws:kinesis",
		EventSourceArn: "arn:aws:kinesis:us-east-1:000000000000:stream/orders",
		EventVersion:   "1.0",
		Kinesis: events.KinesisRecord{
			ApproximateArrivalTimestamp: events.SecondsEpochTime{Time: time.Unix(1700000000, 0)},
			Data:                        []byte(`{"id":"o-1"}`),
			PartitionKey:                "pk-1",
			SequenceNumber:              "49590338271490256608559692538361571095921575989136588898",
			KinesisSchemaVersion:        "1.0",
		},
	}}}
}

func TestKinesisHandlerGetsTheTypedEventAndReturnsATypedResponse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := sampleEvent()
		var got events.KinesisEvent
		f := newFn(t, function.Config{}, function.KinesisHandler(func(_ context.Context, e events.KinesisEvent) (events.KinesisEventResponse, error) {
			got = e
			return events.KinesisEventResponse{BatchItemFailures: []events.KinesisBatchItemFailure{
				{ItemIdentifier: e.Records[0].Kinesis.SequenceNumber},
			}}, nil
		}))
		res := invoke(t, f, ev)
		mustSucceed(t, res)
		if len(got.Records) != 1 || &got.Records[0] != &ev.Records[0] {
			t.Errorf("handler did not get the caller's event as is (no JSON round trip)")
		}
		resp, ok := res.Response.(*events.KinesisEventResponse)
		if !ok {
			t.Fatalf("Response is %T, want *events.KinesisEventResponse", res.Response)
		}
		if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[0].Kinesis.SequenceNumber {
			t.Errorf("Response = %+v", resp)
		}
	})
}

func TestKinesisHandlerGetsAnEventPassedAsJSON(t *testing.T) {
	for _, c := range []struct {
		name  string
		event func() any
	}{
		{"events.KinesisEvent by value", func() any { return *sampleEvent() }},
		{"raw JSON bytes", func() any { b, _ := json.Marshal(sampleEvent()); return b }},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got events.KinesisEvent
				f := newFn(t, function.Config{}, func(_ context.Context, e events.KinesisEvent) error {
					got = e
					return nil
				})
				res := invoke(t, f, c.event())
				mustSucceed(t, res)
				want := sampleEvent().Records[0]
				if len(got.Records) != 1 {
					t.Fatalf("handler got %d records", len(got.Records))
				}
				g := got.Records[0]
				if string(g.Kinesis.Data) != string(want.Kinesis.Data) || g.Kinesis.SequenceNumber != want.Kinesis.SequenceNumber ||
					g.EventSourceArn != want.EventSourceArn || !g.Kinesis.ApproximateArrivalTimestamp.Equal(want.Kinesis.ApproximateArrivalTimestamp.Time) {
					t.Errorf("handler got %+v, want %+v", g, want)
				}
				if _, ok := res.Response.(*events.KinesisEventResponse); !ok {
					t.Errorf("Response is %T, want *events.KinesisEventResponse", res.Response)
				}
			})
		})
	}
}

func TestPlainHandlerGetsJSONAndReturnsPayloadJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(_ context.Context, in orderIn) (orderOut, error) {
			return orderOut{ID: in.ID, Double: 2 * in.Items}, nil
		})
		res := invoke(t, f, orderIn{ID: "o-7", Items: 21})
		mustSucceed(t, res)
		var out orderOut
		if err := json.Unmarshal(res.Payload, &out); err != nil {
			t.Fatalf("Payload %q is not JSON: %v", res.Payload, err)
		}
		if out != (orderOut{ID: "o-7", Double: 42}) {
			t.Errorf("Payload = %s", res.Payload)
		}
		if res.Response != nil {
			t.Errorf("Response = %#v, want nil for a JSON handler", res.Response)
		}
	})
}

// A Result's Payload belongs to the caller: later invocations must not
// change it.
func TestPlainHandlerPayloadIsNotOverwrittenByTheNextInvocation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, func(_ context.Context, in orderIn) (orderOut, error) {
			return orderOut{ID: in.ID, Double: 2 * in.Items}, nil
		})
		first := invoke(t, f, orderIn{ID: "AAAA", Items: 1})
		want := string(first.Payload)
		for i := range 5 {
			invoke(t, f, orderIn{ID: fmt.Sprintf("BBBB%d", i), Items: 2})
		}
		if got := string(first.Payload); got != want {
			t.Errorf("first Payload changed from %q to %q after later invocations", want, got)
		}
	})
}

type rawHandler struct {
	got []byte
	out []byte
}

func (h *rawHandler) Invoke(_ context.Context, payload []byte) ([]byte, error) {
	h.got = append([]byte(nil), payload...)
	return h.out, nil
}

var _ lambda.Handler = (*rawHandler)(nil)

func TestLambdaHandlerGetsRawBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &rawHandler{out: []byte(`{"ok":true}`)}
		f := newFn(t, function.Config{}, h)
		in := []byte(`{"b": [1, 2,3] }`) // bytes are passed as they are, not re-encoded
		res := invoke(t, f, in)
		mustSucceed(t, res)
		if string(h.got) != string(in) {
			t.Errorf("handler got %q, want %q", h.got, in)
		}
		if string(res.Payload) != `{"ok":true}` {
			t.Errorf("Payload = %q", res.Payload)
		}
		if res.Response != nil {
			t.Errorf("Response = %#v, want nil", res.Response)
		}
	})
}

// The event a raw handler receives is the JSON of the event passed.
func TestRawHandlerReceivesTheEventAsJSON(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &rawHandler{}
		f := newFn(t, function.Config{}, h)
		ev := sampleEvent()
		mustSucceed(t, invoke(t, f, ev))
		if !json.Valid(h.got) {
			t.Fatalf("handler got invalid JSON %q", h.got)
		}
		var raw struct {
			Records []struct {
				EventSource    string `json:"eventSource"`
				EventSourceARN string `json:"eventSourceARN"`
				Kinesis        struct {
					Data                        string  `json:"data"`
					PartitionKey                string  `json:"partitionKey"`
					SequenceNumber              string  `json:"sequenceNumber"`
					ApproximateArrivalTimestamp float64 `json:"approximateArrivalTimestamp"`
				} `json:"kinesis"`
			} `json:"Records"`
		}
		if err := json.Unmarshal(h.got, &raw); err != nil {
			t.Fatal(err)
		}
		if len(raw.Records) != 1 {
			t.Fatalf("JSON %s has %d Records", h.got, len(raw.Records))
		}
		r := raw.Records[0]
		if r.EventSource != "aws:kinesis" || r.EventSourceARN != ev.Records[0].EventSourceArn ||
			r.Kinesis.Data != "eyJpZCI6Im8tMSJ9" || r.Kinesis.PartitionKey != "pk-1" ||
			r.Kinesis.SequenceNumber != ev.Records[0].Kinesis.SequenceNumber ||
			r.Kinesis.ApproximateArrivalTimestamp != 1700000000 {
			t.Errorf("handler got %s", h.got)
		}
	})
}

func TestHandlerContextCarriesLambdaContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var ids []string
		var ok bool
		f := newFn(t, function.Config{}, func(ctx context.Context, _ events.KinesisEvent) error {
			var lc *lambdacontext.LambdaContext
			lc, ok = lambdacontext.FromContext(ctx)
			if ok {
				ids = append(ids, lc.AwsRequestID)
			}
			return nil
		})
		seen := map[string]bool{}
		for i := range 3 {
			res := invoke(t, f, emptyEvent)
			if !ok {
				t.Fatal("lambdacontext.FromContext: no LambdaContext")
			}
			if ids[i] != res.RequestID {
				t.Errorf("AwsRequestID = %q, Result.RequestID = %q", ids[i], res.RequestID)
			}
			if _, err := uuid.Parse(res.RequestID); err != nil {
				t.Errorf("RequestID %q is not a UUID: %v", res.RequestID, err)
			}
			if seen[res.RequestID] {
				t.Errorf("RequestID %q reused", res.RequestID)
			}
			seen[res.RequestID] = true
		}
	})
}

func TestEnvReturnsTheFunctionsEnvironment(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
	}{
		{"environment set", map[string]string{"TABLE": "orders", "STAGE": "test"}},
		{"no environment", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var got map[string]string
				f := newFn(t, function.Config{Environment: c.env}, func(ctx context.Context, _ events.KinesisEvent) error {
					got = function.Env(ctx)
					return nil
				})
				mustSucceed(t, invoke(t, f, emptyEvent))
				if !reflect.DeepEqual(got, c.env) {
					t.Errorf("Env(ctx) = %v, want %v", got, c.env)
				}
			})
		})
	}
	if function.Env(context.Background()) != nil {
		t.Error("Env outside a handler is not nil")
	}
}

func TestHandlerThatIsNotAFunctionIsRejected(t *testing.T) {
	for _, h := range []any{42, "handler", nil} {
		if _, err := function.New(function.Config{FunctionName: "f"}, h, nil, quiet); !errors.Is(err, awserr.ErrInvalidParameterValue) {
			t.Errorf("New with handler %#v: err = %v, want ErrInvalidParameterValue", h, err)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("Register with a non-function did not panic")
		}
	}()
	function.Register("function_test.not-a-function", 42)
}

// Invoke's doc: it returns an error only when the function did not run,
// a throttle or "an event that does not encode".
func TestEventThatDoesNotEncodeIsAnInvokeError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFn(t, function.Config{}, &rawHandler{})
		res, err := f.Invoke(context.Background(), make(chan int))
		if err == nil {
			t.Fatalf("Invoke with an unencodable event: err = nil, res = %+v", res)
		}
		if st := f.Stats(); st.Errors != 0 || st.Invocations != 0 {
			t.Errorf("Stats = %+v, want the function not run", st)
		}
	})
}

// ---- 6. Config validation ----

func TestConfigValidationFollowsTheLambdaAPIRanges(t *testing.T) {
	cases := []struct {
		name     string
		cfg      function.Config
		wantErr  []string // substrings of the message; nil = valid
		validate func(t *testing.T, c function.Config)
	}{
		{name: "Timeout 0 defaults to 3", cfg: function.Config{Timeout: 0}, validate: func(t *testing.T, c function.Config) {
			if c.Timeout != 3 {
				t.Errorf("Timeout = %d, want 3", c.Timeout)
			}
		}},
		{name: "MemorySize 0 defaults to 128", cfg: function.Config{}, validate: func(t *testing.T, c function.Config) {
			if c.MemorySize != 128 {
				t.Errorf("MemorySize = %d, want 128", c.MemorySize)
			}
		}},
		{name: "Timeout 1 is the minimum", cfg: function.Config{Timeout: 1}},
		{name: "Timeout 900 is the maximum", cfg: function.Config{Timeout: 900}},
		{name: "Timeout 901 is rejected", cfg: function.Config{Timeout: 901}, wantErr: []string{"Timeout", "901", "1 and 900"}},
		{name: "Timeout -1 is rejected", cfg: function.Config{Timeout: -1}, wantErr: []string{"Timeout", "1 and 900"}},
		{name: "MemorySize 128 is the minimum", cfg: function.Config{MemorySize: 128}},
		{name: "MemorySize 10240 is the maximum", cfg: function.Config{MemorySize: 10240}},
		{name: "MemorySize 127 is rejected", cfg: function.Config{MemorySize: 127}, wantErr: []string{"MemorySize", "127", "128 and 10240"}},
		{name: "MemorySize 10241 is rejected", cfg: function.Config{MemorySize: 10241}, wantErr: []string{"MemorySize", "10241", "128 and 10240"}},
		{name: "ReservedConcurrentExecutions 0 is allowed", cfg: function.Config{ReservedConcurrentExecutions: intp(0)}},
		{name: "ReservedConcurrentExecutions 1000 is allowed", cfg: function.Config{ReservedConcurrentExecutions: intp(1000)}},
		{name: "ReservedConcurrentExecutions -1 is rejected", cfg: function.Config{ReservedConcurrentExecutions: intp(-1)}, wantErr: []string{"ReservedConcurrentExecutions", "0 and 1000"}},
		{name: "ReservedConcurrentExecutions 1001 is rejected", cfg: function.Config{ReservedConcurrentExecutions: intp(1001)}, wantErr: []string{"ReservedConcurrentExecutions", "1001", "0 and 1000"}},
		{name: "FunctionName of letters, digits, - and _ is allowed", cfg: function.Config{FunctionName: "My-func_01"}},
		{name: "FunctionName of 64 characters is allowed", cfg: function.Config{FunctionName: strings.Repeat("a", 64)}},
		{name: "FunctionName empty is rejected", cfg: function.Config{FunctionName: ""}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName of 65 characters is rejected", cfg: function.Config{FunctionName: strings.Repeat("a", 65)}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName with a space is rejected", cfg: function.Config{FunctionName: "my func"}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName with a colon is rejected", cfg: function.Config{FunctionName: "a:b"}, wantErr: []string{"FunctionName"}},
		{name: "FunctionName with a dot is rejected", cfg: function.Config{FunctionName: "a.b"}, wantErr: []string{"FunctionName"}},
		// configuration-envvars.html: keys [a-zA-Z]([a-zA-Z0-9_])+, no
		// reserved key, 4 KB of keys and values in all. Before, any map.
		{name: "Environment of 4 KB is allowed", cfg: function.Config{Environment: map[string]string{"BIG": strings.Repeat("x", 4093)}}},
		{name: "Environment over 4 KB is rejected", cfg: function.Config{Environment: map[string]string{"BIG": strings.Repeat("x", 4094)}}, wantErr: []string{"environment variables", "4KB"}},
		{name: "Environment with a reserved key is rejected", cfg: function.Config{Environment: map[string]string{"AWS_REGION": "eu-west-1", "MINE": "1"}}, wantErr: []string{"reserved keys", "AWS_REGION"}},
		{name: "Environment key of one letter is rejected", cfg: function.Config{Environment: map[string]string{"A": "1"}}, wantErr: []string{"Environment.Variables", "\"A\""}},
		{name: "Environment key starting with a digit is rejected", cfg: function.Config{Environment: map[string]string{"1A": "1"}}, wantErr: []string{"Environment.Variables"}},
		{name: "Environment TZ and PATH are not reserved", cfg: function.Config{Environment: map[string]string{"TZ": "Europe/Paris", "PATH": "/bin"}}},
	}
	h := func(context.Context, events.KinesisEvent) error { return nil }
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if cfg.FunctionName == "" && !strings.HasPrefix(c.name, "FunctionName") {
				cfg.FunctionName = "f"
			}
			// Through WithDefaults and Validate, with a Handler name.
			vc := cfg
			vc.Handler = "h"
			vc = vc.WithDefaults()
			verr := vc.Validate()
			// Through New.
			f, nerr := function.New(cfg, h, nil, quiet)
			for _, err := range []error{verr, nerr} {
				if c.wantErr == nil {
					if err != nil {
						t.Fatalf("valid config rejected: %v", err)
					}
					continue
				}
				if !errors.Is(err, awserr.ErrInvalidParameterValue) {
					t.Fatalf("err = %v, want ErrInvalidParameterValue", err)
				}
				for _, s := range c.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("message %q does not mention %q", err.Error(), s)
					}
				}
			}
			if c.wantErr == nil && c.validate != nil {
				c.validate(t, vc)
				c.validate(t, f.Config())
			}
		})
	}
}

func TestConfigValidationRequiresAHandlerName(t *testing.T) {
	c := function.Config{FunctionName: "f"}
	if err := c.Validate(); !errors.Is(err, awserr.ErrInvalidParameterValue) || !strings.Contains(err.Error(), "Handler") {
		t.Errorf("Validate without Handler: %v, want ErrInvalidParameterValue naming Handler", err)
	}
}

func TestFunctionNameFromARN(t *testing.T) {
	cases := []struct {
		arn, want string
		ok        bool
	}{
		{"arn:aws:lambda:us-east-1:000000000000:function:orders", "orders", true},
		{"arn:aws:lambda:eu-west-1:123456789012:function:my-fn_2", "my-fn_2", true},
		{"arn:aws:lambda:us-east-1:000000000000:function:orders:$LATEST", "orders", true},
		{"orders", "", false},
		{"arn:aws:kinesis:us-east-1:000000000000:stream/orders", "", false},
		{"arn:aws:lambda:us-east-1:000000000000:function:", "", false},
	}
	for _, c := range cases {
		got, ok := function.FunctionNameFromARN(c.arn)
		if got != c.want || ok != c.ok {
			t.Errorf("FunctionNameFromARN(%q) = %q, %v; want %q, %v", c.arn, got, ok, c.want, c.ok)
		}
	}
}
