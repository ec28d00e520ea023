package awsapi

import "net/http"

// corsExposed are the response headers the AWS SDKs read, which a
// browser shows a script only when they are exposed.
const corsExposed = "x-amzn-RequestId, x-amzn-ErrorType, x-amzn-query-error, x-amz-crc32, x-amz-request-id, " +
	"X-Amz-Function-Error, X-Amz-Log-Result, X-Amz-Executed-Version, Retry-After, Date, ETag"

// cors lets the AWS SDKs run in a browser page of any origin (the
// endpoint is a local development target, as AWS emulators are): a
// request with an Origin gets CORS headers, and a preflight (OPTIONS with
// Access-Control-Request-Method) is answered here, reported true.
func cors(w http.ResponseWriter, r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return false
	}
	h := w.Header()
	h.Set("Access-Control-Allow-Origin", origin)
	h.Set("Access-Control-Allow-Credentials", "true")
	h.Add("Vary", "Origin")
	h.Set("Access-Control-Expose-Headers", corsExposed)
	if r.Method != http.MethodOptions || r.Header.Get("Access-Control-Request-Method") == "" {
		return false
	}
	h.Set("Access-Control-Allow-Methods", "GET, POST, PUT, DELETE, HEAD, PATCH, OPTIONS")
	if req := r.Header.Get("Access-Control-Request-Headers"); req != "" {
		h.Set("Access-Control-Allow-Headers", req)
	}
	h.Set("Access-Control-Max-Age", "86400")
	w.WriteHeader(http.StatusOK)
	return true
}
