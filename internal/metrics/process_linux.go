package metrics

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// userHZ is the kernel's USER_HZ, the unit of /proc's CPU times: 100 on
// every Linux architecture Go supports (procfs assumes it too).
const userHZ = 100

// processFamilies reads client_golang's process_* series from /proc/self
// (procfs' reading of the same files, without its regexps and package
// init). An unreadable /proc fails the scrape, as client_golang's
// collector did.
func processFamilies() ([]family, error) {
	stat, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return nil, fmt.Errorf("process series: %w", err)
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces and parentheses itself: f[0] is field 3 (state) of proc(5).
	i := bytes.LastIndexByte(stat, ')')
	f := strings.Fields(string(stat[i+1:]))
	if i < 0 || len(f) < 22 {
		return nil, fmt.Errorf("process series: /proc/self/stat has %d fields", len(f))
	}
	field := func(n int) float64 { // n as numbered in proc(5)
		v, _ := strconv.ParseUint(f[n-3], 10, 64)
		return float64(v)
	}
	boot, err := bootTime()
	if err != nil {
		return nil, err
	}
	fds, err := openFDs()
	if err != nil {
		return nil, err
	}
	maxFDs, maxVM, err := limits()
	if err != nil {
		return nil, err
	}
	fams := []family{
		{"process_cpu_seconds_total", "Total user and system CPU time spent in seconds.", "counter", value{v: (field(14) + field(15)) / userHZ}},
		{"process_virtual_memory_bytes", "Virtual memory size in bytes.", "gauge", value{v: field(23)}},
		{"process_resident_memory_bytes", "Resident memory size in bytes.", "gauge", value{v: field(24) * float64(os.Getpagesize())}},
		{"process_start_time_seconds", "Start time of the process since unix epoch in seconds.", "gauge", value{v: boot + field(22)/userHZ}},
		{"process_open_fds", "Number of open file descriptors.", "gauge", value{v: float64(fds)}},
		{"process_max_fds", "Maximum number of open file descriptors.", "gauge", value{v: maxFDs}},
		{"process_virtual_memory_max_bytes", "Maximum amount of virtual memory available in bytes.", "gauge", value{v: maxVM}},
	}
	if in, out, ok := netOctets(); ok {
		fams = append(fams,
			family{"process_network_receive_bytes_total", "Number of bytes received by the process over the network.", "counter", value{v: in}},
			family{"process_network_transmit_bytes_total", "Number of bytes sent by the process over the network.", "counter", value{v: out}})
	}
	return fams, nil
}

// netOctets reads IpExt's InOctets and OutOctets from
// /proc/self/net/netstat (the process' network namespace), as procfs did;
// without them the two series are left off rather than the scrape failed.
func netOctets() (in, out float64, ok bool) {
	b, err := os.ReadFile("/proc/self/net/netstat")
	if err != nil {
		return 0, 0, false
	}
	var names []string
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) == 0 || f[0] != "IpExt:" {
			continue
		}
		if names == nil { // the first IpExt line names the columns of the second
			names = f
			continue
		}
		var gotIn, gotOut bool
		for i := 1; i < len(f) && i < len(names); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			switch {
			case err != nil:
			case names[i] == "InOctets":
				in, gotIn = v, true
			case names[i] == "OutOctets":
				out, gotOut = v, true
			}
		}
		return in, out, gotIn && gotOut
	}
	return 0, 0, false
}

// bootTime is /proc/stat's btime, the boot's Unix time.
func bootTime() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, fmt.Errorf("process series: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("process series: /proc/stat btime: %w", err)
			}
			return float64(n), nil
		}
	}
	return 0, fmt.Errorf("process series: no btime in /proc/stat")
}

// openFDs counts /proc/self/fd's entries (the directory's own among them,
// as procfs counted).
func openFDs() (int, error) {
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		return 0, fmt.Errorf("process series: %w", err)
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return 0, fmt.Errorf("process series: %w", err)
	}
	return len(names), nil
}

// limits reads the soft limits on open files and address space from
// /proc/self/limits; unlimited is the largest uint64, as procfs had it.
func limits() (files, addressSpace float64, err error) {
	b, err := os.ReadFile("/proc/self/limits")
	if err != nil {
		return 0, 0, fmt.Errorf("process series: %w", err)
	}
	soft := func(line, name string) (float64, bool) {
		rest, ok := strings.CutPrefix(line, name)
		if !ok {
			return 0, false
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return 0, false
		}
		if f[0] == "unlimited" {
			return math.MaxUint64, true
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		return float64(v), err == nil
	}
	var gotFiles, gotAS bool
	for line := range strings.Lines(string(b)) {
		if v, ok := soft(line, "Max open files "); ok {
			files, gotFiles = v, true
		} else if v, ok := soft(line, "Max address space "); ok {
			addressSpace, gotAS = v, true
		}
	}
	if !gotFiles || !gotAS {
		return 0, 0, fmt.Errorf("process series: /proc/self/limits lacks open files or address space")
	}
	return files, addressSpace, nil
}
