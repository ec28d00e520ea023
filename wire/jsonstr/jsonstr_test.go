package jsonstr_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/runnel-dev/runnel/wire/jsonstr"
)

// randomString mixes the bytes every escape rule touches: controls, quotes,
// the HTML three, multi-byte runes, U+2028/2029 and invalid UTF-8.
func randomString(r *rand.Rand) string {
	pieces := []string{"a", "Z", "0", " ", "\"", "\\", "/", "<", ">", "&", "\b", "\f", "\n", "\r", "\t", "\x00", "\x1f", "\x7f",
		"é", "€", "𝄞", "\u2028", "\u2029", "\xff", "\xe2\x82", "\xed\xa0\x80", "plain text"}
	var b []byte
	for n := r.IntN(12); n > 0; n-- {
		b = append(b, pieces[r.IntN(len(pieces))]...)
	}
	return string(b)
}

// TestAppendIsJSONMarshal: Append writes the bytes json.Marshal writes.
func TestAppendIsJSONMarshal(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		s := randomString(r)
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonstr.Append([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("Append(%q) = %s, json.Marshal writes %s", s, got[1:], want)
		}
		if n, nb := jsonstr.Len(s), jsonstr.Len([]byte(s)); n != len(want) || nb != len(want) {
			t.Fatalf("Len(%q) = %d (of its bytes %d), json.Marshal writes %d bytes", s, n, nb, len(want))
		}
	}
}

// TestAppendNoHTMLIsAnEncoderWithoutHTMLEscapes: AppendNoHTML writes the
// bytes of a json.Encoder after SetEscapeHTML(false).
func TestAppendNoHTMLIsAnEncoderWithoutHTMLEscapes(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for range 20000 {
		s := randomString(r)
		buf.Reset()
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		if got := jsonstr.AppendNoHTML(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("AppendNoHTML(%q) = %s, the encoder writes %s", s, got, want)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	s := "arn:aws:dynamodb:us-east-1:000000000000:table/trades-state/stream/2026-11-27T00:00:00.000"
	buf := make([]byte, 0, 256)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		buf = jsonstr.Append(buf[:0], s)
	}
}
