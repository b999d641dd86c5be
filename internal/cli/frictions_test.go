package cli_test

import (
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
