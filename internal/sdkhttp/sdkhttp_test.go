package sdkhttp_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/runnel-dev/runnel/internal/sdkhttp"
)

// pausingConn holds the writing goroutine after its second write (the
// request's body, sent on its own after the headers) until release is
// closed: the moment a loaded machine may pause it, between writing the
// body and checking that nothing is left of it.
type pausingConn struct {
	net.Conn
	writes  int
	release chan struct{}
}

func (c *pausingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if c.writes++; c.writes == 2 {
		<-c.release
	}
	return n, err
}

// roundTrip sends a request with a 5-byte body through smithy-go's client
// handler (which closes the body when Do returns, as every SDK call does)
// and client, to a server that answers the headers at once and the body
// only after the writing goroutine has been let go on; it returns what
// reading the reply's body gave.
func roundTrip(t *testing.T, client func(*http.Transport) smithyhttp.ClientDo) (string, error) {
	more := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-more
		io.WriteString(w, "reply")
	}))
	defer srv.Close()
	release := make(chan struct{})
	var once sync.Once
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &pausingConn{Conn: c, release: release}, nil
	}}
	defer tr.CloseIdleConnections()
	defer once.Do(func() { close(release) })

	req := smithyhttp.NewStackRequest().(*smithyhttp.Request)
	req.Method = http.MethodPost
	req.URL, _ = url.Parse(srv.URL)
	req, err := req.SetStream(bytes.NewReader([]byte("hello")))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := smithyhttp.NewClientHandler(client(tr)).Handle(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	resp := out.(*smithyhttp.Response)
	defer resp.Body.Close()
	once.Do(func() { close(release) }) // the body was closed by Handle: the check runs now
	close(more)
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// The SDK's own client loses the reply when the body check runs after
// the SDK closed the body; behind PlainBodies the reply arrives whole.
func TestAReplyOutlivesTheSDKClosingTheRequestBody(t *testing.T) {
	plain := func(tr *http.Transport) smithyhttp.ClientDo {
		return sdkhttp.PlainBodies{C: awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.DialContext = tr.DialContext })}
	}
	if got, err := roundTrip(t, plain); err != nil || got != "reply" {
		t.Fatalf("behind PlainBodies: read %q, %v; want the whole reply", got, err)
	}
	sdk := func(tr *http.Transport) smithyhttp.ClientDo {
		return awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.DialContext = tr.DialContext })
	}
	if got, err := roundTrip(t, sdk); err == nil {
		t.Logf("the SDK's own client read %q: the trap is gone from this smithy-go and net/http; PlainBodies may go", got)
	}
}
