package fake_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

func TestClaudeCodeTalksToFake(t *testing.T) {
	bin := os.Getenv("FERRY_TEST_CLAUDE")
	if bin == "" {
		t.Skip("FERRY_TEST_CLAUDE not set")
	}
	srv := fake.New(t)
	ws := t.TempDir()
	file := filepath.Join(ws, "notes.txt")
	os.WriteFile(file, []byte("the secret word is pelican\n"), 0o644)
	main := 0
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		// Side requests (titles, quota) carry no tools.
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true
		}
		main++
		if main == 1 {
			return fake.Reply{Text: []string{"Reading."}, ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": file}}}}, true
		}
		return fake.Reply{Text: []string{"The word is ", "pelican."}, Usage: llmUsage()}, true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "what is the secret word in notes.txt?", "--output-format", "json", "--allowedTools", "Read")
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	t.Logf("output: %s", out)
	for i, r := range srv.Requests() {
		t.Logf("request %d: %s %s stream=%v model=%s tools=%d reply=%d", i, r.Method, r.Path, r.Stream(), r.Model(), len(r.ToolNames()), r.Reply)
		os.WriteFile(fmt.Sprintf("/tmp/ccreq%d.json", i), r.Raw, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "pelican") {
		t.Fatal("answer missing")
	}
	last := srv.ModelRequests()[len(srv.ModelRequests())-1]
	if !strings.Contains(string(last.Raw), "the secret word is pelican") {
		t.Errorf("the tool result did not reach the model: %s", last.Raw)
	}
}

func llmUsage() llm.Usage { return llm.Usage{InputTokens: 100, OutputTokens: 10} }
