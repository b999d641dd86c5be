package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
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

	"github.com/ferry-dev/ferry/internal/tools"
)

// Bash runs real processes: bash itself, sleep, seq. The waits below are
// bounded by contexts; nothing asserts on elapsed time.

func bashText(t *testing.T, res *tools.Result) string {
	t.Helper()
	if res == nil || len(res.Blocks) != 1 || res.Blocks[0].Type != "text" {
		t.Fatalf("want one text block, got %+v", res)
	}
	return res.Blocks[0].Text
}

func runBash(t *testing.T, env *tools.Env, in map[string]any) (string, error) {
	t.Helper()
	res, err := run(t, env, tools.Bash{}, in)
	if err != nil {
		return "", err
	}
	return bashText(t, res), nil
}

func TestBashOutputAndExitCode(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	out, err := runBash(t, env, map[string]any{
		"command":     "pwd; echo to-stdout; echo to-stderr >&2; echo again; exit 3",
		"description": "print and fail",
	})
	if err != nil {
		t.Fatalf("a non-zero exit is a result, not an error: %v", err)
	}
	want := dir + "\nto-stdout\nto-stderr\nagain\n\nExit code: 3"
	if out != want {
		t.Fatalf("got %q, want %q (stdout and stderr interleaved in order, in the workspace)", out, want)
	}

	out, err = runBash(t, env, map[string]any{"command": "true"})
	if err != nil || out != "(no output)\n\nExit code: 0" {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestBashStdinIsDevNull(t *testing.T) {
	t.Parallel()
	env, _ := contractEnv(t)
	// If stdin were inherited, cat would wait for it; with /dev/null it
	// reads EOF at once.
	out, err := runBash(t, env, map[string]any{"command": "cat; echo read-eof", "timeout_ms": 60000})
	if err != nil || !strings.HasPrefix(out, "read-eof\n") {
		t.Fatalf("got %q, %v", out, err)
	}
	if runtime.GOOS == "linux" {
		out, err = runBash(t, env, map[string]any{"command": "readlink /proc/self/fd/0"})
		if err != nil || !strings.HasPrefix(out, "/dev/null\n") {
			t.Fatalf("stdin is %q, %v", out, err)
		}
	}
}

func TestBashOwnSession(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	env, _ := contractEnv(t)
	// Field 6 of /proc/PID/stat is the session id: the shell leads its own
	// session (and so its own process group, without a terminal).
	out, err := runBash(t, env, map[string]any{"command": `set -- $(sed 's/.*) //' /proc/$$/stat); [ "$4" = "$$" ] && [ "$3" = "$$" ] && echo own-session`})
	if err != nil || !strings.HasPrefix(out, "own-session\n") {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestBashEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
	t.Setenv("OPENAI_API_KEY", "sk-openai-secret")
	t.Setenv("FERRY_TOKEN", "ferry-secret")
	t.Setenv("FERRY_BASH_TEST_VAR", "kept")
	env, _ := contractEnv(t)
	out, err := runBash(t, env, map[string]any{"command": "env"})
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-ant-secret", "sk-openai-secret", "ferry-secret", "ANTHROPIC_API_KEY", "OPENAI_API_KEY"} {
		if strings.Contains(out, secret) {
			t.Errorf("the command saw %s", secret)
		}
	}
	for _, kept := range []string{"FERRY_BASH_TEST_VAR=kept", "GIT_TERMINAL_PROMPT=0", "PATH="} {
		if !strings.Contains(out, kept) {
			t.Errorf("the command did not see %s", kept)
		}
	}
}

func TestBashInvalidInput(t *testing.T) {
	t.Parallel()
	env, _ := contractEnv(t)
	for name, in := range map[string]map[string]any{
		"empty":          {"command": ""},
		"blank":          {"command": " \n\t"},
		"missing":        {},
		"nul":            {"command": "echo a\x00b"},
		"zero timeout":   {"command": "true", "timeout_ms": 0},
		"over the limit": {"command": "true", "timeout_ms": 600001},
		"wrong type":     {"command": 42},
		"unknown field":  {"command": "true", "cwd": "/"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runBash(t, env, in)
			wantCode(t, err, tools.CodeInvalidInput)
		})
	}
	_, err := runBash(t, env, map[string]any{"command": "true", "timeout_ms": 600001})
	if !strings.Contains(tools.AgentMessage(err), "600000") {
		t.Fatalf("the message should name the limit: %s", tools.AgentMessage(err))
	}
}

func TestBashTimeout(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	pidFile := filepath.Join(dir, "pids")
	_, err := runBash(t, env, map[string]any{
		"command":    "echo started; sleep 300 & echo $! > pids; wait",
		"timeout_ms": 500,
	})
	wantCode(t, err, tools.CodeTimeout)
	msg := tools.AgentMessage(err)
	for _, want := range []string{"timed out", "timeout_ms 500", "600000", "started"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	waitGone(t, readPIDs(t, pidFile, 1))
}

// TestBashCancelKillsTree: a cancel stops the shell, its children and
// grandchildren, including one that ignores SIGTERM, and Run returns.
func TestBashCancelKillsTree(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	pidFile := filepath.Join(dir, "pids")
	ready := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var streamed strings.Builder
	env.Progress = func(d string) {
		mu.Lock()
		streamed.WriteString(d)
		has := strings.Contains(streamed.String(), "ready")
		mu.Unlock()
		if has {
			once.Do(func() { close(ready) })
		}
	}
	// Two children, a grandchild in a subshell, and a child that ignores
	// SIGTERM (so only SIGKILL ends it).
	script := `sleep 300 & echo $! >> pids
sleep 300 & echo $! >> pids
( sleep 300 & echo $! >> pids; wait ) &
( trap '' TERM; sleep 300 & echo $! >> pids; wait ) &
while [ "$(wc -l < pids)" -lt 4 ]; do sleep 0.01; done
echo ready
wait`
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type outcome struct {
		res *tools.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"command": script})
		res, err := tools.Invoke(ctx, env, tools.Bash{}, "toolu_cancel", b)
		done <- outcome{res, err}
	}()
	select {
	case <-ready:
	case o := <-done:
		t.Fatalf("the command ended before it was cancelled: %+v %v", o.res, o.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the command never printed ready")
	}
	pids := readPIDs(t, pidFile, 4)
	cancel()
	select {
	case o := <-done:
		if !errors.Is(o.err, context.Canceled) {
			t.Fatalf("want context.Canceled, got %+v, %v", o.res, o.err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	waitGone(t, pids)
}

func TestBashBackgroundStoppedAtExit(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	out, err := runBash(t, env, map[string]any{"command": "sleep 300 >/dev/null 2>&1 & echo $! > pids; echo finished"})
	if err != nil || !strings.HasPrefix(out, "finished\n") {
		t.Fatalf("got %q, %v", out, err)
	}
	waitGone(t, readPIDs(t, filepath.Join(dir, "pids"), 1))

	// One that keeps the output open gets SIGTERM too, and the call returns.
	out, err = runBash(t, env, map[string]any{"command": "sleep 300 & echo $! > pids2; echo finished"})
	if err != nil || !strings.HasPrefix(out, "finished\n") {
		t.Fatalf("got %q, %v", out, err)
	}
	waitGone(t, readPIDs(t, filepath.Join(dir, "pids2"), 1))
}

// TestBashEscapedProcessDoesNotHang: a process that leaves the group
// (setsid) while holding the output cannot keep the call open.
func TestBashEscapedProcessDoesNotHang(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	env, dir := contractEnv(t)
	done := make(chan error, 1)
	go func() {
		// The pid is written after setsid, so the shell ends only once the
		// process has left the group.
		out, err := runBash(t, env, map[string]any{"command": `setsid sh -c 'echo $$ > pids; exec sleep 300' & while [ ! -s pids ]; do sleep 0.01; done; echo left`})
		if err == nil && !strings.HasPrefix(out, "left\n") {
			err = fmt.Errorf("got %q", out)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run waited for a process outside its group")
	}
	for _, pid := range readPIDs(t, filepath.Join(dir, "pids"), 1) {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

func TestBashOutputCapAndProgress(t *testing.T) {
	t.Parallel()
	env, _ := contractEnv(t)
	var streamed strings.Builder
	deltas := 0
	env.Progress = func(d string) {
		deltas++
		streamed.WriteString(d)
	}
	out, err := runBash(t, env, map[string]any{"command": "seq 1 100000"})
	if err != nil {
		t.Fatal(err)
	}
	var full strings.Builder
	for i := 1; i <= 100000; i++ {
		fmt.Fprintf(&full, "%d\n", i)
	}
	if streamed.String() != full.String() {
		t.Fatalf("progress deltas do not add up to the output: %d bytes streamed, want %d", streamed.Len(), full.Len())
	}
	if deltas < 2 {
		t.Fatalf("%d deltas for %d bytes: not streamed", deltas, full.Len())
	}
	if len(out) > tools.BashMaxOutput+400 {
		t.Fatalf("result is %d bytes, over the cap", len(out))
	}
	if !strings.HasPrefix(out, "1\n2\n3\n") || !strings.HasSuffix(out, "99999\n100000\n\nExit code: 0") {
		t.Fatalf("head or tail missing: %q … %q", out[:20], out[len(out)-40:])
	}
	if !strings.Contains(out, "bytes of output elided") || !strings.Contains(out, strconv.Itoa(full.Len())) {
		t.Fatalf("no elision marker with the size: %q", out[tools.BashMaxOutput/2-100:tools.BashMaxOutput/2+300])
	}
}

func TestBashProgressKeepsUTF8Whole(t *testing.T) {
	t.Parallel()
	env, _ := contractEnv(t)
	var streamed strings.Builder
	env.Progress = func(d string) {
		if !utf8.ValidString(d) {
			t.Errorf("delta splits a character: %q", d[max(0, len(d)-8):])
		}
		streamed.WriteString(d)
	}
	// 4099 × 9 bytes: the pipe's reads cut the stream between bytes of a
	// character.
	out, err := runBash(t, env, map[string]any{"command": `i=0; while [ $i -lt 4099 ]; do printf 'é€😀'; i=$((i+1)); done`})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Repeat("é€😀", 4099)
	if streamed.String() != want {
		t.Fatalf("streamed %d bytes, want %d", streamed.Len(), len(want))
	}
	if !utf8.ValidString(out) {
		t.Fatal("the capped result splits a character")
	}
}

func TestBashKilledBySignal(t *testing.T) {
	t.Parallel()
	env, _ := contractEnv(t)
	out, err := runBash(t, env, map[string]any{"command": "echo before; kill -KILL $$"})
	if err != nil || !strings.Contains(out, "before") || !strings.Contains(out, "Killed by signal 9") {
		t.Fatalf("got %q, %v", out, err)
	}
}

func TestBashCancelledBeforeStart(t *testing.T) {
	t.Parallel()
	env, dir := contractEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	b, _ := json.Marshal(map[string]any{"command": "touch ran"})
	_, err := tools.Bash{}.Run(ctx, env, b)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("a cancelled call ran its command")
	}
}

func TestAllTools(t *testing.T) {
	t.Parallel()
	var names []string
	for _, tool := range tools.AllTools() {
		names = append(names, tool.Name())
		if len(tool.Description()) < 100 || !strings.Contains(string(tool.InputSchema()), `"object"`) {
			t.Errorf("%s: thin description or no object schema", tool.Name())
		}
	}
	if strings.Join(names, ",") != "Read,Write,Edit,MultiEdit,NotebookEdit,Glob,Grep,Bash,WebFetch,TodoWrite" {
		t.Fatalf("AllTools = %v", names)
	}
	if (tools.Bash{}).ReadOnly() {
		t.Fatal("Bash must not be read-only: plan mode would run it")
	}
}

// readPIDs waits (bounded) until file holds n PIDs and returns them.
func readPIDs(t *testing.T, file string, n int) []int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		b, _ := os.ReadFile(file)
		fields := strings.Fields(string(b))
		if len(fields) >= n {
			pids := make([]int, len(fields))
			for i, f := range fields {
				pid, err := strconv.Atoi(f)
				if err != nil || pid <= 1 {
					t.Fatalf("bad pid %q in %s", f, file)
				}
				pids[i] = pid
			}
			return pids
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s holds %q, want %d pids", file, b, n)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// waitGone waits (bounded) until every pid has ended. A zombie has ended:
// an orphan is reaped by PID 1, which in some containers never reaps.
func waitGone(t *testing.T, pids []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, pid := range pids {
		for processAlive(pid) {
			select {
			case <-ctx.Done():
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("process %d outlived the call", pid)
			case <-time.After(10 * time.Millisecond):
			}
		}
	}
}

func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return runtime.GOOS != "linux" // no /proc: trust kill
	}
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// BenchmarkBashTrue is the per-call overhead: pipe, fork/exec of bash,
// reaping, the group check, the result.
func BenchmarkBashTrue(b *testing.B) {
	env := rdBenchEnv(b, b.TempDir())
	in := json.RawMessage(`{"command":"true"}`)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := tools.Invoke(ctx, env, tools.Bash{}, "toolu_bench", in); err != nil {
			b.Fatal(err)
		}
	}
}
