package awsapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/runnel-dev/runnel/internal/sdkhttp"

	"github.com/aws/aws-sdk-go-v2/aws"
	awscreds "github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/kinesis"

	"github.com/runnel-dev/runnel/stream"
)

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

// BenchmarkGetRecordsClient is the ceiling the AWS SDK puts on GetRecords:
// aws-sdk-go-v2's Kinesis client, four callers at once as in `runnel
// bench endpoint`, against a server that answers every call with the same
// page of 10,000 records of 100 bytes, as runnel's endpoint writes it.
// It reports the client's records/s and CPU µs per record.
func BenchmarkGetRecordsClient(b *testing.B) {
	o := &stream.GetRecordsOutput{NextShardIterator: strings.Repeat("A", 120)}
	at := time.UnixMilli(1764115200123)
	for i := range 10000 {
		d := make([]byte, 100)
		copy(d, fmt.Sprintf("%010d", i))
		o.Records = append(o.Records, stream.Record{SequenceNumber: fmt.Sprintf("1764115200000%04d%020d", 0, 1024+i),
			ApproximateArrivalTimestamp: at, Data: d, PartitionKey: "pk-" + strconv.Itoa(i%1024)})
	}
	body := append(appendGetRecordsHead(nil, o), `,"Records":`...)
	body = append(appendRecords(body, o.Records), '}')
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.Write(body)
	}))
	defer srv.Close()
	client := kinesis.NewFromConfig(aws.Config{HTTPClient: sdkhttp.Client(), Region: "us-east-1", Credentials: awscreds.NewStaticCredentialsProvider("AKID", "secret", ""), BaseEndpoint: aws.String(srv.URL)})
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.SetParallelism(2) // 4 callers on 2 cores
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := client.GetRecords(context.Background(), &kinesis.GetRecordsInput{ShardIterator: aws.String("x"), Limit: aws.Int32(10000)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	records := float64(b.N) * 10000
	cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
	b.ReportMetric(cpu.Seconds()*1e6/records, "cpu-µs/record")
	b.ReportMetric(records/b.Elapsed().Seconds(), "records/s")
}
