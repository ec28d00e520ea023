package awsapi

import (
	"bytes"
	"encoding/base64"
	"math/rand/v2"
	"testing"
)

// appendBase64 writes the bytes of base64.StdEncoding.AppendEncode for
// every length from 0 to 200 (each remainder modulo 3 and 6, each length
// around the 8-byte loads), random bytes and every byte value, after a
// prefix it keeps.
func TestAppendBase64(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	all := make([]byte, 256*3)
	for i := range all {
		all[i] = byte(i) // every byte value in each of the 3 positions of a group
		if i >= 256 {
			all[i] = byte(i/3 + i%3)
		}
	}
	srcs := [][]byte{nil, {}, all, all[1:], all[2:]}
	for n := range 201 {
		s := make([]byte, n)
		for i := range s {
			s[i] = byte(rng.Uint32())
		}
		srcs = append(srcs, s, bytes.Repeat([]byte{0xff}, n), make([]byte, n))
	}
	for _, s := range srcs {
		prefix := []byte(`"Data":"`)
		got := appendBase64(append([]byte(nil), prefix...), s)
		want := base64.StdEncoding.AppendEncode(append([]byte(nil), prefix...), s)
		if !bytes.Equal(got, want) {
			t.Fatalf("%d bytes %x:\n got  %s\n want %s", len(s), s, got, want)
		}
	}
}

func FuzzAppendBase64(f *testing.F) {
	f.Add([]byte("runnel"))
	f.Fuzz(func(t *testing.T, s []byte) {
		if got, want := appendBase64(nil, s), base64.StdEncoding.AppendEncode(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("%x: %s, want %s", s, got, want)
		}
	})
}

func BenchmarkAppendBase64(b *testing.B) {
	src := make([]byte, 100)
	for i := range src {
		src[i] = byte(i * 7)
	}
	dst := make([]byte, 0, 256)
	b.Run("runnel", func(b *testing.B) {
		for b.Loop() {
			dst = appendBase64(dst[:0], src)
		}
	})
	b.Run("stdlib", func(b *testing.B) {
		for b.Loop() {
			dst = base64.StdEncoding.AppendEncode(dst[:0], src)
		}
	})
}
