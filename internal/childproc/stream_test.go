//go:build linux

package childproc

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// buffer is what a Stream's read callback fills.
type buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *buffer) readFrom(r io.Reader) {
	p := make([]byte, 512)
	for {
		n, err := r.Read(p)
		b.mu.Lock()
		b.buf.Write(p[:n])
		b.mu.Unlock()
		if err != nil {
			return
		}
	}
}

func (b *buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *buffer) waitFor(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(b.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in %q", s, b.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

var quickEnd = StreamEnd{Grace: 200 * time.Millisecond, ReapWait: 5 * time.Second, Drain: 100 * time.Millisecond}

func waitNoLeftovers(t *testing.T, tok string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(leftovers(t, tok)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes left: %v", leftovers(t, tok))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStreamOutput: stdout and stderr arrive interleaved on one stream,
// stdin is /dev/null, and the exit status comes back.
func TestStreamOutput(t *testing.T) {
	t.Parallel()
	var b buffer
	s, err := StartStream(exec.Command("sh", "-c", "echo out; echo err >&2; cat; exit 3"), b.readFrom)
	if err != nil {
		t.Fatal(err)
	}
	<-s.Exited()
	state, reaped := s.End(false, quickEnd)
	if !reaped || state.ExitCode() != 3 {
		t.Fatalf("reaped %v, state %v", reaped, state)
	}
	if got := b.String(); got != "out\nerr\n" {
		t.Fatalf("output %q", got)
	}
}

// TestStreamStopKillsGroup: a stopped stream whose processes ignore
// SIGTERM is killed after the grace, and End returns.
func TestStreamStopKillsGroup(t *testing.T) {
	t.Parallel()
	e, tok := env(t)
	var b buffer
	cmd := exec.Command("sh", "-c", "trap '' TERM; sleep 300 & sleep 300 & echo ready; wait")
	cmd.Env = e
	s, err := StartStream(cmd, b.readFrom)
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "ready")
	start := time.Now()
	state, reaped := s.End(true, quickEnd)
	if d := time.Since(start); d < quickEnd.Grace || d > 5*time.Second {
		t.Fatalf("End took %v", d)
	}
	if !reaped || state.Exited() {
		t.Fatalf("reaped %v, state %v: want killed", reaped, state)
	}
	waitNoLeftovers(t, tok)
}

// TestStreamEndStopsLeftovers: what an exited command left in its group
// gets SIGTERM, holding the output open or not.
func TestStreamEndStopsLeftovers(t *testing.T) {
	t.Parallel()
	e, tok := env(t)
	var b buffer
	cmd := exec.Command("sh", "-c", "sleep 300 & sleep 300 >/dev/null 2>&1 & echo done")
	cmd.Env = e
	s, err := StartStream(cmd, b.readFrom)
	if err != nil {
		t.Fatal(err)
	}
	<-s.Exited()
	if _, reaped := s.End(false, quickEnd); !reaped {
		t.Fatal("not reaped")
	}
	if b.String() != "done\n" {
		t.Fatalf("output %q", b.String())
	}
	waitNoLeftovers(t, tok)
}

// TestStreamDrainBounded: a process outside the group holding the pipe
// cannot keep End from returning.
func TestStreamDrainBounded(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	e, tok := env(t)
	var b buffer
	// The pid is written after setsid, so the shell ends only once the
	// process has left the group.
	cmd := exec.Command("sh", "-c", `setsid sh -c 'echo $$ > pid; exec sleep 300' & while [ ! -s pid ]; do sleep 0.01; done; echo left`)
	cmd.Env, cmd.Dir = e, t.TempDir()
	s, err := StartStream(cmd, b.readFrom)
	if err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "left")
	<-s.Exited()
	done := make(chan struct{})
	go func() { s.End(false, quickEnd); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("End waited for a process outside the group")
	}
	for _, pid := range leftovers(t, tok) {
		if p, err := os.FindProcess(pid); err == nil {
			_ = p.Kill()
		}
	}
}

func TestStreamStdioOwned(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("true")
	cmd.Stdout = io.Discard
	if _, err := StartStream(cmd, func(io.Reader) {}); err == nil {
		t.Fatal("StartStream took a command with its own stdout")
	}
	if _, err := StartStream(exec.Command("/nonexistent/x"), func(io.Reader) {}); err == nil {
		t.Fatal("no start error")
	}
}
