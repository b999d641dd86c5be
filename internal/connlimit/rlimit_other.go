//go:build !unix

package connlimit

// fdLimit is unknown here: the defaults stand.
func fdLimit() (uint64, bool) { return 0, false }
