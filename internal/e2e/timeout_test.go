package e2e_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

// TestPermissionTimeoutDeniesWrite: ferry's own agent on the fake provider
// asks permission for a Write in a session whose permission timeout the UI
// set to 1.5s; nobody answers. The request advertises default_value deny
// (a timeout never grants) and the master settles it as timed out with
// exactly that answer, the agent gets the denial, the file is not written,
// and the turn goes on to its end with the model told the call was denied.
func TestPermissionTimeoutDeniesWrite(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	s := newSystem(t, 10000)
	s.startHandClient(builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(fake.Anthropic), Model: "test-model", BaseURL: srv.BaseURL(fake.Anthropic), APIKey: "test-key"},
	}))
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": "hello\n"}}}},
		fake.Reply{Text: []string{"Nobody allowed the write; I stopped there."}},
	)
	u := s.ui()
	sess := u.startAdapterSession("builtin")
	ms := 1500
	set := protocol.New(protocol.TypeSessionSettings, &protocol.SessionSettings{PermissionTimeoutMS: &ms})
	set.SessionID = sess.ID
	u.send(set)
	u.collect(sess.ID, func(m *protocol.Message) bool {
		st, ok := m.Payload.(*protocol.Settings)
		return ok && *st == protocol.Settings{PermissionTimeoutMS: ms, PermissionTimeoutSet: true}
	})

	u.prompt(sess.ID, text("write notes.txt"))
	var (
		req      *protocol.InteractionRequest
		resolved *protocol.InteractionResolved
		finished *protocol.ToolFinished
		asked    time.Time
	)
	ev := u.collect(sess.ID, func(m *protocol.Message) bool {
		switch p := m.Payload.(type) {
		case *protocol.InteractionRequest:
			req, asked = p, time.Now()
		case *protocol.InteractionResolved:
			resolved = p
			if since := time.Since(asked); since < time.Second {
				t.Errorf("settled %v after it was asked, before its 1.5s timeout", since)
			}
		case *protocol.ToolFinished:
			finished = p
		case *protocol.TextDone:
			return true
		}
		return false
	})
	done := ev.order[len(ev.order)-1].Payload.(*protocol.TextDone)
	if req == nil || req.ToolName != "Write" || req.TimeoutMS != ms || req.ExpiresAt == "" {
		t.Fatalf("interaction request %+v, want a Write permission with timeout_ms %d and expires_at", req, ms)
	}
	if resolved == nil || resolved.Outcome != "timeout" || resolved.SelectedValue == nil || resolved.SelectedValue.Values[0] != protocol.Deny {
		t.Fatalf("resolved %+v, want timeout with deny", resolved)
	}
	if req.DefaultValue != resolved.SelectedValue.Values[0] {
		t.Fatalf("the request advertised default_value %q, the timeout applied %q", req.DefaultValue, resolved.SelectedValue.Values[0])
	}
	if finished == nil || finished.Status != protocol.ToolDenied {
		t.Fatalf("tool finished %+v, want denied", finished)
	}
	if done.StopReason != "end_turn" || !strings.Contains(done.Text, "Nobody allowed") {
		t.Fatalf("text.done %+v", done)
	}
	if _, err := os.Stat(filepath.Join(s.workspace, "notes.txt")); !os.IsNotExist(err) {
		t.Fatalf("notes.txt was written (stat: %v)", err)
	}
	reqs := srv.ModelRequests()
	last := reqs[len(reqs)-1].Messages()
	if b := payloadJSON(t, last[len(last)-1]); !strings.Contains(b, "tool_result") || !strings.Contains(strings.ToLower(b), "denied") {
		t.Fatalf("the model was not told the call was denied: %s", b)
	}
}
