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
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// These tests run the real `ferry run` in-process against the fake
// provider server over HTTP, through the real Anthropic and OpenAI SDKs.

var formats = []fake.Format{fake.Anthropic, fake.OpenAI}

type runOut struct {
	code           int
	stdout, stderr string
}

// ferryRun runs `ferry run` with args against srv in format f, in dir.
func ferryRun(t *testing.T, srv *fake.Server, f fake.Format, dir, stdin string, args ...string) runOut {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	env := Env{
		Stdin:  strings.NewReader(stdin),
		Stdout: &stdout,
		Stderr: &stderr,
		Getenv: func(k string) string {
			switch k {
			case "ANTHROPIC_API_KEY", "OPENAI_API_KEY":
				return "test-key"
			case "XDG_STATE_HOME":
				return testStateHome // where ferry run keeps its file history
			}
			return ""
		},
	}
	full := append([]string{"run", "--provider", string(f), "--model", "test-model", "--base-url", srv.BaseURL(f), "--workspace", dir}, args...)
	code := Run(ctx, env, full)
	return runOut{code, stdout.String(), stderr.String()}
}

func forEachFormat(t *testing.T, fn func(t *testing.T, f fake.Format, srv *fake.Server, dir string)) {
	for _, f := range formats {
		t.Run(string(f), func(t *testing.T) {
			fn(t, f, fake.New(t), t.TempDir())
		})
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestRunMultiStepEdit(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		file := filepath.Join(dir, "greet.txt")
		writeFile(t, file, "hello world\n")
		srv.Script(
			fake.Reply{Text: []string{"Reading it."}, ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "greet.txt"}}}},
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "greet.txt", "old_string": "world", "new_string": "ferry"}}}},
			fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "greet.txt"}}}},
			fake.Reply{Text: []string{"Changed ", "world to ferry."}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}},
		)
		out := ferryRun(t, srv, f, dir, "", "--allow", "Edit", "change world to ferry in greet.txt")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		if out.stdout != "Changed world to ferry.\n" {
			t.Fatalf("stdout %q", out.stdout)
		}
		got, _ := os.ReadFile(file)
		if string(got) != "hello ferry\n" {
			t.Fatalf("file %q", got)
		}
		reqs := srv.ModelRequests()
		if len(reqs) != 4 {
			t.Fatalf("%d model requests", len(reqs))
		}
		if r := agenttest.ToolResults(reqs[1]); len(r) != 1 || r[0].IsError || !strings.Contains(r[0].Text, "hello world") {
			t.Fatalf("first read result %+v", r)
		}
		if r := agenttest.ToolResults(reqs[2]); len(r) != 1 || r[0].IsError {
			t.Fatalf("edit result %+v", r)
		}
		if r := agenttest.ToolResults(reqs[3]); len(r) != 1 || !strings.Contains(r[0].Text, "hello ferry") {
			t.Fatalf("verify read result %+v", r)
		}
		if !strings.Contains(reqs[0].System(), dir) && !strings.Contains(reqs[0].System(), "workspace") {
			t.Fatalf("system prompt %q", reqs[0].System())
		}
		if names := strings.Join(reqs[0].ToolNames(), ","); names != "Read,Write,Edit,MultiEdit,NotebookEdit,Glob,Grep,Bash,WebFetch,TodoWrite,Task" {
			t.Fatalf("tools %s", names)
		}
	})
}

func TestRunPlanModeRefusesWrite(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		write := fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "plan.txt", "content": "x"}}}}
		srv.Script(write, write, fake.Reply{Text: []string{"The plan: create plan.txt."}})
		out := ferryRun(t, srv, f, dir, "", "--mode", "plan", "--allow", "Write", "create plan.txt")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		if _, err := os.Stat(filepath.Join(dir, "plan.txt")); !os.IsNotExist(err) {
			t.Fatalf("plan mode wrote the file: %v", err)
		}
		for _, i := range []int{1, 2} {
			r := agenttest.ToolResults(srv.ModelRequests()[i])
			if len(r) != 1 || !strings.Contains(r[0].Text, "plan mode") {
				t.Fatalf("request %d: refusal %+v", i, r)
			}
		}
		if strings.Count(out.stderr, "denied Write(plan.txt)") != 2 {
			t.Fatalf("stderr %q", out.stderr)
		}
	})
}

func TestRunPermissions(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "secret.txt"), "s3cr3t")
		// --deny wins over the read-only default.
		srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "secret.txt"}}}}, fake.Reply{Text: []string{"ok"}})
		out := ferryRun(t, srv, f, dir, "", "--deny", "Read(secret.txt)", "read secret.txt")
		r := agenttest.ToolResults(srv.ModelRequests()[1])
		if out.code != ExitOK || len(r) != 1 || strings.Contains(r[0].Text, "s3cr3t") || !strings.Contains(r[0].Text, "permission rules") {
			t.Fatalf("deny: exit %d, result %+v, stderr %s", out.code, r, out.stderr)
		}
		// Headless: Bash would be asked, so it is denied…
		bash := fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo from-bash"}}}}
		srv.Script(bash, fake.Reply{Text: []string{"ok"}})
		out = ferryRun(t, srv, f, dir, "", "say hi")
		r = agenttest.ToolResults(srv.ModelRequests()[3])
		if len(r) != 1 || strings.Contains(r[0].Text, "from-bash") || !strings.Contains(out.stderr, "denied Bash(echo from-bash)") {
			t.Fatalf("headless: result %+v, stderr %s", r, out.stderr)
		}
		// … unless --allow covers it.
		srv.Script(bash, fake.Reply{Text: []string{"ok"}})
		out = ferryRun(t, srv, f, dir, "", "--allow", "Bash(echo:*)", "say hi")
		r = agenttest.ToolResults(srv.ModelRequests()[5])
		if out.code != ExitOK || len(r) != 1 || !strings.Contains(r[0].Text, "from-bash") {
			t.Fatalf("allow: exit %d, result %+v, stderr %s", out.code, r, out.stderr)
		}
	})
}

func TestRunMaxTurns(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		glob := fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Glob", Input: map[string]any{"pattern": "*"}}}}
		srv.Script(glob, glob) // a third request would fail the test
		out := ferryRun(t, srv, f, dir, "", "--max-turns", "2", "--output-format", "json", "look around")
		if out.code != ExitError || !strings.Contains(out.stderr, "stopped after 2 model calls") {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		var res map[string]any
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
			t.Fatal(err)
		}
		if res["stop_reason"] != "max_turns" || res["is_error"] != true || res["num_turns"] != 2.0 {
			t.Fatalf("result %v", res)
		}
	})
}

func TestRunJSONSchema(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		schema := filepath.Join(t.TempDir(), "schema.json")
		writeFile(t, schema, `{"type":"object","properties":{"files":{"type":"integer","minimum":0}},"required":["files"],"additionalProperties":false}`)

		srv.Script(fake.Reply{Text: []string{`{"files": `, `2}`}})
		out := ferryRun(t, srv, f, dir, "", "--json-schema", schema, "--output-format", "json", "count the files")
		var res struct {
			Structured json.RawMessage `json:"structured"`
			IsError    bool            `json:"is_error"`
		}
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitOK || string(res.Structured) != `{"files":2}` || res.IsError {
			t.Fatalf("exit %d, stdout %s, stderr %s, err %v", out.code, out.stdout, out.stderr, err)
		}
		if !strings.Contains(agenttest.LastUserText(srv.ModelRequests()[0]), `"required":["files"]`) {
			t.Fatal("the model was not given the schema")
		}

		srv.Script(fake.Reply{Text: []string{`{"files": -1}`}}, fake.Reply{Text: []string{`{"count": 2}`}})
		out = ferryRun(t, srv, f, dir, "", "--json-schema", schema, "count the files")
		// The validator names the first fault it finds: here the property
		// the schema does not allow.
		if out.code != ExitError || !strings.Contains(out.stderr, "structured_output_invalid") || !strings.Contains(out.stderr, `"count"`) {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		reqs := srv.ModelRequests()
		if retry := agenttest.LastUserText(reqs[len(reqs)-1]); !strings.Contains(retry, "not valid against the required JSON Schema") || !strings.Contains(retry, "minimum") {
			t.Fatalf("retry prompt %q", retry)
		}
	})
}

func TestRunOutputFormats(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "a.go"), "package a\n")
		script := func() {
			srv.Script(
				fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Glob", Input: map[string]any{"pattern": "*.go"}}}, Usage: llm.Usage{InputTokens: 50, OutputTokens: 5}},
				fake.Reply{Text: []string{"One ", "Go file."}, Usage: llm.Usage{InputTokens: 60, OutputTokens: 4}},
			)
		}
		// A model with a list price, so the cost is known.
		priced := map[fake.Format]string{fake.Anthropic: "claude-sonnet-4-5", fake.OpenAI: "gpt-4.1"}[f]
		script()
		out := ferryRun(t, srv, f, dir, "", "--model", priced, "--output-format", "json", "how many go files?")
		var res map[string]any
		if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitOK {
			t.Fatalf("exit %d, stdout %q: %v", out.code, out.stdout, err)
		}
		usage, _ := res["usage"].(map[string]any)
		if res["result"] != "One Go file." || res["is_error"] != false || res["num_turns"] != 2.0 || res["session_id"] == "" ||
			usage["input_tokens"] != 110.0 || usage["output_tokens"] != 9.0 {
			t.Fatalf("result %v", res)
		}
		if c, ok := res["cost_usd"].(float64); !ok || c <= 0 {
			t.Fatalf("cost_usd %v", res["cost_usd"])
		}
		if m := srv.ModelRequests()[0].Model(); m != priced {
			t.Fatalf("model %q", m)
		}

		script()
		out = ferryRun(t, srv, f, dir, "", "--model", priced, "--output-format", "stream-json", "how many go files?")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		var types []string
		sc := bufio.NewScanner(strings.NewReader(out.stdout))
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			types = append(types, line["type"].(string))
			if line["type"] == "agent.usage" {
				if p, _ := line["payload"].(map[string]any); p["cost_usd"] == nil || p["model"] != priced {
					t.Fatalf("usage event %v", line)
				}
			}
		}
		got := strings.Join(types, " ")
		want := "agent.turn.started agent.usage agent.tool.started agent.tool.finished agent.text.delta agent.text.delta agent.usage agent.text.done result"
		if got != want {
			t.Fatalf("stream-json types\n got %s\nwant %s", got, want)
		}
	})
}

func TestRunPipedStdin(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		srv.Script(fake.Reply{Text: []string{"It failed twice."}}, fake.Reply{Text: []string{"A log."}})
		out := ferryRun(t, srv, f, dir, "FAIL a\nFAIL b\n", "why did it fail?")
		if out.code != ExitOK || out.stdout != "It failed twice.\n" {
			t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
		}
		txt := agenttest.LastUserText(srv.ModelRequests()[0])
		if !strings.HasPrefix(txt, "why did it fail?") || !strings.Contains(txt, "<stdin>\nFAIL a\nFAIL b\n</stdin>") {
			t.Fatalf("prompt %q", txt)
		}
		// Only piped input: it is the prompt, framed.
		out = ferryRun(t, srv, f, dir, "<@file:ref_1|x> is not a token here\n")
		txt = agenttest.LastUserText(srv.ModelRequests()[1])
		if out.code != ExitOK || !strings.Contains(txt, "<stdin>\n<@file:ref_1|x> is not a token here\n</stdin>") {
			t.Fatalf("exit %d, prompt %q", out.code, txt)
		}
	})
}

func TestRunProviderErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		reply fake.Reply
		want  []string
	}{
		{"429 with retry-after", fake.Reply{Fail: &fake.Failure{Status: 429, RetryAfter: "120"}}, []string{"provider_rate_limited", "retry after 2m0s"}},
		{"500", fake.Reply{Fail: &fake.Failure{Status: 500, Header: map[string]string{"x-should-retry": "false"}}}, []string{"provider_server_error", "HTTP 500"}},
		{"malformed stream", fake.Reply{Text: []string{"partial "}, Break: fake.BreakBadJSON}, []string{"provider_stream"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
				srv.Script(tc.reply)
				out := ferryRun(t, srv, f, dir, "", "--output-format", "json", "hello")
				if out.code != ExitError {
					t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(out.stderr, w) {
						t.Fatalf("stderr %q lacks %q", out.stderr, w)
					}
				}
				if !strings.Contains(out.stderr, "the model provider failed") || strings.Contains(out.stderr, "panic") {
					t.Fatalf("stderr %q", out.stderr)
				}
				var res map[string]any
				if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || res["is_error"] != true || res["stop_reason"] != "error" {
					t.Fatalf("stdout %q: %v", out.stdout, err)
				}
			})
		})
	}
}

func TestRunUsageAndConfiguration(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: stateOnlyEnv}
	ctx := context.Background()
	if code := Run(ctx, env, []string{"run", "--workspace", dir, "hello"}); code != ExitError || !strings.Contains(stderr.String(), "ANTHROPIC_API_KEY") {
		t.Fatalf("no provider: exit %d, stderr %s", code, stderr.String())
	}
	for _, args := range [][]string{
		{"run", "--workspace", dir},
		{"run", "--output-format", "yaml", "x"},
		{"run", "--mode", "yolo", "x"},
		{"run", "--allow", "Bash(", "x"},
		{"run", "--workspace", filepath.Join(dir, "missing"), "x"},
		{"run", "--bogus", "x"},
	} {
		stderr.Reset()
		if code := Run(ctx, env, args); code != ExitUsage {
			t.Fatalf("%v: exit %d, stderr %s", args, code, stderr.String())
		}
	}
}

// TestFerryRunBinary is `ferry run` end to end: the real binary, a real
// process, against the fake provider over HTTP, with piped standard input,
// then interrupted (SIGINT) during a long Bash call, which must leave no
// process behind.
func TestFerryRunBinary(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	for _, f := range formats {
		t.Run(string(f), func(t *testing.T) {
			srv := fake.New(t)
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "main.go"), "package main\n\nfunc main() { println(\"hello\") }\n")
			env := append(os.Environ(), "ANTHROPIC_API_KEY=test-key", "OPENAI_API_KEY=test-key", "XDG_STATE_HOME="+testStateHome)
			base := []string{"run", "--provider", string(f), "--model", "test-model", "--base-url", srv.BaseURL(f), "--workspace", dir}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()

			srv.Script(
				fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "main.go"}}}},
				fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "main.go", "old_string": `"hello"`, "new_string": `"hello, ferry"`}}}},
				fake.Reply{Text: []string{"Greeting updated."}},
			)
			cmd := exec.CommandContext(ctx, bin, append(base, "--allow", "Edit", "--output-format", "json", "update the greeting as the log asks")...)
			cmd.Env = env
			cmd.Stdin = strings.NewReader("TODO: greet ferry\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("ferry run: %v\n%s", err, stderr.String())
			}
			var res map[string]any
			if err := json.Unmarshal(stdout.Bytes(), &res); err != nil || res["result"] != "Greeting updated." {
				t.Fatalf("stdout %q: %v", stdout.String(), err)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "main.go")); !strings.Contains(string(got), `println("hello, ferry")`) {
				t.Fatalf("main.go %q", got)
			}
			if txt := agenttest.LastUserText(srv.ModelRequests()[0]); !strings.Contains(txt, "<stdin>\nTODO: greet ferry\n</stdin>") {
				t.Fatalf("prompt %q", txt)
			}

			// Interrupt during a long Bash call.
			srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "sleep 30 & echo $! > sleep.pid; wait"}}}})
			cmd = exec.CommandContext(ctx, bin, append(base, "--allow", "Bash", "--no-stdin", "sleep a while")...)
			cmd.Env = env
			stderr.Reset()
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			var pid int
			for pid == 0 {
				if b, err := os.ReadFile(filepath.Join(dir, "sleep.pid")); err == nil && strings.HasSuffix(string(b), "\n") {
					pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
				select {
				case <-ctx.Done():
					t.Fatalf("the Bash call never started: %s", stderr.String())
				case err := <-waited:
					t.Fatalf("ferry run ended before its Bash call started: %v: %s", err, stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			if err := cmd.Process.Signal(os.Interrupt); err != nil {
				t.Fatal(err)
			}
			var err error
			select {
			case err = <-waited:
			case <-ctx.Done():
				t.Fatal("ferry run did not end after SIGINT")
			}
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != ExitError || !strings.Contains(stderr.String(), "interrupted") {
				t.Fatalf("after SIGINT: %v, stderr %s", err, stderr.String())
			}
			for processAlive(pid) {
				select {
				case <-ctx.Done():
					t.Fatalf("sleep %d survived the interrupt", pid)
				case <-time.After(10 * time.Millisecond):
				}
			}
			_ = os.Remove(filepath.Join(dir, "sleep.pid"))
		})
	}
}

// processAlive reports whether pid runs (a zombie does not).
func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(stat)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// TestRunCostRounded: the cost ferry prints is rounded to a millionth of a
// dollar, not 0.00031499999999999996 (100 input tokens at $3 a
// million and one output token at $15).
func TestRunCostRounded(t *testing.T) {
	t.Parallel()
	f := fake.Anthropic
	srv, dir := fake.New(t), t.TempDir()
	for _, format := range []string{"json", "stream-json"} {
		srv.Script(fake.Reply{Text: []string{"hi"}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 1}})
		out := ferryRun(t, srv, f, dir, "", "--model", "claude-sonnet-4-5", "--output-format", format, "hi")
		if out.code != ExitOK {
			t.Fatalf("%s: exit %d, stderr %s", format, out.code, out.stderr)
		}
		want := 1 // the result
		if format == "stream-json" {
			want = 2 // and the agent.usage event
		}
		if n := strings.Count(out.stdout, `"cost_usd":0.000315,`) + strings.Count(out.stdout, `"cost_usd":0.000315}`); n != want {
			t.Fatalf("%s: %d costs of 0.000315, want %d:\n%s", format, n, want, out.stdout)
		}
	}
}
