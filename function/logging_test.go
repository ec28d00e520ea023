package function_test

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/runnel-dev/runnel/function"
)

// sink collects log events as "group|stream|message".
type sink struct {
	mu     sync.Mutex
	events []string
}

func (s *sink) PutLogEvent(group, stream, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, group+"|"+stream+"|"+message)
}

// An in-process function writes Lambda's START, END and REPORT lines to
// its log group /aws/lambda/<name>, in a stream named
// YYYY/MM/DD/[<version>]<32 hex>, and to the invocation's tail.
func TestInProcessFunctionLogsStartEndReport(t *testing.T) {
	ctx := context.Background()
	s := startService(t, "")
	var got sink
	s.SetLogSink(&got)
	create(t, s, function.Config{FunctionName: "f"})
	mustPublish(t, s, "f")
	f, _ := s.GetFunction("f")
	tctx, tail := function.WithLogTail(ctx)
	res, err := f.Invoke(tctx, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	v1, _ := s.GetFunction("f:1")
	if _, err := v1.Invoke(ctx, []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	id := regexp.QuoteMeta(res.RequestID)
	want := regexp.MustCompile(`^/aws/lambda/f\|\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}\|START RequestId: ` + id + ` Version: \$LATEST\n` +
		`/aws/lambda/f\|\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}\|END RequestId: ` + id + `\n` +
		`/aws/lambda/f\|\d{4}/\d\d/\d\d/\[\$LATEST\][0-9a-f]{32}\|REPORT RequestId: ` + id + `\tDuration: [0-9.]+ ms\tBilled Duration: \d+ ms\tMemory Size: 128 MB\tMax Memory Used: 0 MB\t\n` +
		`/aws/lambda/f\|\d{4}/\d\d/\d\d/\[1\][0-9a-f]{32}\|START RequestId: \S+ Version: 1\n`)
	if all := strings.Join(got.events, "\n") + "\n"; !want.MatchString(all) {
		t.Fatalf("log events:\n%s", all)
	}
	if lines := strings.Split(strings.TrimSpace(string(tail.Bytes())), "\n"); len(lines) != 3 || !strings.HasPrefix(lines[0], "START ") || !strings.HasPrefix(lines[2], "REPORT ") {
		t.Fatalf("tail: %q", tail.Bytes())
	}
}
