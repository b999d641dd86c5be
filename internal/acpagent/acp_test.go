package acpagent_test

import (
	"os"
	"path/filepath"
	"strings"
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
