package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// jupyterNotebook is written as Jupyter writes notebooks: indent 1, keys
// sorted, a final newline, sources as lists of lines, nbformat 4.5 ids.
// It has a member and a cell field nbformat does not define.
const jupyterNotebook = `{
 "cells": [
  {
   "cell_type": "markdown",
   "id": "m1",
   "metadata": {},
   "source": [
    "# Title <b>&</b>\n",
    "Some text é."
   ]
  },
  {
   "cell_type": "code",
   "execution_count": 3,
   "id": "c1",
   "metadata": {
    "tags": [
     "keep"
    ]
   },
   "outputs": [
    {
     "name": "stdout",
     "output_type": "stream",
     "text": [
      "42\n"
     ]
    }
   ],
   "source": [
    "x = 6 * 7\n",
    "print(x)"
   ],
   "x_custom": true
  },
  {
   "cell_type": "code",
   "execution_count": null,
   "id": "c2",
   "metadata": {},
   "outputs": [],
   "source": []
  }
 ],
 "metadata": {
  "kernelspec": {
   "display_name": "Python 3",
   "language": "python",
   "name": "python3"
  }
 },
 "nbformat": 4,
 "nbformat_minor": 5,
 "zz_unknown": {"a": 1}
}
`

func nbIn(mode, id, src string) map[string]any {
	in := map[string]any{"notebook_path": "n.ipynb", "cell_id": id, "new_source": src}
	if mode != "" {
		in["edit_mode"] = mode
	}
	return in
}

// nbSetup writes the notebook and reads it whole with the Read tool.
func nbSetup(t *testing.T, content string) (*Env, string) {
	t.Helper()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "n.ipynb", []byte(content))
	wtOK(t, Read{}, env, map[string]any{"file_path": "n.ipynb"})
	return env, p
}

// nbCells decodes the cells of the notebook at p.
func nbCells(t *testing.T, p string) []map[string]any {
	t.Helper()
	var nb struct {
		Cells []map[string]any `json:"cells"`
	}
	if err := json.Unmarshal([]byte(wtContent(t, p)), &nb); err != nil {
		t.Fatal(err)
	}
	return nb.Cells
}

func TestNotebookRoundTripKeepsTheBytes(t *testing.T) {
	t.Parallel()
	// zz_unknown is written on one line; Jupyter would indent it too.
	indented := strings.Replace(jupyterNotebook, `{"a": 1}`, "{\n  \"a\": 1\n }", 1)
	compact := `{"cells":[{"cell_type":"code","source":"a","outputs":[],"metadata":{},"execution_count":null}],"metadata":{},"nbformat":4,"nbformat_minor":2}`
	for _, c := range []struct{ src, want string }{
		{jupyterNotebook, indented},
		{indented, indented},
		{strings.ReplaceAll(jupyterNotebook, "\n", "\r\n"), strings.ReplaceAll(indented, "\n", "\r\n")},
		{"\xEF\xBB\xBF" + indented, "\xEF\xBB\xBF" + indented},
		{compact, compact},
	} {
		nb, err := parseNotebook("n.ipynb", []byte(c.src))
		if err != nil {
			t.Fatal(err)
		}
		got, err := nb.encode()
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Fatalf("round trip changed the notebook:\n%s\nwant\n%s", got, c.want)
		}
	}
}

func TestNotebookEditReplace(t *testing.T) {
	t.Parallel()
	env, p := nbSetup(t, jupyterNotebook)
	hist := &wtHistory{}
	env.History = hist
	var asked []Approval
	env.Approve = func(_ context.Context, a Approval) error { asked = append(asked, a); return nil }
	res := wtOK(t, NotebookEdit{}, env, nbIn("", "c1", "y = 1\nprint(y)\n"))
	cells := nbCells(t, p)
	c := cells[1]
	if c["execution_count"] != nil || len(c["outputs"].([]any)) != 0 || c["x_custom"] != true {
		t.Fatalf("cell %+v", c)
	}
	if src := c["source"].([]any); len(src) != 2 || src[0] != "y = 1\n" || src[1] != "print(y)\n" {
		t.Fatalf("source %q", src)
	}
	// Only the edited cell changed: the rest is byte for byte.
	got := wtContent(t, p)
	for _, keep := range []string{"\"# Title <b>&</b>\\n\",", "Some text é.", "\"tags\": [\n     \"keep\"", "\"id\": \"c2\"", "\"zz_unknown\""} {
		if !strings.Contains(got, keep) {
			t.Fatalf("lost %q:\n%s", keep, got)
		}
	}
	if !strings.HasSuffix(got, "}\n") || !strings.HasPrefix(got, "{\n \"cells\": [\n  {\n   \"cell_type\"") {
		t.Fatalf("style not kept:\n%s", got)
	}
	if len(asked) != 1 || asked[0].Tool != "NotebookEdit" || len(hist.calls) != 1 || hist.calls[0].existed != true {
		t.Fatalf("asked %+v history %+v", asked, hist.calls)
	}
	if !res.Changed || res.Path != p || res.Diff == nil || len(res.Diff.Hunks) != 1 {
		t.Fatalf("result %+v", res)
	}
	diff, _ := json.Marshal(res.Diff)
	if !strings.Contains(string(diff), `{"op":"add","text":"y = 1"}`) || !strings.Contains(string(diff), `{"op":"delete","text":"x = 6 * 7"}`) {
		t.Fatalf("diff %s", diff)
	}
	if text := wtText(res); !strings.Contains(text, "cell 2 (id c1)") || !strings.Contains(text, "outputs and execution count were cleared") {
		t.Fatalf("text %q", text)
	}
	// The written version counts as read: a second edit needs no Read.
	in := nbIn("", "m1", "# New title")
	in["cell_type"] = "code"
	wtOK(t, NotebookEdit{}, env, in)
	m := nbCells(t, p)[0]
	if m["cell_type"] != "code" || m["execution_count"] != nil || m["outputs"] == nil {
		t.Fatalf("markdown → code %+v", m)
	}
	in = nbIn("", "m1", "# New title")
	in["cell_type"] = "markdown"
	wtOK(t, NotebookEdit{}, env, in)
	m = nbCells(t, p)[0]
	if _, has := m["outputs"]; has || m["cell_type"] != "markdown" {
		t.Fatalf("code → markdown %+v", m)
	}
	wtCode(t, NotebookEdit{}, env, in, CodeNoChange)
}

func TestNotebookEditInsertAndDelete(t *testing.T) {
	t.Parallel()
	env, p := nbSetup(t, jupyterNotebook)
	in := nbIn("insert", "c1", "z = 2")
	in["cell_type"] = "code"
	res := wtOK(t, NotebookEdit{}, env, in)
	cells := nbCells(t, p)
	if len(cells) != 4 {
		t.Fatalf("%d cells", len(cells))
	}
	c := cells[2]
	id, _ := c["id"].(string)
	if !regexp.MustCompile(`^[0-9a-f]{8}$`).MatchString(id) || c["cell_type"] != "code" || c["execution_count"] != nil || len(c["outputs"].([]any)) != 0 {
		t.Fatalf("new cell %+v", c)
	}
	if !strings.Contains(wtText(res), "id "+id) || !strings.Contains(wtText(res), "after cell 2 (id c1)") {
		t.Fatalf("text %q", wtText(res))
	}
	in = nbIn("insert", "", "# Top")
	in["cell_type"] = "markdown"
	wtOK(t, NotebookEdit{}, env, in)
	cells = nbCells(t, p)
	if len(cells) != 5 || cells[0]["cell_type"] != "markdown" || cells[0]["outputs"] != nil {
		t.Fatalf("inserted at the start: %+v", cells[0])
	}
	wtOK(t, NotebookEdit{}, env, nbIn("delete", id, ""))
	cells = nbCells(t, p)
	if len(cells) != 4 || cells[3]["id"] != "c2" {
		t.Fatalf("after delete %+v", cells)
	}
}

func TestNotebookEditRefusals(t *testing.T) {
	t.Parallel()
	t.Run("unknown cell", func(t *testing.T) {
		t.Parallel()
		env, p := nbSetup(t, jupyterNotebook)
		msg := wtCode(t, NotebookEdit{}, env, nbIn("", "nope", "x"), CodeNoCell)
		if !strings.Contains(msg, `no cell "nope"`) || !strings.Contains(msg, "m1, c1, c2") {
			t.Fatalf("message %q", msg)
		}
		wtCode(t, NotebookEdit{}, env, nbIn("delete", "cell-9", ""), CodeNoCell)
		if wtContent(t, p) != jupyterNotebook {
			t.Fatal("changed")
		}
	})
	t.Run("never read", func(t *testing.T) {
		t.Parallel()
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "n.ipynb", []byte(jupyterNotebook))
		wtCode(t, NotebookEdit{}, env, nbIn("", "c1", "x"), CodeNotRead)
		if wtContent(t, p) != jupyterNotebook {
			t.Fatal("changed")
		}
	})
	t.Run("partial read", func(t *testing.T) {
		t.Parallel()
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "n.ipynb", []byte(jupyterNotebook))
		wtOK(t, Read{}, env, map[string]any{"file_path": "n.ipynb", "offset": 1, "limit": 1})
		wtCode(t, NotebookEdit{}, env, nbIn("", "m1", "x"), CodeNotRead)
		if wtContent(t, p) != jupyterNotebook {
			t.Fatal("changed")
		}
	})
	t.Run("stale", func(t *testing.T) {
		t.Parallel()
		env, p := nbSetup(t, jupyterNotebook)
		changed := strings.Replace(jupyterNotebook, "print(x)", "print(x + 1)", 1)
		wtFile(t, p[:strings.LastIndex(p, "/")], "n.ipynb", []byte(changed))
		wtCode(t, NotebookEdit{}, env, nbIn("", "c1", "x"), CodeStale)
		if wtContent(t, p) != changed {
			t.Fatal("changed")
		}
	})
	t.Run("bad input", func(t *testing.T) {
		t.Parallel()
		env, p := nbSetup(t, jupyterNotebook)
		for name, in := range map[string]map[string]any{
			"insert without type": nbIn("insert", "c1", "x"),
			"bad mode":            nbIn("move", "c1", "x"),
			"bad type":            {"notebook_path": "n.ipynb", "cell_id": "c1", "new_source": "x", "cell_type": "raw"},
			"replace without id":  nbIn("", "", "x"),
			"no source":           {"notebook_path": "n.ipynb", "cell_id": "c1"},
			"not a notebook":      {"notebook_path": "n.py", "cell_id": "c1", "new_source": "x"},
			"unknown field":       {"notebook_path": "n.ipynb", "cell_id": "c1", "new_source": "x", "cell_number": 2},
		} {
			if msg := wtCode(t, NotebookEdit{}, env, in, CodeInvalidInput); msg == "" {
				t.Fatalf("%s: no message", name)
			}
		}
		if wtContent(t, p) != jupyterNotebook {
			t.Fatal("changed")
		}
	})
	t.Run("a key twice", func(t *testing.T) {
		t.Parallel()
		// Read shows the last "cells"; an edit of the first would change
		// what the model never saw.
		env, dir := wtEnv(t)
		twice := `{"cells": [{"cell_type": "code", "id": "c1", "source": "hidden"}], "cells": [{"cell_type": "code", "id": "c1", "source": "shown"}], "nbformat": 4, "nbformat_minor": 5}`
		p := wtFile(t, dir, "n.ipynb", []byte(twice))
		wtMarkRead(t, env, "n.ipynb")
		if msg := wtCode(t, NotebookEdit{}, env, nbIn("", "c1", "x"), CodeEncoding); !strings.Contains(msg, `"cells" appears twice`) {
			t.Fatalf("message %q", msg)
		}
		if wtContent(t, p) != twice {
			t.Fatal("changed")
		}
	})
	t.Run("not nbformat 4", func(t *testing.T) {
		t.Parallel()
		env, dir := wtEnv(t)
		wtFile(t, dir, "n.ipynb", []byte(`{"worksheets": [], "nbformat": 3}`))
		wtMarkRead(t, env, "n.ipynb")
		wtCode(t, NotebookEdit{}, env, nbIn("", "c1", "x"), CodeEncoding)
	})
}

// An nbformat 4.4 notebook has no cell ids: cells are named cell-N, and a
// new cell gets no id. Sources stored as one string stay strings.
func TestNotebookEditWithoutIDs(t *testing.T) {
	t.Parallel()
	const old = `{"cells": [{"cell_type": "code", "execution_count": 1, "metadata": {}, "outputs": [], "source": "a = 1"}, {"cell_type": "markdown", "metadata": {}, "source": "text"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}`
	env, p := nbSetup(t, old)
	res := wtOK(t, NotebookEdit{}, env, nbIn("", "cell-1", "a = 2"))
	if !strings.Contains(wtText(res), "cell-1 taken as cell 1") {
		t.Fatalf("text %q", wtText(res))
	}
	in := nbIn("insert", "cell-2", "b")
	in["cell_type"] = "markdown"
	wtOK(t, NotebookEdit{}, env, in)
	got := wtContent(t, p)
	if strings.Contains(got, "\n") || strings.Contains(got, `"id"`) {
		t.Fatalf("style or ids changed: %s", got)
	}
	cells := nbCells(t, p)
	if len(cells) != 3 || cells[0]["source"] != "a = 2" || cells[2]["source"] != "b" {
		t.Fatalf("cells %+v", cells)
	}
	msg := wtCode(t, NotebookEdit{}, env, nbIn("", "cell-0", "x"), CodeNoCell)
	if !strings.Contains(msg, "cell-1, cell-2, cell-3") {
		t.Fatalf("message %q", msg)
	}
}

// FuzzNotebookRoundTrip: whatever notebook JSON parses, writing it back
// unedited keeps its meaning: the same JSON value.
func FuzzNotebookRoundTrip(f *testing.F) {
	f.Add(jupyterNotebook)
	f.Add(`{"cells":[{"cell_type":"code","source":"a<b&c","outputs":[]}],"nbformat":4,"nbformat_minor":4}`)
	f.Add("{\r\n\t\"cells\": [],\r\n\t\"x\": \"\\u00e9\\n\"\r\n}\r\n")
	f.Add(`{"cells":[{}],"a":[1,2.50,-0,1e3],"b":null}`)
	f.Fuzz(func(t *testing.T, src string) {
		nb, err := parseNotebook("n.ipynb", []byte(src))
		if err != nil {
			return
		}
		out, err := nb.encode()
		if err != nil {
			t.Fatalf("encode of %q: %v", src, err)
		}
		var a, b any
		if json.Unmarshal(bytes.TrimPrefix([]byte(src), []byte("\xEF\xBB\xBF")), &a) != nil {
			return // parsed by the ordered decoder but not by encoding/json: not a notebook anyone wrote
		}
		if err := json.Unmarshal(bytes.TrimPrefix(out, []byte("\xEF\xBB\xBF")), &b); err != nil {
			t.Fatalf("%q written back as %q, which does not parse: %v", src, out, err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q written back as %q: another value", src, out)
		}
	})
}

func TestNotebookEditRefusesACellKeyTwice(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	twice := `{"cells": [{"cell_type": "code", "id": "c1", "source": "a", "source": "b"}], "nbformat": 4, "nbformat_minor": 5}`
	p := wtFile(t, dir, "n.ipynb", []byte(twice))
	wtMarkRead(t, env, "n.ipynb")
	if msg := wtCode(t, NotebookEdit{}, env, nbIn("", "c1", "x"), CodeEncoding); !strings.Contains(msg, `"source" appears twice`) {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != twice {
		t.Fatal("changed")
	}
}
