package script

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/protocol"
)

// These tests run real shell scripts as real child processes.

// recorder is adaptertest's recorder; onDelta, when set, sees each text
// delta as it is emitted (from Run's goroutine).
type recorder struct {
	adaptertest.Recorder
	onDelta func(string)
}

func (r *recorder) emit(ctx context.Context, typ string, payload any) error {
	_ = r.Emit(ctx, typ, payload)
	if d, ok := payload.(*protocol.TextDelta); ok && r.onDelta != nil {
		r.onDelta(d.Delta)
	}
	return nil
}

// text is the concatenated deltas; it fails the test on an invalid one.
func (r *recorder) text(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, e := range r.Events() {
		if d, ok := e.Payload.(*protocol.TextDelta); ok {
			if e.Type != protocol.TypeTextDelta || d.Channel != "text" || d.TurnID != "turn-1" || !utf8.ValidString(d.Delta) {
				t.Fatalf("bad delta %s %+v", e.Type, d)
			}
			b.WriteString(d.Delta)
		}
	}
	return b.String()
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// writeScript writes an executable shell script and returns its path.
func writeScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	exectest.WriteScript(t, path, "#!/bin/sh\n"+body)
	return path
}

// open opens a session of command on workspace dir.
func open(t *testing.T, dir string, cfg Config) adapter.Session {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return adaptertest.Open(t, testCtx(t), a, adapter.SessionConfig{SessionID: "sess-1", Workspace: protocol.Workspace{ID: "ws", Name: "ws", Path: dir}, Mode: protocol.ModeDefault})
}

// turn makes a turn from segments, as the master composes them.
func turn(t *testing.T, segs ...protocol.PromptSegment) adapter.Turn {
	t.Helper()
	return adaptertest.SegmentTurn(t, "turn-1", segs...)
}

func txt(s string) protocol.PromptSegment { return adaptertest.TextSegment(s) }

func file(path string) protocol.PromptSegment { return adaptertest.FileSegment(path, "@"+path) }

// noLeak fails the test when a goroutine of this package outlives it.
func noLeak(t *testing.T) {
	t.Helper()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		for {
			buf := make([]byte, 1<<20)
			stacks := string(buf[:runtime.Stack(buf, true)])
			var leaked []string
			for _, g := range strings.Split(stacks, "\n\n") {
				if strings.Contains(g, "adapter/script.") && !strings.Contains(g, "adapter/script.noLeak") && !strings.Contains(g, "testing.tRunner") {
					leaked = append(leaked, g)
				}
			}
			if len(leaked) == 0 {
				return
			}
			select {
			case <-ctx.Done():
				t.Errorf("goroutines leaked:\n%s", strings.Join(leaked, "\n\n"))
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return !errors.Is(err, os.ErrNotExist)
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// waitGone waits until pid has stopped running, or fails the test.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	// Well below the sleeps' 300 s: a process that merely ran to its end
	// must not pass for one that was stopped.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for processAlive(pid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process %d outlived its turn", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// readPid reads the pid a script wrote to path.
func readPid(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestArgumentsStdinAndEnvironment(t *testing.T) {
	noLeak(t)
	t.Setenv("FERRY_TOKEN", "must-not-leak")
	ws := t.TempDir()
	outside := t.TempDir()
	for _, p := range []string{"a.go", "sub dir/b.go", "-rf"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(ws, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ws, p), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws, "link")); err != nil {
		t.Fatal(err)
	}
	cmd := writeScript(t, `
for a in "$@"; do printf 'arg<%s>\n' "$a"; done
printf 'stdin<%s>\n' "$(cat)"
printf 'env<%s|%s|%s|%s|%s|%s>\n' "$FERRY_SESSION_ID" "$FERRY_WORKSPACE" "$FERRY_MODE" "$EXTRA" "${FERRY_TOKEN-unset}" "$(pwd)"
`)
	s := open(t, ws, Config{Command: []string{cmd, "--fixed", "two words"}, Env: []string{"EXTRA=yes"}})
	tr := turn(t,
		txt("fix "), file("a.go"), txt(" and "), file("sub dir/b.go"), txt(", again "), file("a.go"),
		txt(", not "), file("../escape.txt"), txt(" nor "), file(filepath.Join(outside, "secret")),
		txt(" nor "), file("link/secret"), txt(" but "), file("-rf"), txt(" and "), file(filepath.Join(ws, "a.go")),
	)
	rec := &recorder{}
	res, err := s.Run(testCtx(t), tr, rec.emit)
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run: %+v, %v; events %+v", res, err, rec.Events())
	}
	want := strings.Join([]string{
		"arg<--fixed>",
		"arg<two words>",
		"arg<" + filepath.Join(ws, "a.go") + ">",
		"arg<" + filepath.Join(ws, "sub dir/b.go") + ">",
		"arg<" + filepath.Join(ws, "-rf") + ">",
		"stdin<fix a.go and sub dir/b.go, again a.go, not @../escape.txt nor @" + filepath.Join(outside, "secret") +
			" nor @link/secret but -rf and a.go>",
		"env<sess-1|" + ws + "|default|yes|unset|" + ws + ">",
	}, "\n") + "\n"
	if got := rec.text(t); got != want {
		t.Fatalf("output\n got %q\nwant %q", got, want)
	}
	if res.Text != want {
		t.Fatalf("result text %q", res.Text)
	}
	if errs := rec.Errors(); len(errs) != 0 {
		t.Fatalf("agent errors %+v", errs)
	}
}

// TestStreaming: output reaches emit while the command still runs. The
// script waits for a file the test creates only after it has seen the first
// delta; were deltas held until exit, the turn would never end.
func TestStreaming(t *testing.T) {
	t.Parallel()
	noLeak(t)
	ws := t.TempDir()
	gate := filepath.Join(t.TempDir(), "gate")
	cmd := writeScript(t, `echo first
while [ ! -e "$1" ]; do sleep 0.01; done
echo second
`)
	s := open(t, ws, Config{Command: []string{cmd, gate}})
	var once sync.Once
	rec := &recorder{onDelta: func(d string) {
		if strings.Contains(d, "first") {
			once.Do(func() { _ = os.WriteFile(gate, nil, 0o600) })
		}
	}}
	ctx := testCtx(t)
	res, err := s.Run(ctx, turn(t, txt("go")), rec.emit)
	if err != nil || res.StopReason != "end_turn" || res.Text != "first\nsecond\n" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	if got := rec.text(t); got != "first\nsecond\n" {
		t.Fatalf("deltas %q", got)
	}
}

// TestLargeOutput: a command echoing a large standard input back streams it
// whole, in bounded deltas, as valid UTF-8.
func TestLargeOutput(t *testing.T) {
	t.Parallel()
	noLeak(t)
	in := strings.Repeat("ünïcode ✓ text, ", 1<<16) // ~1.2 MB, multi-byte runes across every read boundary
	s := open(t, t.TempDir(), Config{Command: []string{"cat"}})
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt(in)), rec.emit)
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run: %+v, %v", res.StopReason, err)
	}
	if got := rec.text(t); got != in {
		t.Fatalf("streamed %d bytes, want %d", len(got), len(in))
	}
	for _, e := range rec.Events() {
		if d, ok := e.Payload.(*protocol.TextDelta); ok && len(d.Delta) > readChunk+utf8.UTFMax {
			t.Fatalf("a delta of %d bytes", len(d.Delta))
		}
	}
	if !strings.HasPrefix(res.Text, in[:MaxText-utf8.UTFMax]) || !strings.HasSuffix(res.Text, truncatedNote) || len(res.Text) > MaxText+len(truncatedNote) {
		t.Fatalf("final text of %d bytes is not the cut output", len(res.Text))
	}
}

func TestExitStatus(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body string
		code       string
		want       []string
	}{
		{"non-zero", "echo partial; echo 'line one' >&2; echo 'it broke' >&2; exit 3", CodeExitStatus, []string{"status 3", "line one\nit broke"}},
		{"no stderr", "exit 1", CodeExitStatus, []string{"status 1"}},
		{"signal", "echo partial; kill -KILL $$", CodeKilled, []string{"signal 9"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			noLeak(t)
			s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, c.body)}})
			rec := &recorder{}
			res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
			if err != nil || res.StopReason != "error" {
				t.Fatalf("Run: %+v, %v", res, err)
			}
			errs := rec.Errors()
			if len(errs) != 1 || errs[0].Code != c.code || errs[0].TurnID != "turn-1" {
				t.Fatalf("agent errors %+v", errs)
			}
			for _, w := range c.want {
				if !strings.Contains(errs[0].Message, w) {
					t.Fatalf("message %q lacks %q", errs[0].Message, w)
				}
			}
			if c.name != "no stderr" && res.Text != "partial\n" {
				t.Fatalf("text %q", res.Text)
			}
			// The error comes after the output.
			if ev := rec.Events(); ev[len(ev)-1].Type != protocol.TypeAgentError {
				t.Fatalf("last event %s", ev[len(ev)-1].Type)
			}
		})
	}
	t.Run("zero", func(t *testing.T) {
		s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, "echo ok; echo 'a warning' >&2")}})
		rec := &recorder{}
		res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
		if err != nil || res.StopReason != "end_turn" || res.Text != "ok\n" || len(rec.Errors()) != 0 {
			t.Fatalf("Run: %+v, %v, errors %+v", res, err, rec.Errors())
		}
	})
}

// TestStderrBounded: a flood of standard error is kept to its end, and the
// message stays within the protocol's limit.
func TestStderrBounded(t *testing.T) {
	t.Parallel()
	noLeak(t)
	s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, `i=0
while [ $i -lt 3000 ]; do echo "noise line $i of the flood ééé" >&2; i=$((i+1)); done
echo "the real reason" >&2
exit 2`)}})
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
	errs := rec.Errors()
	if err != nil || res.StopReason != "error" || len(errs) != 1 {
		t.Fatalf("Run: %+v, %v, %+v", res, err, errs)
	}
	m := errs[0].Message
	if !strings.Contains(m, "status 2") || !strings.HasSuffix(m, "the real reason") || strings.Contains(m, "line 0 ") ||
		!utf8.ValidString(m) || utf8.RuneCountInString(m) > 4096 {
		t.Fatalf("message of %d bytes: %q", len(m), m)
	}
	var tl tail
	for i := range 10 {
		_, _ = tl.Write([]byte(strings.Repeat(strconv.Itoa(i), MaxStderr/3)))
	}
	if b := tl.bytes(); len(b) != MaxStderr || b[len(b)-1] != '9' {
		t.Fatalf("tail keeps %d bytes ending %q", len(b), b[len(b)-1])
	}
}

// TestCancelKillsTree: cancel stops the command and the grandchild it
// started, even when the command ignores SIGTERM.
func TestCancelKillsTree(t *testing.T) {
	t.Parallel()
	for _, ignoreTerm := range []bool{false, true} {
		t.Run("ignore TERM "+strconv.FormatBool(ignoreTerm), func(t *testing.T) {
			noLeak(t)
			pidFile := filepath.Join(t.TempDir(), "pid")
			trap := ""
			if ignoreTerm {
				trap = "trap '' TERM\n"
			}
			cmd := writeScript(t, trap+`sleep 300 &
echo $! > "$1"
echo started
wait
`)
			s := open(t, t.TempDir(), Config{Command: []string{cmd, pidFile}})
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			rec := &recorder{onDelta: func(d string) {
				if strings.Contains(d, "started") {
					cancel()
				}
			}}
			res, err := s.Run(ctx, turn(t, txt("x")), rec.emit)
			if !errors.Is(err, context.Canceled) || res.StopReason != "cancelled" || res.Text != "started\n" {
				t.Fatalf("Run: %+v, %v", res, err)
			}
			waitGone(t, readPid(t, pidFile))
			if len(rec.Errors()) != 0 {
				t.Fatalf("agent errors on cancel: %+v", rec.Errors())
			}
		})
	}
}

// TestExitStopsLeftovers: a command that exits leaving a background process
// (which holds its output open) ends its turn, and the process with it.
func TestExitStopsLeftovers(t *testing.T) {
	t.Parallel()
	noLeak(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, `sleep 300 &
echo $! > "$1"
echo done`), pidFile}})
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
	if err != nil || res.StopReason != "end_turn" || res.Text != "done\n" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
	waitGone(t, readPid(t, pidFile))
}

// TestCloseStopsRun: closing the session mid-turn stops the command.
func TestCloseStopsRun(t *testing.T) {
	t.Parallel()
	noLeak(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	a, err := New(Config{Command: []string{writeScript(t, `echo $$ > "$1"; echo started; exec sleep 300`), pidFile}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := a.Open(testCtx(t), adapter.SessionConfig{SessionID: "s", Workspace: protocol.Workspace{Path: t.TempDir()}})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	rec := &recorder{onDelta: func(string) { once.Do(func() { close(started) }) }}
	type out struct {
		res adapter.Result
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
		done <- out{res, err}
	}()
	select {
	case <-started:
	case <-testCtx(t).Done():
		t.Fatal("the script never started")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	o := <-done // Close returns after Run
	if o.res.StopReason != "cancelled" || !errors.Is(o.err, context.Canceled) {
		t.Fatalf("Run after Close: %+v, %v", o.res, o.err)
	}
	waitGone(t, readPid(t, pidFile))
	if _, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit); !errors.Is(err, errClosed) {
		t.Fatalf("Run after Close: %v", err)
	}
}

// TestStdinNotRead: a command that ignores a large standard input still
// ends its turn normally.
func TestStdinNotRead(t *testing.T) {
	t.Parallel()
	noLeak(t)
	s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, "echo ignored the input")}})
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt(strings.Repeat("x", 4<<20))), rec.emit)
	if err != nil || res.StopReason != "end_turn" || res.Text != "ignored the input\n" {
		t.Fatalf("Run: %+v, %v", res.StopReason, err)
	}
}

func TestStartFailure(t *testing.T) {
	t.Parallel()
	noLeak(t)
	cmd := writeScript(t, "echo hi")
	s := open(t, t.TempDir(), Config{Command: []string{cmd}})
	if err := os.Chmod(cmd, 0o600); err != nil { // no longer executable
		t.Fatal(err)
	}
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
	errs := rec.Errors()
	if err != nil || res.StopReason != "error" || len(errs) != 1 || errs[0].Code != CodeStartFailed ||
		!strings.Contains(errs[0].Message, `"agent.sh"`) || strings.Contains(errs[0].Message, "permission denied") {
		t.Fatalf("Run: %+v, %v, %+v", res, err, errs)
	}
}

func TestNewAndOpen(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{},
		{Command: []string{""}},
		{Command: []string{"sh"}, Name: "has space"},
		{Command: []string{"sh"}, Name: strings.Repeat("n", 200)},
		{Command: []string{"sh"}, Env: []string{"NOEQUALS"}},
		{Command: []string{"sh"}, Env: []string{"=value"}},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	a, err := New(Config{Command: []string{"./bin/my-agent", "--x"}})
	if err != nil {
		t.Fatal(err)
	}
	wd, _ := os.Getwd()
	if a.ID() != "script:my-agent" || a.command[0] != filepath.Join(wd, "bin/my-agent") {
		t.Fatalf("id %q, command %q", a.ID(), a.command)
	}
	c := a.Capability()
	if c.ID != "script:my-agent" || c.FileTokens != "arguments" || !c.Cancel || c.Compact ||
		strings.Join(c.Modes, ",") != protocol.ModeDefault || len(c.Interactions) != 0 || !strings.Contains(c.Name, "my-agent --x") ||
		c.TextFormat != protocol.TextPlain {
		t.Fatalf("capability %+v", c)
	}
	if n, _ := New(Config{Command: []string{"sh", strings.Repeat("é", 300)}, Name: "n"}); len(n.Capability().Name) > maxNameLen || !utf8.ValidString(n.Capability().Name) {
		t.Fatalf("name %q", n.Capability().Name)
	}
	ws := protocol.Workspace{Path: t.TempDir()}
	if _, err := a.Open(testCtx(t), adapter.SessionConfig{Workspace: ws}); err == nil {
		t.Fatal("opened a session of a missing command")
	}
	sh, _ := New(Config{Command: []string{"sh"}})
	for _, cfg := range []adapter.SessionConfig{
		{Workspace: ws, Mode: protocol.ModePlan},
		{Workspace: protocol.Workspace{Path: "relative"}},
		{Workspace: protocol.Workspace{Path: filepath.Join(ws.Path, "missing")}},
	} {
		if _, err := sh.Open(testCtx(t), cfg); err == nil {
			t.Errorf("Open(%+v) accepted", cfg)
		}
	}
	if _, err := sh.Open(testCtx(t), adapter.SessionConfig{Workspace: ws, Mode: protocol.ModeReview}); !errors.Is(err, protocol.ErrUnsupported) {
		t.Fatalf("review mode: %v", err)
	}
}

func TestModesInteractionsCompact(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), Config{Command: []string{"sh"}})
	if err := s.SetMode(protocol.ModeDefault, nil); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{protocol.ModePlan, protocol.ModeReview, "yolo"} {
		if err := s.SetMode(m, nil); !errors.Is(err, protocol.ErrUnsupported) {
			t.Errorf("SetMode(%s): %v", m, err)
		}
	}
	if _, err := s.Compact(testCtx(t), &protocol.SessionCompact{}); !errors.Is(err, protocol.ErrUnsupported) {
		t.Fatalf("Compact: %v", err)
	}
	if err := s.Answer("i1", nil); !errors.Is(err, adapter.ErrUnknownInteraction) {
		t.Fatalf("Answer: %v", err)
	}
}

// TestSlowConsumerGetsEverything: a client whose outbox is full (the first
// delta held longer than drainWait) while the command writes the rest and
// exits still gets every byte. (TestDrainBoundsEachRead pins the reason.)
func TestSlowConsumerGetsEverything(t *testing.T) {
	t.Parallel()
	noLeak(t)
	const n = 400000
	s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, `head -c 400000 /dev/zero | tr '\0' x`)}})
	var once sync.Once
	rec := &recorder{onDelta: func(string) { once.Do(func() { time.Sleep(2 * drainWait) }) }}
	res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
	if got := rec.text(t); err != nil || res.StopReason != "end_turn" || len(got) != n || strings.Trim(got, "x") != "" {
		t.Fatalf("Run: %s, %v; streamed %d bytes, want %d", res.StopReason, err, len(got), n)
	}
}

// TestEscapedProcess: a process that left the command's group (setsid)
// cannot be stopped, but its hold on the output does not keep the turn
// open.
func TestEscapedProcess(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid (util-linux)")
	}
	noLeak(t)
	pidFile := filepath.Join(t.TempDir(), "pid")
	s := open(t, t.TempDir(), Config{Command: []string{writeScript(t, `setsid sh -c 'echo $$ > "$1"; exec sleep 300' sh "$1" &
while [ ! -s "$1" ]; do sleep 0.01; done
echo done`), pidFile}})
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL) // the escaped sleep this test started
			}
		}
	})
	rec := &recorder{}
	res, err := s.Run(testCtx(t), turn(t, txt("x")), rec.emit)
	if err != nil || res.StopReason != "end_turn" || res.Text != "done\n" {
		t.Fatalf("Run: %+v, %v", res, err)
	}
}
