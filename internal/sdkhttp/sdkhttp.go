// Package sdkhttp gives aws-sdk-go-v2 clients of a plain-HTTP endpoint
// (runnel's, http://) an HTTP client that does not lose responses.
//
// The trap, in the SDK's stack and not in runnel: smithy-go (v1.28.9)
// wraps a request's body so that, once closed, its WriteTo answers
// io.EOF, and it closes the body as soon as net/http's Do returns, that
// is, as soon as the reply's headers are in. Over plain TCP, net/http
// (Go 1.26) copies a body of known length straight to the socket and
// then reads the body once more to check that nothing is left over. When
// the reply beats that check (a fast server on loopback, a busy machine
// that pauses the writing goroutine), the check gets io.EOF from
// WriteTo, takes it for a failed write, and closes the connection while
// the reply is being read. The SDK then sees "deserialization failed ...
// use of closed network connection" on a 200 and retries the call: a
// ReceiveMessage's messages stay invisible for their visibility timeout
// (the flight demo on one node stalled 20 s in about 1 run in 3), a
// SendMessage or PutRecords is stored twice, and a SubscribeToShard
// event stream dies a moment after it starts (about 1 in 40). Over TLS
// the body goes through a buffer first, so AWS's own https:// endpoints
// do not show it.
//
// The fix: hand net/http the body as a plain io.ReadCloser, without
// WriteTo, so the check is an ordinary Read, which the wrapper answers
// with io.EOF after close as a drained body should. Use Client as the
// aws.Config's HTTPClient, or copy the ten lines of PlainBodies into a
// Lambda function's code.
package sdkhttp

import (
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Client returns the SDK's default HTTP client (awshttp.NewBuildableClient)
// behind PlainBodies.
func Client() aws.HTTPClient { return PlainBodies{awshttp.NewBuildableClient()} }

// PlainBodies sends each request through C with its body reduced to a
// plain io.ReadCloser (see the package doc for why).
type PlainBodies struct{ C aws.HTTPClient }

// Do implements aws.HTTPClient.
func (p PlainBodies) Do(r *http.Request) (*http.Response, error) {
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = struct{ io.ReadCloser }{r.Body}
	}
	return p.C.Do(r)
}
