package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestRunTaskSubAgents runs `ferry run` against the fake provider, whose
// model asks for two Task calls at once: each sub-agent reads its file
// (and one tries a Write, refused: a sub-agent is read-only without an
// allow rule), the main agent gets their answers as the Task results, the
// stream shows the sub-agents' calls with parent_tool_use_id, and the
// usage counts every call.
func TestRunTaskSubAgents(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "a.txt"), "alpha\n")
		writeFile(t, filepath.Join(dir, "b.txt"), "beta\n")
		use := llm.Usage{InputTokens: 100, OutputTokens: 10}
		// The sub-agents run side by side: route their requests by task,
		// not by the order they come in.
		srv.Route(func(r fake.Request) (fake.Reply, bool) {
			if !strings.Contains(r.System(), "sub-agent of ferry's coding agent") {
				return fake.Reply{}, false
			}
			raw := string(r.Raw)
			switch {
			case strings.Contains(raw, "TASK A") && strings.Contains(raw, "sa1"):
				return fake.Reply{Text: []string{"a.txt says alpha"}, Usage: use}, true
			case strings.Contains(raw, "TASK A"):
				return fake.Reply{ToolCalls: []fake.ToolCall{
					{ID: "sa1", Name: "Read", Input: map[string]any{"file_path": "a.txt"}},
					{ID: "sa2", Name: "Write", Input: map[string]any{"file_path": "sub.txt", "content": "x"}},
				}, Usage: use}, true
			case strings.Contains(raw, "TASK B") && strings.Contains(raw, "sb1"):
				return fake.Reply{Text: []string{"b.txt says beta"}, Usage: use}, true
			case strings.Contains(raw, "TASK B"):
				return fake.Reply{ToolCalls: []fake.ToolCall{{ID: "sb1", Name: "Read", Input: map[string]any{"file_path": "b.txt"}}}, Usage: use}, true
			}
			return fake.Reply{}, false
		})
		srv.Script(
			fake.Reply{ToolCalls: []fake.ToolCall{
				{ID: "task_a", Name: "Task", Input: map[string]any{"description": "Read a", "prompt": "TASK A: what does a.txt say?"}},
				{ID: "task_b", Name: "Task", Input: map[string]any{"description": "Read b", "prompt": "TASK B: what does b.txt say?"}},
			}, Usage: use},
			fake.Reply{Text: []string{"alpha and beta."}, Usage: use},
		)
		out := ferryRun(t, srv, f, dir, "", "--output-format", "stream-json", "what do a.txt and b.txt say?")
		if out.code != ExitOK {
			t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
		}
		parents := map[string]string{}
		var result map[string]any
		sc := bufio.NewScanner(strings.NewReader(out.stdout))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var line map[string]any
			if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
				t.Fatalf("line %q: %v", sc.Text(), err)
			}
			p, _ := line["payload"].(map[string]any)
			switch line["type"] {
			case "agent.tool.finished":
				id, _ := p["tool_use_id"].(string)
				parent, _ := p["parent_tool_use_id"].(string)
				parents[id] = parent + " " + p["status"].(string)
			case "result":
				result = line
			}
		}
		want := map[string]string{"sa1": "task_a ok", "sa2": "task_a denied", "sb1": "task_b ok", "task_a": " ok", "task_b": " ok"}
		for id, w := range want {
			if parents[id] != w {
				t.Fatalf("finished %s: %q, want %q (all %v)", id, parents[id], w, parents)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, "sub.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("a read-only sub-agent wrote: %v", err)
		}
		main := srv.ModelRequests()
		var last fake.Request
		for _, r := range main {
			if !strings.Contains(r.System(), "sub-agent") {
				last = r
			}
		}
		rs := agenttest.ToolResults(last)
		if len(rs) != 2 || rs[0].Text != "a.txt says alpha" || rs[1].Text != "b.txt says beta" {
			t.Fatalf("Task results %+v", rs)
		}
		usage, _ := result["usage"].(map[string]any)
		if len(main) != 6 || usage["input_tokens"] != 600.0 || usage["output_tokens"] != 60.0 {
			t.Fatalf("%d model requests, usage %v: want the sub-agents' 4 calls counted", len(main), usage)
		}
	})
}
