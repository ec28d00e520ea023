// Package slicex holds slice helpers that several packages share.
package slicex

// MapErr returns f of every element of s, in order, or the first error f
// returns (and no slice).
func MapErr[T, U any](s []T, f func(T) (U, error)) ([]U, error) {
	out := make([]U, len(s))
	for i, e := range s {
		var err error
		if out[i], err = f(e); err != nil {
			return nil, err
		}
	}
	return out, nil
}
