//go:build darwin || dragonfly || freebsd || netbsd || openbsd

package metrics

import (
	"fmt"
	"syscall"
)

// processFamilies reads the process series these systems give without
// cgo or a /proc: CPU time (getrusage) and the open-files limit
// (getrlimit).
func processFamilies() ([]family, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return nil, fmt.Errorf("process series: getrusage: %w", err)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return nil, fmt.Errorf("process series: getrlimit: %w", err)
	}
	return []family{
		{"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter",
			value{v: float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9}},
		{"process_max_fds", "Maximum number of open file descriptors.", "gauge", value{v: float64(rl.Cur)}},
	}, nil
}
