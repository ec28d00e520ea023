// Package mapx holds map helpers that several services share.
package mapx

// GetOrNew returns m[k], first storing a new zero *V there when m has no
// entry for k (a nil entry stored under k is replaced too). It does not
// lock: the caller holds whatever guards m.
func GetOrNew[K comparable, V any](m map[K]*V, k K) *V {
	v := m[k]
	if v == nil {
		v = new(V)
		m[k] = v
	}
	return v
}
