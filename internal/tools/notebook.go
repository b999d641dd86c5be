package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/tools/docread"
)

// Notebook bounds.
const (
	// maxNotebookFileBytes bounds the notebook JSON Read loads.
	maxNotebookFileBytes = 64 << 20
	// maxNotebookImages is the most output images one Read returns.
	maxNotebookImages = 4
)

// capRunes keeps at most n runes of s; cut is how many were dropped.
func capRunes(s string, n int) (kept string, cut int) {
	i := 0
	for range n {
		if i >= len(s) {
			return s, 0
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	if i >= len(s) {
		return s, 0
	}
	return s[:i], utf8.RuneCountInString(s[i:])
}

// notebookView names a cell window in the read state.
func notebookView(req readRequest) string {
	if !req.ranged {
		return "all cells"
	}
	return fmt.Sprintf("cells %d-%d", req.start, req.start+req.count-1)
}

// notebook renders a Jupyter notebook: each cell with its index, type and
// source, then its outputs (stream text, results as text/plain, errors
// without terminal colours, images as image blocks), each cell's outputs
// capped at Limits.MaxNotebookOutputRunes. offset and limit count cells.
//
// Partial: a read of some cells is partial; a read of all cells is full
// even when outputs were capped or images left out, since every cell's
// source, the part an agent edits, was shown whole.
func (rc *readCall) notebook() (*Result, error) {
	req := rc.req
	if !req.ranged {
		req.count = int(^uint(0) >> 1)
	}
	view := notebookView(req)
	if stub := rc.dedup(view); stub != nil {
		return stub, nil
	}
	size := rc.info.Stamp.Size
	if size > maxNotebookFileBytes {
		return nil, Errorf(CodeTooLarge, "%s is a notebook of %s, over the %s Read loads. Clear its outputs first (jupyter nbconvert --clear-output), or Grep it.",
			rc.name, formatBytes(size), formatBytes(maxNotebookFileBytes))
	}
	raw := make([]byte, size)
	if _, err := rc.f.ReadAt(raw, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, readFSError(rc.env.FS, rc.name, err)
	}
	var nb docread.Notebook
	if err := json.Unmarshal(bytes.TrimPrefix(raw, []byte{0xEF, 0xBB, 0xBF}), &nb); err != nil {
		return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf(
			"%s is not a valid Jupyter notebook: its JSON does not parse (%v). Fix the JSON, or read it as text with Grep.", rc.name, err)}
	}
	if nb.Cells == nil {
		return nil, Errorf(CodeEncoding, "%s is not a Jupyter notebook in nbformat 4 (it has no \"cells\" array); Read renders nbformat 4 notebooks only.", rc.name)
	}
	cells := *nb.Cells
	if len(cells) == 0 {
		rc.record(view, false, HashBytes(raw))
		return rc.result(Text(fmt.Sprintf("Notebook %s has no cells.", rc.name))), nil
	}
	if req.start > len(cells) {
		return rc.result(Text(fmt.Sprintf("Notebook %s has %d cells; offset %d is past its end. Use an offset from 1 to %d.", rc.name, len(cells), req.start, len(cells)))), nil
	}
	end := min(len(cells), req.start-1+req.count) // last cell shown, 1-based

	lang := nb.Metadata.LanguageInfo.Name
	if lang == "" {
		lang = nb.Metadata.Kernelspec.Language
	}
	var out strings.Builder
	header := fmt.Sprintf("Notebook %s: %s", rc.name, countOf(len(cells), "cell", "cells"))
	if lang != "" {
		header += ", " + lang
	}
	if req.start > 1 || end < len(cells) {
		header += fmt.Sprintf("; showing cells %d-%d", req.start, end)
	}
	out.WriteString(header + ".\n")
	var images []Block
	var ends []int
	for i := req.start; i <= end; i++ {
		if err := rc.ctx.Err(); err != nil {
			return nil, err
		}
		imgs, err := rc.renderCell(&out, i, cells[i-1], len(images))
		if err != nil {
			return nil, err
		}
		images = append(images, imgs...)
		ends = append(ends, out.Len())
	}
	if end < len(cells) {
		fmt.Fprintf(&out, "\n(… %d more cells. Use offset=%d to read further.)\n", len(cells)-end, end+1)
	}
	text := out.String()
	tokens, exact, err := rc.gate(text)
	if err != nil {
		return nil, err
	}
	if tokens > rc.limits.MaxReadTokens {
		return nil, tooLargeError(rc.name, "cells", req.start, ends, tokens, exact, rc.limits.MaxReadTokens,
			"offset and limit count cells for notebooks. Or use Grep to find the cells you need.")
	}
	rc.record(view, req.start > 1 || end < len(cells), HashBytes(raw))
	return rc.result(append([]Block{{Type: "text", Text: text}}, images...)), nil
}

// renderCell writes cell number i and returns its output images; shown is
// how many images earlier cells returned.
func (rc *readCall) renderCell(out *strings.Builder, i int, c docread.NotebookCell, shown int) ([]Block, error) {
	fmt.Fprintf(out, "\n[cell %d: %s", i, c.CellType)
	if c.ExecutionCount != nil {
		fmt.Fprintf(out, ", execution_count %d", *c.ExecutionCount)
	}
	if c.ID != "" {
		fmt.Fprintf(out, ", id %s", c.ID)
	}
	out.WriteString("]\n")
	src := string(c.Source)
	out.WriteString(src)
	if src != "" && !strings.HasSuffix(src, "\n") {
		out.WriteByte('\n')
	}
	if len(c.Outputs) == 0 {
		return nil, nil
	}
	var o strings.Builder
	var images []Block
	for _, output := range c.Outputs {
		switch output.OutputType {
		case "stream":
			if output.Name == "stderr" {
				o.WriteString("[stderr]\n")
			}
			writeLine(&o, string(output.Text))
		case "execute_result", "display_data":
			img, mediaType := docread.NotebookImage(output.Data)
			if img != "" {
				if shown+len(images) >= maxNotebookImages {
					fmt.Fprintf(&o, "[%s output not shown: at most %d images a Read]\n", mediaType, maxNotebookImages)
				} else {
					b, desc, err := rc.notebookImage(img, mediaType, i)
					if err != nil {
						fmt.Fprintf(&o, "[%s output that cannot be decoded]\n", mediaType)
					} else {
						images = append(images, b)
						fmt.Fprintf(&o, "[%s output: image %d below, %s]\n", mediaType, shown+len(images), desc)
					}
				}
			}
			if text, kind := docread.NotebookPlain(output.Data); kind != "" {
				writeLine(&o, text)
			} else if img == "" && len(output.Data) > 0 {
				fmt.Fprintf(&o, "[output of type %s]\n", strings.Join(docread.SortedKeys(output.Data), ", "))
			}
		case "error":
			fmt.Fprintf(&o, "%s: %s\n", output.EName, output.EValue)
			for _, line := range output.Traceback {
				writeLine(&o, docread.ANSIEscape.ReplaceAllString(line, ""))
			}
		default:
			fmt.Fprintf(&o, "[%s output]\n", output.OutputType)
		}
	}
	if o.Len() == 0 {
		return images, nil
	}
	kept, cut := capRunes(strings.TrimSuffix(o.String(), "\n"), rc.limits.MaxNotebookOutputRunes)
	fmt.Fprintf(out, "[cell %d outputs]\n", i)
	out.WriteString(kept)
	if !strings.HasSuffix(kept, "\n") {
		out.WriteByte('\n')
	}
	if cut > 0 {
		fmt.Fprintf(out, "… [outputs cut here: %d more characters not shown]\n", cut)
	}
	return images, nil
}

func writeLine(b *strings.Builder, s string) {
	b.WriteString(s)
	if s != "" && !strings.HasSuffix(s, "\n") {
		b.WriteByte('\n')
	}
}

// notebookImage decodes an output image and prepares it like an image file.
func (rc *readCall) notebookImage(b64, mediaType string, cell int) (Block, string, error) {
	data, err := base64.StdEncoding.DecodeString(strings.Join(strings.Fields(b64), ""))
	if err != nil {
		return Block{}, "", err
	}
	format := imageFormat(data)
	if format == "" {
		return Block{}, "", fmt.Errorf("cell %d: %s output is not an image", cell, mediaType)
	}
	p, err := prepareImage(rc.ctx, fmt.Sprintf("cell %d output", cell), bytes.NewReader(data), int64(len(data)), format, rc.limits.MaxImageDimension)
	if err != nil {
		return Block{}, "", err
	}
	desc := fmt.Sprintf("%d×%d px", p.OrigW, p.OrigH)
	if p.W != p.OrigW || p.H != p.OrigH {
		desc += fmt.Sprintf(", shown at %d×%d", p.W, p.H)
	}
	return Block{Type: "image", MediaType: p.MediaType, Data: base64.StdEncoding.EncodeToString(p.Data)}, desc, nil
}
