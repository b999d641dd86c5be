package acp

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp/acppeer"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// withOverrides is turn(text) with config_overrides o.
func withOverrides(text string, o *protocol.ConfigOverrides) adapter.Turn {
	tn := turn(text)
	tn.Request.ConfigOverrides = o
	return tn
}

// writeFile writes name (and its folders) under dir.
func writeFile(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A prompt's denied_tools apply to the agent's fs calls, through symbolic
// links too: Read rules to fs/read_text_file, Write and Edit rules to
// fs/write_text_file. The rules are the prompt's only.
func TestDeniedToolsRefuseFileSystemCalls(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{})
	ws := p.ws
	writeFile(t, ws, "secret.txt", "top secret\n")
	writeFile(t, ws, "ok.txt", "fine\n")
	writeFile(t, ws, "protected/keep.txt", "keep me\n")
	if err := os.Symlink("secret.txt", filepath.Join(ws, "link_to_secret")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("protected", filepath.Join(ws, "plink")); err != nil {
		t.Fatal(err)
	}
	abs := func(name string) string { return filepath.Join(ws, filepath.FromSlash(name)) }
	read := func(name string) step {
		return step{Request: &acppeer.Request{Method: "fs/read_text_file", Params: map[string]any{"sessionId": acppeer.SessionID, "path": abs(name)}}}
	}
	write := func(name, content string) step {
		return step{Request: &acppeer.Request{Method: "fs/write_text_file", Params: map[string]any{"sessionId": acppeer.SessionID, "path": abs(name), "content": content}}}
	}
	steps := []step{
		read("secret.txt"),              // 0: denied
		read("link_to_secret"),          // 1: denied through the link
		read("ok.txt"),                  // 2: fine
		read("plink/keep.txt"),          // 3: fine: an Edit rule does not stop reads
		write("plink/keep.txt", "gone"), // 4: denied through the link (read in full before)
		write("protected/new.txt", "x"), // 5: denied
		write("ok.txt", "better\n"),     // 6: fine
	}
	denied := map[int]bool{0: true, 1: true, 4: true, 5: true}
	p.setScript(t, acppeer.Script{Turns: [][]step{steps, {read("secret.txt")}}})
	s := p.open(t, "")
	o := &protocol.ConfigOverrides{DeniedTools: []string{"Read(secret.txt)", "Edit(protected/**)"}}
	if _, res, err := run(t, s, withOverrides("files", o)); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	resp := p.responses(t)
	if len(resp) != len(steps) {
		t.Fatalf("%d responses, want %d: %v", len(resp), len(steps), resp)
	}
	for i, r := range resp {
		if !denied[i] {
			if _, isErr := r["error"]; isErr {
				t.Errorf("step %d: %v, want success", i, r)
			}
			continue
		}
		code, fc := rpcCode(t, r)
		msg, _ := r["error"].(map[string]any)["message"].(string)
		if code != tools.CodeDenied || fc != tools.CodeDenied || !strings.Contains(msg, "permission rule") {
			t.Errorf("step %d: %v, want a refusal by a permission rule (code %d)", i, r, tools.CodeDenied)
		}
		if strings.Contains(msg, "top secret") || strings.Contains(msg, ws) {
			t.Errorf("step %d: the message leaks: %q", i, msg)
		}
	}
	if b, _ := os.ReadFile(abs("protected/keep.txt")); string(b) != "keep me\n" {
		t.Errorf("protected/keep.txt = %q", b)
	}
	if _, err := os.Stat(abs("protected/new.txt")); !os.IsNotExist(err) {
		t.Errorf("protected/new.txt was created: %v", err)
	}
	if b, _ := os.ReadFile(abs("ok.txt")); string(b) != "better\n" {
		t.Errorf("ok.txt = %q", b)
	}
	// The next prompt has no such rule.
	if _, res, err := run(t, s, turn("again")); err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	resp = p.responses(t)
	if last := resp[len(resp)-1]; last["error"] != nil {
		t.Errorf("a read in a prompt without rules = %v", last)
	}
}

// A permission request a prompt's denied_tools cover is rejected without
// asking the user; one its allowed_tools cover is allowed once without
// asking; anything else is asked as before.
func TestPermissionRulesAnswerWithoutAsking(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{})
	ws := p.ws
	writeFile(t, ws, "protected/keep.txt", "keep me\n")
	if err := os.Symlink("protected", filepath.Join(ws, "plink")); err != nil {
		t.Fatal(err)
	}
	ask := func(id, kind, file string) step {
		return step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{
			"sessionId": acppeer.SessionID,
			"toolCall": map[string]any{"toolCallId": id, "title": kind + " " + file, "kind": kind,
				"rawInput":  map[string]any{"file_path": filepath.Join(ws, file)},
				"locations": []any{map[string]any{"path": filepath.Join(ws, file)}}},
			"options": []any{
				map[string]any{"optionId": "always", "name": "Always allow", "kind": "allow_always"},
				map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
				map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
			},
		}}}
	}
	bash := step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{
		"sessionId": acppeer.SessionID,
		"toolCall":  map[string]any{"toolCallId": "call_bash", "title": "rm -rf /", "kind": "execute", "rawInput": map[string]any{"command": "rm -rf build"}},
		"options": []any{
			map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"},
			map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"},
		},
	}}}
	// A request may leave out what the call's updates said.
	announce := step{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_bare", "title": "Edit", "kind": "edit",
		"rawInput": map[string]any{"file_path": filepath.Join(ws, "protected", "keep.txt")}}}
	bare := step{Request: &acppeer.Request{Method: "session/request_permission", Echo: true, Params: map[string]any{
		"sessionId": acppeer.SessionID,
		"toolCall":  map[string]any{"toolCallId": "call_bare", "title": "Edit"},
		"options":   []any{map[string]any{"optionId": "yes", "name": "Allow", "kind": "allow_once"}, map[string]any{"optionId": "no", "name": "Reject", "kind": "reject_once"}},
	}}}
	p.setScript(t, acppeer.Script{Turns: [][]step{{
		announce, bare, // denied by what the update said
		ask("call_denied", "edit", "plink/keep.txt"), // denied through the link
		ask("call_read", "read", "notes.txt"),        // denied
		bash,                                         // denied
		ask("call_allowed", "edit", "src/main.go"),   // allowed by a rule
		ask("call_other", "edit", "other.txt"),       // asked
	}}})
	s := p.open(t, "")
	o := &protocol.ConfigOverrides{
		DeniedTools:  []string{"Edit(protected/**)", "Read(notes.txt)", "Bash(rm:*)"},
		AllowedTools: []string{"Edit(src/**)"},
	}
	rec := newRecorder()
	done := make(chan struct{})
	var (
		res adapter.Result
		err error
	)
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		res, err = s.Run(ctx, withOverrides("go", o), rec.emit)
	}()
	ir := rec.ask(t)
	if ir.ToolUseID != "call_other" {
		t.Fatalf("the user was asked about %s (%s); only call_other should reach the user", ir.ToolUseID, ir.Title)
	}
	if err := s.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}); err != nil {
		t.Fatal(err)
	}
	<-done
	if err != nil || res.StopReason != "end_turn" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	select {
	case ir := <-rec.Asks:
		t.Fatalf("a second interaction: %+v", ir)
	default:
	}
	answers := strings.Split(strings.TrimSpace(res.Text), "session/request_permission => ")[1:]
	want := []string{`"no"`, `"no"`, `"no"`, `"no"`, `"yes"`, `"no"`}
	if len(answers) != len(want) {
		t.Fatalf("answers = %q", res.Text)
	}
	for i, a := range answers {
		if !strings.Contains(a, `"optionId":`+want[i]) {
			t.Errorf("answer %d = %s, want optionId %s", i, a, want[i])
		}
	}
}

// Settings an ACP agent cannot honour fail the prompt with a coded
// unsupported naming the key; a bad rule fails it with bad_request naming
// the rule. The agent gets no prompt.
func TestUnsupportedOverridesFailThePrompt(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{Turns: [][]step{{{Text: "ran"}}, {{Text: "ran"}}, {{Text: "ran"}}}})
	s := p.open(t, "")
	for _, tc := range []struct {
		o     protocol.ConfigOverrides
		code  string
		field string
	}{
		{protocol.ConfigOverrides{JSONSchema: []byte(`{"type":"object"}`)}, protocol.CodeUnsupported, "payload.config_overrides.json_schema"},
		{protocol.ConfigOverrides{MaxTurns: intp(3)}, protocol.CodeUnsupported, "payload.config_overrides.max_turns"},
		{protocol.ConfigOverrides{DeniedTools: []string{"Read(a)", "Frob(x)"}}, "bad_request", "config_overrides.denied_tools[1]"},
		{protocol.ConfigOverrides{AllowedTools: []string{"Read(../x)"}}, "bad_request", "config_overrides.allowed_tools[0]"},
	} {
		rec, res, err := run(t, s, withOverrides("go", &tc.o))
		if err != nil || res.StopReason != "error" {
			t.Fatalf("%s: Run = %+v, %v", tc.field, res, err)
		}
		evs := rec.Events()
		ae, ok := evs[0].Payload.(*protocol.AgentError)
		if len(evs) != 1 || !ok || ae.Code != tc.code || !strings.Contains(ae.Message, tc.field) {
			t.Errorf("%s: events = %+v", tc.field, evs)
		}
	}
	if got := p.receivedMethod(t, "session/prompt"); len(got) != 0 {
		t.Fatalf("the agent got %d prompts", len(got))
	}
	// output_format is ferry's to render (ferry run --output-format json
	// with an ACP agent): the agent runs the prompt whatever its value.
	for _, f := range []string{"text", "json", "stream-json"} {
		if _, res, err := run(t, s, withOverrides("go", &protocol.ConfigOverrides{OutputFormat: f})); err != nil || res.StopReason != "end_turn" || res.Text != "ran" {
			t.Fatalf("output_format %s: Run = %+v, %v", f, res, err)
		}
	}
}

// An agent that runs a call a rule of the prompt denies without asking
// ferry (opencode reads and edits files itself, and asks only what its own
// config says) cannot be held to the rule beforehand. A denied call that
// completes is proof that it was not held: ferry ends the turn (session/
// cancel) with an agent.error naming the rule's tool and the path, and stop
// reason error. A denied call that failed (ferry refused its fs request)
// and an allowed one go on as before, and the next prompt without the rule
// is not stopped.
func TestDeniedCallTheAgentRanItselfStopsTheTurn(t *testing.T) {
	t.Parallel()
	p := newPeer(t, acppeer.Script{})
	writeFile(t, p.ws, "secret.txt", "top secret\n")
	writeFile(t, p.ws, "ok.txt", "fine\n")
	secret, ok := filepath.Join(p.ws, "secret.txt"), filepath.Join(p.ws, "ok.txt")
	call := func(id, status, path string) step {
		return step{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": "read", "kind": "read", "status": status,
			"locations": []any{map[string]any{"path": path}}, "rawInput": map[string]any{"filePath": path}}}
	}
	p.setScript(t, acppeer.Script{Turns: [][]step{
		{
			call("call_ok", "completed", ok),
			call("call_refused", "failed", secret),
			{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": "call_itself", "title": "read", "kind": "read", "status": "pending", "rawInput": map[string]any{}}},
			// Only its input names the path, as opencode's filePath.
			{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_itself", "status": "in_progress",
				"rawInput": map[string]any{"filePath": secret}}},
			{Update: map[string]any{"sessionUpdate": "tool_call_update", "toolCallId": "call_itself", "status": "completed",
				"content": []any{map[string]any{"type": "content", "content": map[string]any{"type": "text", "text": "top secret"}}}}},
			{WaitCancel: true},
			{Respond: map[string]any{"stopReason": "cancelled"}},
		},
		{call("call_later", "completed", secret), {Respond: map[string]any{"stopReason": "end_turn"}}},
	}})
	s := p.open(t, "")
	o := &protocol.ConfigOverrides{DeniedTools: []string{"Read(secret.txt)"}}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rec := newRecorder()
	res, err := s.Run(ctx, withOverrides("read the secret", o), rec.emit)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("Run = %+v, %v; want stop reason error (events %v)", res, err, rec.Types())
	}
	errs := rec.Errors()
	if len(errs) != 1 || errs[0].Code != protocol.AgentCodeAgentError || !strings.Contains(errs[0].Message, "Read") ||
		!strings.Contains(errs[0].Message, "secret.txt") || strings.Contains(errs[0].Message, p.ws) {
		t.Fatalf("agent.error = %+v, want one naming Read and secret.txt (and no absolute path)", errs)
	}
	if n := len(p.receivedMethod(t, "session/cancel")); n != 1 {
		t.Errorf("%d session/cancel, want 1", n)
	}
	rec2, res, err := run(t, s, turn("read it again"))
	if err != nil || res.StopReason != protocol.StopEndTurn || len(rec2.Errors()) > 0 {
		t.Fatalf("the next prompt, without the rule: %+v, %v, %+v", res, err, rec2.Errors())
	}
}

// The same holds for the mode: a writing call that completes in plan mode
// (the agent edited with its own tools, unasked) ends the turn with an
// agent.error naming the mode; a read in plan mode goes on.
func TestWriteTheAgentRanItselfInPlanModeStopsTheTurn(t *testing.T) {
	t.Parallel()
	modes := map[string]any{"modes": map[string]any{"currentModeId": "build", "availableModes": []any{
		map[string]any{"id": "build", "name": "build"}, map[string]any{"id": "plan", "name": "plan"}}}}
	p := newPeer(t, acppeer.Script{Session: modes})
	a := filepath.Join(p.ws, "a.go")
	call := func(id, kind, path string) step {
		return step{Update: map[string]any{"sessionUpdate": "tool_call", "toolCallId": id, "title": kind, "kind": kind, "status": "completed",
			"locations": []any{map[string]any{"path": path}}, "rawInput": map[string]any{"filePath": path}}}
	}
	p.setScript(t, acppeer.Script{Session: modes, Turns: [][]step{{
		call("call_read", "read", a),
		call("call_edit", "edit", a),
		{WaitCancel: true},
		{Respond: map[string]any{"stopReason": "cancelled"}},
	}}})
	s := p.open(t, "")
	if err := s.SetMode(protocol.ModePlan, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	rec := newRecorder()
	res, err := s.Run(ctx, turn("plan it"), rec.emit)
	if err != nil || res.StopReason != protocol.StopError {
		t.Fatalf("Run = %+v, %v; want stop reason error (events %v)", res, err, rec.Types())
	}
	if errs := rec.Errors(); len(errs) != 1 || !strings.Contains(errs[0].Message, "Edit on a.go") || !strings.Contains(errs[0].Message, "plan mode") {
		t.Fatalf("agent.error = %+v, want one naming Edit on a.go and plan mode", errs)
	}
}
