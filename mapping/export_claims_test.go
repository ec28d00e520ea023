package mapping

import "time"

// SetClaimStaleAfter sets how old a claim of a (source, function) pair
// must be before a create may take it over; it returns the previous value.
func SetClaimStaleAfter(d time.Duration) time.Duration {
	old := claimStaleAfter
	claimStaleAfter = d
	return old
}

// ClaimKey is the claims bucket's key of the pair (source, function ARN).
func ClaimKey(source, functionArn string) string { return claimKey(source, functionArn) }

// SetBeforeClaim runs f in every CreateEventSourceMapping between its
// check of the mappings this process knows and its claim (nil: none).
func SetBeforeClaim(f func()) { beforeClaim = f }
