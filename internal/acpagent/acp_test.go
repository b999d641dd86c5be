package acpagent_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"image"
	"image/color"
	pngenc "image/png"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

func read(path string) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": path}}}}
}

func edit(path, old, neu string) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": path, "old_string": old, "new_string": neu}}}}
}

func say(s string) fake.Reply { return fake.Reply{Text: []string{s}} }

// workspace is a fresh workspace holding greet.txt.
func workspace(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "greet.txt"), []byte("hello world\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// toolCalls are the tool_call starts of the updates; finals the last
// status each call reached, with its content.
func toolCalls(us []acp.SessionNotification) (starts []*acp.SessionUpdateToolCall, finals map[acp.ToolCallId]*acp.SessionToolCallUpdate) {
	finals = map[acp.ToolCallId]*acp.SessionToolCallUpdate{}
	for _, u := range us {
		if tc := u.Update.ToolCall; tc != nil {
			starts = append(starts, tc)
		}
		if tu := u.Update.ToolCallUpdate; tu != nil && tu.Status != nil &&
			(*tu.Status == acp.ToolCallStatusCompleted || *tu.Status == acp.ToolCallStatusFailed) {
			finals[tu.ToolCallId] = tu
		}
	}
	return starts, finals
}

func TestEditAskedAllowDenyAlways(t *testing.T) {
	for _, c := range []struct {
		name   string
		kind   acp.PermissionOptionKind
		edits  int
		asks   int
		want   string
		status acp.ToolCallStatus
	}{
		{"allow", acp.PermissionOptionKindAllowOnce, 1, 1, "hello ferry\n", acp.ToolCallStatusCompleted},
		{"deny", acp.PermissionOptionKindRejectOnce, 1, 1, "hello world\n", acp.ToolCallStatusFailed},
		// Allowed always on the first edit: the second is not asked.
		{"always", acp.PermissionOptionKindAllowAlways, 2, 1, "hello acp\n", acp.ToolCallStatusCompleted},
		// Denied always on the first edit: ferry acp denies the second
		// itself.
		{"never", acp.PermissionOptionKindRejectAlways, 2, 1, "hello world\n", acp.ToolCallStatusFailed},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := newModel(t)
			dir := workspace(t)
			replies := []fake.Reply{read("greet.txt"), edit("greet.txt", "world", "ferry")}
			if c.edits == 2 {
				replies = append(replies, edit("greet.txt", "ferry", "acp"))
			}
			m.srv.Script(append(replies, say("Done."))...)
			e := newEditor(t, dir, t.TempDir(), m.args()...)
			e.setAnswer(choose(c.kind))
			init := e.initialize(acp.ClientCapabilities{})
			if init.ProtocolVersion != acp.ProtocolVersionNumber || !init.AgentCapabilities.LoadSession || init.AgentInfo == nil || init.AgentInfo.Name != "ferry" {
				t.Fatalf("initialize answered %+v", init)
			}
			s := e.newSession(dir)
			e.mustPrompt(s.SessionId, "Change world in greet.txt", acp.StopReasonEndTurn)
			b, _ := os.ReadFile(filepath.Join(dir, "greet.txt"))
			if string(b) != c.want {
				t.Errorf("greet.txt holds %q, want %q", b, c.want)
			}
			e.mu.Lock()
			asked := e.asked
			updates := e.updates
			e.mu.Unlock()
			if len(asked) != c.asks {
				t.Fatalf("asked %d times, want %d", len(asked), c.asks)
			}
			q := asked[0]
			var kinds []string
			for _, o := range q.Options {
				kinds = append(kinds, string(o.Kind))
			}
			if strings.Join(kinds, ",") != "allow_once,allow_always,reject_once,reject_always" {
				t.Errorf("the permission offers %v", kinds)
			}
			if q.ToolCall.Kind == nil || *q.ToolCall.Kind != acp.ToolKindEdit || len(q.ToolCall.Content) != 1 || q.ToolCall.Content[0].Diff == nil ||
				q.ToolCall.Content[0].Diff.NewText != "ferry" {
				t.Errorf("the permission's tool call has no edit diff: %+v", q.ToolCall)
			}
			starts, finals := toolCalls(updates)
			var editCall *acp.SessionUpdateToolCall
			for _, s := range starts {
				if s.Kind == acp.ToolKindEdit {
					editCall = s
					break
				}
			}
			if editCall == nil {
				t.Fatalf("no edit tool_call in %s", e.dump())
			}
			if len(editCall.Locations) != 1 || editCall.Locations[0].Path != filepath.Join(dir, "greet.txt") {
				t.Errorf("the edit's locations are %+v", editCall.Locations)
			}
			f := finals[editCall.ToolCallId]
			if f == nil || *f.Status != c.status {
				t.Fatalf("the edit ended %+v, want %s", f, c.status)
			}
			if c.status == acp.ToolCallStatusCompleted && (len(f.Content) == 0 || f.Content[0].Diff == nil ||
				f.Content[0].Diff.Path != filepath.Join(dir, "greet.txt") || f.Content[0].Diff.NewText != "ferry" ||
				f.Content[0].Diff.OldText == nil || *f.Content[0].Diff.OldText != "world") {
				t.Errorf("the finished edit shows no diff: %+v", f.Content)
			}
			agent, _ := e.text(s.SessionId)
			if !strings.Contains(agent, "Done.") {
				t.Errorf("the agent's text %q lacks its answer", agent)
			}
		})
	}
}

func TestCancelEndsTheTurnWithinTwoSeconds(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	m.srv.Script(fake.Reply{Text: []string{"Thinking it over"}, Hold: true})
	e := newEditor(t, dir, t.TempDir(), m.args()...)
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(dir)
	done := make(chan acp.PromptResponse, 1)
	go func() {
		r, err := e.prompt(s.SessionId, "Think long")
		if err != nil {
			t.Errorf("prompt: %v", err)
		}
		done <- r
	}()
	e.waitFor("the streamed text", func(us []acp.SessionNotification) bool {
		for _, u := range us {
			if c := u.Update.AgentMessageChunk; c != nil && c.Content.Text != nil && strings.Contains(c.Content.Text.Text, "Thinking") {
				return true
			}
		}
		return false
	})
	start := time.Now()
	if err := e.conn.Cancel(e.ctx(), acp.CancelNotification{SessionId: s.SessionId}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.StopReason != acp.StopReasonCancelled {
			t.Errorf("the cancelled turn ended with %s", r.StopReason)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the turn ended %s after session/cancel, want at most 2 s", d)
		}
	case <-time.After(wait):
		t.Fatal("the cancelled turn never ended")
	}
}

func TestBadInputGetsCodedErrors(t *testing.T) {
	dir := workspace(t)
	r := newRaw(t, dir, t.TempDir(), "--agent", "echo")
	for _, c := range []struct {
		name, line string
		code       int
	}{
		{"before initialize", `{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[]}}`, -32600},
		{"not JSON", `{"jsonrpc":"2.0","id":2,"method":`, -32700},
		{"not an object", `[1,2,3]`, -32600},
		{"no jsonrpc", `{"id":3,"method":"initialize","params":{"protocolVersion":1}}`, -32600},
		{"neither request nor response", `{"jsonrpc":"2.0","params":{}}`, -32600},
		{"unknown method", `{"jsonrpc":"2.0","id":4,"method":"session/fly","params":{}}`, -32601},
		{"bad params", `{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"one"}}`, -32602},
	} {
		r.send(c.line)
		m := r.next()
		if m.Error == nil || m.Error.Code != c.code {
			t.Errorf("%s: answered %+v, want code %d", c.name, m, c.code)
		}
	}
	// A line over 10 MiB would end the SDK's reader (and the process):
	// it is refused alone.
	r.send(`{"jsonrpc":"2.0","id":12,"method":"initialize","params":{"pad":"` + strings.Repeat("x", 10<<20) + `"}}`)
	if m := r.next(); m.Error == nil || m.Error.Code != -32600 {
		t.Errorf("a line over 10 MiB: answered %+v, want -32600", m)
	}
	// An older client gets ferry's version: it decides whether to go on.
	r.send(`{"jsonrpc":"2.0","id":6,"method":"initialize","params":{"protocolVersion":0}}`)
	if m := r.next(); m.Error != nil || !strings.Contains(string(m.Result), `"protocolVersion":1`) {
		t.Errorf("initialize with version 0 answered %+v %s", m.Error, m.Result)
	}
	for _, c := range []struct {
		name, line string
		code       int
	}{
		{"unknown session", `{"jsonrpc":"2.0","id":7,"method":"session/prompt","params":{"sessionId":"nope","prompt":[{"type":"text","text":"hi"}]}}`, -32602},
		{"load of an unknown session", `{"jsonrpc":"2.0","id":8,"method":"session/load","params":{"sessionId":"nope","cwd":"` + dir + `","mcpServers":[]}}`, -32002},
		{"relative cwd", `{"jsonrpc":"2.0","id":9,"method":"session/new","params":{"cwd":"rel/dir","mcpServers":[]}}`, -32602},
		{"cwd not a directory", `{"jsonrpc":"2.0","id":10,"method":"session/new","params":{"cwd":"` + filepath.Join(dir, "greet.txt") + `","mcpServers":[]}}`, -32602},
	} {
		r.send(c.line)
		m := r.next()
		if m.Error == nil || m.Error.Code != c.code {
			t.Errorf("%s: answered %+v, want code %d", c.name, m, c.code)
		}
	}
	// Still serving after all that.
	r.send(`{"jsonrpc":"2.0","id":11,"method":"session/new","params":{"cwd":"` + dir + `","mcpServers":[]}}`)
	if m := r.next(); m.Error != nil || !strings.Contains(string(m.Result), "sessionId") {
		t.Fatalf("session/new after bad input answered %+v %s", m.Error, m.Result)
	}
	_ = r.in.Close()
	if err := r.exit.wait(t); err != nil {
		t.Errorf("ferry acp exited with %v when its input ended, want 0", err)
	}
}

// A client that goes away mid-turn: the turn is cancelled, nothing of it
// keeps running, and ferry acp exits 0.
func TestClientGoneMidTurn(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	pidFile := filepath.Join(dir, "pid")
	m.srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo $$ > pid; exec sleep 300"}}}}, say("unreached"))
	e := newEditor(t, dir, t.TempDir(), append(m.args(), "--allow", "Bash")...)
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(dir)
	go func() { _, _ = e.prompt(s.SessionId, "Sleep") }()
	var pid int
	deadline := time.Now().Add(wait)
	for pid == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatalf("the command never ran; updates: %s", e.dump())
	}
	start := time.Now()
	_ = e.in.Close()
	if err := e.exit.wait(t); err != nil {
		t.Errorf("ferry acp exited with %v, want 0", err)
	}
	t.Logf("exited %s after its input closed", time.Since(start))
	if err := syscall.Kill(pid, 0); err == nil {
		_ = syscall.Kill(pid, syscall.SIGKILL)
		t.Errorf("the turn's command (pid %d) still runs after ferry acp exited", pid)
	}
}

func TestModesAndModelOptions(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	e := newEditor(t, dir, t.TempDir(), m.args()...)
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(dir)
	if s.Modes == nil || s.Modes.CurrentModeId != "default" || len(s.Modes.AvailableModes) != 3 {
		t.Fatalf("session/new's modes: %+v", s.Modes)
	}
	// ferry's slash commands reach the editor's menu.
	e.waitFor("available_commands_update with /compact", func(us []acp.SessionNotification) bool {
		for _, u := range us {
			if c := u.Update.AvailableCommandsUpdate; c != nil {
				for _, cmd := range c.AvailableCommands {
					if cmd.Name == "compact" {
						return true
					}
				}
			}
		}
		return false
	})
	var modelOpt *acp.SessionConfigOptionSelect
	for _, o := range s.ConfigOptions {
		if o.Select != nil && o.Select.Id == "model" {
			modelOpt = o.Select
		}
	}
	if modelOpt == nil || modelOpt.Options.Ungrouped == nil {
		t.Fatalf("no model option: %+v", s.ConfigOptions)
	}
	var listed []string
	for _, o := range *modelOpt.Options.Ungrouped {
		listed = append(listed, string(o.Value))
	}
	for _, m := range fake.DefaultModels {
		if !slices.Contains(listed, m.ID) {
			t.Fatalf("the model option lists %v, without the provider's %s", listed, m.ID)
		}
	}
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "plan"}); err != nil {
		t.Fatalf("set_mode plan: %v", err)
	}
	e.waitFor("current_mode_update plan", func(us []acp.SessionNotification) bool {
		for _, u := range us {
			if c := u.Update.CurrentModeUpdate; c != nil && c.CurrentModeId == "plan" {
				return true
			}
		}
		return false
	})
	if _, err := e.conn.SetSessionMode(e.ctx(), acp.SetSessionModeRequest{SessionId: s.SessionId, ModeId: "yolo"}); !isCode(err, -32602) {
		t.Errorf("set_mode yolo: %v, want -32602", err)
	}
	want := fake.DefaultModels[1].ID
	r, err := e.conn.SetSessionConfigOption(e.ctx(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: s.SessionId, ConfigId: "model", Value: acp.SessionConfigValueId(want)}})
	if err != nil {
		t.Fatalf("set model: %v", err)
	}
	var cur string
	for _, o := range r.ConfigOptions {
		if o.Select != nil && o.Select.Id == "model" {
			cur = string(o.Select.CurrentValue)
		}
		if o.Select != nil && o.Select.Id == "mode" && o.Select.CurrentValue != "plan" {
			t.Errorf("the mode option says %s after set_mode plan", o.Select.CurrentValue)
		}
	}
	if cur != want {
		t.Errorf("the model option is %q after setting %q", cur, want)
	}
	if _, err := e.conn.SetSessionConfigOption(e.ctx(), acp.SetSessionConfigOptionRequest{ValueId: &acp.SetSessionConfigOptionValueId{
		SessionId: s.SessionId, ConfigId: "model", Value: "no-such-model"}}); !isCode(err, -32602) {
		t.Errorf("set model no-such-model: %v, want -32602", err)
	}
	m.srv.Script(say("planned"))
	e.mustPrompt(s.SessionId, "Plan it", acp.StopReasonEndTurn)
	reqs := m.srv.ModelRequests()
	if len(reqs) == 0 || reqs[len(reqs)-1].Model() != want {
		t.Errorf("the model was called with %q, want %q", reqs[len(reqs)-1].Model(), want)
	}
}

func isCode(err error, code int) bool {
	var re *acp.RequestError
	return errors.As(err, &re) && re.Code == code
}

// sessionBeforeRestart runs one turn ("Remember the number 42", answered
// "Noted: 42.") in a session of a ferry acp that then exits; the session
// is there for the next ferry acp on the same home.
func sessionBeforeRestart(t *testing.T) (m *model, dir, home string, s acp.NewSessionResponse) {
	t.Helper()
	m = newModel(t)
	dir = workspace(t)
	home = t.TempDir()
	m.srv.Script(say("Noted: 42."))
	e := newEditor(t, dir, home, m.args()...)
	e.initialize(acp.ClientCapabilities{})
	s = e.newSession(dir)
	e.mustPrompt(s.SessionId, "Remember the number 42", acp.StopReasonEndTurn)
	_ = e.in.Close()
	if err := e.exit.wait(t); err != nil {
		t.Fatalf("the first ferry acp exited with %v", err)
	}
	return m, dir, home, s
}

func TestLoadAfterRestartContinuesTheConversation(t *testing.T) {
	m, dir, home, s := sessionBeforeRestart(t)

	m.srv.Script(say("It was 42."))
	e2 := newEditor(t, dir, home, m.args()...)
	e2.initialize(acp.ClientCapabilities{})
	if _, err := e2.conn.LoadSession(e2.ctx(), acp.LoadSessionRequest{SessionId: s.SessionId, Cwd: dir, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load: %v", err)
	}
	// The replay came before the answer.
	agent, user := e2.text(s.SessionId)
	if !strings.Contains(user, "Remember the number 42") || !strings.Contains(agent, "Noted: 42.") {
		t.Fatalf("the replay shows user %q, agent %q", user, agent)
	}
	e2.mustPrompt(s.SessionId, "Which number?", acp.StopReasonEndTurn)
	reqs := m.srv.ModelRequests()
	last := reqs[len(reqs)-1]
	var sent strings.Builder
	for _, msg := range last.Messages() {
		b, _ := json.Marshal(msg)
		sent.Write(b)
	}
	if !strings.Contains(sent.String(), "Remember the number 42") || !strings.Contains(sent.String(), "Noted: 42.") {
		t.Errorf("after the restart the model was sent %s, without the earlier conversation", sent.String())
	}
	if agent, _ := e2.text(s.SessionId); !strings.Contains(agent, "It was 42.") {
		t.Errorf("the new answer is missing: %q", agent)
	}
}

// session/resume takes a session up again after a restart as
// session/load does, without showing its history again: the editor that
// resumes shows it already. The model still gets the whole conversation,
// and the slash commands reach the editor.
func TestResumeAfterRestart(t *testing.T) {
	m, dir, home, s := sessionBeforeRestart(t)

	e2 := newEditor(t, dir, home, m.args()...)
	e2.initialize(acp.ClientCapabilities{})
	var re *acp.RequestError
	if _, err := e2.conn.ResumeSession(e2.ctx(), acp.ResumeSessionRequest{SessionId: "no-such-session", Cwd: dir}); !errors.As(err, &re) || re.Code != -32002 || !strings.Contains(re.Message, "no-such-session") {
		t.Errorf("session/resume of an unknown session: %v, want -32002 naming it", err)
	}
	r, err := e2.conn.ResumeSession(e2.ctx(), acp.ResumeSessionRequest{SessionId: s.SessionId, Cwd: dir})
	if err != nil {
		t.Fatalf("session/resume: %v", err)
	}
	if r.Modes == nil || r.Modes.CurrentModeId != "default" {
		t.Errorf("session/resume's modes: %+v", r.Modes)
	}
	e2.waitFor("available_commands_update", func(us []acp.SessionNotification) bool {
		for _, u := range us {
			if u.Update.AvailableCommandsUpdate != nil {
				return true
			}
		}
		return false
	})
	if agent, user := e2.text(s.SessionId); agent != "" || user != "" {
		t.Fatalf("session/resume showed the history again: user %q, agent %q", user, agent)
	}

	m.srv.Script(say("It was 42."))
	e2.mustPrompt(s.SessionId, "Which number?", acp.StopReasonEndTurn)
	reqs := m.srv.ModelRequests()
	var sent strings.Builder
	for _, msg := range reqs[len(reqs)-1].Messages() {
		b, _ := json.Marshal(msg)
		sent.Write(b)
	}
	if !strings.Contains(sent.String(), "Remember the number 42") || !strings.Contains(sent.String(), "Noted: 42.") {
		t.Errorf("after session/resume the model was sent %s, without the earlier conversation", sent.String())
	}
	if agent, _ := e2.text(s.SessionId); agent != "It was 42." {
		t.Errorf("after session/resume the editor shows %q, want only the new answer", agent)
	}
}

func TestWorkspaceInUseByAnotherFerryACP(t *testing.T) {
	dir := workspace(t)
	home := t.TempDir()
	e := newEditor(t, dir, home, "--agent", "echo")
	e.initialize(acp.ClientCapabilities{})
	e.newSession(dir)
	e2 := newEditor(t, dir, home, "--agent", "echo")
	e2.initialize(acp.ClientCapabilities{})
	_, err := e2.conn.NewSession(e2.ctx(), acp.NewSessionRequest{Cwd: dir, McpServers: []acp.McpServer{}})
	pid := strconv.Itoa(e.cmd.Process.Pid)
	var re *acp.RequestError
	if !errors.As(err, &re) || re.Code != -32000 || !strings.Contains(re.Message, "pid "+pid) {
		t.Fatalf("session/new on a workspace another ferry acp serves: %v, want -32000 naming pid %s", err, pid)
	}
	// The refusal is no exit: another workspace still works.
	other := workspace(t)
	e2.newSession(other)
}

// A prompt of every content block ferry takes reaches the model: the
// linked workspace file as a file reference, the embedded text in the
// prompt, the image as an attachment uploaded to the master.
func TestPromptContentBlocks(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	m.srv.Script(say("Seen."))
	e := newEditor(t, dir, t.TempDir(), m.args()...)
	e.initialize(acp.ClientCapabilities{})
	s := e.newSession(dir)
	var png bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 2, 2))
	img.Set(0, 0, color.RGBA{R: 255, A: 255})
	if err := pngenc.Encode(&png, img); err != nil {
		t.Fatal(err)
	}
	r, err := e.conn.Prompt(e.ctx(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{
		acp.TextBlock("Compare "),
		acp.ResourceLinkBlock("greet.txt", "file://"+filepath.Join(dir, "greet.txt")),
		acp.TextBlock(" with the notes and the picture."),
		acp.ResourceBlock(acp.EmbeddedResourceResource{TextResourceContents: &acp.TextResourceContents{Uri: "file:///elsewhere/notes.md", Text: "NOTES-7Q2"}}),
		acp.ImageBlock(base64.StdEncoding.EncodeToString(png.Bytes()), "image/png"),
	}})
	if err != nil || r.StopReason != acp.StopReasonEndTurn {
		t.Fatalf("prompt: %v %+v", err, r)
	}
	reqs := m.srv.ModelRequests()
	b, _ := json.Marshal(reqs[len(reqs)-1].Messages())
	sent := string(b)
	for _, want := range []string{"Compare ", "greet.txt", "NOTES-7Q2", `"type":"image"`} {
		if !strings.Contains(sent, want) {
			t.Errorf("the model was not sent %s: %s", want, sent)
		}
	}
	if _, err := e.conn.Prompt(e.ctx(), acp.PromptRequest{SessionId: s.SessionId, Prompt: []acp.ContentBlock{acp.AudioBlock("AAAA", "audio/wav")}}); !isCode(err, -32602) {
		t.Errorf("an audio prompt: %v, want -32602", err)
	}
}

// The editor lends its files and terminals: the agent reads the unsaved
// buffer, writes through the editor, and runs Bash in an editor terminal.
func TestEditorFilesAndTerminal(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	path := filepath.Join(dir, "greet.txt")
	m.srv.Script(read("greet.txt"), edit("greet.txt", "unsaved", "saved"),
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "echo from-terminal"}}}}, say("ok"))
	e := newEditor(t, dir, t.TempDir(), append(m.args(), "--allow", "Edit", "--allow", "Bash")...)
	e.mu.Lock()
	e.buffers[path] = "hello unsaved\n"
	e.mu.Unlock()
	e.initialize(acp.ClientCapabilities{Fs: acp.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true}, Terminal: true})
	s := e.newSession(dir)
	e.mustPrompt(s.SessionId, "Fix greet.txt and run the check", acp.StopReasonEndTurn)
	e.mu.Lock()
	reads, writes, terms := len(e.reads), e.writes[path], len(e.terms)
	e.mu.Unlock()
	if reads == 0 {
		t.Fatal("the agent never read through the editor's fs/read_text_file")
	}
	b, _ := json.Marshal(m.srv.ModelRequests()[1].Messages())
	if !strings.Contains(string(b), "hello unsaved") {
		t.Errorf("the Read gave the model %s, not the editor's unsaved text", b)
	}
	if writes != "hello saved\n" {
		t.Errorf("the editor was asked to write %q", writes)
	}
	if terms != 1 {
		t.Errorf("%d editor terminals ran the Bash call, want 1", terms)
	}
	b, _ = json.Marshal(m.srv.ModelRequests()[3].Messages())
	if !strings.Contains(string(b), "from-terminal") {
		t.Errorf("the Bash call's output did not reach the model: %s", b)
	}
	e.waitFor("the terminal shown in the tool call", func(us []acp.SessionNotification) bool {
		for _, u := range us {
			if tu := u.Update.ToolCallUpdate; tu != nil {
				for _, c := range tu.Content {
					if c.Terminal != nil {
						return true
					}
				}
			}
		}
		return false
	})
}

// session/list lists the workspace's ferry sessions, newest first, with
// their titles, after a restart too; session/close stops following one
// (a turn of the editor's cancelled) and session/load takes it up again.
func TestListAndCloseSessions(t *testing.T) {
	m := newModel(t)
	dir := workspace(t)
	home := t.TempDir()
	e := newEditor(t, dir, home, m.args()...)
	init := e.initialize(acp.ClientCapabilities{})
	if c := init.AgentCapabilities.SessionCapabilities; c.List == nil || c.Close == nil || c.Resume == nil || c.Fork != nil {
		t.Fatalf("sessionCapabilities %+v: want list, close and resume, no fork", c)
	}
	m.srv.Script(say("First."), say("Second."))
	first := e.newSession(dir)
	e.mustPrompt(first.SessionId, "The first session", acp.StopReasonEndTurn)
	second := e.newSession(dir)
	e.mustPrompt(second.SessionId, "The second session", acp.StopReasonEndTurn)

	list := func(e *editor) []acp.SessionInfo {
		t.Helper()
		r, err := e.conn.ListSessions(e.ctx(), acp.ListSessionsRequest{Cwd: acp.Ptr(dir)})
		if err != nil {
			t.Fatalf("session/list: %v", err)
		}
		if r.NextCursor != nil {
			t.Errorf("session/list handed out a cursor %q", *r.NextCursor)
		}
		return r.Sessions
	}
	ss := list(e)
	if len(ss) != 2 || ss[0].SessionId != second.SessionId || ss[1].SessionId != first.SessionId {
		t.Fatalf("session/list %+v: want the second session, then the first", ss)
	}
	for _, s := range ss {
		if s.Cwd != dir || s.Title == nil || s.UpdatedAt == nil {
			t.Errorf("listed %+v: want cwd %s, a title and updatedAt", s, dir)
		}
	}
	if got := *ss[1].Title; !strings.Contains(got, "first") && got != fake.DefaultTitle {
		t.Errorf("the first session's title %q", got)
	}

	// Bad input: no cwd, a cursor never handed out, a relative cwd.
	for _, req := range []acp.ListSessionsRequest{{}, {Cwd: acp.Ptr(dir), Cursor: acp.Ptr("x")}, {Cwd: acp.Ptr("rel")}} {
		var re *acp.RequestError
		if _, err := e.conn.ListSessions(e.ctx(), req); !errors.As(err, &re) || re.Code != -32602 {
			t.Errorf("session/list %+v: %v, want -32602", req, err)
		}
	}

	// Close: the session is no more followed here; it stays on the master.
	m.srv.Script(fake.Reply{Text: []string{"never ", "finished"}, Hold: true})
	done := make(chan acp.StopReason, 1)
	go func() {
		r, _ := e.prompt(second.SessionId, "A long one")
		done <- r.StopReason
	}()
	e.waitFor("the held answer", func(us []acp.SessionNotification) bool {
		for _, n := range us {
			if c := n.Update.AgentMessageChunk; c != nil && c.Content.Text != nil && c.Content.Text.Text == "never " {
				return true
			}
		}
		return false
	})
	start := time.Now()
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: second.SessionId}); err != nil {
		t.Fatalf("session/close: %v", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("session/close took %s with a turn running", d)
	}
	select {
	case r := <-done:
		if r != acp.StopReasonCancelled {
			t.Errorf("the closed session's turn ended %q, want cancelled", r)
		}
	case <-time.After(wait):
		t.Fatal("the closed session's turn never ended")
	}
	var re *acp.RequestError
	if _, err := e.prompt(second.SessionId, "still there?"); !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("a prompt to a closed session: %v, want -32602", err)
	}
	if _, err := e.conn.CloseSession(e.ctx(), acp.CloseSessionRequest{SessionId: second.SessionId}); !errors.As(err, &re) || re.Code != -32602 {
		t.Errorf("closing it again: %v, want -32602", err)
	}
	if len(list(e)) != 2 {
		t.Error("a closed session left the list")
	}

	// After a restart the list is the same, and load takes it up again.
	_ = e.in.Close()
	if err := e.exit.wait(t); err != nil {
		t.Fatalf("ferry acp exited with %v", err)
	}
	e2 := newEditor(t, dir, home, m.args()...)
	e2.initialize(acp.ClientCapabilities{})
	if ss := list(e2); len(ss) != 2 || ss[0].SessionId != second.SessionId {
		t.Fatalf("after a restart session/list %+v", ss)
	}
	if _, err := e2.conn.LoadSession(e2.ctx(), acp.LoadSessionRequest{SessionId: second.SessionId, Cwd: dir, McpServers: []acp.McpServer{}}); err != nil {
		t.Fatalf("session/load of the closed session: %v", err)
	}
}
