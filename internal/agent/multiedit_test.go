package agent_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

const agentNotebook = `{"cells": [{"cell_type": "code", "execution_count": 1, "id": "c1", "metadata": {}, "outputs": [], "source": ["a = 1"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`

func multiEditCall(id string) llm.Block {
	return toolCall(id, "MultiEdit", map[string]any{"file_path": "a.txt", "edits": []any{
		map[string]any{"old_string": "one", "new_string": "1"},
		map[string]any{"old_string": "two", "new_string": "2"},
	}})
}

func notebookCall(id string) llm.Block {
	return toolCall(id, "NotebookEdit", map[string]any{"notebook_path": "n.ipynb", "cell_id": "c1", "new_source": "a = 2"})
}

func writeFiles(t *testing.T, dir string) {
	t.Helper()
	for name, s := range map[string]string{"a.txt": "one\ntwo\n", "n.ipynb": agentNotebook} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func readCall(id, path string) llm.Block {
	return toolCall(id, "Read", map[string]any{"file_path": path})
}

// TestMultiEditAndNotebookEditAskOnceWithTheDiff: each call is one
// permission question carrying the whole change's diff; allowed once, the
// files change, and the finished events carry the diffs.
func TestMultiEditAndNotebookEditAskOnceWithTheDiff(t *testing.T) {
	t.Parallel()
	p := newMem(
		step{tools: []llm.Block{readCall("r1", "a.txt"), readCall("r2", "n.ipynb")}},
		step{tools: []llm.Block{multiEditCall("m1"), notebookCall("n1")}},
		step{text: []string{"done"}},
	)
	a, dir := newAgent(t, p, nil)
	writeFiles(t, dir)
	rec := newRecorder()
	ctx := testCtx(t)
	go func() {
		for range 2 {
			select {
			case ir := <-rec.asks:
				_ = a.Answer(ir.InteractionID, &protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.AllowOnce)})
			case <-ctx.Done():
				return
			}
		}
	}()
	if _, err := a.Run(ctx, textTurn("edit"), rec.emit); err != nil {
		t.Fatal(err)
	}
	asks := rec.of(protocol.TypeInteractionRequest)
	if len(asks) != 2 {
		t.Fatalf("asked %d times, want one per call", len(asks))
	}
	for i, name := range []string{"MultiEdit", "NotebookEdit"} {
		ir := asks[i].(*protocol.InteractionRequest)
		if ir.ToolName != name || ir.Diff == nil || len(ir.Diff.Hunks) == 0 {
			t.Fatalf("request %d: %+v", i, ir)
		}
	}
	if !strings.Contains(asks[0].(*protocol.InteractionRequest).Title+asks[0].(*protocol.InteractionRequest).Message, "a.txt") ||
		!strings.Contains(asks[1].(*protocol.InteractionRequest).Title+asks[1].(*protocol.InteractionRequest).Message, "n.ipynb") {
		t.Fatalf("the questions do not name the files: %+v / %+v", asks[0], asks[1])
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "1\n2\n" {
		t.Fatalf("a.txt %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "n.ipynb")); !strings.Contains(string(got), `"a = 2"`) {
		t.Fatalf("n.ipynb %s", got)
	}
	fin := rec.finished()
	if len(fin) != 4 || fin[2].Status != protocol.ToolOK || fin[2].Diff == nil || fin[3].Status != protocol.ToolOK || fin[3].Diff == nil {
		t.Fatalf("finished %+v", fin)
	}
}

// TestMultiEditAndNotebookEditRefused: plan mode refuses both before they
// run, an Edit deny rule covers both (NotebookEdit by notebook_path), and
// a bad edit comes back to the model as its coded error; no file changes.
func TestMultiEditAndNotebookEditRefused(t *testing.T) {
	t.Parallel()
	overlapping := toolCall("o1", "MultiEdit", map[string]any{"file_path": "a.txt", "edits": []any{
		map[string]any{"old_string": "one", "new_string": "one two"},
		map[string]any{"old_string": "two", "new_string": "2", "replace_all": true},
	}})
	unknownCell := toolCall("u1", "NotebookEdit", map[string]any{"notebook_path": "n.ipynb", "cell_id": "zz", "new_source": "x"})
	for _, c := range []struct {
		name   string
		mut    func(*agent.Config)
		calls  []llm.Block
		status string
		code   int
		says   string
	}{
		{"plan mode", func(c *agent.Config) {
			c.Mode = protocol.ModePlan
			c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "MultiEdit"}, {Tool: "NotebookEdit"}}}
		}, []llm.Block{multiEditCall("m1"), notebookCall("n1")}, protocol.ToolDenied, tools.CodeDenied, "plan mode"},
		{"Edit deny rule", func(c *agent.Config) {
			c.Rules = &permission.Rules{Deny: []permission.Rule{{Tool: "Edit", Pattern: "a.txt"}, {Tool: "Edit", Pattern: "*.ipynb"}}}
		}, []llm.Block{multiEditCall("m1"), notebookCall("n1")}, protocol.ToolDenied, tools.CodeDenied, "permission rules"},
		{"bad edits", func(c *agent.Config) {
			c.Rules = &permission.Rules{Allow: []permission.Rule{{Tool: "Edit"}}}
		}, []llm.Block{overlapping, unknownCell}, protocol.ToolError, 0, "code 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := newMem(
				step{tools: []llm.Block{readCall("r1", "a.txt"), readCall("r2", "n.ipynb")}},
				step{tools: c.calls},
				step{text: []string{"ok"}},
			)
			a, dir := newAgent(t, p, c.mut)
			writeFiles(t, dir)
			rec := newRecorder()
			if _, err := a.Run(testCtx(t), textTurn("edit"), rec.emit); err != nil {
				t.Fatal(err)
			}
			fin := rec.finished()[2:]
			codes := []int{c.code, c.code}
			if c.code == 0 {
				codes = []int{tools.CodeOverlap, tools.CodeNoCell}
			}
			for i, f := range fin {
				// A denial's event has no error_code; its output says why.
				if f.Status != c.status || (f.Status == protocol.ToolError && f.ErrorCode != codes[i]) {
					t.Fatalf("call %d: %s code %d, want %s code %d: %s", i, f.Status, f.ErrorCode, c.status, codes[i], f.Output)
				}
			}
			if c.code != 0 && !strings.Contains(fin[0].Output, c.says) {
				t.Fatalf("output %q", fin[0].Output)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "one\ntwo\n" {
				t.Fatalf("a.txt changed: %q", got)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "n.ipynb")); string(got) != agentNotebook {
				t.Fatalf("n.ipynb changed: %s", got)
			}
			if r := lastToolResults(p.requests()[2]); len(r) != 2 || !r[0].IsError || !r[1].IsError {
				t.Fatalf("results to the model %+v", r)
			}
		})
	}
}
