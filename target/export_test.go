package target

// SetAttemptFault makes every attempt of a schedule's delivery for which f
// returns an error fail with it, as if the target had returned it; nil
// removes it.
func SetAttemptFault(f func(d *Delivery) error) {
	if f == nil {
		attemptFault.Store(nil)
		return
	}
	attemptFault.Store(&f)
}
