package acp

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/adaptertest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// These tests drive a second real ACP agent, opencode (`opencode acp`),
// against the fake model server: ferry is proven against two independent
// ACP implementations. opencode reads and writes files itself (it sends
// fs/write_text_file only to show an allowed edit, after its own write);
// what ferry sees is its session/update stream and its permission
// requests.

// opencodeInstall is how .ci/run installs the opencode the tests pin.
const opencodeInstall = "the opencode binary: npm install --prefix DIR opencode-ai@1.18.33 (then DIR/node_modules/.bin/opencode), as .ci/run does"

// opencodeModel is the model of the fake provider opencode is given: its
// id as the fake serves it and as opencode names it (provider/model).
const (
	opencodeModel    = "fake-model"
	opencodeProvider = "fake"
)

// opencodeBinary returns FERRY_TEST_OPENCODE, or skips naming the install
// step; with FERRY_REQUIRE_OPENCODE=1 (CI) a missing one fails instead.
func opencodeBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv("FERRY_TEST_OPENCODE") == "" && os.Getenv("FERRY_REQUIRE_OPENCODE") == "1" {
		t.Fatal("FERRY_REQUIRE_OPENCODE=1 but FERRY_TEST_OPENCODE is not set: set it to " + opencodeInstall)
	}
	return adaptertest.Binary(t, "FERRY_TEST_OPENCODE", opencodeInstall)
}

// opencodeConfig is opencode's configuration for a test: one provider, an
// OpenAI-compatible one whose baseURL is the fake server (loopback), its
// one model as the model and the small (title) model; no other provider,
// no update check, no sharing, no LSP or formatter downloads; perms as
// its permissions (webfetch denied in each: no network).
func opencodeConfig(srv *fake.Server, perms map[string]any) map[string]any {
	return map[string]any{
		"$schema":           "https://opencode.ai/config.json",
		"model":             opencodeProvider + "/" + opencodeModel,
		"small_model":       opencodeProvider + "/" + opencodeModel,
		"enabled_providers": []string{opencodeProvider},
		"provider": map[string]any{opencodeProvider: map[string]any{
			"npm":     "@ai-sdk/openai-compatible", // built into opencode: nothing is installed
			"name":    "ferry's fake provider",
			"options": map[string]any{"baseURL": srv.BaseURL(fake.OpenAI), "apiKey": "sk-fake"},
			"models": map[string]any{opencodeModel: map[string]any{
				"name": "Fake model", "tool_call": true,
				"limit": map[string]any{"context": 200000, "output": 8192},
				// It takes images and PDFs: opencode drops attachments a
				// model does not declare, though its ACP promptCapabilities
				// offer them whatever the model.
				"attachment": true,
				"modalities": map[string]any{"input": []string{"text", "image", "pdf"}, "output": []string{"text"}},
			}},
		}},
		"autoupdate": false,
		"share":      "disabled",
		"lsp":        false,
		"formatter":  false,
		"snapshot":   false,
		"permission": perms,
	}
}

// opencodePermissions are the tests' opencode permissions unless a test
// says otherwise: edits ask (the user's answer decides), reads and bash
// run unasked.
var opencodePermissions = map[string]any{"edit": "ask", "bash": "allow", "webfetch": "deny"}

// opencodeEnv is the environment of an opencode whose every file (config,
// data, cache, state) lives under home, with its config file cfg and
// everything that would reach the network turned off: the models.dev
// catalogue, the update check, plugins from npm, sharing, skills and
// settings of other tools found in HOME.
func opencodeEnv(home, cfg string) []string {
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"XDG_DATA_HOME=" + filepath.Join(home, ".local", "share"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		"XDG_STATE_HOME=" + filepath.Join(home, ".local", "state"),
		"OPENCODE_CONFIG=" + cfg,
		"OPENCODE_DISABLE_MODELS_FETCH=1",
		"OPENCODE_DISABLE_AUTOUPDATE=1",
		"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
		"OPENCODE_PURE=1",
		"OPENCODE_DISABLE_SHARE=1",
		"OPENCODE_DISABLE_CLAUDE_CODE=1",
		"OPENCODE_DISABLE_EXTERNAL_SKILLS=1",
		"OPENCODE_DISABLE_PROJECT_CONFIG=1",
	}
}

// preinstallPluginTypes marks opencode's config directory dir as having
// its plugin package installed: opencode npm-installs @opencode-ai/plugin
// (with a TUI library) into every config directory it loads, from
// registry.npmjs.org, unless node_modules exists and package-lock.json
// lists every dependency package.json names. Nothing here loads a plugin.
func preinstallPluginTypes(t *testing.T, dir string) {
	t.Helper()
	deps := map[string]any{"dependencies": map[string]string{"@opencode-ai/plugin": "1.18.33"}}
	files := map[string]any{
		"package.json":      deps,
		"package-lock.json": map[string]any{"lockfileVersion": 3, "packages": map[string]any{"": deps}},
	}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, v := range files {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// opencodeSession opens `opencode acp` through ferry's ACP adapter (the
// adapter spec acp:opencode acp) on a fresh workspace, its model calls
// going to a new fake server whose replies the test scripts.
func opencodeSession(t *testing.T) (*session, *fake.Server) {
	t.Helper()
	return opencodeSessionWith(t, opencodePermissions)
}

// opencodeSessionWith is opencodeSession with opencode's permissions perms.
func opencodeSessionWith(t *testing.T, perms map[string]any) (*session, *fake.Server) {
	t.Helper()
	a, srv := opencodeAdapter(t, perms)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s := adaptertest.Open(t, ctx, a, adapter.SessionConfig{SessionID: protocol.NewID(), Workspace: protocol.Workspace{ID: "w", Name: "w", Path: t.TempDir()}})
	return s.(*session), srv
}

// opencodeAdapter is the adapter of `opencode acp` with permissions perms,
// its model calls going to a new fake server.
func opencodeAdapter(t *testing.T, perms map[string]any) (*Adapter, *fake.Server) {
	t.Helper()
	bin := opencodeBinary(t)
	srv := fake.New(t)
	srv.SetModels(fake.Model{ID: opencodeModel})
	home := t.TempDir()
	preinstallPluginTypes(t, filepath.Join(home, ".config", "opencode"))
	t.Cleanup(func() { // after Close (cleanups run last first)
		if got, _ := os.ReadDir(filepath.Join(home, ".config", "opencode", "node_modules")); len(got) > 0 {
			t.Errorf("opencode installed %d packages from npm: the test reached the network", len(got))
		}
	})
	cfg := filepath.Join(home, "opencode.json")
	b, err := json.Marshal(opencodeConfig(srv, perms))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, b, 0o600); err != nil {
		t.Fatal(err)
	}
	logs := &adaptertest.LogBuffer{}
	a, err := New(Config{Command: []string{bin, "acp"}, Env: opencodeEnv(home, cfg), Logger: logs.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs.String())
		}
	})
	return a, srv
}

// openAIToolResult returns the content of r's tool message answering call
// id ("" : none).
func openAIToolResult(r fake.Request, id string) string {
	for _, m := range r.Messages() {
		if m["role"] == "tool" && m["tool_call_id"] == id {
			if s, ok := m["content"].(string); ok {
				return s
			}
			raw, _ := json.Marshal(m["content"])
			return string(raw)
		}
	}
	return ""
}

// answerAll answers every interaction of rec with value, recording them.
func answerAll(s *session, rec *recorder, value string) <-chan *protocol.InteractionRequest {
	asked := make(chan *protocol.InteractionRequest, 16)
	go func() {
		for ir := range rec.Asks {
			asked <- ir
			_ = s.Answer(ir.InteractionID, &protocol.InteractionResponse{InteractionID: ir.InteractionID, SelectedValue: protocol.Single(value)})
		}
	}()
	return asked
}

// toolEvents returns the agent.tool.started and agent.tool.finished of
// call id.
func toolEvents(rec *recorder, id string) (*protocol.ToolStarted, *protocol.ToolFinished) {
	var st *protocol.ToolStarted
	var fin *protocol.ToolFinished
	for _, e := range rec.Events() {
		switch p := e.Payload.(type) {
		case *protocol.ToolStarted:
			if p.ToolUseID == id {
				st = p
			}
		case *protocol.ToolFinished:
			if p.ToolUseID == id {
				fin = p
			}
		}
	}
	return st, fin
}

// A prompt that reads a file and edits it: opencode runs its read and
// edit tools, asks ferry before the edit, and the file changes on disk
// once the user allows it; ferry shows both calls with their inputs, the
// read's output and the edit's diff, and the file's text reaches the
// model.
func TestOpencodeReadsAndEditsFile(t *testing.T) {
	t.Parallel()
	s, srv := opencodeSession(t)
	file := filepath.Join(s.ws, "notes.txt")
	writeFile(t, s.ws, "notes.txt", "# Notes\n\ncolour: red\n")
	srv.Script(
		fake.Reply{Text: []string{"Reading."}, Usage: llm.Usage{InputTokens: 100, OutputTokens: 10},
			ToolCalls: []fake.ToolCall{{ID: "call_read", Name: "read", Input: map[string]any{"filePath": file}}}},
		fake.Reply{Text: []string{"Editing."}, Usage: llm.Usage{InputTokens: 150, OutputTokens: 20},
			ToolCalls: []fake.ToolCall{{ID: "call_edit", Name: "edit", Input: map[string]any{"filePath": file, "oldString": "colour: red", "newString": "colour: blue"}}}},
		fake.Reply{Text: []string{"The colour ", "is blue now."}, Usage: llm.Usage{InputTokens: 200, OutputTokens: 5}},
	)
	rec := newRecorder()
	asked := answerAll(s, rec, protocol.AllowOnce)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, turn("change the colour in notes.txt to blue"), rec.emit)
	if err != nil || res.StopReason != protocol.StopEndTurn || !strings.Contains(res.Text, "The colour is blue now.") {
		t.Fatalf("Run = %+v, %v (events %v)", res, err, rec.Types())
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "# Notes\n\ncolour: blue\n" {
		t.Fatalf("notes.txt = %q, %v", b, err)
	}
	// The edit was asked about, as a permission of the edit call.
	select {
	case ir := <-asked:
		if ir.Kind != protocol.InteractionPermission || ir.ToolUseID != "call_edit" || ir.ToolName != "Edit" || ir.Diff == nil || ir.Diff.Path != "notes.txt" {
			t.Errorf("interaction = %+v", ir)
		}
	default:
		t.Error("opencode did not ask before the edit")
	}
	st, fin := toolEvents(rec, "call_read")
	if st == nil || st.ToolName != "Read" || !strings.Contains(string(st.Input), `"filePath"`) ||
		fin == nil || fin.Status != protocol.ToolOK || !strings.Contains(fin.Output, "colour: red") {
		t.Errorf("read: started %+v, finished %+v", st, fin)
	}
	st, fin = toolEvents(rec, "call_edit")
	if st == nil || st.ToolName != "Edit" || !strings.Contains(string(st.Input), `"newString":"colour: blue"`) ||
		fin == nil || fin.Status != protocol.ToolOK || fin.Diff == nil || fin.Diff.Path != "notes.txt" {
		t.Errorf("edit: started %+v, finished %+v", st, fin)
	}
	// The model saw the file's text as the read's result, then the edit's.
	reqs := srv.ModelRequests()
	if len(reqs) != 3 || srv.Pending() != 0 {
		t.Fatalf("%d model requests, %d replies left; want 3, 0", len(reqs), srv.Pending())
	}
	if got := openAIToolResult(reqs[1], "call_read"); !strings.Contains(got, "colour: red") {
		t.Errorf("the read's result for the model = %q", got)
	}
	if got := openAIToolResult(reqs[2], "call_edit"); got == "" {
		t.Error("the edit's result did not reach the model")
	}
	if len(srv.TitleRequests()) == 0 {
		t.Error("opencode asked for no title: the fake's title answer is untested")
	}
	// opencode reports its last model call's usage as the turn's.
	u := rec.OfType(protocol.TypeUsage)
	if len(u) != 1 || u[0].(*protocol.Usage).InputTokens != 200 || u[0].(*protocol.Usage).OutputTokens != 5 {
		b, _ := json.Marshal(u)
		t.Errorf("usage events = %s, want one with the last call's 200 and 5 tokens", b)
	}
}

// A denied permission: opencode does not edit the file, the call ends as
// an error, and the denial reaches the model (with the next prompt:
// opencode ends a turn whose call the user rejected).
func TestOpencodeDeniedPermission(t *testing.T) {
	t.Parallel()
	s, srv := opencodeSession(t)
	file := filepath.Join(s.ws, "keep.txt")
	writeFile(t, s.ws, "keep.txt", "keep me\n")
	srv.Script(
		fake.Reply{Text: []string{"Reading."}, ToolCalls: []fake.ToolCall{{ID: "call_read", Name: "read", Input: map[string]any{"filePath": file}}}},
		fake.Reply{Text: []string{"Writing."}, ToolCalls: []fake.ToolCall{{ID: "call_write", Name: "write", Input: map[string]any{"filePath": file, "content": "gone\n"}}}},
	)
	rec := newRecorder()
	asked := answerAll(s, rec, protocol.Deny)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, turn("overwrite keep.txt"), rec.emit)
	if err != nil || res.StopReason != protocol.StopEndTurn {
		t.Fatalf("Run = %+v, %v (events %v)", res, err, rec.Types())
	}
	select {
	case ir := <-asked:
		if ir.ToolUseID != "call_write" || ir.ToolName != "Edit" {
			t.Errorf("interaction = %+v", ir)
		}
	default:
		t.Fatalf("opencode did not ask before the write (events %v)", rec.Types())
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me\n" {
		t.Fatalf("keep.txt = %q after a deny", b)
	}
	if _, fin := toolEvents(rec, "call_write"); fin == nil || fin.Status != protocol.ToolError || !strings.Contains(fin.Output, "rejected") {
		t.Errorf("write finished = %+v", fin)
	}
	srv.Script(fake.Reply{Text: []string{"Understood, I left it."}})
	rec2 := newRecorder()
	res, err = s.Run(ctx, turn("why did you stop?"), rec2.emit)
	if err != nil || !strings.Contains(res.Text, "Understood, I left it.") {
		t.Fatalf("Run after the deny = %+v, %v", res, err)
	}
	reqs := srv.ModelRequests()
	if got := openAIToolResult(reqs[len(reqs)-1], "call_write"); !strings.Contains(got, "rejected") {
		t.Errorf("the model got %q as the write's result, want the rejection", got)
	}
	if srv.Pending() != 0 {
		t.Errorf("%d replies left", srv.Pending())
	}
}

// A cancel while opencode runs a long bash command: the turn ends at
// once as cancelled, opencode answers the prompt (the session goes on),
// the command is stopped, and Close leaves no process of opencode's
// behind.
func TestOpencodeCancel(t *testing.T) {
	t.Parallel()
	s, srv := opencodeSession(t)
	// The duration is the marker: sleep's own command line holds it, and so
	// does that of any shell around it.
	marker := fmt.Sprintf("120.%09d", time.Now().Nanosecond())
	srv.Script(
		fake.Reply{Text: []string{"Waiting."}, ToolCalls: []fake.ToolCall{{ID: "call_sleep", Name: "bash",
			Input: map[string]any{"command": "sleep " + marker, "description": "Wait two minutes"}}}},
	)
	rec := newRecorder()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan adapter.Result, 1)
	go func() { res, _ := s.Run(ctx, turn("wait for two minutes"), rec.emit); done <- res }()
	// Cancel once the command runs.
	deadline := time.Now().Add(time.Minute)
	for len(withMarker(marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the command never ran (events %v)", rec.Types())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancelled := time.Now()
	cancel()
	select {
	case res := <-done:
		if res.StopReason != protocol.StopCancelled {
			t.Fatalf("Run = %+v", res)
		}
		if d := time.Since(cancelled); d > 2*time.Second {
			t.Errorf("Run returned %v after the cancel", d)
		}
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after cancel")
	}
	// The command is stopped with the turn.
	for deadline := time.Now().Add(10 * time.Second); len(withMarker(marker)) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled command still runs: %v", withMarker(marker))
		}
		time.Sleep(20 * time.Millisecond)
	}
	// opencode answered the cancelled prompt: the next one runs.
	srv.Script(fake.Reply{Text: []string{"Still here."}})
	_, res, err := run(t, s, turn("are you there?"))
	if err != nil || !strings.Contains(res.Text, "Still here.") {
		t.Fatalf("Run after cancel = %+v, %v", res, err)
	}
	pgid := s.c.cmd.Process.Pid
	if len(groupMembers(pgid)) == 0 {
		t.Fatal("opencode's process group is empty before Close")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); len(groupMembers(pgid)) > 0; {
		if time.Now().After(deadline) {
			t.Fatalf("after Close opencode's group still has %v", groupMembers(pgid))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// withMarker lists the live processes whose command line holds marker.
func withMarker(marker string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err == nil && strings.Contains(string(b), marker) && adaptertest.ProcessAlive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// opencode reads files itself and, as configured, without asking: a
// prompt's rule denying the read cannot stop it beforehand. ferry sees the
// read complete, stops the turn and says so (agent.error, stop reason
// error); the session goes on. The file's text still reaches the model:
// opencode's next model call goes out as the read completes, before
// ferry's session/cancel arrives (3 runs of 3).
func TestOpencodeReadARuleDeniesStopsTheTurn(t *testing.T) {
	t.Parallel()
	s, srv := opencodeSession(t)
	file := filepath.Join(s.ws, "secret.txt")
	writeFile(t, s.ws, "secret.txt", "the secret word is pelican\n")
	srv.Script(
		fake.Reply{Text: []string{"Reading."}, ToolCalls: []fake.ToolCall{{ID: "call_secret", Name: "read", Input: map[string]any{"filePath": file}}}},
		// opencode's next call, racing ferry's session/cancel.
		fake.Reply{Text: []string{"The word is pelican."}},
	)
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, withOverrides("what is the secret word?", &protocol.ConfigOverrides{DeniedTools: []string{"Read(secret.txt)"}}), rec.emit)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("Run = %+v, %v; want stop reason error (events %v)", res, err, rec.Types())
	}
	if errs := rec.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Message, "Read on secret.txt") {
		t.Fatalf("agent.error = %+v", errs)
	}
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		return fake.Reply{Text: []string{"Still here."}}, len(r.ToolNames()) > 0
	})
	_, res, err = run(t, s, turn("are you there?"))
	if err != nil || !strings.Contains(res.Text, "Still here.") {
		t.Fatalf("Run after the stop = %+v, %v", res, err)
	}
}

// Set to ask before reads, opencode is held to a prompt's rule: its
// permission request reaches ferry, which rejects it without asking the
// user; the file's text never reaches the model.
func TestOpencodeAskingIsHeldToARule(t *testing.T) {
	t.Parallel()
	s, srv := opencodeSessionWith(t, map[string]any{"read": "ask", "edit": "ask", "bash": "ask", "webfetch": "deny"})
	file := filepath.Join(s.ws, "secret.txt")
	writeFile(t, s.ws, "secret.txt", "the secret word is pelican\n")
	srv.Script(fake.Reply{Text: []string{"Reading."}, ToolCalls: []fake.ToolCall{{ID: "call_secret", Name: "read", Input: map[string]any{"filePath": file}}}})
	rec := newRecorder()
	answerAll(s, rec, protocol.AllowOnce) // nobody should be asked
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := s.Run(ctx, withOverrides("what is the secret word?", &protocol.ConfigOverrides{DeniedTools: []string{"Read(secret.txt)"}}), rec.emit)
	if err != nil || res.StopReason != protocol.StopEndTurn || len(rec.Errors()) > 0 {
		t.Fatalf("Run = %+v, %v, %+v (events %v)", res, err, rec.Errors(), rec.Types())
	}
	if n := rec.Count(protocol.TypeInteractionRequest); n != 0 {
		t.Errorf("the user was asked %d times", n)
	}
	if _, fin := toolEvents(rec, "call_secret"); fin == nil || fin.Status != protocol.ToolError || strings.Contains(fin.Output, "pelican") {
		t.Errorf("the read finished as %+v", fin)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(string(r.Raw), "pelican") {
			t.Fatal("the secret reached the model")
		}
	}
}

// opencode offers its modes (build, plan) as a config option, not as ACP
// modes: the session reports plan, and both modes switch
// (session/set_config_option). In plan mode opencode's write does not
// happen, and nobody is asked.
func TestOpencodeModes(t *testing.T) {
	t.Parallel()
	s, srv := opencodeSession(t)
	if c := s.capability(); !slices.Equal(c.Modes, []string{protocol.ModeDefault, protocol.ModePlan}) {
		t.Fatalf("opencode's session reports modes %v, want default and plan", c.Modes)
	}
	for _, m := range []string{protocol.ModePlan, protocol.ModeDefault, protocol.ModePlan} {
		if err := s.SetMode(m, nil); err != nil {
			t.Fatalf("SetMode(%s): %v", m, err)
		}
	}
	file := filepath.Join(s.ws, "keep.txt")
	writeFile(t, s.ws, "keep.txt", "keep me\n")
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if openAIToolResult(r, "call_plan_write") == "" {
			return fake.Reply{Text: []string{"Writing."}, ToolCalls: []fake.ToolCall{{ID: "call_plan_write", Name: "write", Input: map[string]any{"filePath": file, "content": "gone\n"}}}}, true
		}
		return fake.Reply{Text: []string{"Done."}}, true
	})
	rec := newRecorder()
	answerAll(s, rec, protocol.AllowOnce) // nobody should be asked
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := s.Run(ctx, turn("overwrite keep.txt"), rec.emit); err != nil {
		t.Fatal(err)
	}
	if n := rec.Count(protocol.TypeInteractionRequest); n != 0 {
		t.Errorf("the user was asked %d times in plan mode", n)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me\n" {
		t.Fatalf("keep.txt = %q in plan mode", b)
	}
}
