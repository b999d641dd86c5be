package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/exectest"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// These tests run `ferry run --agent …` with adapters other than ferry's
// own: real script processes, and the echo agent for questions.

// agentScript writes an executable shell script into its own directory.
func agentScript(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sh")
	exectest.WriteScript(t, path, "#!/bin/sh\n"+body)
	return path
}

// runAgent runs `ferry run` in-process in workspace dir.
func runAgent(t *testing.T, dir, stdin string, args ...string) runOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: strings.NewReader(stdin), Stdout: &stdout, Stderr: &stderr, Getenv: stateOnlyEnv}
	code := Run(ctx, env, append([]string{"run", "--workspace", dir}, args...))
	return runOut{code, stdout.String(), stderr.String()}
}

func TestRunScriptAgent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := agentScript(t, `printf 'args=%s\n' "$*"
printf 'stdin=%s\n' "$(cat)"
printf 'mode=%s ws=%s\n' "$FERRY_MODE" "$FERRY_WORKSPACE"
`)
	spec := "script:" + script + " --flag 'two words'"

	out := runAgent(t, dir, "", "--agent", spec, "hello <@file:ref_0|x> there")
	want := "args=--flag two words\nstdin=hello <@file:ref_0|x> there\nmode=default ws=" + dir + "\n"
	if out.code != ExitOK || out.stdout != want {
		t.Fatalf("text: exit %d, stdout %q, stderr %s\nwant %q", out.code, out.stdout, out.stderr, want)
	}

	// Piped input is the prompt's material, as for ferry's agent.
	out = runAgent(t, dir, "LOG LINE\n", "--agent", spec, "why?")
	if out.code != ExitOK || !strings.HasPrefix(out.stdout, "args=--flag two words\nstdin=why?\n") || !strings.Contains(out.stdout, "<stdin>\nLOG LINE\n</stdin>") {
		t.Fatalf("piped: exit %d, stdout %q", out.code, out.stdout)
	}

	// stream-json: the turn's events, then the result.
	out = runAgent(t, dir, "", "--agent", spec, "--output-format", "stream-json", "streamed")
	if out.code != ExitOK {
		t.Fatalf("stream-json: exit %d, stderr %s", out.code, out.stderr)
	}
	var types []string
	var deltas strings.Builder
	sc := bufio.NewScanner(strings.NewReader(out.stdout))
	for sc.Scan() {
		var line struct {
			Type    string          `json:"type"`
			Payload json.RawMessage `json:"payload"`
			Result  string          `json:"result"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if len(types) == 0 || types[len(types)-1] != line.Type {
			types = append(types, line.Type)
		}
		var p map[string]any
		_ = json.Unmarshal(line.Payload, &p)
		switch line.Type {
		case "agent.turn.started":
			if p["adapter"] != "script:agent.sh" {
				t.Fatalf("turn started %v", p)
			}
		case "agent.text.delta":
			deltas.WriteString(p["delta"].(string))
		case "agent.text.done":
			if p["stop_reason"] != "end_turn" || p["text"] != deltas.String() {
				t.Fatalf("text done %v, deltas %q", p, deltas.String())
			}
		case "result":
			if line.Result != deltas.String() {
				t.Fatalf("result %q", line.Result)
			}
		}
	}
	if got := strings.Join(types, " "); got != "agent.turn.started agent.text.delta agent.text.done result" {
		t.Fatalf("types %s", got)
	}
}

func TestRunScriptAgentFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := agentScript(t, "echo partial; echo 'no such table: users' >&2; exit 4")
	out := runAgent(t, dir, "", "--agent", "script:"+script, "--output-format", "json", "migrate")
	var res struct {
		Result     string `json:"result"`
		IsError    bool   `json:"is_error"`
		StopReason string `json:"stop_reason"`
		Error      struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatalf("stdout %q: %v", out.stdout, err)
	}
	if out.code != ExitError || !res.IsError || res.StopReason != "error" || res.Error.Code != "script_exit_status" ||
		!strings.Contains(res.Error.Message, "status 4") || !strings.Contains(res.Error.Message, "no such table: users") || res.Result != "partial\n" {
		t.Fatalf("exit %d, result %+v, stderr %s", out.code, res, out.stderr)
	}
	if !strings.Contains(out.stderr, "[script_exit_status]") {
		t.Fatalf("stderr %q", out.stderr)
	}
}

// TestRunEchoDeniesQuestions: a question nobody can answer is denied, and
// said so.
func TestRunEchoDeniesQuestions(t *testing.T) {
	t.Parallel()
	out := runAgent(t, t.TempDir(), "", "--agent", "echo", "ask: may I?")
	if out.code != ExitOK || !strings.Contains(out.stdout, "denied") || !strings.Contains(out.stderr, "nobody can answer") {
		t.Fatalf("exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
	}
	out = runAgent(t, t.TempDir(), "", "--agent", "echo", "--output-format", "json", "ask: may I?")
	var res map[string]any
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || res["denied_interactions"] != 1.0 || res["result"] != "denied" {
		t.Fatalf("json: %q, %v", out.stdout, err)
	}
}

func TestRunAgentUsage(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	script := agentScript(t, "cat")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--agent", "bogus", "x"}, "agent_unknown"},
		{[]string{"--agent", "script:", "x"}, "agent_no_command"},
		{[]string{"--agent", "script:a | b", "x"}, "agent_bad_command"},
		{[]string{"--agent", "script:" + script, "--mode", "plan", "x"}, "cannot enforce it"},
		{[]string{"--agent", "script:" + script, "--allow", "Edit", "--model", "m", "x"}, "--model only apply to --agent builtin"},
		{[]string{"--agent", "script:" + script, "--allow", "Edit", "x"}, "--allow: the agent script:"},
		{[]string{"--agent", "echo", "--deny", "Bash", "x"}, "--deny: the agent echo cannot honour permission rules"},
	} {
		out := runAgent(t, dir, "", c.args...)
		if out.code != ExitUsage || !strings.Contains(out.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %q", c.args, out.code, out.stderr, c.want)
		}
	}
	out := runAgent(t, dir, "", "--agent", "script:"+filepath.Join(dir, "missing.sh"), "x")
	if out.code != ExitError || !strings.Contains(out.stderr, "cannot start script:missing.sh") {
		t.Fatalf("missing command: exit %d, stderr %q", out.code, out.stderr)
	}
}

// TestFerryRunScriptBinary is `ferry run --agent script:…` end to end: the
// real binary, a real script, interrupted (SIGINT) while the script's
// grandchild runs, which must leave no process behind.
func TestFerryRunScriptBinary(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	dir := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "pid")
	script := agentScript(t, `sleep 300 &
echo $! > "$PIDFILE"
echo "working on: $(cat)"
wait
`)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "--workspace", dir, "--agent", "script:"+script, "--output-format", "stream-json", "--no-stdin", "the task")
	cmd.Env = append(os.Environ(), "PIDFILE="+pidFile, "XDG_STATE_HOME="+testStateHome)
	var stderr bytes.Buffer
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The script's first line arrives as a delta while it still runs.
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		if strings.Contains(lines.Text(), `"working on: the task\n"`) {
			break
		}
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var rest strings.Builder
	for lines.Scan() {
		rest.WriteString(lines.Text() + "\n")
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitError || !strings.Contains(stderr.String(), "interrupted") ||
		!strings.Contains(rest.String(), `"is_cancelled":true`) || !strings.Contains(rest.String(), `"stop_reason":"cancelled"`) {
		t.Fatalf("after SIGINT: %v, stderr %s, stdout %s", err, stderr.String(), rest.String())
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	// Well below the sleep's 300 s: it must have been stopped, not ended.
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	for processAlive(pid) {
		select {
		case <-wctx.Done():
			t.Fatalf("the script's grandchild %d survived the interrupt", pid)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestRunClaudeCodeHeadless: `ferry run --agent claude-code:CLAUDE` runs the
// real Claude Code CLI against the fake model server; its permission
// request for a Write is denied, since nobody can answer, and the file is
// not written.
func TestRunClaudeCodeHeadless(t *testing.T) {
	bin := os.Getenv("FERRY_TEST_CLAUDE")
	if bin == "" {
		t.Skip("set FERRY_TEST_CLAUDE to a claude binary: npm install @anthropic-ai/claude-code@2.1.332")
	}
	srv := fake.New(t)
	dir := t.TempDir()
	target := filepath.Join(dir, "new.txt")
	var mu sync.Mutex
	calls := 0
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true // title and other side calls carry no tools
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_write1", Name: "Write", Input: map[string]any{"file_path": target, "content": "hi\n"}}}}, true
		}
		return fake.Reply{Text: []string{"I was not allowed to write it."}}, true
	})
	t.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-fake")
	t.Setenv("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
	t.Setenv("DISABLE_TELEMETRY", "1")
	t.Setenv("HOME", t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv}
	code := Run(ctx, env, []string{"run", "--workspace", dir, "--agent", "claude-code:" + bin, "--no-stdin", "create new.txt"})
	if code != ExitOK || stdout.String() != "I was not allowed to write it.\n" || !strings.Contains(stderr.String(), "nobody can answer") {
		t.Fatalf("exit %d, stdout %q, stderr %s", code, stdout.String(), stderr.String())
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the denied Write happened: %v", err)
	}

	// --allow reaches Claude Code as the prompt's allowed_tools: the same
	// Write runs without asking, and --artifacts lists the file it made.
	mu.Lock()
	calls = 0
	mu.Unlock()
	stdout.Reset()
	stderr.Reset()
	code = Run(ctx, env, []string{"run", "--workspace", dir, "--agent", "claude-code:" + bin, "--no-stdin",
		"--allow", "Write", "--artifacts", "--output-format", "json", "create new.txt"})
	var res struct {
		Artifacts []struct {
			Path string `json:"path"`
			Size int64  `json:"size"`
		} `json:"artifacts"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); code != ExitOK || err != nil {
		t.Fatalf("--allow Write: exit %d, stdout %q (%v), stderr %s", code, stdout.String(), err, stderr.String())
	}
	if got, err := os.ReadFile(target); err != nil || string(got) != "hi\n" {
		t.Fatalf("the allowed Write did not happen: %q, %v; stderr %s", got, err, stderr.String())
	}
	if len(res.Artifacts) != 1 || res.Artifacts[0].Path != "new.txt" || res.Artifacts[0].Size != 3 {
		t.Fatalf("artifacts %+v, want new.txt (3 bytes)", res.Artifacts)
	}
}

// TestRunScriptAgentArtifacts: --artifacts applies to every agent; a
// script agent's run lists the files it created or changed, in each
// output format, and nothing without the flag.
func TestRunScriptAgentArtifacts(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.txt"), []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	script := agentScript(t, `mkdir -p out && printf 'a,b\n1,2\n' > out/report.csv && echo more >> old.txt && echo done`)
	spec := "script:" + script

	out := runAgent(t, dir, "", "--agent", spec, "--artifacts", "--output-format", "json", "go")
	var res struct {
		Artifacts []struct {
			Path     string `json:"path"`
			Size     int64  `json:"size"`
			MimeType string `json:"mime_type"`
		} `json:"artifacts"`
	}
	if out.code != ExitOK {
		t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatalf("json output %q: %v", out.stdout, err)
	}
	if len(res.Artifacts) != 2 || res.Artifacts[0].Path != "old.txt" || res.Artifacts[0].Size != 9 ||
		res.Artifacts[1].Path != "out/report.csv" || res.Artifacts[1].Size != 8 || !strings.HasPrefix(res.Artifacts[1].MimeType, "text/csv") {
		t.Fatalf("artifacts %+v, want old.txt (9 bytes) and out/report.csv (8 bytes, text/csv)", res.Artifacts)
	}

	out = runAgent(t, dir, "", "--agent", spec, "--artifacts", "--output-format", "stream-json", "go")
	if n := strings.Count(out.stdout, `"type":"agent.artifact"`); out.code != ExitOK || n != 2 {
		t.Fatalf("stream-json: exit %d, %d agent.artifact events in %s", out.code, n, out.stdout)
	}
	out = runAgent(t, dir, "", "--agent", spec, "--artifacts", "go")
	if out.code != ExitOK || !strings.Contains(out.stderr, "out/report.csv") || !strings.Contains(out.stderr, "old.txt") {
		t.Fatalf("text: exit %d, stderr %q: want both files listed", out.code, out.stderr)
	}
	out = runAgent(t, dir, "", "--agent", spec, "--output-format", "json", "go")
	if out.code != ExitOK || strings.Contains(out.stdout, `"artifacts"`) {
		t.Fatalf("without --artifacts: exit %d, stdout %s", out.code, out.stdout)
	}
}

// TestRunFlagsAfterPrompt: a flag after the prompt is parsed, not sent as
// prompt text; "--" keeps what follows it as text.
func TestRunFlagsAfterPrompt(t *testing.T) {
	t.Parallel()
	agent := "script:" + agentScript(t, "cat")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"hi", "--output-format", "json", "--agent", agent}, "hi"},
		{[]string{"hi", "--output-format=json", "--agent=" + agent}, "hi"},
		{[]string{"--agent", agent, "hi", "-output-format", "json", "--no-stdin", "there"}, "hi there"},
	} {
		out := runAgent(t, t.TempDir(), "", c.args...)
		var res map[string]any
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitOK || res["result"] != c.want {
			t.Fatalf("%q: exit %d, stdout %q, stderr %q: %v", c.args, out.code, out.stdout, out.stderr, err)
		}
	}
	out := runAgent(t, t.TempDir(), "", "--agent", agent, "hi", "--", "--output-format", "json")
	if out.code != ExitOK || out.stdout != "hi --output-format json\n" {
		t.Fatalf("after --: exit %d, stdout %q, stderr %q", out.code, out.stdout, out.stderr)
	}
	out = runAgent(t, t.TempDir(), "", "--agent", agent, "hi", "--bogus")
	if out.code != ExitUsage || !strings.Contains(out.stderr, "bogus") {
		t.Fatalf("unknown flag after the prompt: exit %d, stderr %q", out.code, out.stderr)
	}
}
