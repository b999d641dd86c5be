package tools_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/tools"
)

func rdNotebook(t testing.TB, cells []map[string]any) []byte {
	t.Helper()
	nb := map[string]any{
		"nbformat": 4, "nbformat_minor": 5,
		"metadata": map[string]any{"kernelspec": map[string]any{"language": "python", "name": "python3"}},
		"cells":    cells,
	}
	data, err := json.MarshalIndent(nb, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestReadNotebook(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	pngData := base64.StdEncoding.EncodeToString(rdPNG(t, rdImage(12, 10)))
	data := rdNotebook(t, []map[string]any{
		{"cell_type": "markdown", "id": "m1", "metadata": map[string]any{}, "source": []string{"# Title\n", "Some *text*."}},
		{"cell_type": "code", "id": "c1", "execution_count": 1, "metadata": map[string]any{}, "source": "x = 6 * 7\nprint(x)",
			"outputs": []any{
				map[string]any{"output_type": "stream", "name": "stdout", "text": []string{"42\n"}},
				map[string]any{"output_type": "stream", "name": "stderr", "text": "warning: careful\n"},
				map[string]any{"output_type": "execute_result", "execution_count": 1, "metadata": map[string]any{},
					"data": map[string]any{"text/plain": []string{"'forty-two'"}}},
			}},
		{"cell_type": "code", "id": "c2", "execution_count": 2, "metadata": map[string]any{}, "source": "plot()",
			"outputs": []any{
				map[string]any{"output_type": "display_data", "metadata": map[string]any{},
					"data": map[string]any{"image/png": pngData, "text/plain": "<Figure size 12x10>"}},
			}},
		{"cell_type": "code", "id": "c3", "execution_count": 3, "metadata": map[string]any{}, "source": "1/0",
			"outputs": []any{
				map[string]any{"output_type": "error", "ename": "ZeroDivisionError", "evalue": "division by zero",
					"traceback": []string{"\x1b[0;31m---------\x1b[0m", "\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"}},
			}},
	})
	rdWrite(t, dir, "analysis.ipynb", data)
	res := rdOK(t, env, map[string]any{"file_path": "analysis.ipynb"})
	text := rdText(res)
	for _, want := range []string{
		"Notebook analysis.ipynb: 4 cells, python.",
		"[cell 1: markdown, id m1]\n# Title\nSome *text*.\n",
		"[cell 2: code, execution_count 1, id c1]\nx = 6 * 7\nprint(x)\n[cell 2 outputs]\n42\n[stderr]\nwarning: careful\n'forty-two'\n",
		"[cell 3 outputs]\n[image/png output: image 1 below, 12×10 px]\n<Figure size 12x10>\n",
		"[cell 4 outputs]\nZeroDivisionError: division by zero\n---------\nZeroDivisionError: division by zero\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rendering lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "\x1b") {
		t.Error("ANSI escapes left in the rendering")
	}
	if len(res.Blocks) != 2 || res.Blocks[1].Type != "image" || res.Blocks[1].MediaType != "image/png" {
		t.Fatalf("blocks %d", len(res.Blocks))
	}
	if e := rdEntry(t, env, res); e.Partial || e.View != "all cells" || e.Hash != tools.HashBytes(data) {
		t.Fatalf("entry %+v", e)
	}
}

func TestReadNotebookCellWindow(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	var cells []map[string]any
	for i := range 5 {
		cells = append(cells, map[string]any{"cell_type": "code", "source": "cell_" + rdItoa(i+1) + "()", "outputs": []any{}, "metadata": map[string]any{}})
	}
	rdWrite(t, dir, "nb.ipynb", rdNotebook(t, cells))
	res := rdOK(t, env, map[string]any{"file_path": "nb.ipynb", "offset": 2, "limit": 2})
	text := rdText(res)
	if !strings.Contains(text, "showing cells 2-3") || !strings.Contains(text, "cell_2()") || !strings.Contains(text, "cell_3()") ||
		strings.Contains(text, "cell_1()") || strings.Contains(text, "cell_4()") || !strings.Contains(text, "2 more cells. Use offset=4") {
		t.Fatalf("rendering:\n%s", text)
	}
	if e := rdEntry(t, env, res); !e.Partial || e.View != "cells 2-3" {
		t.Fatalf("entry %+v", e)
	}
	res = rdOK(t, env, map[string]any{"file_path": "nb.ipynb", "offset": 9})
	if !strings.Contains(rdText(res), "has 5 cells; offset 9 is past its end") {
		t.Fatalf("past the end: %q", rdText(res))
	}
}

func TestReadNotebookOutputCap(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxNotebookOutputRunes = 50
	rdWrite(t, dir, "loud.ipynb", rdNotebook(t, []map[string]any{
		{"cell_type": "code", "source": "spam()", "metadata": map[string]any{}, "outputs": []any{
			map[string]any{"output_type": "stream", "name": "stdout", "text": strings.Repeat("ü", 200)},
		}},
	}))
	res := rdOK(t, env, map[string]any{"file_path": "loud.ipynb"})
	text := rdText(res)
	if !strings.Contains(text, strings.Repeat("ü", 50)+"\n… [outputs cut here: 150 more characters not shown]") || strings.Contains(text, strings.Repeat("ü", 51)) {
		t.Fatalf("rendering:\n%s", text)
	}
	// Outputs cut, every source shown: a full read.
	if e := rdEntry(t, env, res); e.Partial {
		t.Fatal("partial")
	}
}

func TestReadNotebookImageCount(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	pngData := base64.StdEncoding.EncodeToString(rdPNG(t, rdImage(5, 5)))
	var outputs []any
	for range 6 {
		outputs = append(outputs, map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{"image/png": pngData}})
	}
	outputs = append(outputs, map[string]any{"output_type": "display_data", "metadata": map[string]any{}, "data": map[string]any{"image/png": "bm90IGFuIGltYWdl"}})
	rdWrite(t, dir, "plots.ipynb", rdNotebook(t, []map[string]any{{"cell_type": "code", "source": "", "metadata": map[string]any{}, "outputs": outputs}}))
	res := rdOK(t, env, map[string]any{"file_path": "plots.ipynb"})
	if len(res.Blocks) != 1+4 {
		t.Fatalf("%d blocks, want a text and 4 images", len(res.Blocks))
	}
	if text := rdText(res); strings.Count(text, "not shown: at most 4 images") != 3 {
		t.Fatalf("rendering:\n%s", text)
	}
}

func TestReadNotebookInvalid(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "broken.ipynb", []byte(`{"cells": [`))
	rdWrite(t, dir, "old.ipynb", []byte(`{"nbformat": 3, "worksheets": []}`))
	rdWrite(t, dir, "typed.ipynb", []byte(`{"cells": [{"cell_type": "code", "source": 5}]}`))
	for name, want := range map[string]string{
		"broken.ipynb": "not a valid Jupyter notebook",
		"old.ipynb":    "nbformat 4",
		"typed.ipynb":  "not a valid Jupyter notebook",
	} {
		_, err := rdRun(t, env, map[string]any{"file_path": name})
		if msg := rdCode(t, err, tools.CodeEncoding); !strings.Contains(msg, want) {
			t.Errorf("%s: %q", name, msg)
		}
	}
	rdWrite(t, dir, "empty.ipynb", []byte(`{"cells": [], "nbformat": 4}`))
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "empty.ipynb"})); !strings.Contains(got, "no cells") {
		t.Fatalf("empty notebook: %q", got)
	}
}

func TestReadNotebookGate(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxReadTokens = 200
	var cells []map[string]any
	for i := range 30 {
		cells = append(cells, map[string]any{"cell_type": "code", "source": "result_" + rdItoa(i) + " = compute(alpha, beta, gamma)", "metadata": map[string]any{}, "outputs": []any{}})
	}
	rdWrite(t, dir, "long.ipynb", rdNotebook(t, cells))
	_, err := rdRun(t, env, map[string]any{"file_path": "long.ipynb"})
	msg := rdCode(t, err, tools.CodeTooLarge)
	if !strings.Contains(msg, "offset=1 limit=") || !strings.Contains(msg, "cells 1-") {
		t.Fatalf("message %q", msg)
	}
}
