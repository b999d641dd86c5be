package docread

import (
	"encoding/json"
	"slices"
	"testing"
)

// A notebook's strings come as a string or as lines; outputs pick their
// text and image by media type, in a fixed order of preference.
func TestNotebookModel(t *testing.T) {
	t.Parallel()
	raw := `{"nbformat": 4, "cells": [{"cell_type": "code", "source": ["a = 1\n", "a"],
		"execution_count": 3, "outputs": [{"output_type": "execute_result",
		"data": {"text/html": "<b>1</b>", "text/plain": ["1"], "image/png": "iVBO"}}]}]}`
	var nb Notebook
	if err := json.Unmarshal([]byte(raw), &nb); err != nil {
		t.Fatal(err)
	}
	if nb.Cells == nil || len(*nb.Cells) != 1 {
		t.Fatalf("cells %+v", nb.Cells)
	}
	c := (*nb.Cells)[0]
	if c.Source != "a = 1\na" || *c.ExecutionCount != 3 {
		t.Fatalf("cell %+v", c)
	}
	data := c.Outputs[0].Data
	if text, kind := NotebookPlain(data); text != "1" || kind != "text/plain" {
		t.Fatalf("NotebookPlain = %q, %q", text, kind)
	}
	if img, kind := NotebookImage(data); img != "iVBO" || kind != "image/png" {
		t.Fatalf("NotebookImage = %q, %q", img, kind)
	}
	if keys := SortedKeys(data); !slices.Equal(keys, []string{"image/png", "text/html", "text/plain"}) {
		t.Fatalf("SortedKeys = %v", keys)
	}
	if s := ANSIEscape.ReplaceAllString("\x1b[0;31mError\x1b[0m", ""); s != "Error" {
		t.Fatalf("ANSIEscape left %q", s)
	}
	var none Notebook
	if err := json.Unmarshal([]byte(`{"nbformat": 3}`), &none); err != nil || none.Cells != nil {
		t.Fatalf("no cells: %v %+v", err, none.Cells)
	}
}
