package awsapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
)

// TestABodyTooLargeIsAnsweredInItsServicesShape: a request refused before
// it is routed (a body over the endpoint's limit) is still answered in
// the error shape of the service its X-Amz-Target names, so the SDK parses
// it: for DynamoDB the coral namespace, JSON 1.0, an X-Amz-Crc32 and
// DynamoDB's request id. It was answered in Kinesis's shape (JSON 1.1, a
// bare __type, no CRC) whatever the service.
func TestABodyTooLargeIsAnsweredInItsServicesShape(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	body := `{"TableName":"t","Item":{"pk":{"S":"` + strings.Repeat("x", 17<<20) + `"}}}`
	rec := &recorder{header: map[string][]string{}}
	h.ServeHTTP(rec, httpRequest("POST", "/", body, map[string]string{"X-Amz-Target": "DynamoDB_20120810.PutItem", "Content-Type": "application/x-amz-json-1.0"}))
	var out map[string]any
	_ = json.Unmarshal(rec.body.Bytes(), &out)
	typ, _ := out["__type"].(string)
	if rec.status != 413 || !strings.HasPrefix(typ, "com.amazon.coral.service#") || rec.header.Get("X-Amz-Crc32") == "" ||
		!strings.Contains(rec.header.Get("Content-Type"), "x-amz-json-1.0") {
		t.Fatalf("a 17 MiB DynamoDB body: %d, Content-Type %q, X-Amz-Crc32 %q, body %v; want 413 in DynamoDB's shape",
			rec.status, rec.header.Get("Content-Type"), rec.header.Get("X-Amz-Crc32"), out)
	}
}

// TestTheHealthCheckAnswersHEADAndNamesEveryAPI: GET / says what the
// endpoint is and which APIs it serves; a probe that uses HEAD got 400
// UnknownOperationException, and the list left out the Scheduler.
func TestTheHealthCheckAnswersHEADAndNamesEveryAPI(t *testing.T) {
	h := awsapi.NewHandler(testenv.Start(t, testenv.Options{}), awsapi.Options{})
	for _, method := range []string{"GET", "HEAD"} {
		rec := &recorder{header: map[string][]string{}}
		h.ServeHTTP(rec, httpRequest(method, "/", "", nil))
		if rec.status != 0 && rec.status != 200 {
			t.Fatalf("%s /: %d %s", method, rec.status, rec.body.String())
		}
		if method == "GET" && !strings.Contains(rec.body.String(), `"scheduler"`) {
			t.Errorf("GET / = %s; want the scheduler among the APIs", rec.body.String())
		}
	}
}
