package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// The session's own journal (SessionConfig.History) records the agent's
// writes with the turn and tool call; rewinding to a turn takes the files
// and the conversation back, so the next model request lacks the turn.
func TestHistoryAndRewind(t *testing.T) {
	t.Parallel()
	srv := fake.New(t)
	f := fake.Anthropic
	dir := t.TempDir()
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	j, err := filehistory.OpenJournal(t.TempDir(), "sess-h", fsys.Roots()[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ad := builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "test-key"},
		Rules:    permission.Rules{Allow: []permission.Rule{{Tool: "Write"}}},
	})
	if !ad.Capability().RewindConversation {
		t.Fatal("ferry's agent does not declare rewind_conversation")
	}
	sess, err := ad.Open(context.Background(), adapter.SessionConfig{SessionID: "sess-h", Workspace: protocol.Workspace{ID: "w", Name: "w", Path: dir}, History: j})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	run := func(tr adapter.Turn) {
		t.Helper()
		if err := j.BeginTurn(tr.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := sess.Run(testCtx(t), tr, newRecorder().emit); err != nil {
			t.Fatal(err)
		}
	}
	srv.Script(write("notes.txt", "one\n"), fake.Reply{Text: []string{"FIRST-ANSWER"}})
	run(turn("FIRST-PROMPT"))
	srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "notes.txt"}}}},
		write("notes.txt", "two\n"), fake.Reply{Text: []string{"SECOND-ANSWER"}})
	second := turn("SECOND-PROMPT")
	run(second)

	es := j.Entries()
	if len(es) != 2 || es[1].Turn != second.ID || es[1].Call == "" || es[1].Rel != "notes.txt" ||
		es[1].Before != filehistory.HashOf([]byte("one\n")) || es[1].After != filehistory.HashOf([]byte("two\n")) {
		t.Fatalf("recorded %+v", es)
	}
	if _, err := j.Restore(testCtx(t), fsys, filehistory.Selection{Turn: second.ID}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "notes.txt")); string(b) != "one\n" {
		t.Fatalf("notes.txt after the rewind: %q", b)
	}
	rw, ok := sess.(adapter.ConversationRewinder)
	if !ok {
		t.Fatal("the session cannot rewind its conversation")
	}
	if err := rw.RewindConversation(second.ID); err != nil {
		t.Fatal(err)
	}
	srv.Script(fake.Reply{Text: []string{"THIRD-ANSWER"}})
	run(turn("THIRD-PROMPT"))
	reqs := srv.ModelRequests()
	msgs := agenttest.MessagesJSON(reqs[len(reqs)-1])
	if !strings.Contains(msgs, "FIRST-PROMPT") || !strings.Contains(msgs, "FIRST-ANSWER") || !strings.Contains(msgs, "THIRD-PROMPT") ||
		strings.Contains(msgs, "SECOND-PROMPT") || strings.Contains(msgs, "SECOND-ANSWER") {
		t.Fatalf("the request after the rewind holds: %s", msgs)
	}
	// A turn the conversation no longer holds cannot be rewound.
	if err := rw.RewindConversation(second.ID); err == nil || !strings.Contains(err.Error(), agent.ErrNoTurnMark.Error()) {
		t.Fatalf("second rewind: %v", err)
	}
}
