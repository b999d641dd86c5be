package main

// Peak RSS and the launcher.
//
// Linux's ru_maxrss of a child is not only the child's own peak: at
// execve the kernel folds the high-water RSS of the address space being
// replaced into the process's maxrss, and Go's os/exec starts children
// with vfork (CLONE_VM), so that address space is the benchmark's own. A
// child of a 60 MiB process reports at least 60 MiB. So every measured
// process is started by a launcher — this same binary, run as
// `startup child SPEC` — whose address space stays a few MiB: it starts
// the command, times it, and prints a result line with the child's
// figures and its own peak RSS (the floor of what it can report).

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// childArg is the first argument that makes this binary a launcher.
const childArg = "child"

const kindMCP = "mcp"

// spec is one process for the launcher to run and measure.
type spec struct {
	// Kind is "" (run to exit, standard output discarded) or "mcp" (write
	// initialize, time until its response, close standard input, wait).
	Kind  string   `json:"kind,omitempty"`
	Bin   string   `json:"bin"`
	Args  []string `json:"args"`
	Stdin string   `json:"stdin,omitempty"` // a file for standard input
}

// childResult is the launcher's one line of output.
type childResult struct {
	WallNS      int64  `json:"wall_ns"`
	CPUNS       int64  `json:"cpu_ns"`
	RSS         int64  `json:"rss"`                // the child's peak RSS, bytes
	LauncherRSS int64  `json:"launcher_rss"`       // the launcher's own peak when it started the child
	AnonRSS     int64  `json:"anon_rss,omitempty"` // mcp: the live child's anonymous RSS at the response
	FileRSS     int64  `json:"file_rss,omitempty"` // mcp: its file-backed RSS (the binary's pages) then
	FilePMD     int64  `json:"file_pmd,omitempty"` // mcp: of which mapped as 2 MiB pages
	Err         string `json:"err,omitempty"`
}

// launch runs sp under the launcher and returns the child's figures.
func (h *harness) launch(ctx context.Context, sp spec) (sample, error) {
	arg, err := json.Marshal(sp)
	if err != nil {
		return sample{}, fmt.Errorf("launcher spec: %w", err)
	}
	cmd := exec.CommandContext(ctx, h.self, childArg, string(arg)) //nolint:gosec // this binary as the launcher
	cmd.Env = h.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return sample{}, fmt.Errorf("launcher: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		return sample{}, fmt.Errorf("launcher output %q: %w", out, err)
	}
	if r.Err != "" {
		return sample{}, errors.New(r.Err)
	}
	h.launcherPeak = max(h.launcherPeak, r.LauncherRSS)
	return sample{wall: time.Duration(r.WallNS), cpu: time.Duration(r.CPUNS), rss: r.RSS, anon: r.AnonRSS, file: r.FileRSS, filePMD: r.FilePMD}, nil
}

// runChild is the launcher's main: it measures the spec in its argument
// and prints the result as one JSON line; it exits 0 even when the
// measured process failed (the error is in the result).
func runChild(arg string) {
	var sp spec
	var r childResult
	if err := json.Unmarshal([]byte(arg), &sp); err != nil {
		r.Err = fmt.Sprintf("launcher: bad spec: %v", err)
	} else {
		var s sample
		var err error
		if sp.Kind == kindMCP {
			s, err = mcpInitialize(sp)
		} else {
			s, err = runToExit(sp)
		}
		if err != nil {
			r.Err = err.Error()
		}
		r.WallNS, r.CPUNS, r.RSS, r.AnonRSS, r.FileRSS, r.FilePMD = int64(s.wall), int64(s.cpu), s.rss, s.anon, s.file, s.filePMD
	}
	r.LauncherRSS = selfPeakRSS()
	b, _ := json.Marshal(r)
	fmt.Println(string(b))
}

// selfPeakRSS is this process's own high-water RSS (VmHWM), 0 if unknown.
func selfPeakRSS() int64 { return procField("self", "status", "VmHWM") }

// procField reads one "kB" field of /proc/PID/FILE (status,
// smaps_rollup) in bytes, 0 if unknown.
func procField(pid, file, field string) int64 {
	b, err := os.ReadFile(filepath.Join("/proc", pid, file)) //nolint:gosec // a /proc file of a child or of this process
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// runToExit runs sp to its exit, standard input from sp.Stdin ("" for
// none) and standard output discarded. Exit status 1 is accepted (fzf's
// "no match").
func runToExit(sp spec) (sample, error) {
	cmd := exec.Command(sp.Bin, sp.Args...) //nolint:gosec // ferry or fzf, with the benchmark's arguments
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if sp.Stdin != "" {
		f, err := os.Open(sp.Stdin)
		if err != nil {
			return sample{}, fmt.Errorf("open %s: %w", sp.Stdin, err)
		}
		defer f.Close()
		cmd.Stdin = f // an *os.File: the child reads it directly, no copying goroutine
	}
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	var exit *exec.ExitError
	if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
		return sample{}, fmt.Errorf("%s %q: %w: %s", filepath.Base(sp.Bin), sp.Args, err, strings.TrimSpace(stderr.String()))
	}
	return finished(cmd.ProcessState, wall), nil
}

func finished(ps *os.ProcessState, wall time.Duration) sample {
	s := sample{wall: wall, cpu: ps.UserTime() + ps.SystemTime()}
	if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
		s.rss = ru.Maxrss * 1024 // kilobytes on Linux and the BSDs
		if runtime.GOOS == "darwin" {
			s.rss = ru.Maxrss // bytes on macOS
		}
	}
	return s
}

// initializeRequest is what an MCP client writes first.
const initializeRequest = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}}` + "\n"

// mcpInitialize spawns `ferry mcp`, writes initialize at once, and times
// until the response with id 1 is read; then it closes standard input and
// waits for the exit (CPU and RSS cover the whole process).
func mcpInitialize(sp spec) (sample, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, sp.Bin, sp.Args...) //nolint:gosec // the bench's own build
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return sample{}, fmt.Errorf("stdin pipe: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return sample{}, fmt.Errorf("stdout pipe: %w", err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return sample{}, fmt.Errorf("start ferry mcp: %w", err)
	}
	fail := func(err error) (sample, error) {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return sample{}, fmt.Errorf("ferry mcp: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	if _, err := io.WriteString(stdin, initializeRequest); err != nil {
		return fail(fmt.Errorf("write initialize: %w", err))
	}
	rd := bufio.NewReader(stdout)
	var wall time.Duration
	var anon, file, pmd int64
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			return fail(fmt.Errorf("no initialize response before %w", err))
		}
		var resp struct {
			ID     json.RawMessage `json:"id"`
			Result *struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"result"`
			Error *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(line, &resp) != nil || string(resp.ID) != "1" {
			continue // a notification or log line
		}
		wall = time.Since(start)
		pid := strconv.Itoa(cmd.Process.Pid)
		anon, file = procField(pid, "status", "RssAnon"), procField(pid, "status", "RssFile")
		// Page-cache folios of 2 MiB mapped whole: a kernel with large
		// folios maps far more of the binary than start-up touches.
		pmd = procField(pid, "smaps_rollup", "FilePmdMapped")
		if resp.Error != nil || resp.Result == nil || resp.Result.ProtocolVersion == "" {
			return fail(fmt.Errorf("initialize answered %s", bytes.TrimSpace(line)))
		}
		break
	}
	_ = stdin.Close()
	_, _ = io.Copy(io.Discard, rd)
	if err := cmd.Wait(); err != nil {
		return sample{}, fmt.Errorf("ferry mcp after standard input closed: %w (stderr: %s)", err, strings.TrimSpace(stderr.String()))
	}
	s := finished(cmd.ProcessState, wall)
	s.anon, s.file, s.filePMD = anon, file, pmd
	return s, nil
}
