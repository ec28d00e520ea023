package lease

import (
	"context"
	"encoding/json"

	"github.com/runnel-dev/runnel/awserr"
)

// Op is one forwarded call of a service S, as the process serving the
// state runs it: it decodes the call's arguments (the JSON of the value
// Forward was given) and answers the call's result, which Owner
// JSON-encodes. Call and Do make one from a method.
type Op[S any] func(s S, ctx context.Context, args json.RawMessage) (any, error)

// Ops is a service's table of forwarded calls, by operation name (the op
// of Forward).
type Ops[S any] map[string]Op[S]

// Call is the Op of f, a call taking one value after its context: an AWS
// request struct, a name, a Two or a Three of several. Arguments that do
// not decode as an In are answered with errBadCall.
func Call[S, In, Out any](f func(S, context.Context, In) (Out, error)) Op[S] {
	return func(s S, ctx context.Context, args json.RawMessage) (any, error) {
		var in In
		if err := json.Unmarshal(args, &in); err != nil {
			return nil, errBadCall{err}
		}
		return f(s, ctx, in)
	}
}

// Do is Call for a call that answers only an error (the caller gets no
// result: Forward's out is nil).
func Do[S, In any](f func(S, context.Context, In) error) Op[S] {
	return Call(func(s S, ctx context.Context, in In) (any, error) { return nil, f(s, ctx, in) })
}

// Call2 and Call3 are Call for a call taking two or three values after
// its context, forwarded as a Two or a Three; Do2 is Do for two.
func Call2[S, A, B, Out any](f func(S, context.Context, A, B) (Out, error)) Op[S] {
	return Call(func(s S, ctx context.Context, in Two[A, B]) (Out, error) { return f(s, ctx, in.A, in.B) })
}

// Call3: see Call2.
func Call3[S, A, B, C, Out any](f func(S, context.Context, A, B, C) (Out, error)) Op[S] {
	return Call(func(s S, ctx context.Context, in Three[A, B, C]) (Out, error) { return f(s, ctx, in.A, in.B, in.C) })
}

// Do2: see Call2.
func Do2[S, A, B any](f func(S, context.Context, A, B) error) Op[S] {
	return Do(func(s S, ctx context.Context, in Two[A, B]) error { return f(s, ctx, in.A, in.B) })
}

// Two and Three carry the arguments of a forwarded call that takes more
// than one value after its context, in the method's order; Pair and
// Triple make them.
type Two[A, B any] struct {
	A A `json:"a"`
	B B `json:"b"`
}

// Three: see Two.
type Three[A, B, C any] struct {
	A A `json:"a"`
	B B `json:"b"`
	C C `json:"c"`
}

// Pair returns Two{a, b}.
func Pair[A, B any](a A, b B) Two[A, B] { return Two[A, B]{A: a, B: b} }

// Triple returns Three{a, b, c}.
func Triple[A, B, C any](a A, b B, c C) Three[A, B, C] { return Three[A, B, C]{A: a, B: b, C: c} }

// errBadCall is a forwarded call whose arguments did not decode.
type errBadCall struct{ err error }

func (e errBadCall) Error() string { return e.err.Error() }

// Serve is an OwnerConfig.Serve that runs the calls of s from its table
// ops. An operation not in ops is answered with awserr.ErrService
// ("<what>: unknown forwarded operation"), as are arguments that do not
// decode ("<what>: bad forwarded call").
func (ops Ops[S]) Serve(what string, s S) func(ctx context.Context, op string, args json.RawMessage) (any, error) {
	return func(ctx context.Context, op string, args json.RawMessage) (any, error) {
		f, ok := ops[op]
		if !ok {
			return nil, awserr.New(awserr.ErrService, "%s: unknown forwarded operation %q", what, op)
		}
		out, err := f(s, ctx, args)
		if bad, ok := err.(errBadCall); ok {
			return nil, awserr.New(awserr.ErrService, "%s: bad forwarded call: %v", what, bad.err)
		}
		return out, err
	}
}
