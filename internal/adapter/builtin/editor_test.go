package builtin_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/protocol"
)

// bufferFiles is an editor whose every text file holds one unsaved text.
type bufferFiles struct{ text string }

func (b bufferFiles) ReadTextFile(context.Context, string) (string, error) { return b.text, nil }
func (bufferFiles) WriteTextFile(context.Context, string, string) error    { return nil }

// TestEditorRegistryBySession: Config.Editor lends a session what was
// registered for its id, asked at the call (registered after Open), and
// nothing to another session.
func TestEditorRegistryBySession(t *testing.T) {
	t.Parallel()
	reg := editorlink.NewRegistry()
	read := func(id string) string {
		srv := fake.New(t)
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("on disk\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		a := builtin.New(builtin.Config{Getenv: func(string) string { return "" }, Editor: reg,
			Provider: provider.Config{Provider: string(fake.Anthropic), Model: "test-model", BaseURL: srv.BaseURL(fake.Anthropic), APIKey: "test-key"}})
		s, err := a.Open(context.Background(), adapter.SessionConfig{SessionID: id, Workspace: protocol.Workspace{ID: "w", Name: "w", Path: dir}})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		reg.Set("lent", editorlink.Lent{Files: bufferFiles{text: "in the editor's buffer\n"}})
		srv.Script(fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "a.txt"}}}}, fake.Reply{Text: []string{"ok"}})
		if _, err := s.Run(testCtx(t), turn("read"), newRecorder().emit); err != nil {
			t.Fatal(err)
		}
		reqs := srv.ModelRequests()
		res := agenttest.ToolResults(reqs[len(reqs)-1])
		if len(res) != 1 {
			t.Fatalf("results %+v", res)
		}
		return res[0].Text
	}
	if got := read("lent"); !strings.Contains(got, "in the editor's buffer") {
		t.Fatalf("the lent session read %q", got)
	}
	if got := read("other"); !strings.Contains(got, "on disk") {
		t.Fatalf("another session read %q", got)
	}
}
