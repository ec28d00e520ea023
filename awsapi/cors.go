package awsapi

import (
	"net/http"

	"github.com/google/uuid"
)

// corsExposed are the response headers the AWS SDKs read, which a
// browser shows a script only when they are exposed.
const corsExposed = "x-amzn-RequestId, x-amzn-ErrorType, x-amzn-query-error, x-amz-crc32, x-amz-request-id, " +
	"X-Amz-Function-Error, X-Amz-Log-Result, X-Amz-Executed-Version, Retry-After, Date, ETag"

// corsMaxAge is how long a browser may keep a preflight's answer, in
// seconds: AWS's JSON endpoints answer 172800 (2 days).
const corsMaxAge = "172800"

// cors lets the AWS SDKs run in a browser page of any origin, as AWS's
// JSON endpoints do (their answers as kinesalite's and dynalite's
// connection tests recorded them from AWS): a request with an Origin gets
// Access-Control-Allow-Origin "*" and the exposed headers, and an OPTIONS
// with an Origin is a preflight, answered here (reported true) with 200,
// an empty body, a request id, Access-Control-Max-Age 172800, and the
// requested headers and method echoed as allowed. Trap: "*" is not
// allowed with credentials; the SDKs send none (they sign instead).
func cors(w http.ResponseWriter, r *http.Request) bool {
	if r.Header.Get("Origin") == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Access-Control-Expose-Headers", corsExposed)
	if r.Method != http.MethodOptions {
		return false
	}
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	if m := r.Header.Get("Access-Control-Request-Method"); m != "" {
		h.Set("Access-Control-Allow-Methods", m)
	}
	h.Set("Access-Control-Max-Age", corsMaxAge)
	h.Set("x-amzn-RequestId", uuid.NewString())
	h.Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
	return true
}
