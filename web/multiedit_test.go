package web_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/llm/fake"
)

const uiNotebook = `{
 "cells": [
  {
   "cell_type": "code",
   "execution_count": 1,
   "id": "c1",
   "metadata": {},
   "outputs": [],
   "source": [
    "total = 1 + 1"
   ]
  }
 ],
 "metadata": {},
 "nbformat": 4,
 "nbformat_minor": 5
}
`

// TestBrowserMultiEditNotebookEdit drives ferry's agent through MultiEdit
// and NotebookEdit on a phone (web/e2e/multiedit.mjs) against a real
// `ferry up` and the fake model: each asks once with its diff, the
// transcript shows both diffs, and the refusals (overlapping edits, an
// unknown cell) show by their codes' names, leaving the files as the
// allowed calls left them; Undo on the MultiEdit card restores its file.
func TestBrowserMultiEditNotebookEdit(t *testing.T) {
	node, chromium := browserDeps(t)
	dir := t.TempDir()
	ws := project(t, dir, map[string]string{"calc.py": "a = 1\nb = 2\nprint(a + b)\n", "n.ipynb": uiNotebook})
	srv := fake.New(t)
	call := func(name string, in map[string]any) fake.Reply {
		return fake.Reply{ToolCalls: []fake.ToolCall{{Name: name, Input: in}}}
	}
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{
			{Name: "Read", Input: map[string]any{"file_path": "calc.py"}},
			{Name: "Read", Input: map[string]any{"file_path": "n.ipynb"}},
		}},
		call("MultiEdit", map[string]any{"file_path": "calc.py", "edits": []any{
			map[string]any{"old_string": "a = 1", "new_string": "a = 10"},
			map[string]any{"old_string": "print(a + b)", "new_string": "print(a * b)"},
		}}),
		call("NotebookEdit", map[string]any{"notebook_path": "n.ipynb", "cell_id": "c1", "new_source": "total = 2 * 21"}),
		call("MultiEdit", map[string]any{"file_path": "calc.py", "edits": []any{
			map[string]any{"old_string": "b = 2", "new_string": "b = 2  # two"},
			map[string]any{"old_string": "# two", "new_string": "# 2"},
		}}),
		call("NotebookEdit", map[string]any{"notebook_path": "n.ipynb", "cell_id": "nope", "new_source": "x"}),
		fake.Reply{Text: []string{"Edited calc.py and the notebook."}},
	)
	_, login := ferryUp(t, upEnv(dir, srv.URL()), "--db", filepath.Join(dir, "ferry.db"), "--workspace", ws, "--agent", "builtin")
	runScript(t, node, "multiedit.mjs", map[string]any{"chromium": chromium, "screenshots": shotsDir(t, dir), "login": login})

	// The browser undid the MultiEdit: both of its edits, in one step.
	if got, _ := os.ReadFile(filepath.Join(ws, "calc.py")); string(got) != "a = 1\nb = 2\nprint(a + b)\n" {
		t.Errorf("calc.py %q, want it as before the undone MultiEdit", got)
	}
	want := strings.Replace(uiNotebook, `"total = 1 + 1"`, `"total = 2 * 21"`, 1)
	want = strings.Replace(want, `"execution_count": 1`, `"execution_count": null`, 1)
	if got, _ := os.ReadFile(filepath.Join(ws, "n.ipynb")); string(got) != want {
		t.Errorf("n.ipynb\n%s\nwant\n%s", got, want)
	}
}
