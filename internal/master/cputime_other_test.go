//go:build !unix

package master_test

import "time"

// cpuTime is not measured here: BenchmarkRelayThroughput reports 0.
func cpuTime() time.Duration { return 0 }
