package awsapi

import (
	"net/http"
	"strings"

	"github.com/runnel-dev/runnel"
)

// lambdaPrefixes are the path prefixes of the Lambda REST API.
var lambdaPrefixes = []string{"/2015-03-31/", "/2017-10-31/", "/2019-09-25/"}

// NewEndpoint is the whole AWS-compatible endpoint on one address: the
// Lambda REST API (by path, NewLambdaHandler) and the Kinesis and SQS APIs
// (by X-Amz-Target or Action, NewHandler). This is what `runnel serve
// --aws` serves.
func NewEndpoint(rn *runnel.Runnel, opts Options, lopts LambdaOptions) http.Handler {
	api := NewHandler(rn, opts)
	if lopts.Logger == nil {
		lopts.Logger = opts.Logger
	}
	lambda := NewLambdaHandler(rn, lopts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for _, p := range lambdaPrefixes {
			if strings.HasPrefix(r.URL.Path, p) {
				lambda.ServeHTTP(w, r)
				return
			}
		}
		api.ServeHTTP(w, r)
	})
}
