package acpagent_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	pngenc "image/png"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// ACP clients written elsewhere, from npm (testdata/js, pinned in its
// package-lock.json), drive the real ferry binary's `ferry acp` against the
// scripted model: acpx, a headless client, and the official TypeScript SDK's
// client side (testdata/js/client.mjs runs a JSON plan of ACP calls with it
// and prints what came back).

const jsInstall = "npm ci --prefix internal/acpagent/testdata/js, then set FERRY_TEST_ACP_JS to that directory " +
	"(.ci/run's step \"real ACP clients from npm\"); set FERRY_REQUIRE_ACP_JS=1 to fail instead of skipping"

// jsClients returns the directory of the installed npm clients, or skips
// (fails when FERRY_REQUIRE_ACP_JS is set) naming the install step.
func jsClients(t *testing.T) string {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		if os.Getenv("FERRY_REQUIRE_ACP_JS") != "" {
			t.Fatalf("%s: %s", why, jsInstall)
		}
		t.Skipf("%s: %s", why, jsInstall)
	}
	dir := os.Getenv("FERRY_TEST_ACP_JS")
	if dir == "" {
		missing("FERRY_TEST_ACP_JS is not set")
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("no node on PATH")
	}
	for _, p := range []string{"node_modules/.bin/acpx", "node_modules/@agentclientprotocol/sdk/package.json"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			missing(fmt.Sprintf("%s is not installed in %s", p, dir))
		}
	}
	return dir
}

// ferryEnv is the environment of a `ferry acp` process and its client:
// their state and homes in tmp, a key for the scripted model.
func ferryEnv(tmp string) []string { return testEnv(filepath.Join(tmp, "home")) }

// ferryACP is the command line of `ferry acp` talking to srv.
func ferryACP(bin string, srv *fake.Server, extra ...string) []string {
	m := model{srv: srv}
	return append(append([]string{bin, "acp"}, m.args()...), extra...)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// jsWorkspace starts a scripted model and makes a workspace (ws, holding a
// README) in the test's directory tmp.
func jsWorkspace(t *testing.T) (srv *fake.Server, tmp, ws string) {
	t.Helper()
	srv, tmp = fake.New(t), t.TempDir()
	ws = filepath.Join(tmp, "ws")
	writeFile(t, filepath.Join(ws, "README"), "a workspace\n")
	return srv, tmp, ws
}

func TestRealACPClients(t *testing.T) {
	js := jsClients(t)
	bin := binarytest.Build(t)
	t.Run("acpx/exec", func(t *testing.T) { t.Parallel(); testACPXEditsFile(t, js, bin) })
	t.Run("acpx/sessions", func(t *testing.T) { t.Parallel(); testACPXSession(t, js, bin) })
	t.Run("acpx/config", func(t *testing.T) { t.Parallel(); testACPXConfig(t, js, bin) })
	t.Run("sdk/permissions", func(t *testing.T) { t.Parallel(); testSDKPermissions(t, js, bin) })
	t.Run("sdk/cancel", func(t *testing.T) { t.Parallel(); testSDKCancel(t, js, bin) })
	t.Run("sdk/modes", func(t *testing.T) { t.Parallel(); testSDKModes(t, js, bin) })
	t.Run("sdk/fs", func(t *testing.T) { t.Parallel(); testSDKEditorFiles(t, js, bin) })
	t.Run("sdk/load", func(t *testing.T) { t.Parallel(); testSDKLoad(t, js, bin) })
	t.Run("sdk/mcp", func(t *testing.T) { t.Parallel(); testSDKMCPServer(t, js, bin) })
	t.Run("sdk/content", func(t *testing.T) { t.Parallel(); testSDKPromptContent(t, js, bin) })
	t.Run("sdk/terminal", func(t *testing.T) { t.Parallel(); testSDKTerminal(t, js, bin) })
	t.Run("sdk/bad", func(t *testing.T) { t.Parallel(); testSDKBadInput(t, js, bin) })
	t.Run("sdk/active", func(t *testing.T) { t.Parallel(); testSDKActiveSession(t, js, bin) })
}

// testACPXEditsFile: acpx runs a one-shot prompt through `ferry acp` (its
// --agent names a custom agent command); the scripted model reads and edits
// main.go. acpx offers its own fs and terminal, so the read and the edit go
// through it (fs/read_text_file, fs/write_text_file).
func testACPXEditsFile(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	writeFile(t, filepath.Join(ws, "main.go"), "package main\n\nfunc main() { println(\"hello\") }\n")
	srv.Script(
		read("main.go"),
		edit("main.go", `"hello"`, `"hello, ferry"`),
		fake.Reply{Text: []string{"Greeting ", "updated."}},
	)
	out := acpx(t, js, tmp, ws, "--agent", strings.Join(ferryACP(bin, srv), " "), "--cwd", ws, "--approve-all", "--format", "json",
		"exec", "update the greeting")
	if got, _ := os.ReadFile(filepath.Join(ws, "main.go")); !strings.Contains(string(got), `println("hello, ferry")`) {
		t.Fatalf("main.go after the turn: %q\nacpx said:\n%s", got, out)
	}
	// acpx's json format is the JSON-RPC traffic, one message a line.
	var text strings.Builder
	var kinds []string
	stop := ""
	for line := range strings.Lines(out) {
		var m struct {
			Method string `json:"method"`
			Params struct {
				Update struct {
					SessionUpdate string `json:"sessionUpdate"`
					Kind          string `json:"kind"`
					Content       struct {
						Text string `json:"text"`
					} `json:"content"`
				} `json:"update"`
			} `json:"params"`
			Result struct {
				StopReason string `json:"stopReason"`
			} `json:"result"`
		}
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch u := m.Params.Update; {
		case m.Method == "session/update" && u.SessionUpdate == "agent_message_chunk":
			text.WriteString(u.Content.Text)
		case m.Method == "session/update" && u.SessionUpdate == "tool_call":
			kinds = append(kinds, u.Kind)
		case m.Result.StopReason != "":
			stop = m.Result.StopReason
		}
	}
	if text.String() != "Greeting updated." || stop != "end_turn" || !slices.Contains(kinds, "read") || !slices.Contains(kinds, "edit") {
		t.Fatalf("acpx saw text %q, stop %q, tool kinds %v:\n%s", text.String(), stop, kinds, out)
	}
	// acpx offers fs: ferry's Read and Edit went through it.
	for _, m := range []string{`"method":"fs/read_text_file"`, `"method":"fs/write_text_file"`} {
		if !strings.Contains(out, m) {
			t.Errorf("acpx was not asked %s:\n%s", m, out)
		}
	}
	if reqs := srv.ModelRequests(); len(reqs) != 3 || !strings.Contains(agenttest.LastUserText(reqs[0]), "update the greeting") {
		t.Fatalf("the model got %d requests", len(reqs))
	}
}

// acpx runs acpx with args in ws, returning its stdout.
func acpx(t *testing.T, js, tmp, ws string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, filepath.Join(js, "node_modules/.bin/acpx"), args...) //nolint:gosec // the pinned acpx
	cmd.Dir = ws
	cmd.Env = ferryEnv(tmp)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("acpx %q: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// testACPXSession: acpx's persistent session (sessions new, then prompts
// through its queue owner, which ends when idle) continues a conversation
// across ferry acp processes (session/resume): the second prompt's model
// request holds the first prompt.
func testACPXSession(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	srv.Script(say("Noted: heron."), say("It was heron."))
	base := []string{"--agent", strings.Join(ferryACP(bin, srv), " "), "--cwd", ws, "--approve-all", "--ttl", "1"}
	acpx(t, js, tmp, ws, append(base, "sessions", "new")...)
	out1 := acpx(t, js, tmp, ws, append(base, "--format", "json", "prompt", "the codeword is heron")...)
	// Wait out the queue owner's ttl (acpx status: no pid), so that the
	// next prompt starts a new ferry acp.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		st := acpx(t, js, tmp, ws, append(base, "status")...)
		if strings.Contains(st, "pid: -") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("acpx's queue owner still runs 30 s past its ttl:\n%s", st)
		}
	}
	out2 := acpx(t, js, tmp, ws, append(base, "--format", "json", "prompt", "what was the codeword?")...)
	acpx(t, js, tmp, ws, append(base, "sessions", "close")...)
	// acpx takes the session up with session/resume, which ferry offers:
	// the first turn is not shown again.
	if !strings.Contains(out1, "Noted: heron.") || !strings.Contains(out2, `"method":"session/resume"`) || !strings.Contains(out2, "It was heron.") || strings.Contains(out2, "Noted: heron.") {
		t.Errorf("acpx's prompts: want the first turn's text, then session/resume in a new process and only the second turn's text\nfirst:\n%s\nsecond:\n%s", out1, out2)
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if texts := agenttest.UserTexts(reqs[1]); len(texts) < 2 || !strings.Contains(texts[0], "the codeword is heron") {
		t.Errorf("the second prompt's model request holds %q, want the first prompt too", texts)
	}
}

// testACPXConfig: ferry named in acpx's config file, as docs/acp.md sets it
// up ({"agents": {"ferry": {"command": …, "args": ["acp", …]}}} in
// ~/.acpx/config.json), runs as `acpx ferry exec`; acpx's text output shows
// the turn.
func testACPXConfig(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	cmd := ferryACP(bin, srv)
	cfg, err := json.Marshal(map[string]any{"agents": map[string]any{"ferry": map[string]any{"command": cmd[0], "args": cmd[1:]}}})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(tmp, "home", ".acpx", "config.json"), string(cfg))
	srv.Script(write("hello.txt", "hello from acpx\n"), say("Wrote hello.txt."))
	out := acpx(t, js, tmp, ws, "--cwd", ws, "--approve-all", "ferry", "exec", "write hello.txt")
	if b, err := os.ReadFile(filepath.Join(ws, "hello.txt")); err != nil || string(b) != "hello from acpx\n" {
		t.Errorf("hello.txt: %q, %v", b, err)
	}
	if !strings.Contains(out, "Wrote hello.txt.") || !strings.Contains(out, "end_turn") || !strings.Contains(out, "hello.txt") {
		t.Errorf("acpx's output does not show the turn:\n%s", out)
	}
}

// plan is what client.mjs runs.
type plan struct {
	Agent []string          `json:"agent"`
	Cwd   string            `json:"cwd"`
	Env   map[string]string `json:"env,omitempty"`
	Steps []step            `json:"steps"`
}

type step map[string]any

type update struct {
	SessionID string         `json:"sessionId"`
	Update    map[string]any `json:"update"`
}

// kind is the update's sessionUpdate.
func (u update) kind() string { s, _ := u.Update["sessionUpdate"].(string); return s }

type stepResult struct {
	Op     string          `json:"op"`
	OK     bool            `json:"ok"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    *int   `json:"code"`
		Message string `json:"message"`
		Data    any    `json:"data"`
	} `json:"error"`
	Ms          int      `json:"ms"`
	CancelMs    int      `json:"cancelMs"`
	Updates     []update `json:"updates"`
	Permissions []struct {
		Request struct {
			ToolCall map[string]any `json:"toolCall"`
			Options  []struct {
				OptionID string `json:"optionId"`
				Kind     string `json:"kind"`
			} `json:"options"`
		} `json:"request"`
		Answer string `json:"answer"`
	} `json:"permissions"`
	Reads     []map[string]any `json:"reads"`
	Writes    []map[string]any `json:"writes"`
	Terminals []map[string]any `json:"terminals"`
	// Kills and Releases are the terminal/kill and terminal/release
	// calls, with whether the command still ran.
	Kills, Releases []struct {
		TerminalID string `json:"terminalId"`
		Running    bool   `json:"running"`
	}
	// Wire is what came from the agent during the step, in order: its
	// method (session/update:KIND) or "response".
	Wire []string `json:"wire"`
	// SchemaErrors: what ACP's schema (the SDK's zod schemas) refuses in
	// the step's answer and updates.
	SchemaErrors []string `json:"schemaErrors"`
}

// stopReason is a prompt step's stopReason.
func (r stepResult) stopReason() string {
	var res struct {
		StopReason string `json:"stopReason"`
	}
	_ = json.Unmarshal(r.Result, &res)
	return res.StopReason
}

// text joins the step's chunks of kind (agent_message_chunk, ...).
func (r stepResult) text(kind string) string {
	var b strings.Builder
	for _, u := range r.Updates {
		if u.kind() == kind {
			c, _ := u.Update["content"].(map[string]any)
			s, _ := c["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

// toolCalls returns the step's tool_call updates.
func (r stepResult) toolCalls() []map[string]any {
	var out []map[string]any
	for _, u := range r.Updates {
		if u.kind() == "tool_call" {
			out = append(out, u.Update)
		}
	}
	return out
}

type planResult struct {
	Steps []stepResult `json:"steps"`
	Exits []struct {
		Code   *int   `json:"code"`
		Signal string `json:"signal"`
	} `json:"exits"`
	raw string
}

// turnUpdates are the updates of a turn's own progress.
var turnUpdates = map[string]bool{
	"session/update:agent_message_chunk": true, "session/update:agent_thought_chunk": true,
	"session/update:tool_call": true, "session/update:tool_call_update": true, "session/update:plan": true,
}

// runPlan runs p with client.mjs and returns what it printed; every step
// must have run (ok or not: a step's error is the test's to judge).
func runPlan(t *testing.T, js string, env []string, p plan) planResult {
	t.Helper()
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", filepath.Join(js, "client.mjs"), file) //nolint:gosec // the test's own script
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("client.mjs: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	res := planResult{raw: stdout.String()}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("client.mjs printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	if len(res.Steps) != len(p.Steps) {
		t.Fatalf("client.mjs ran %d of %d steps (stopped at a failed one):\n%s\nstderr:\n%s", len(res.Steps), len(p.Steps), stdout.String(), stderr.String())
	}
	for i, s := range res.Steps {
		for _, e := range s.SchemaErrors {
			t.Errorf("step %d (%s): not ACP: %s", i, s.Op, e)
		}
		if s.Op == "prompt" {
			// A turn's updates come before its answer (a title may follow).
			if at := slices.Index(s.Wire, "response"); at >= 0 {
				for _, w := range s.Wire[at+1:] {
					if turnUpdates[w] {
						t.Errorf("step %d (prompt): %s after the answer: %q", i, w, s.Wire)
					}
				}
			}
		}
		if s.Op == "prompt" || s.Op == "load" || p.Steps[i]["mayFail"] == true {
			continue // judged by the test
		}
		if !s.OK {
			t.Fatalf("step %d (%s) failed: %+v\nstderr:\n%s", i, s.Op, s.Error, stderr.String())
		}
	}
	for _, e := range res.Exits {
		if e.Code == nil || *e.Code != 0 {
			t.Errorf("ferry acp exited with %v %q, want 0 once its stdin closed\nstderr:\n%s", e.Code, e.Signal, stderr.String())
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client.mjs output:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
		}
	})
	return res
}

func write(path, content string) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": path, "content": content}}}}
}

func bash(command string) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": command}}}}
}

// testSDKPermissions: session/request_permission answered allow, deny,
// always and always deny; after either always the same call is not asked
// again (ferry's "always"
// rule for a file is its exact path, for a command its command name: the
// always steps use Bash, which ferry runs itself as the client offers no
// terminal).
func testSDKPermissions(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	srv.Script(
		write("allowed.txt", "allowed\n"), say("wrote allowed"),
		write("denied.txt", "denied\n"), say("could not write"),
		bash("touch one.txt"), say("touched one"),
		bash("touch two.txt"), say("touched two"),
		bash("cp README three.txt"), say("refused three"),
		bash("cp README three.txt"), say("refused again"),
	)
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "new"},
		{"op": "prompt", "text": "write allowed.txt", "answers": []string{"allow_once"}},
		{"op": "prompt", "text": "write denied.txt", "answers": []string{"reject_once"}},
		{"op": "prompt", "text": "touch one.txt", "answers": []string{"allow_always"}},
		{"op": "prompt", "text": "touch two.txt"},
		{"op": "prompt", "text": "copy to three.txt", "answers": []string{"reject_always"}},
		{"op": "prompt", "text": "copy to three.txt again"},
		{"op": "close"},
	}})
	var init struct {
		ProtocolVersion   int `json:"protocolVersion"`
		AgentCapabilities struct {
			LoadSession bool `json:"loadSession"`
		} `json:"agentCapabilities"`
		AgentInfo struct {
			Name string `json:"name"`
		} `json:"agentInfo"`
	}
	if err := json.Unmarshal(res.Steps[1].Result, &init); err != nil || init.ProtocolVersion != 1 || !init.AgentCapabilities.LoadSession || init.AgentInfo.Name != "ferry" {
		t.Errorf("initialize answered %s (%v)", res.Steps[1].Result, err)
	}
	for i, want := range []struct {
		asked  int
		kind   string
		text   string
		file   string
		exists bool
	}{
		{1, "edit", "wrote allowed", "allowed.txt", true},
		{1, "edit", "could not write", "denied.txt", false},
		{1, "execute", "touched one", "one.txt", true},
		{0, "execute", "touched two", "two.txt", true},
		{1, "execute", "refused three", "three.txt", false},
		{0, "execute", "refused again", "three.txt", false},
	} {
		r := res.Steps[3+i]
		if !r.OK || r.stopReason() != "end_turn" || r.text("agent_message_chunk") != want.text {
			t.Errorf("prompt %d: ok %v %+v stop %q text %q", i, r.OK, r.Error, r.stopReason(), r.text("agent_message_chunk"))
		}
		if len(r.Permissions) != want.asked {
			t.Errorf("prompt %d (%s): asked %d times, want %d", i, want.file, len(r.Permissions), want.asked)
		}
		for _, p := range r.Permissions {
			var kinds []string
			for _, o := range p.Request.Options {
				kinds = append(kinds, o.Kind)
			}
			if k, _ := p.Request.ToolCall["kind"].(string); k != want.kind || !slices.Contains(kinds, "allow_once") || !slices.Contains(kinds, "allow_always") || !slices.Contains(kinds, "reject_once") {
				t.Errorf("prompt %d: permission asked for %v with options %v", i, p.Request.ToolCall, kinds)
			}
		}
		if want.asked > 0 {
			// The editor learns of the tool call before it is asked about it.
			call, ask := slices.Index(r.Wire, "session/update:tool_call"), slices.Index(r.Wire, "session/request_permission")
			if call < 0 || ask < 0 || call > ask {
				t.Errorf("prompt %d: the agent sent %q; want the tool_call before session/request_permission", i, r.Wire)
			}
		}
		calls := r.toolCalls()
		if len(calls) != 1 || calls[0]["kind"] != want.kind {
			t.Errorf("prompt %d: tool calls %v, want one of kind %s", i, calls, want.kind)
		}
		_, err := os.Stat(filepath.Join(ws, want.file))
		if exists := err == nil; exists != want.exists {
			t.Errorf("prompt %d: %s exists %v, want %v", i, want.file, exists, want.exists)
		}
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 12 {
		t.Fatalf("the model got %d requests, want 12", len(reqs))
	}
	for _, i := range []int{3, 9, 11} {
		if tr := agenttest.ToolResults(reqs[i]); len(tr) != 1 || !tr[0].IsError {
			t.Errorf("model request %d: the denied call's result is %+v, want an error", i, tr)
		}
	}
}

// testSDKCancel: session/cancel ends a turn within 2 s, whether the model
// is streaming, a tool (ferry's own Bash: the client offers no terminal,
// --allow Bash so no question) is running, or a permission is being asked
// (the client cancels and answers the question cancelled, as ACP says);
// the session goes on after.
func testSDKCancel(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	pidFile := filepath.Join(ws, "sleep.pid")
	srv.Script(
		fake.Reply{Text: []string{"thinking it over"}, Hold: true},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "sleep 30 & echo $! > sleep.pid; wait"}}}},
		write("never.txt", "no\n"),
		say("still here"),
	)
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv, "--allow", "Bash"), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "new"},
		{"op": "prompt", "text": "take your time", "cancelOn": "agent_message_chunk"},
		{"op": "prompt", "text": "run a long command", "cancelWhenFile": pidFile},
		{"op": "prompt", "text": "write never.txt", "answers": []string{"cancel"}},
		{"op": "prompt", "text": "are you there?"},
		{"op": "close"},
	}})
	for _, i := range []int{3, 4, 5} {
		r := res.Steps[i]
		t.Logf("prompt %d: %s %d ms after session/cancel", i, r.stopReason(), r.CancelMs)
		if !r.OK || r.stopReason() != "cancelled" || r.CancelMs <= 0 || r.CancelMs > 2000 {
			t.Errorf("prompt %d: ok %v %+v stop %q, %d ms after session/cancel; want cancelled within 2000 ms", i, r.OK, r.Error, r.stopReason(), r.CancelMs)
		}
	}
	if r := res.Steps[5]; len(r.Permissions) != 1 {
		t.Errorf("write never.txt: asked %d times, want once", len(r.Permissions))
	}
	if _, err := os.Stat(filepath.Join(ws, "never.txt")); err == nil {
		t.Error("never.txt was written though the turn was cancelled while asking")
	}
	if r := res.Steps[6]; r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "still here" {
		t.Errorf("after the cancels: stop %q text %q", r.stopReason(), r.text("agent_message_chunk"))
	}
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("sleep.pid: %q", b)
	}
	if st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && !strings.Contains(string(st), ") Z ") {
		t.Errorf("sleep %d survived the cancel", pid)
	}
}

// testSDKModes: the session's modes are default, plan and review; in plan
// mode (session/set_mode) a Write is refused without writing; the mode and
// the model are session config options (set_config_option): back to default
// a write is asked again, and the next model request names the new model.
func testSDKModes(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	srv.Script(write("plan.txt", "no\n"), say("refused in plan mode"), write("default.txt", "yes\n"), say("written"))
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "new"},
		{"op": "set_mode", "modeId": "plan"},
		{"op": "prompt", "text": "write plan.txt", "answers": []string{"allow_once"}},
		{"op": "set_config_option", "configId": "mode", "value": "default"},
		{"op": "set_config_option", "configId": "model", "value": "claude-sonnet-4-5"},
		{"op": "prompt", "text": "write default.txt", "answers": []string{"allow_once"}},
		{"op": "close"},
	}})
	var sess struct {
		Modes struct {
			CurrentModeID  string `json:"currentModeId"`
			AvailableModes []struct {
				ID string `json:"id"`
			} `json:"availableModes"`
		} `json:"modes"`
		ConfigOptions []struct {
			ID string `json:"id"`
		} `json:"configOptions"`
	}
	if err := json.Unmarshal(res.Steps[2].Result, &sess); err != nil {
		t.Fatal(err)
	}
	var modes, options []string
	for _, m := range sess.Modes.AvailableModes {
		modes = append(modes, m.ID)
	}
	for _, o := range sess.ConfigOptions {
		options = append(options, o.ID)
	}
	if sess.Modes.CurrentModeID != "default" || !slices.Equal(modes, []string{"default", "plan", "review"}) || !slices.Contains(options, "mode") || !slices.Contains(options, "model") {
		t.Errorf("session/new answered modes %q current %q, config options %q", modes, sess.Modes.CurrentModeID, options)
	}
	if _, err := os.Stat(filepath.Join(ws, "plan.txt")); err == nil {
		t.Error("plan.txt was written in plan mode")
	}
	if r := res.Steps[4]; r.stopReason() != "end_turn" || len(r.Permissions) != 0 {
		t.Errorf("the plan-mode prompt: stop %q, %d permissions asked (want none: the mode refuses first)", r.stopReason(), len(r.Permissions))
	}
	var opts struct {
		ConfigOptions []struct {
			ID           string `json:"id"`
			CurrentValue string `json:"currentValue"`
		} `json:"configOptions"`
	}
	if err := json.Unmarshal(res.Steps[6].Result, &opts); err != nil {
		t.Fatal(err)
	}
	for _, o := range opts.ConfigOptions {
		if want := map[string]string{"mode": "default", "model": "claude-sonnet-4-5"}[o.ID]; want != "" && o.CurrentValue != want {
			t.Errorf("after set_config_option, %s is %q, want %q", o.ID, o.CurrentValue, want)
		}
	}
	if r := res.Steps[7]; r.stopReason() != "end_turn" || len(r.Permissions) != 1 {
		t.Errorf("back in default mode: stop %q, %d permissions asked (want 1)", r.stopReason(), len(r.Permissions))
	}
	if b, err := os.ReadFile(filepath.Join(ws, "default.txt")); err != nil || string(b) != "yes\n" {
		t.Errorf("default.txt: %q, %v", b, err)
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 4 {
		t.Fatalf("the model got %d requests, want 4", len(reqs))
	}
	if tr := agenttest.ToolResults(reqs[1]); len(tr) != 1 || !tr[0].IsError || !strings.Contains(strings.ToLower(tr[0].Text), "plan") {
		t.Errorf("the Write in plan mode got %+v, want an error naming plan mode", tr)
	}
	if m := reqs[2].Model(); m != "claude-sonnet-4-5" {
		t.Errorf("after set_config_option model, the model asked is %q", m)
	}
}

// testSDKEditorFiles: with fs offered, the agent reads the editor's unsaved
// buffer (not the disk) through fs/read_text_file, and its Write reaches the
// editor as fs/write_text_file (the client keeps it in its buffer: the disk
// is not written by ferry).
func testSDKEditorFiles(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	notes := filepath.Join(ws, "notes.txt")
	writeFile(t, notes, "saved on disk\n")
	srv.Script(
		read("notes.txt"),
		write("out.txt", "written through the editor\n"),
		say("done"),
	)
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize", "fs": true},
		{"op": "new"},
		{"op": "buffer", "path": notes, "text": "unsaved in the editor\n"},
		{"op": "prompt", "text": "copy my notes", "answers": []string{"allow_once"}},
		{"op": "close"},
	}})
	r := res.Steps[4]
	if r.stopReason() != "end_turn" {
		t.Errorf("prompt: ok %v %+v stop %q", r.OK, r.Error, r.stopReason())
	}
	if len(r.Reads) == 0 || r.Reads[0]["path"] != notes {
		t.Errorf("fs/read_text_file calls %v, want one for %s", r.Reads, notes)
	}
	out := filepath.Join(ws, "out.txt")
	if len(r.Writes) != 1 || r.Writes[0]["path"] != out || r.Writes[0]["content"] != "written through the editor\n" {
		t.Errorf("fs/write_text_file calls %v, want one for %s", r.Writes, out)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("out.txt is on disk: ferry wrote it itself instead of through the editor")
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(reqs))
	}
	if tr := agenttest.ToolResults(reqs[1]); len(tr) != 1 || !strings.Contains(tr[0].Text, "unsaved in the editor") || strings.Contains(tr[0].Text, "saved on disk") {
		t.Errorf("the Read gave the model %+v, want the editor's buffer", tr)
	}
}

// testSDKLoad: session/load in a second `ferry acp` process replays the
// conversation and continues it: the model is sent the first prompt again.
func testSDKLoad(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	srv.Script(say("Noted: heron."), say("It was heron."))
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "new"},
		{"op": "prompt", "text": "the codeword is heron"},
		{"op": "close"},
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "load"},
		{"op": "prompt", "text": "what was the codeword?"},
		{"op": "close"},
	}})
	if r := res.Steps[3]; r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "Noted: heron." {
		t.Errorf("first prompt: %+v stop %q text %q", r.Error, r.stopReason(), r.text("agent_message_chunk"))
	}
	load := res.Steps[7]
	if !load.OK {
		t.Fatalf("session/load failed: %+v", load.Error)
	}
	if !strings.Contains(load.text("user_message_chunk"), "the codeword is heron") || !strings.Contains(load.text("agent_message_chunk"), "Noted: heron.") {
		t.Errorf("session/load replayed user %q agent %q", load.text("user_message_chunk"), load.text("agent_message_chunk"))
	}
	if r := res.Steps[8]; r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "It was heron." {
		t.Errorf("prompt after load: %+v stop %q text %q", r.Error, r.stopReason(), r.text("agent_message_chunk"))
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if texts := agenttest.UserTexts(reqs[1]); len(texts) < 2 || !strings.Contains(texts[0], "the codeword is heron") || !strings.Contains(texts[len(texts)-1], "what was the codeword?") {
		t.Errorf("after the restart the model was sent %q", texts)
	}
}

// testSDKMCPServer: an MCP server the client passes in session/new (ferry
// mcp over stdio, serving another directory) is connected and its tool
// offered; the model calls it and gets its answer.
func testSDKMCPServer(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	other := filepath.Join(tmp, "elsewhere")
	writeFile(t, filepath.Join(other, "secret.txt"), "only the MCP server can read this\n")
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "mcp__notes__Read", Input: map[string]any{"file_path": "secret.txt"}}}},
		say("read it"),
	)
	mcpServer := map[string]any{"name": "notes", "command": bin, "args": []string{"mcp", "--workspace", other, "--no-history"}, "env": []any{}}
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "new", "mcpServers": []any{mcpServer}},
		{"op": "prompt", "text": "read the secret", "answers": []string{"allow_once"}},
		{"op": "close"},
	}})
	if r := res.Steps[3]; r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "read it" {
		t.Errorf("prompt: %+v stop %q text %q", r.Error, r.stopReason(), r.text("agent_message_chunk"))
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 2 {
		t.Fatalf("the model got %d requests, want 2", len(reqs))
	}
	if names := reqs[0].ToolNames(); !slices.Contains(names, "mcp__notes__Read") {
		t.Errorf("the model was offered %q, want mcp__notes__Read among them", names)
	}
	if tr := agenttest.ToolResults(reqs[1]); len(tr) != 1 || tr[0].IsError || !strings.Contains(tr[0].Text, "only the MCP server can read this") {
		t.Errorf("the MCP tool gave the model %+v", tr)
	}
}

// testSDKPromptContent: a prompt of text, a resource link to a workspace
// file, an embedded text resource and an image, as the SDK sends them,
// reaches the model: the embedded text in the prompt, the linked file
// named, the image as an image block with its bytes.
func testSDKPromptContent(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	writeFile(t, filepath.Join(ws, "notes.txt"), "the linked file's text\n")
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(1, 1, color.RGBA{R: 255, A: 255})
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	data := base64.StdEncoding.EncodeToString(png.Bytes())
	srv.Script(say("seen"))
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "new"},
		{"op": "prompt", "prompt": []any{
			map[string]any{"type": "text", "text": "look at these: "},
			map[string]any{"type": "resource_link", "uri": "file://" + filepath.Join(ws, "notes.txt"), "name": "notes.txt"},
			map[string]any{"type": "resource", "resource": map[string]any{"uri": "file:///elsewhere/snippet.txt", "mimeType": "text/plain", "text": "an embedded snippet"}},
			map[string]any{"type": "image", "mimeType": "image/png", "data": data},
		}},
		{"op": "close"},
	}})
	if r := res.Steps[3]; r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "seen" {
		t.Fatalf("prompt: %+v stop %q text %q", r.Error, r.stopReason(), r.text("agent_message_chunk"))
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 1 {
		t.Fatalf("the model got %d requests, want 1", len(reqs))
	}
	var texts []string
	gotImage := false
	for _, b := range reqs[0].UserBlocks() {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image":
			gotImage = gotImage || b.MediaType == "image/png" && b.Data == data
		}
	}
	all := strings.Join(texts, "\n")
	for _, want := range []string{"look at these", "an embedded snippet", "notes.txt"} {
		if !strings.Contains(all, want) {
			t.Errorf("the model's prompt lacks %q:\n%s", want, all)
		}
	}
	if !gotImage {
		t.Errorf("the model got no image/png block with the image's bytes; blocks: %+v", reqs[0].UserBlocks())
	}
}

// testSDKTerminal: with a terminal offered, Bash runs in the client's
// terminal (terminal/create, a real process the client starts): its output
// reaches the model and the editor is shown the terminal in the tool call;
// a cancel while it runs ends the turn within 2 s and the command with it.
func testSDKTerminal(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	pidFile := filepath.Join(ws, "term.pid")
	srv.Script(
		bash("echo made by the editor terminal"), say("ran it"),
		bash("sleep 30 & echo $! > term.pid; wait"),
	)
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize", "terminal": true},
		{"op": "new"},
		{"op": "prompt", "text": "run echo", "answers": []string{"allow_once"}},
		{"op": "prompt", "text": "run sleep", "answers": []string{"allow_once"}, "cancelWhenFile": pidFile},
		{"op": "close"},
	}})
	r := res.Steps[3]
	if r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "ran it" {
		t.Errorf("echo prompt: %+v stop %q text %q", r.Error, r.stopReason(), r.text("agent_message_chunk"))
	}
	if len(r.Terminals) != 1 || !strings.Contains(fmt.Sprint(r.Terminals[0]), "echo made by the editor terminal") {
		t.Errorf("terminal/create calls %v, want one running the echo", r.Terminals)
	}
	shown := false
	for _, u := range r.Updates {
		if u.kind() == "tool_call_update" || u.kind() == "tool_call" {
			shown = shown || strings.Contains(fmt.Sprint(u.Update["content"]), "terminalId:term-1")
		}
	}
	if !shown {
		t.Errorf("no tool call update shows terminal term-1: %v", r.Updates)
	}
	reqs := srv.ModelRequests()
	if len(reqs) != 3 {
		t.Fatalf("the model got %d requests, want 3", len(reqs))
	}
	if tr := agenttest.ToolResults(reqs[1]); len(tr) != 1 || tr[0].IsError || !strings.Contains(tr[0].Text, "made by the editor terminal") {
		t.Errorf("the Bash in the editor's terminal gave the model %+v", tr)
	}
	r = res.Steps[4]
	t.Logf("sleep prompt: %s %d ms after session/cancel", r.stopReason(), r.CancelMs)
	if r.stopReason() != "cancelled" || r.CancelMs <= 0 || r.CancelMs > 2000 {
		t.Errorf("sleep prompt: %+v stop %q, %d ms after session/cancel; want cancelled within 2000 ms", r.Error, r.stopReason(), r.CancelMs)
	}
	// ferry ends the command it started in the editor's terminal: a kill
	// or a release while it still ran, before the turn's answer.
	stopped := false
	for _, k := range append(r.Kills, r.Releases...) {
		stopped = stopped || k.TerminalID == "term-2" && k.Running
	}
	if !stopped {
		t.Errorf("the cancelled turn left its terminal command running: kills %+v releases %+v", r.Kills, r.Releases)
	}
}

// testSDKBadInput: what the SDK client can be made to send wrong gets a
// JSON-RPC error with a proper code and ferry acp goes on: a request
// before initialize, an older protocol version (answered with ferry's),
// session/load and session/prompt of a session that does not exist, a
// method ferry does not offer (session/fork) and an unknown extension.
func testSDKBadInput(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	srv.Script(say("still fine"))
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "new", "mayFail": true},
		{"op": "initialize", "protocolVersion": 0},
		{"op": "load", "sessionId": "no-such-session"},
		{"op": "prompt", "sessionId": "no-such-session", "text": "hello?"},
		{"op": "raw", "method": "session/fork", "params": map[string]any{"sessionId": "no-such-session", "cwd": "/"}, "mayFail": true},
		{"op": "raw", "method": "_ferry/nothing", "params": map[string]any{}, "mayFail": true},
		{"op": "new"},
		{"op": "prompt", "text": "hello"},
		{"op": "close"},
	}})
	code := func(i int) int {
		r := res.Steps[i]
		if r.OK || r.Error == nil || r.Error.Code == nil {
			t.Errorf("step %d (%s) succeeded or failed with no code: %s %+v", i, r.Op, r.Result, r.Error)
			return 0
		}
		t.Logf("step %d (%s): %d %s", i, r.Op, *r.Error.Code, r.Error.Message)
		return *r.Error.Code
	}
	if c := code(1); c != -32600 {
		t.Errorf("session/new before initialize: code %d, want -32600", c)
	}
	var init struct {
		ProtocolVersion int `json:"protocolVersion"`
	}
	if err := json.Unmarshal(res.Steps[2].Result, &init); err != nil || init.ProtocolVersion != 1 {
		t.Errorf("initialize with version 0 answered %s (%v), want protocolVersion 1", res.Steps[2].Result, err)
	}
	for _, i := range []int{3, 4} {
		if c := code(i); c != -32602 && c != -32002 {
			t.Errorf("step %d (%s) of an unknown session: code %d, want -32602 or -32002", i, res.Steps[i].Op, c)
		}
		if r := res.Steps[i]; r.Error != nil && !strings.Contains(r.Error.Message+fmt.Sprint(r.Error.Data), "no-such-session") {
			t.Errorf("step %d (%s): the error %+v does not name the session", i, r.Op, r.Error)
		}
	}
	for _, i := range []int{5, 6} {
		if c := code(i); c != -32601 {
			t.Errorf("step %d (%s): code %d, want -32601 (method not found)", i, res.Steps[i].Op, c)
		}
	}
	if r := res.Steps[8]; r.stopReason() != "end_turn" || r.text("agent_message_chunk") != "still fine" {
		t.Errorf("after the bad requests: %+v stop %q text %q", r.Error, r.stopReason(), r.text("agent_message_chunk"))
	}
}

// testSDKActiveSession: the SDK's own session helper (buildSession,
// withSession, prompt, readText), as an editor built on the SDK drives a
// session, gets the turn's whole text and its stop reason.
func testSDKActiveSession(t *testing.T, js, bin string) {
	srv, tmp, ws := jsWorkspace(t)
	srv.Script(fake.Reply{Thinking: []string{"hmm"}, Text: []string{"Hello ", "from ", "ferry."}})
	res := runPlan(t, js, ferryEnv(tmp), plan{Agent: ferryACP(bin, srv), Cwd: ws, Steps: []step{
		{"op": "spawn"},
		{"op": "initialize"},
		{"op": "active", "text": "say hello"},
		{"op": "close"},
	}})
	var got struct {
		StopReason string `json:"stopReason"`
		Text       string `json:"text"`
	}
	if err := json.Unmarshal(res.Steps[2].Result, &got); err != nil || got.StopReason != "end_turn" || got.Text != "Hello from ferry." {
		t.Errorf("the SDK's session helper got %s (%v), want end_turn and the whole text", res.Steps[2].Result, err)
	}
	if th := res.Steps[2].text("agent_thought_chunk"); th != "hmm" {
		t.Errorf("thinking shown as %q, want agent_thought_chunk %q", th, "hmm")
	}
}
