//go:build !unix

package fuzzy

// cpuTime is not measured here: benchmarks report 0 cpu-ns/op.
func cpuTime() int64 { return 0 }
