package awsapi

import "testing"

// prepend puts the head in the room left before the body, or, when the
// head is longer than the room, copies the body after it.
func TestJSONBufPrepend(t *testing.T) {
	for _, head := range []string{"", "{", `{"MillisBehindLatest":0`, "{" + string(make([]byte, 40))} {
		jb := newJSONBuf(64)
		jb.b = append(jb.b[:16], `,"Records":[]}`...)
		jb.prepend(16, []byte(head))
		if got, want := string(jb.b[jb.start:]), head+`,"Records":[]}`; got != want {
			t.Errorf("head of %d bytes: body %q, want %q", len(head), got, want)
		}
		jb.free()
	}
}
