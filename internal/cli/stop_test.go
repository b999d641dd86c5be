package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
)

// stopProc is a ferry process the test ends with SIGTERM.
type stopProc struct {
	cmd       *exec.Cmd
	out, errb *syncBuffer
	done      chan struct{}
}

// startStopProc runs bin with args in a fresh HOME and XDG directories and
// waits until ready matches its stdout or stderr.
func startStopProc(t *testing.T, bin string, env []string, ready *regexp.Regexp, args ...string) *stopProc {
	t.Helper()
	dir := t.TempDir()
	p := &stopProc{cmd: exec.Command(bin, args...), out: &syncBuffer{}, errb: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(append(os.Environ(),
		"XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.errb
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	deadline := time.After(60 * time.Second)
	for !ready.MatchString(p.out.String() + p.errb.String()) {
		select {
		case <-p.done:
			t.Fatalf("%v exited: %q %q", args, p.out.String(), p.errb.String())
		case <-deadline:
			t.Fatalf("%v not ready: %q %q", args, p.out.String(), p.errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	return p
}

// term sends SIGTERM and returns the exit code and stdout.
func (p *stopProc) term(t *testing.T) (int, string) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("%v did not stop on SIGTERM: %q", p.cmd.Args, p.errb.String())
	}
	return p.cmd.ProcessState.ExitCode(), p.out.String()
}

// TestStopSaysSessionsAreKept: ferry serve, connect and up say, when
// SIGTERM ends them, that they stopped and that the sessions are kept.
func TestStopSaysSessionsAreKept(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	login := regexp.MustCompile(`(http://127\.0\.0\.1:\d+)/login\?token=`)
	db := filepath.Join(t.TempDir(), "ferry.db")
	srv := startStopProc(t, bin, nil, login, "serve", "--addr", "127.0.0.1:0", "--db", db)
	base := login.FindStringSubmatch(srv.out.String())[1]
	token := strings.TrimSpace(ferryCmd(t, bin, "token", "create", "--db", db))
	conn := startStopProc(t, bin, []string{"FERRY_TOKEN=" + token}, regexp.MustCompile(`offering agents`),
		"connect", "--master", base, "--workspace", t.TempDir(), "--agent", "echo")
	up := startStopProc(t, bin, nil, login, "up", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "up.db"),
		"--workspace", t.TempDir(), "--agent", "echo")
	for _, c := range []struct {
		name string
		p    *stopProc
	}{{"ferry connect", conn}, {"ferry serve", srv}, {"ferry up", up}} {
		code, out := c.p.term(t)
		want := c.name + " stopped (terminated signal received). Sessions are kept "
		if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "run "+c.name+" again") {
			t.Errorf("%s: exit %d, stdout %q; want %q", c.name, code, out, want)
		}
	}
}
