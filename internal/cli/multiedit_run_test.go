package cli

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/agent/agenttest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

const runNotebook = `{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 2,
   "id": "c1",
   "metadata": {},
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "1\n"
     ]
    }
   ],
   "source": [
    "print(1)"
   ]
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// readBoth reads the two files the MultiEdit and NotebookEdit scripts change.
func readBoth() fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{
		{Name: "Read", Input: map[string]any{"file_path": "a.txt"}},
		{Name: "Read", Input: map[string]any{"file_path": "n.ipynb"}},
	}}
}

func editBoth(edits []any, cellID string) fake.Reply {
	return fake.Reply{ToolCalls: []fake.ToolCall{
		{Name: "MultiEdit", Input: map[string]any{"file_path": "a.txt", "edits": edits}},
		{Name: "NotebookEdit", Input: map[string]any{"notebook_path": "n.ipynb", "cell_id": cellID, "new_source": "print(2)"}},
	}}
}

var goodEdits = []any{
	map[string]any{"old_string": "alpha", "new_string": "ALPHA"},
	map[string]any{"old_string": "gamma", "new_string": "GAMMA"},
}

func TestRunMultiEditAndNotebookEdit(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "a.txt"), "alpha\nbeta\ngamma\n")
		writeFile(t, filepath.Join(dir, "n.ipynb"), runNotebook)
		srv.Script(readBoth(), editBoth(goodEdits, "c1"), fake.Reply{Text: []string{"Both done."}})
		// An Edit rule allows both, as in Claude Code.
		out := ferryRun(t, srv, f, dir, "", "--allow", "Edit", "edit both")
		if out.code != ExitOK || out.stdout != "Both done.\n" {
			t.Fatalf("exit %d, stdout %q, stderr %s", out.code, out.stdout, out.stderr)
		}
		if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "ALPHA\nbeta\nGAMMA\n" {
			t.Fatalf("a.txt %q", got)
		}
		want := strings.Replace(strings.Replace(runNotebook, `"print(1)"`, `"print(2)"`, 1), "\"execution_count\": 2", "\"execution_count\": null", 1)
		want = want[:strings.Index(want, `"outputs": [`)] + `"outputs": [],` + want[strings.Index(want, "\n   \"source\""):]
		if got, _ := os.ReadFile(filepath.Join(dir, "n.ipynb")); string(got) != want {
			t.Fatalf("n.ipynb\n%s\nwant\n%s", got, want)
		}
		reqs := srv.ModelRequests()
		props := toolProperties(reqs[0])
		if !slices.Contains(props["MultiEdit"], "edits") || !slices.Contains(props["NotebookEdit"], "cell_id") {
			t.Fatalf("tools offered %v", props)
		}
		if msgs := agenttest.MessagesJSON(reqs[2]); !strings.Contains(msgs, "applied 2 edits") || !strings.Contains(msgs, "Replaced the source of cell 1 (id c1)") {
			t.Fatalf("results to the model: %s", msgs)
		}
	})
}

func TestRunMultiEditAndNotebookEditRefusals(t *testing.T) {
	t.Parallel()
	overlapping := []any{
		map[string]any{"old_string": "alpha", "new_string": "alpha beta"},
		map[string]any{"old_string": "beta", "new_string": "B", "replace_all": true},
	}
	for _, c := range []struct {
		name  string
		edits []any
		cell  string
		args  []string
		says  []string
	}{
		{"plan mode", goodEdits, "c1", []string{"--mode", "plan", "--allow", "Edit"}, []string{"plan mode", "plan mode"}},
		{"Edit deny rule", goodEdits, "c1", []string{"--allow", "MultiEdit", "--allow", "NotebookEdit", "--deny", "Edit(a.txt)", "--deny", "Edit(**/*.ipynb)"}, []string{"permission rules", "permission rules"}},
		{"headless ask", goodEdits, "c1", nil, []string{"headless", "headless"}},
		{"bad input", overlapping, "c9", []string{"--allow", "Edit"}, []string{"code 22", "code 23"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, dir := fake.New(t), t.TempDir()
			writeFile(t, filepath.Join(dir, "a.txt"), "alpha\nbeta\ngamma\n")
			writeFile(t, filepath.Join(dir, "n.ipynb"), runNotebook)
			srv.Script(readBoth(), editBoth(c.edits, c.cell), fake.Reply{Text: []string{"Could not."}})
			out := ferryRun(t, srv, formats[0], dir, "", append(c.args, "edit both")...)
			if out.code != ExitOK {
				t.Fatalf("exit %d, stderr %s", out.code, out.stderr)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "a.txt")); string(got) != "alpha\nbeta\ngamma\n" {
				t.Fatalf("a.txt changed: %q", got)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "n.ipynb")); string(got) != runNotebook {
				t.Fatalf("n.ipynb changed: %s", got)
			}
			msgs := agenttest.MessagesJSON(srv.ModelRequests()[2])
			for _, s := range c.says {
				if strings.Count(msgs, s) < 1 {
					t.Fatalf("results lack %q: %s", s, msgs)
				}
			}
		})
	}
}
