package function_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/runnel-dev/runnel/awserr"
	"github.com/runnel-dev/runnel/function"
	"github.com/runnel-dev/runnel/internal/testenv"
)

const (
	echoHandler = "function_test.echo"
	arnPrefix   = "arn:aws:lambda:us-east-1:000000000000:function:"
)

// invokedARN is what the echo handler last saw as InvokedFunctionArn.
var invokedARN = make(chan string, 16)

func init() {
	function.Register(echoHandler, func(ctx context.Context, e events.KinesisEvent) error {
		if lc, ok := lambdacontext.FromContext(ctx); ok {
			select {
			case invokedARN <- lc.InvokedFunctionArn:
			default:
			}
		}
		return nil
	})
}

func startService(t *testing.T, dir string) *function.Service {
	t.Helper()
	return testenv.Start(t, testenv.Options{Dir: dir}).Functions
}

func create(t *testing.T, s *function.Service, cfg function.Config) *function.Function {
	t.Helper()
	if cfg.Handler == "" {
		cfg.Handler = echoHandler
	}
	f, err := s.CreateFunction(context.Background(), cfg)
	if err != nil {
		t.Fatalf("CreateFunction(%s): %v", cfg.FunctionName, err)
	}
	return f
}

func TestCreateFunctionRejectsAnUnregisteredHandler(t *testing.T) {
	s := startService(t, "")
	_, err := s.CreateFunction(context.Background(), function.Config{FunctionName: "f", Handler: "no-such-handler"})
	if !errors.Is(err, awserr.ErrInvalidParameterValue) {
		t.Fatalf("err = %v, want ErrInvalidParameterValue", err)
	}
	for _, want := range []string{`"no-such-handler"`, echoHandler} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q does not mention %s (the handler and the registered ones)", err.Error(), want)
		}
	}
	if _, err := s.GetFunction("f"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("refused function exists: %v", err)
	}
}

func TestCreateFunctionValidatesTheConfiguration(t *testing.T) {
	s := startService(t, "")
	cases := []struct {
		name string
		cfg  function.Config
		want string
	}{
		{"Timeout above 900", function.Config{FunctionName: "f", Timeout: 901}, "Timeout"},
		{"MemorySize below 128", function.Config{FunctionName: "f", MemorySize: 127}, "MemorySize"},
		{"ReservedConcurrentExecutions above 1000", function.Config{FunctionName: "f", ReservedConcurrentExecutions: intp(1001)}, "ReservedConcurrentExecutions"},
		{"bad FunctionName", function.Config{FunctionName: "a b"}, "FunctionName"},
		{"no Handler", function.Config{FunctionName: "f", Handler: ""}, "Handler"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := c.cfg
			if c.name != "no Handler" {
				cfg.Handler = echoHandler
			}
			_, err := s.CreateFunction(context.Background(), cfg)
			if !errors.Is(err, awserr.ErrInvalidParameterValue) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want ErrInvalidParameterValue naming %s", err, c.want)
			}
		})
	}
	if got := s.ListFunctions(); len(got) != 0 {
		t.Errorf("ListFunctions after refused creates = %v", got)
	}
}

func TestCreateFunctionOfAnExistingNameIsAResourceConflictUnlessReplaced(t *testing.T) {
	ctx := context.Background()
	s := startService(t, "")
	create(t, s, function.Config{FunctionName: "orders", Timeout: 10})

	_, err := s.CreateFunction(ctx, function.Config{FunctionName: "orders", Handler: echoHandler, Timeout: 20})
	if !errors.Is(err, awserr.ErrResourceConflict) {
		t.Fatalf("duplicate create: err = %v, want ErrResourceConflict", err)
	}
	f, err := s.GetFunction("orders")
	if err != nil || f.Config().Timeout != 10 {
		t.Fatalf("after a refused duplicate: %v, %+v; want the original (Timeout 10)", err, f)
	}

	nf, err := s.PutFunction(ctx, function.Config{FunctionName: "orders", Handler: echoHandler, Timeout: 20})
	if err != nil {
		t.Fatalf("replace: %v", err)
	}
	g, err := s.GetFunction("orders")
	if err != nil || g != nf || g.Config().Timeout != 20 {
		t.Fatalf("after replace: Get = %+v, %v; want the new function (Timeout 20)", g, err)
	}
	if n := len(s.ListFunctions()); n != 1 {
		t.Errorf("ListFunctions has %d functions after a replace, want 1", n)
	}
}

func TestGetFunctionByNameAndByARN(t *testing.T) {
	s := startService(t, "")
	f := create(t, s, function.Config{FunctionName: "orders"})
	if got, want := f.Config().FunctionArn, arnPrefix+"orders"; got != want {
		t.Errorf("FunctionArn = %q, want %q", got, want)
	}
	if got := s.ARN("orders"); got != arnPrefix+"orders" {
		t.Errorf("ARN = %q", got)
	}
	for _, id := range []string{"orders", arnPrefix + "orders", arnPrefix + "orders:$LATEST"} {
		g, err := s.GetFunction(id)
		if err != nil || g != f {
			t.Errorf("GetFunction(%q) = %p, %v; want %p", id, g, err, f)
		}
	}
	for _, id := range []string{"missing", arnPrefix + "missing", "Orders"} {
		_, err := s.GetFunction(id)
		if !errors.Is(err, awserr.ErrResourceNotFound) {
			t.Errorf("GetFunction(%q): err = %v, want ErrResourceNotFound", id, err)
		}
	}
	_, err := s.GetFunction("missing")
	if err == nil || !strings.Contains(err.Error(), arnPrefix+"missing") {
		t.Errorf("not-found message %v does not name the function ARN", err)
	}
}

func TestInvokedFunctionArnIsTheFunctionsARN(t *testing.T) {
	s := startService(t, "")
	f := create(t, s, function.Config{FunctionName: "arn-check"})
	for len(invokedARN) > 0 {
		<-invokedARN
	}
	res, err := f.Invoke(context.Background(), &events.KinesisEvent{})
	if err != nil || res.Failed() {
		t.Fatalf("Invoke: %v %+v", err, res)
	}
	select {
	case got := <-invokedARN:
		if got != arnPrefix+"arn-check" {
			t.Errorf("InvokedFunctionArn = %q, want %q", got, arnPrefix+"arn-check")
		}
	default:
		t.Fatal("handler saw no LambdaContext")
	}
}

func TestListFunctionsIsSortedByName(t *testing.T) {
	s := startService(t, "")
	if got := s.ListFunctions(); got == nil || len(got) != 0 {
		t.Errorf("ListFunctions of none = %#v, want an empty list", got)
	}
	for _, n := range []string{"charlie", "alpha", "Bravo", "bravo"} {
		create(t, s, function.Config{FunctionName: n})
	}
	var names []string
	for _, c := range s.ListFunctions() {
		names = append(names, c.FunctionName)
		if c.FunctionArn != arnPrefix+c.FunctionName {
			t.Errorf("%s: FunctionArn = %q", c.FunctionName, c.FunctionArn)
		}
	}
	if want := []string{"Bravo", "alpha", "bravo", "charlie"}; !reflect.DeepEqual(names, want) {
		t.Errorf("ListFunctions names = %v, want %v", names, want)
	}
}

func TestDeleteFunctionThenGetIsResourceNotFound(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	s := rn.Functions
	create(t, s, function.Config{FunctionName: "gone"})
	create(t, s, function.Config{FunctionName: "kept"})
	if err := s.DeleteFunction(ctx, "gone"); err != nil {
		t.Fatalf("DeleteFunction: %v", err)
	}
	if _, err := s.GetFunction("gone"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("Get after delete: err = %v, want ErrResourceNotFound", err)
	}
	if err := s.DeleteFunction(ctx, "gone"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("second delete: err = %v, want ErrResourceNotFound", err)
	}
	if err := s.DeleteFunction(ctx, "never"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("delete of an unknown function: err = %v, want ErrResourceNotFound", err)
	}
	// A deleted name can be created again.
	create(t, s, function.Config{FunctionName: "gone", Timeout: 7})
	if err := s.DeleteFunction(ctx, "gone"); err != nil {
		t.Fatal(err)
	}

	// The delete is stored: gone stays gone after a restart.
	if err := rn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	s2 := startService(t, dir)
	if _, err := s2.GetFunction("gone"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("deleted function is back after a restart: %v", err)
	}
	if _, err := s2.GetFunction("kept"); err != nil {
		t.Errorf("kept function lost after a restart: %v", err)
	}
}

func TestDeleteFunctionByARN(t *testing.T) {
	ctx := context.Background()
	s := startService(t, "")
	create(t, s, function.Config{FunctionName: "by-arn"})
	if err := s.DeleteFunction(ctx, arnPrefix+"by-arn"); err != nil {
		t.Fatalf("DeleteFunction(ARN): %v", err)
	}
	if _, err := s.GetFunction("by-arn"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("Get after delete by ARN: err = %v, want ErrResourceNotFound", err)
	}
}

func TestConfigurationSurvivesARestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	rn := testenv.Start(t, testenv.Options{Dir: dir})
	want := []function.Config{
		create(t, rn.Functions, function.Config{FunctionName: "a-full", Timeout: 120, MemorySize: 512,
			ReservedConcurrentExecutions: intp(2), Environment: map[string]string{"TABLE": "orders"}}).Config(),
		create(t, rn.Functions, function.Config{FunctionName: "b-defaults"}).Config(),
		create(t, rn.Functions, function.Config{FunctionName: "c-zero", ReservedConcurrentExecutions: intp(0)}).Config(),
	}
	// A stored function whose handler this process does not have is not
	// loaded, and stays stored.
	kv, err := rn.Engine.Bucket(ctx, "runnel_functions")
	if err != nil {
		t.Fatal(err)
	}
	orphan, _ := json.Marshal(function.Config{FunctionName: "orphan", Handler: "function_test.not-registered", Timeout: 3, MemorySize: 128})
	if _, err := kv.Put(ctx, "orphan", orphan); err != nil {
		t.Fatal(err)
	}
	if err := rn.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}

	rn2 := testenv.Start(t, testenv.Options{Dir: dir})
	s := rn2.Functions
	if got := s.ListFunctions(); !reflect.DeepEqual(got, want) {
		t.Errorf("after restart ListFunctions =\n %+v\nwant\n %+v", got, want)
	}
	f, err := s.GetFunction(arnPrefix + "a-full")
	if err != nil {
		t.Fatal(err)
	}
	if res, err := f.Invoke(ctx, &events.KinesisEvent{}); err != nil || res.Failed() {
		t.Errorf("Invoke after restart: %v %+v", err, res)
	}
	// Reserved concurrency 0 still throttles after the restart.
	z, err := s.GetFunction("c-zero")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := z.Invoke(ctx, &events.KinesisEvent{}); !errors.Is(err, awserr.ErrTooManyRequests) {
		t.Errorf("reserved 0 after restart: err = %v, want ErrTooManyRequests", err)
	}

	if _, err := s.GetFunction("orphan"); !errors.Is(err, awserr.ErrResourceNotFound) {
		t.Errorf("function with an unregistered handler loaded: %v", err)
	}
	kv2, err := rn2.Engine.Bucket(ctx, "runnel_functions")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv2.Get(ctx, "orphan"); errors.Is(err, jetstream.ErrKeyNotFound) || err != nil {
		t.Errorf("stored function with an unregistered handler was dropped: %v", err)
	}
}
