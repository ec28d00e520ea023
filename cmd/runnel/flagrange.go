package main

import (
	"fmt"
	"math"

	"github.com/spf13/pflag"
)

// number is what a range-checked flag holds.
type number interface {
	~int | ~int64 | ~float64
}

// checkedValue is a flag's value that refuses, when set, a value its
// check refuses: the command then fails before it runs, with pflag's
// `invalid argument "0" for "--shards" flag: out of range: must be
// between 1 and 1024`.
type checkedValue[T number] struct {
	pflag.Value
	p     *T
	check func(T) error
}

func (v *checkedValue[T]) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	return v.check(*v.p)
}

// flagRange makes the flag name of fs, which stores into p, refuse a
// value outside lo..hi. Only a value given is checked: the default is the
// command's own.
func flagRange[T number](fs *pflag.FlagSet, name string, p *T, lo, hi T) {
	flagCheck(fs, name, p, func(x T) error {
		if x < lo || x > hi {
			return fmt.Errorf("out of range: must be between %v and %v", lo, hi)
		}
		return nil
	})
}

// flagAtLeast makes the flag name of fs, which stores into p, refuse a
// value below lo.
func flagAtLeast[T number](fs *pflag.FlagSet, name string, p *T, lo T) {
	flagCheck(fs, name, p, func(x T) error {
		if x < lo {
			return fmt.Errorf("out of range: must be at least %v", lo)
		}
		return nil
	})
}

// flagCheck makes the flag name of fs, which stores into p, refuse a
// value check returns an error for.
func flagCheck[T number](fs *pflag.FlagSet, name string, p *T, check func(T) error) {
	f := fs.Lookup(name)
	if f == nil {
		panic("no flag --" + name)
	}
	f.Value = &checkedValue[T]{Value: f.Value, p: p, check: check}
}

// flagAtMost makes the flag name of fs, which stores into p, refuse a
// value above hi.
func flagAtMost[T number](fs *pflag.FlagSet, name string, p *T, hi T) {
	flagCheck(fs, name, p, func(x T) error {
		if x > hi {
			return fmt.Errorf("out of range: must be at most %v", hi)
		}
		return nil
	})
}

// noneIfZero makes a 0 given to the flag name (whose help says "negative:
// none") mean none, as it reads, where the library takes 0 for its
// default: --poison 0 injected the 10 poison records of the default.
func noneIfZero[T number](fs *pflag.FlagSet, name string, p *T) {
	if fs.Changed(name) && *p == 0 {
		*p = -1
	}
}

// flagFloatRange makes the float flag name of fs, which stores into p,
// refuse NaN, ±Inf and a value outside lo..hi (lo -Inf: no lower bound),
// saying why (what the range keeps out; "" for nothing more):
// `invalid argument "NaN" for "--failure-rate" flag: out of range: must
// be a number at most 0.5 (...)`. flagRange and flagAtMost let NaN
// through (every comparison with it is false).
func flagFloatRange(fs *pflag.FlagSet, name string, p *float64, lo, hi float64, why string) {
	if why != "" {
		why = " (" + why + ")"
	}
	want := fmt.Sprintf("a number between %v and %v", lo, hi)
	if math.IsInf(lo, -1) {
		want = fmt.Sprintf("a number at most %v", hi)
	}
	flagCheck(fs, name, p, func(x float64) error {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < lo || x > hi {
			return fmt.Errorf("out of range: must be %s%s", want, why)
		}
		return nil
	})
}
