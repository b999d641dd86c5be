//go:build unix

package e2e_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/protocol"
)

// TestUpCrashRecovery is issue 16 item 1 end to end: the real ferry binary
// runs `ferry up` on a real SQLite file, answers a prompt, and is killed
// with SIGKILL (its whole process group: no deferred clean-up runs, as in
// a crash or a power loss). The same command run again must have the
// machine online within seconds, with no manual step, and answer a
// prompt. Before the fix the dead run's client token still owned the
// machine and the new run was refused forever.
func TestUpCrashRecovery(t *testing.T) {
	bin := binarytest.Build(t)
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# demo\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "data", "ferry.db")
	// The same command both times, as a user re-runs it: same port too.
	args := []string{"up", "--addr", freeAddr(t), "--db", db, "--workspace", ws, "--agent", "echo", "--name", "test-machine"}
	env := append(os.Environ(), "XDG_DATA_HOME="+filepath.Join(dir, "data"), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "HOME="+dir)

	first := startProcess(t, bin, env, args...)
	s := &system{t: t, addr: first.addr, uiToken: strings.TrimSpace(runFerry(t, bin, env, "token", "create", "--kind", "ui", "--db", db))}
	u := s.ui()
	before := u.machine()
	echoAnswer(t, u, "before the crash")
	u.close()
	first.kill(t)

	// What the crash left: the first run's client token, still valid,
	// still owning the machine.
	if owner := machineOwner(t, db, before.ID); owner.Name != "ferry up" {
		t.Fatalf("after SIGKILL the machine is owned by %+v; want the dead run's token", owner)
	}

	start := time.Now()
	second := startProcess(t, bin, env, args...)
	s.addr = second.addr
	u = s.ui()
	after := u.machine() // fails the test unless online within wait
	took := time.Since(start)
	t.Logf("machine online %v after the restart", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("machine online only %v after the restart; want seconds", took)
	}
	if after.ID != before.ID {
		t.Fatalf("machine %s after the restart, want the same machine %s", after.ID, before.ID)
	}
	echoAnswer(t, u, "after the crash")
	if out := second.errb.String(); strings.Contains(out, "refused a machine") {
		t.Errorf("the master refused the machine after the restart:\n%s", out)
	}
	u.close()
	second.stop(t)
}

// echoAnswer starts an echo session and checks that prompt is answered.
func echoAnswer(t *testing.T, u *ui, prompt string) {
	t.Helper()
	sess := u.startSession()
	u.prompt(sess.ID, text(prompt))
	ev := u.collect(sess.ID, isType(protocol.TypeTextDone))
	done := ev.order[len(ev.order)-1].Payload.(*protocol.TextDone)
	if want := "echo: " + prompt; done.Text != want || done.StopReason != "end_turn" {
		t.Fatalf("answer %+v, want %q", done, want)
	}
}

// machineOwner returns the token that owns machine.
func machineOwner(t *testing.T, db, machine string) store.Token {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = st.Close() }()
	ms, err := st.Machines(ctx)
	if err != nil {
		t.Fatal(err)
	}
	toks, err := st.ListTokens(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		for _, tok := range toks {
			if m.ID == machine && tok.ID == m.TokenID {
				return tok
			}
		}
	}
	return store.Token{}
}

// freeAddr returns a loopback address with a port free right now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// runFerry runs the binary to the end and returns its stdout.
func runFerry(t *testing.T, bin string, env []string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ferry %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// process is a ferry process in its own process group.
type process struct {
	cmd       *exec.Cmd
	addr      string
	out, errb *lockedBuffer
	done      chan struct{}
}

// startProcess starts the binary and waits until `ferry up` says where it
// listens.
func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := launch(t, bin, env, args...)
	p.waitAddr(t, "ferry is up on http://", ",")
	return p
}

// launch starts the binary in its own process group, killed at cleanup.
func launch(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{out: &lockedBuffer{}, errb: &lockedBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env, p.cmd.Stdout, p.cmd.Stderr = env, p.out, p.errb
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() { p.kill(t) })
	return p
}

// waitAddr waits until the process prints prefix, then takes its address:
// what follows up to end.
func (p *process) waitAddr(t *testing.T, prefix, end string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		if _, rest, ok := strings.Cut(p.out.String(), prefix); ok {
			if addr, _, ok := strings.Cut(rest, end); ok {
				p.addr = addr
				return
			}
		}
		select {
		case <-p.done:
			t.Fatalf("%s exited: %q %q", p.cmd.Args[1], p.out.String(), p.errb.String())
		case <-deadline:
			t.Fatalf("%s did not start: %q %q", p.cmd.Args[1], p.out.String(), p.errb.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// kill sends SIGKILL to the process group and waits for the process.
func (p *process) kill(t *testing.T) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-p.done:
	case <-time.After(wait):
		t.Error("the process survived SIGKILL")
	}
}

// freeze sends SIGSTOP to the process group: it holds its sockets and
// does nothing until it is killed.
func (p *process) freeze(t *testing.T) {
	t.Helper()
	if err := syscall.Kill(-p.cmd.Process.Pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
}

// stop interrupts the process and waits for a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
		if code := p.cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("ferry up exited %d after SIGINT: %s", code, p.errb.String())
		}
	case <-time.After(wait):
		t.Errorf("ferry up did not stop on SIGINT: %s", p.errb.String())
	}
}

// lockedBuffer is a buffer a process writes to while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
