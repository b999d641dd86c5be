//go:build !linux && !darwin && !dragonfly && !freebsd && !netbsd && !openbsd

package metrics

// processFamilies: no process series where neither /proc nor getrusage is
// at hand.
func processFamilies() ([]family, error) { return nil, nil }
