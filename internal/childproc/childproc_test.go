//go:build linux

package childproc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const tokenEnv = "CHILDPROC_TEST_TOKEN"

// leftovers lists the running processes that carry the test's token.
func leftovers(t *testing.T, tok string) []int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	mark := []byte(tokenEnv + "=" + tok + "\x00")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err != nil || !bytes.Contains(env, mark) {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err == nil {
			if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				continue // a zombie has ended
			}
		}
		out = append(out, pid)
	}
	return out
}

func env(t *testing.T) ([]string, string) {
	tok := strconv.Itoa(os.Getpid()) + "-" + t.Name()
	return append(os.Environ(), tokenEnv+"="+tok), tok
}

// collector records stdout lines.
type collector struct {
	mu    sync.Mutex
	lines []Line
	eof   chan error
}

func newCollector() *collector { return &collector{eof: make(chan error, 1)} }

func (c *collector) opts(o Options) Options {
	o.OnLine = func(l Line) bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		l.Data = append([]byte(nil), l.Data...)
		c.lines = append(c.lines, l)
		return true
	}
	o.OnEOF = func(err error) { c.eof <- err }
	return o
}

func (c *collector) waitLines(t *testing.T, n int) []Line {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		got := append([]Line(nil), c.lines...)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d lines", n)
	return nil
}

func TestEchoAndEOF(t *testing.T) {
	c := newCollector()
	p, err := Start([]string{"cat"}, c.opts(Options{}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background(), time.Second)
	if err := p.Send(context.Background(), []byte("one\ntwo\n")); err != nil {
		t.Fatal(err)
	}
	got := c.waitLines(t, 2)
	if string(got[0].Data) != "one" || string(got[1].Data) != "two" {
		t.Fatalf("lines %q %q", got[0].Data, got[1].Data)
	}
	p.CloseInput()
	if err := <-c.eof; err == nil {
		t.Fatal("no EOF error")
	}
	if err := p.Wait(); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if err := p.Send(context.Background(), []byte("x\n")); !errors.Is(err, ErrClosed) {
		t.Fatalf("send after close: %v", err)
	}
}

func TestLongLine(t *testing.T) {
	c := newCollector()
	script := `head -c 100000 /dev/zero | tr '\0' a; echo; echo short`
	p, err := Start([]string{"sh", "-c", script}, c.opts(Options{MaxLine: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background(), time.Second)
	got := c.waitLines(t, 2)
	if !errors.Is(got[0].Err, ErrLineTooLong) || got[0].Skipped != 100000 || got[0].Data != nil {
		t.Fatalf("long line: %+v", got[0].Err)
	}
	if got[1].Err != nil || string(got[1].Data) != "short" {
		t.Fatalf("after the long line: %q %v", got[1].Data, got[1].Err)
	}
}

func TestStderrTail(t *testing.T) {
	script := `i=0; while [ $i -lt 30 ]; do echo "err $i" >&2; i=$((i+1)); done`
	p, err := Start([]string{"sh", "-c", script}, Options{StderrTail: 3})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	if got := strings.Join(p.StderrTail(), ","); got != "err 27,err 28,err 29" {
		t.Fatalf("tail %q", got)
	}
	var seen []string
	p, err = Start([]string{"sh", "-c", `echo keep >&2; echo drop >&2`}, Options{OnStderr: func(b []byte, _ int64) string {
		seen = append(seen, string(b))
		if string(b) == "drop" {
			return ""
		}
		return "<" + string(b) + ">"
	}})
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	if got := strings.Join(p.StderrTail(), ","); got != "<keep>" || len(seen) != 2 {
		t.Fatalf("tail %q, seen %q", got, seen)
	}
}

// TestCloseKillsTree starts a child with grandchildren, one in a session
// of its own, and checks in /proc that Close leaves none of them.
func TestCloseKillsTree(t *testing.T) {
	e, tok := env(t)
	script := `trap '' TERM; sleep 300 & setsid sleep 300 & (sleep 300 &) ; echo ready; cat >/dev/null; sleep 300`
	c := newCollector()
	p, err := Start([]string{"sh", "-c", script}, c.opts(Options{Env: e}))
	if err != nil {
		t.Fatal(err)
	}
	c.waitLines(t, 1)
	// "ready" can come before the background children have forked: wait
	// for all four (sh and three sleeps) rather than look once.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := len(leftovers(t, tok))
		if n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d processes started", n)
		}
	}
	start := time.Now()
	p.Close(context.Background(), 200*time.Millisecond)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Close took %v", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(leftovers(t, tok)) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("processes left: %v", leftovers(t, tok))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCloseTwice(t *testing.T) {
	p, err := Start([]string{"cat"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() { defer wg.Done(); p.Close(context.Background(), time.Second) }()
	}
	wg.Wait()
	p.Close(context.Background(), time.Second)
	select {
	case <-p.Done():
	default:
		t.Fatal("not done after Close")
	}
}

// TestCloseWhileReadBlocked closes a child whose output is held open by a
// process outside its tree; Close returns after the drain bound.
func TestCloseWhileReadBlocked(t *testing.T) {
	e, tok := env(t)
	c := newCollector()
	// The child reads nothing and writes nothing: the reader is blocked.
	p, err := Start([]string{"sh", "-c", "echo ready; exec sleep 300"}, c.opts(Options{Env: e, Drain: 100 * time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	c.waitLines(t, 1)
	done := make(chan struct{})
	go func() { p.Close(context.Background(), 50*time.Millisecond); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close hangs while a read is blocked")
	}
	if err := <-c.eof; err == nil {
		t.Fatal("no end of output")
	}
	if l := leftovers(t, tok); len(l) > 0 {
		t.Fatalf("processes left: %v", l)
	}
}

func TestSendBlocksBounded(t *testing.T) {
	// sleep never reads: the pipe and then the queue fill up.
	p, err := Start([]string{"sleep", "300"}, Options{Queue: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background(), 0)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	big := bytes.Repeat([]byte("x"), 1<<20)
	var err2 error
	for range 10 {
		if err2 = p.Send(ctx, big); err2 != nil {
			break
		}
	}
	if !errors.Is(err2, context.DeadlineExceeded) {
		t.Fatalf("send on a full queue: %v", err2)
	}
}

func TestStartError(t *testing.T) {
	if _, err := Start([]string{"/nonexistent/ferry-childproc"}, Options{}); err == nil {
		t.Fatal("no error")
	}
	if _, err := Start(nil, Options{}); err == nil {
		t.Fatal("no error for no command")
	}
}

// TestInputQueueDrainsAfterWriteError checks a caller-owned input queue:
// once a write failed, what is queued is still taken, so its senders do
// not block on a dead pipe.
func TestInputQueueDrainsAfterWriteError(t *testing.T) {
	in := make(chan []byte)
	werr := make(chan error, 1)
	// The child closes its stdin and lives on: writes fail with EPIPE.
	p, err := Start([]string{"sh", "-c", "exec 0<&-; echo ready; sleep 300"}, Options{
		Input:        in,
		OnLine:       func(Line) bool { return true },
		OnWriteError: func(err error) { werr <- err },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background(), 0)
	time.Sleep(100 * time.Millisecond) // let the child close its stdin
	for i := range 5 {
		select {
		case in <- []byte("x\n"):
		case <-time.After(5 * time.Second):
			t.Fatalf("send %d blocks after a write error", i)
		}
	}
	select {
	case <-werr:
	case <-time.After(5 * time.Second):
		t.Fatal("no write error reported")
	}
}

// TestOnStartFirst checks that OnStart runs before any other callback,
// with the child's pid, and that New leaves the child unstarted.
func TestOnStartFirst(t *testing.T) {
	var pid int
	got := make(chan int, 1)
	p := New([]string{"sh", "-c", "echo $$"}, Options{
		OnStart: func(n int) { pid = n },
		OnLine: func(l Line) bool {
			n, _ := strconv.Atoi(string(l.Data))
			got <- n - pid // pid was set before this goroutine started
			return true
		},
	})
	if p.Cmd().Process != nil {
		t.Fatal("New started the child")
	}
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	_ = p.Wait()
	if d := <-got; d != 0 || pid != p.Pid() {
		t.Fatalf("OnStart pid %d, child says %d more, Pid %d", pid, d, p.Pid())
	}
}
