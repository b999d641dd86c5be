package sqlite

import "time"

// SetWALBound sets walBound and checkpointEvery for a test (not a parallel
// one) and returns what restores them.
func SetWALBound(n int64, every time.Duration) (restore func()) {
	oldBound, oldEvery := walBound, checkpointEvery
	walBound, checkpointEvery = n, every
	return func() { walBound, checkpointEvery = oldBound, oldEvery }
}
