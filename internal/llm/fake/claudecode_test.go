package fake_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestClaudeCodeTalksToFake runs the real Claude Code CLI against the fake:
// the scripted tool_use makes it run its real Read tool, and the file's
// content must come back to the "model" as a tool_result. It needs the CLI:
// FERRY_TEST_CLAUDE names it, else `claude` on PATH; without it the test
// skips (npm install -g @anthropic-ai/claude-code provides it).
func TestClaudeCodeTalksToFake(t *testing.T) {
	bin := os.Getenv("FERRY_TEST_CLAUDE")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("claude"); err != nil {
			t.Skip("the Claude Code CLI is not installed (set FERRY_TEST_CLAUDE or put claude on PATH)")
		}
	}
	srv := fake.New(t)
	ws := t.TempDir()
	file := filepath.Join(ws, "notes.txt")
	if err := os.WriteFile(file, []byte("the secret word is pelican\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	turns := 0
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true // title or quota calls carry no tools
		}
		mu.Lock()
		defer mu.Unlock()
		turns++
		if turns == 1 {
			return fake.Reply{
				Text:      []string{"Reading."},
				ToolCalls: []fake.ToolCall{{ID: "toolu_read1", Name: "Read", Input: map[string]any{"file_path": file}}},
				Usage:     llm.Usage{InputTokens: 100, OutputTokens: 10},
			}, true
		}
		return fake.Reply{Text: []string{"The word is ", "pelican."}, Usage: llm.Usage{InputTokens: 120, OutputTokens: 5}}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "what is the secret word in notes.txt?", "--output-format", "json", "--allowedTools", "Read")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "HOME="+t.TempDir())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("claude: %v\n%s", err, out)
	}
	var result struct {
		IsError bool   `json:"is_error"`
		Result  string `json:"result"`
	}
	if err := json.Unmarshal(out, &result); err != nil || result.IsError || result.Result != "The word is pelican." {
		t.Fatalf("claude's result = %s (%v)", out, err)
	}
	// The second model call carries the Read result, paired with the call.
	var sawResult bool
	for _, r := range srv.ModelRequests() {
		for _, m := range r.Messages() {
			blocks, _ := m["content"].([]any)
			for _, b := range blocks {
				bm, _ := b.(map[string]any)
				if bm["type"] == "tool_result" && bm["tool_use_id"] == "toolu_read1" {
					raw, _ := json.Marshal(bm["content"])
					sawResult = sawResult || strings.Contains(string(raw), "pelican")
				}
			}
		}
	}
	if !sawResult {
		t.Error("no tool_result with the file's content reached the model")
	}
}
