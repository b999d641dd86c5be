package docread

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/internal/lazyregexp"
)

// The notebook format, as far as Read renders it; rendering itself, with
// its limits and messages, is the Read tool's.

// NotebookText is a notebook string: JSON a string or an array of lines.
type NotebookText string

// UnmarshalJSON accepts either form.
func (t *NotebookText) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = NotebookText(s)
		return nil
	}
	var lines []string
	if err := json.Unmarshal(b, &lines); err != nil {
		return fmt.Errorf("want a string or an array of strings: %w", err)
	}
	*t = NotebookText(strings.Join(lines, ""))
	return nil
}

// Notebook is the part of an nbformat 4 notebook Read shows; Cells is nil
// when the JSON has no "cells" array.
type Notebook struct {
	Cells    *[]NotebookCell `json:"cells"`
	NBFormat int             `json:"nbformat"`
	Metadata struct {
		LanguageInfo struct {
			Name string `json:"name"`
		} `json:"language_info"`
		Kernelspec struct {
			Language string `json:"language"`
		} `json:"kernelspec"`
	} `json:"metadata"`
}

// NotebookCell is one cell.
type NotebookCell struct {
	CellType       string           `json:"cell_type"`
	ID             string           `json:"id"`
	Source         NotebookText     `json:"source"`
	ExecutionCount *int             `json:"execution_count"`
	Outputs        []NotebookOutput `json:"outputs"`
}

// NotebookOutput is one output of a code cell.
type NotebookOutput struct {
	OutputType string                     `json:"output_type"`
	Name       string                     `json:"name"`
	Text       NotebookText               `json:"text"`
	Data       map[string]json.RawMessage `json:"data"`
	EName      string                     `json:"ename"`
	EValue     string                     `json:"evalue"`
	Traceback  []string                   `json:"traceback"`
}

// ANSIEscape matches terminal escape sequences (colours in tracebacks).
var ANSIEscape = lazyregexp.New(`\x1b(?:\[[0-9;?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])`)

// NotebookPlain returns an output's text: text/plain, else markdown, else HTML.
func NotebookPlain(data map[string]json.RawMessage) (string, string) {
	for _, kind := range []string{"text/plain", "text/markdown", "text/html"} {
		if raw, ok := data[kind]; ok {
			var t NotebookText
			if json.Unmarshal(raw, &t) == nil {
				return string(t), kind
			}
		}
	}
	return "", ""
}

// NotebookImage returns an output's base64 image and its media type.
func NotebookImage(data map[string]json.RawMessage) (string, string) {
	for _, kind := range []string{"image/png", "image/jpeg"} {
		if raw, ok := data[kind]; ok {
			var t NotebookText
			if json.Unmarshal(raw, &t) == nil {
				return string(t), kind
			}
		}
	}
	return "", ""
}

// SortedKeys is the output data's media types, sorted.
func SortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
