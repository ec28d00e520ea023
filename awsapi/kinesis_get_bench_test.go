package awsapi_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"syscall"
	"testing"

	"github.com/runnel-dev/runnel/awsapi"
	"github.com/runnel-dev/runnel/internal/testenv"
	"github.com/runnel-dev/runnel/stream"
)

// BenchmarkGetRecordsResponse is the server's side of one GetRecords
// call through the endpoint, without a network or a client: the
// handler's ServeHTTP on a JSON 1.1 request for a page of 1,000 records
// of 100 random bytes (two PutRecords calls of 500, distinct partition
// keys, read from the tail cache of the real engine), the response
// written to a ResponseWriter that drops it. It reports elapsed ns, CPU
// ns and allocations per record; run with -cpuprofile to see where they
// go.
func BenchmarkGetRecordsResponse(b *testing.B) {
	const records, size = 1000, 100
	rn := testenv.Start(b, testenv.Options{})
	ctx := b.Context()
	if _, err := rn.Streams.CreateStream(ctx, stream.CreateStreamInput{StreamName: "bench", ShardCount: 1}); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for call := range records / 500 {
		entries := make([]stream.PutRecordsRequestEntry, 500)
		for i := range entries {
			d := make([]byte, size)
			for k := range d {
				d[k] = byte(rng.Uint32())
			}
			entries[i] = stream.PutRecordsRequestEntry{PartitionKey: fmt.Sprint("pk-", call*500+i), Data: d}
		}
		if o, err := rn.Streams.PutRecords(ctx, "bench", entries); err != nil || o.FailedRecordCount != 0 {
			b.Fatalf("PutRecords: %v %+v", err, o)
		}
	}
	it, err := rn.Streams.GetShardIterator(ctx, stream.GetShardIteratorInput{StreamName: "bench", ShardID: stream.ShardID(0), ShardIteratorType: stream.TrimHorizon})
	if err != nil {
		b.Fatal(err)
	}
	h := awsapi.NewHandler(rn, awsapi.Options{})
	body := fmt.Sprintf(`{"ShardIterator":%q,"Limit":%d}`, it, records)
	w := &discardWriter{h: http.Header{}}
	serve := func() {
		r, _ := http.NewRequestWithContext(ctx, http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/x-amz-json-1.1")
		r.Header.Set("X-Amz-Target", "Kinesis_20131202.GetRecords")
		sign(r)
		w.n, w.status = 0, 0
		h.ServeHTTP(w, r)
	}
	serve()
	if w.status != 0 && w.status != http.StatusOK || w.n < records*size {
		b.Fatalf("GetRecords: status %d, %d bytes", w.status, w.n)
	}
	b.ReportAllocs()
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	for b.Loop() {
		serve()
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*records), "ns/record")
	// The process's CPU time (the engine's goroutines too): on a loaded
	// machine a steadier figure than the elapsed time.
	b.ReportMetric(float64(cpu)/float64(b.N*records), "cpu-ns/record")
	b.ReportMetric(testing.AllocsPerRun(1, serve)/records, "allocs/record")
}

// discardWriter is an http.ResponseWriter that counts the body's bytes
// and drops them.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.h }

func (w *discardWriter) WriteHeader(status int) { w.status = status }

func (w *discardWriter) Write(p []byte) (int, error) {
	w.n += len(p)
	return len(p), nil
}
