package e2e_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/acp"
	"github.com/ferry-dev/ferry/internal/adapter/claudecode"
	"github.com/ferry-dev/ferry/internal/adapter/script"
	"github.com/ferry-dev/ferry/internal/exectest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/protocol"
)

// runToArtifacts runs one prompt in a new session of adapterID, allows
// every permission the agent asks for, and returns the turn's
// agent.artifact events; each must be listed with a link whose download
// has exactly the bytes on disk.
func runToArtifacts(t *testing.T, s *system, adapterID, prompt string) []*protocol.Artifact {
	t.Helper()
	u := s.ui()
	sess := u.startAdapterSession(adapterID)
	var arts []*protocol.Artifact
	u.allowTurn(sess.ID, prompt, func(m *protocol.Message) {
		if a, ok := m.Payload.(*protocol.Artifact); ok {
			arts = append(arts, a)
		}
	})
	links := u.links(sess.ID, &protocol.ArtifactsList{})
	if len(links) != len(arts) {
		t.Fatalf("%d links for %d agent.artifact events", len(links), len(arts))
	}
	for i, l := range links {
		if l.Artifact != *arts[i] {
			t.Fatalf("link %d is for %+v, want %+v", i, l.Artifact, arts[i])
		}
		want, err := os.ReadFile(filepath.Join(s.workspace, filepath.FromSlash(l.Artifact.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(want)) != l.Artifact.Size {
			t.Fatalf("%s: the card says %d bytes, the file has %d", l.Artifact.Path, l.Artifact.Size, len(want))
		}
		resp, body := s.get(http.MethodGet, l.DownloadURL, s.uiToken, nil)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, want) {
			t.Fatalf("GET %s = %d %q, want %q", l.Artifact.Path, resp.StatusCode, body, want)
		}
	}
	return arts
}

// stepModel is a fake Anthropic server that answers the agent's requests
// with steps, in order, then "Done."; requests without tools (Claude
// Code's title and quota calls) get a side reply.
func stepModel(t *testing.T, steps ...fake.Reply) *fake.Server {
	srv := fake.New(t)
	var mu sync.Mutex
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"side"}}, true
		}
		mu.Lock()
		defer mu.Unlock()
		if len(steps) == 0 {
			return fake.Reply{Text: []string{"Done."}}, true
		}
		next := steps[0]
		steps = steps[1:]
		return next, true
	})
	return srv
}

// cliEnv is the environment of a Claude Code process (the CLI, or the one
// inside the ACP agent) that talks to srv.
func cliEnv(t *testing.T, srv *fake.Server) []string {
	return []string{"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=sk-ant-fake",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
		"IS_SANDBOX=1", // Claude Code refuses to run as root otherwise (CI runs as root)
		"HOME=" + t.TempDir()}
}

// TestScriptAgentArtifactsDownload: a script agent (a real child process)
// creating a file hands it over through client and master: an
// agent.artifact, a listed link, and a download of the exact bytes.
func TestScriptAgentArtifactsDownload(t *testing.T) {
	t.Parallel()
	s := newSystem(t, 10000)
	s.workspace = t.TempDir()
	sh := filepath.Join(t.TempDir(), "report.sh")
	exectest.WriteScript(t, sh, "#!/bin/sh\nmkdir -p out && printf 'region,total\\nnorth,12\\n' > out/sales.csv && echo written\n")
	ad, err := script.New(script.Config{Command: []string{sh}, Name: "report", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	s.startHandClient(ad)
	arts := runToArtifacts(t, s, "script:report", "write the sales CSV")
	if len(arts) != 1 || arts[0].Path != "out/sales.csv" || arts[0].FileName != "sales.csv" {
		t.Fatalf("agent.artifact events %+v, want out/sales.csv", arts)
	}
}

// TestClaudeCodeArtifactsDownload: the real Claude Code CLI, on the fake
// Anthropic server, edits a file and writes another through ferry; both
// reach the UI as agent.artifact with links that download exactly what
// the CLI wrote.
func TestClaudeCodeArtifactsDownload(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("FERRY_TEST_CLAUDE")
	if bin == "" {
		t.Skip("needs the Claude Code CLI: npm install @anthropic-ai/claude-code@2.1.332 and set FERRY_TEST_CLAUDE (.ci/run does)")
	}
	s := newSystem(t, 10000)
	s.workspace = t.TempDir()
	notes := filepath.Join(s.workspace, "notes.txt")
	if err := os.WriteFile(notes, []byte("the secret word is pelican\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := stepModel(t,
		fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_read", Name: "Read", Input: map[string]any{"file_path": notes}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_edit", Name: "Edit", Input: map[string]any{"file_path": notes, "old_string": "pelican", "new_string": "heron"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_write", Name: "Write", Input: map[string]any{"file_path": filepath.Join(s.workspace, "out.md"), "content": "# Out\n\nheron\n"}}}},
	)
	var ad adapter.Adapter = claudecode.New(claudecode.Config{
		Command:  bin,
		Env:      cliEnv(t, srv),
		StateDir: t.TempDir(),
		Logger:   slog.New(slog.DiscardHandler),
	})
	s.startHandClient(ad)
	arts := runToArtifacts(t, s, claudecode.ID, "change the word, then write out.md")
	if len(arts) != 2 || arts[0].Path != "notes.txt" || arts[0].ToolUseID != "toolu_edit" || arts[1].Path != "out.md" || arts[1].ToolUseID != "toolu_write" {
		t.Fatalf("agent.artifact events %+v, want notes.txt (Edit) then out.md (Write)", arts)
	}
	if got, _ := os.ReadFile(notes); string(got) != "the secret word is heron\n" {
		t.Fatalf("notes.txt on disk: %q", got)
	}
}

// TestACPAgentArtifactsDownload: the real ACP agent (claude-code-acp), on
// the fake Anthropic server, edits a file through ferry's file system;
// the edit reaches the UI as agent.artifact with a link that downloads
// exactly what the agent wrote.
func TestACPAgentArtifactsDownload(t *testing.T) {
	t.Parallel()
	bin := os.Getenv("FERRY_TEST_ACP_AGENT")
	if bin == "" {
		t.Skip("needs an ACP agent: npm install @zed-industries/claude-code-acp@0.16.2 and set FERRY_TEST_ACP_AGENT (.ci/run does)")
	}
	s := newSystem(t, 10000)
	s.workspace = t.TempDir()
	notes := filepath.Join(s.workspace, "notes.md")
	if err := os.WriteFile(notes, []byte("# Notes\n\ncolour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := stepModel(t, fake.Reply{ToolCalls: []fake.ToolCall{{ID: "toolu_acp_edit", Name: "mcp__acp__Edit",
		Input: map[string]any{"file_path": notes, "old_string": "colour: red", "new_string": "colour: blue"}}}})
	ad, err := acp.New(acp.Config{
		Command: []string{bin},
		Name:    "claude",
		Env:     cliEnv(t, srv),
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.startHandClient(ad)
	arts := runToArtifacts(t, s, ad.ID(), "change the colour")
	if len(arts) != 1 || arts[0].Path != "notes.md" || arts[0].ToolUseID != "toolu_acp_edit" {
		t.Fatalf("agent.artifact events %+v, want notes.md (the edit)", arts)
	}
	if got, _ := os.ReadFile(notes); string(got) != "# Notes\n\ncolour: blue\n" {
		t.Fatalf("notes.md on disk: %q", got)
	}
}
