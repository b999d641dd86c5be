package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/cli"
)

// runIn runs ferry in-process with the environment env.
func runEnv(t *testing.T, env map[string]string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code = cli.Run(ctx, cli.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }}, args)
	return code, out.String(), errb.String()
}

// TestPortInUseSaysWhatToDo: an address another process holds is named,
// with the likely cause and the flag to change it.
func TestPortInUseSaysWhatToDo(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()
	addr := ln.Addr().String()
	for _, args := range [][]string{
		{"serve", "--addr", addr, "--db", filepath.Join(t.TempDir(), "f.db")},
		{"up", "--addr", addr, "--db", filepath.Join(t.TempDir(), "f.db"), "--agent", "echo", "--state", t.TempDir(), "--workspace", t.TempDir()},
		{"serve", "--addr", "127.0.0.1:0", "--metrics-addr", addr, "--db", filepath.Join(t.TempDir(), "f.db")},
	} {
		code, _, stderr := runEnv(t, map[string]string{"HOME": t.TempDir()}, args...)
		flagName := "--addr"
		if args[len(args)-4] == "--metrics-addr" {
			flagName = "--metrics-addr"
		}
		if code == cli.ExitOK || !strings.Contains(stderr, addr+" is in use: is another ferry running? use "+flagName+" to pick another address") {
			t.Errorf("ferry %s: exit %d, stderr %q", strings.Join(args, " "), code, stderr)
		}
	}
}

// TestRunRefusesBinaryStdin: binary standard input (invalid UTF-8, NUL
// bytes) would reach the model as U+FFFD: the real binary refuses it,
// saying why, exits non-zero, and no turn runs (the echo agent prints
// nothing).
func TestRunRefusesBinaryStdin(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	for _, in := range []string{"a\xff\xfe", "text\x00more", "\x89PNG\r\n\x1a\n\x00\x00"} {
		cmd := exec.Command(bin, "run", "--agent", "echo", "--workspace", t.TempDir(), "summarise this")
		cmd.Stdin = strings.NewReader(in)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "HOME="+t.TempDir())
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if err == nil || stdout.Len() > 0 || !strings.Contains(stderr.String(), "standard input is not text") {
			t.Errorf("stdin %q: err %v, stdout %q, stderr %q", in, err, stdout.String(), stderr.String())
		}
	}
	// Text still goes through.
	cmd := exec.Command(bin, "run", "--agent", "echo", "--workspace", t.TempDir(), "summarise this")
	cmd.Stdin = strings.NewReader("héllo ✓\n")
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "HOME="+t.TempDir())
	if out, err := cmd.Output(); err != nil || !strings.Contains(string(out), "héllo ✓") {
		t.Errorf("text stdin: %v, %q", err, out)
	}
}

// TestUpListsOnlyAvailableAgents: ferry up's agent line lists the agents
// a session can start, and each other one gets a line saying why not (as
// the UI shows it disabled): ferry's own without a model provider, a
// script: agent whose file does not exist (naming the path).
func TestUpListsOnlyAvailableAgents(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sh")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "up", "--addr", "127.0.0.1:0", "--db", filepath.Join(dir, "f.db"), "--state", filepath.Join(dir, "state"),
		"--workspace", dir, "--agent", "echo", "--agent", "script:"+missing, "--agent", "builtin")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	var head []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && !strings.Contains(sc.Text(), "/login?token=") {
		head = append(head, sc.Text())
	}
	out := strings.Join(head, "\n")
	if !strings.Contains(out, "\nagents: echo\n") {
		t.Errorf("want the agent line to list echo alone:\n%s\nstderr: %s", out, stderr.String())
	}
	for _, want := range []string{
		"not available: script:missing.sh: the script " + missing + " does not exist",
		"not available: builtin: ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q in:\n%s", want, out)
		}
	}
}

// TestRunRefusesMissingScript: ferry run with a script: agent whose file
// does not exist stops before the turn, naming the path.
func TestRunRefusesMissingScript(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "missing.sh")
	code, stdout, stderr := runEnv(t, map[string]string{"HOME": t.TempDir()}, "run", "--agent", "script:"+missing, "--workspace", t.TempDir(), "hi")
	if code == cli.ExitOK || stdout != "" || !strings.Contains(stderr, "the script "+missing+" does not exist") {
		t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
