package awsapi

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestPanicIsInternalFailure registers an operation that panics: the
// endpoint answers it as an internal failure in each API's shape (HTTP
// 500) and logs the panic with the operation's name.
func TestPanicIsInternalFailure(t *testing.T) {
	boom := func(rq *request, in *noInput) (any, error) { panic("boom") }
	for _, svc := range []struct {
		svc    Service
		target string
		shape  string
	}{
		{Kinesis, "Kinesis_20131202.", "InternalFailureException"},
		{DynamoDB, "DynamoDB_20120810.", "com.amazonaws.dynamodb.v20120810#InternalServerError"},
		{SQS, "AmazonSQS.", "com.amazonaws.sqs#InternalError"},
	} {
		operations[svc.svc]["TestPanic"] = &Operation{Service: svc.svc, Name: "TestPanic", h: handle(boom)}
		t.Cleanup(func() { delete(operations[svc.svc], "TestPanic") })

		var logs bytes.Buffer
		h := &Handler{opts: Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, json: true}
		r := httptest.NewRequest("POST", "/", strings.NewReader("{}"))
		r.Header.Set("X-Amz-Target", svc.target+"TestPanic")
		signInternal(r)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)

		var body struct {
			Type string `json:"__type"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil || w.Code != 500 || body.Type != svc.shape {
			t.Errorf("%s: %d %s (%v), want 500 %s", svc.svc, w.Code, w.Body, err, svc.shape)
		}
		if !strings.Contains(logs.String(), "panic") || !strings.Contains(logs.String(), "op=TestPanic") || !strings.Contains(logs.String(), "boom") {
			t.Errorf("%s: log %q, want the panic with the operation's name", svc.svc, logs.String())
		}
	}

	// Lambda: the panic of a route's handler.
	operations[Lambda]["TestPanic"] = &Operation{Service: Lambda, Name: "TestPanic", h: handle(boom), Routes: []string{"GET /2015-03-31/testpanic"}}
	t.Cleanup(func() { delete(operations[Lambda], "TestPanic") })
	var logs bytes.Buffer
	h := &Handler{lopts: LambdaOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, lambda: true}
	h.mux = h.restMux(Lambda, protoLambda, lambdaMaxBody)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/2015-03-31/testpanic", nil))
	if w.Code != http.StatusInternalServerError || w.Header().Get("X-Amzn-ErrorType") != "ServiceException" || !strings.Contains(logs.String(), "op=TestPanic") {
		t.Errorf("Lambda: %d %v %s; log %q", w.Code, w.Header(), w.Body, logs.String())
	}
}
