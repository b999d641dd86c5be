package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/lazyregexp"

	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/internal/textenc"
	"github.com/ferry-dev/ferry/internal/tools/docread"
)

//go:embed notebookedit.md
var notebookEditDescription string

// NotebookEdit replaces, inserts or deletes one cell of a Jupyter notebook
// (nbformat 4), found by its id, under Write's read-before-write contract:
// the whole notebook read first (code 2), unchanged since (code 3). Every
// other byte of meaning is kept: the notebook's members and the cells'
// unknown fields in their order, its indentation, final newline, line
// endings and byte-order mark; only the edited cell is re-encoded.
// Replacing a code cell's source clears its outputs and execution count,
// which no longer belong to it.
type NotebookEdit struct{}

var _ Tool = NotebookEdit{}

// Name implements Tool.
func (NotebookEdit) Name() string { return "NotebookEdit" }

// Description implements Tool.
func (NotebookEdit) Description() string { return notebookEditDescription }

// ReadOnly implements Tool.
func (NotebookEdit) ReadOnly() bool { return false }

var notebookEditSchema = sync.OnceValue(inputSchema[notebookEditParams]) // built on first use, not at start-up

// InputSchema implements Tool.
func (NotebookEdit) InputSchema() json.RawMessage { return notebookEditSchema() }

type notebookEditParams struct {
	NotebookPath *string `json:"notebook_path" jsonschema:"required,minLength=1" jsonschema_description:"The .ipynb notebook to edit, relative to the workspace or absolute."`
	CellID       string  `json:"cell_id" jsonschema_description:"The id of the cell to replace or delete, or to insert after (\"\" inserts at the start). Cells without an id: cell-N, the N of Read's [cell N: …] header."`
	NewSource    *string `json:"new_source" jsonschema:"required" jsonschema_description:"The new source of the cell (ignored by delete)."`
	CellType     string  `json:"cell_type,omitempty" jsonschema:"enum=code,enum=markdown" jsonschema_description:"The cell's type: required to insert; to replace, changes the cell's type."`
	EditMode     string  `json:"edit_mode,omitempty" jsonschema:"enum=replace,enum=insert,enum=delete,default=replace" jsonschema_description:"replace the cell's source, insert a new cell after it, or delete it."`
}

// Edit modes.
const (
	nbReplace = "replace"
	nbInsert  = "insert"
	nbDelete  = "delete"
)

// Run implements Tool.
func (NotebookEdit) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p notebookEditParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	mode := p.EditMode
	if mode == "" {
		mode = nbReplace
	}
	switch {
	case p.NotebookPath == nil || *p.NotebookPath == "":
		return nil, Errorf(CodeInvalidInput, "invalid input: notebook_path is required")
	case mode != nbReplace && mode != nbInsert && mode != nbDelete:
		return nil, Errorf(CodeInvalidInput, "invalid input: edit_mode %q is not one of replace, insert, delete", p.EditMode)
	case p.CellType != "" && p.CellType != "code" && p.CellType != "markdown":
		return nil, Errorf(CodeInvalidInput, "invalid input: cell_type %q is not code or markdown", p.CellType)
	case mode == nbInsert && p.CellType == "":
		return nil, Errorf(CodeInvalidInput, "invalid input: cell_type (code or markdown) is required to insert a cell")
	case mode != nbDelete && p.NewSource == nil:
		return nil, Errorf(CodeInvalidInput, "invalid input: new_source is required to %s a cell", mode)
	case mode != nbInsert && p.CellID == "":
		return nil, Errorf(CodeInvalidInput, "invalid input: cell_id is required to %s a cell (Read the notebook to see its cells' ids)", mode)
	case !strings.EqualFold(filepath.Ext(*p.NotebookPath), ".ipynb"):
		return nil, Errorf(CodeInvalidInput, "invalid input: %s is not a Jupyter notebook (.ipynb); use Edit for other files", *p.NotebookPath)
	}
	t, err := loadWholeTarget(env, *p.NotebookPath)
	if err != nil {
		return nil, err
	}
	if !t.exists {
		return nil, Errorf(CodeNotFound, "%s does not exist. To create a notebook, Write its JSON.", t.shown)
	}
	if int64(len(t.data)) > maxNotebookFileBytes {
		return nil, Errorf(CodeTooLarge, "%s is a notebook of %s, over the %s NotebookEdit loads.", t.shown, formatBytes(int64(len(t.data))), formatBytes(maxNotebookFileBytes))
	}
	nb, err := parseNotebook(t.shown, t.data)
	if err != nil {
		return nil, err
	}
	before := nb.sourcesView()
	src := ""
	if p.NewSource != nil {
		src = textenc.ToLF(*p.NewSource)
	}
	var what string
	idx := -1 // insert at the start
	if p.CellID != "" {
		var how string
		if idx, how, err = nb.find(t.shown, p.CellID); err != nil {
			return nil, err
		}
		what = nb.name(idx) + how
	}
	switch mode {
	case nbReplace:
		err = nb.replace(idx, src, p.CellType)
		what = "Replaced the source of " + what
		if nb.heads[idx].CellType == "code" {
			what += "; its outputs and execution count were cleared"
		}
	case nbInsert:
		err = nb.insert(idx+1, src, p.CellType)
		where := "at the start"
		if idx >= 0 {
			where = "after " + what
		}
		what = fmt.Sprintf("Inserted a %s cell, %s, %s", p.CellType, nb.name(idx+1), where)
	case nbDelete:
		what = "Deleted " + what
		nb.delete(idx)
	}
	if err != nil {
		return nil, err
	}
	data, err := nb.encode()
	if err != nil {
		return nil, err
	}
	if bytes.Equal(data, t.data) {
		return nil, Errorf(CodeNoChange, "the cell already has this source and type in %s. Nothing was written.", t.shown)
	}
	diff := textdiff.Diff(t.shown, before, nb.sourcesView(), diffContext)
	info, err := t.commit(ctx, env, "NotebookEdit", data, diff)
	if err != nil {
		return nil, err
	}
	msg := fmt.Sprintf("%s in %s; it has %s now.", what, t.shown, countOf(len(nb.cells), "cell", "cells"))
	return &Result{Blocks: Text(msg), Path: info.Path, Rel: info.Rel, Diff: diff, Changed: true}, nil
}

// cellHead is what NotebookEdit reads of a cell; the rest stays raw.
type cellHead struct {
	ID       string               `json:"id"`
	CellType string               `json:"cell_type"`
	Source   docread.NotebookText `json:"source"`
}

// notebookDoc is a parsed notebook and how its file was written.
type notebookDoc struct {
	top   jsonObject
	cells []jsonObject
	heads []cellHead
	// withIDs: nbformat 4.5 or later, whose cells carry ids.
	withIDs bool
	// The file's style: indent ("" with compact), final newline, CRLF
	// line endings, UTF-8 byte-order mark.
	indent                  string
	compact, finalNL, crlf  bool
	bom                     bool
	lineSources, sawSources bool // how most cells store source
}

// parseNotebook reads an nbformat 4 notebook's JSON (code 13 otherwise).
func parseNotebook(shown string, data []byte) (*notebookDoc, error) {
	nb := &notebookDoc{}
	raw := data
	if r, ok := bytes.CutPrefix(raw, []byte{0xEF, 0xBB, 0xBF}); ok {
		raw, nb.bom = r, true
	}
	if err := json.Unmarshal(raw, &nb.top); err != nil {
		return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf("%s is not a valid Jupyter notebook: its JSON does not parse as an object (%v). Fix the JSON with Write.", shown, err)}
	}
	cellsRaw, ok := nb.top.get("cells")
	if !ok || !bytes.HasPrefix(bytes.TrimSpace(cellsRaw), []byte("[")) {
		return nil, Errorf(CodeEncoding, "%s is not a Jupyter notebook in nbformat 4 (it has no \"cells\" array); NotebookEdit changes nbformat 4 notebooks only.", shown)
	}
	if err := json.Unmarshal(cellsRaw, &nb.cells); err != nil {
		return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf("%s: its cells are not valid notebook cells (%v). Fix the JSON with Write.", shown, err)}
	}
	nb.heads = make([]cellHead, len(nb.cells))
	lines := 0
	for i, c := range nb.cells {
		b, _ := c.MarshalJSON() // raw members: always encodes
		if err := json.Unmarshal(b, &nb.heads[i]); err != nil {
			return nil, &Error{Code: CodeEncoding, Err: err, Message: fmt.Sprintf("%s: cell %d is not a valid notebook cell (%v). Fix the JSON with Write.", shown, i+1, err)}
		}
		if s, ok := c.get("source"); ok {
			nb.sawSources = true
			if bytes.HasPrefix(bytes.TrimSpace(s), []byte("[")) {
				lines++
			} else {
				lines--
			}
		}
	}
	nb.lineSources = lines >= 0 // Jupyter's own form: a list of lines
	var major, minor int
	if v, ok := nb.top.get("nbformat"); ok {
		_ = json.Unmarshal(v, &major)
	}
	if v, ok := nb.top.get("nbformat_minor"); ok {
		_ = json.Unmarshal(v, &minor)
	}
	nb.withIDs = major > 4 || major == 4 && minor >= 5
	// The style: the indent of the first member's line.
	nl := bytes.IndexByte(raw, '\n')
	if nl < 0 || nl == len(bytes.TrimRight(raw, " \t\r\n")) {
		nb.compact = true
	} else {
		rest := raw[nl+1:]
		n := 0
		for n < len(rest) && (rest[n] == ' ' || rest[n] == '\t') {
			n++
		}
		nb.indent = string(rest[:n])
	}
	nb.finalNL = bytes.HasSuffix(raw, []byte("\n"))
	nb.crlf = bytes.Contains(raw, []byte("\r\n"))
	return nb, nil
}

// cellRef is the index form of a cell id: cell-N, the N-th cell (1-based,
// as Read numbers cells).
var cellRef = lazyregexp.New(`^cell-([0-9]{1,9})$`)

// find returns the index of the cell id names, and a note when it was
// taken as cell-N.
func (nb *notebookDoc) find(shown, id string) (int, string, error) {
	for i, h := range nb.heads {
		if h.ID == id {
			return i, "", nil
		}
	}
	if m := cellRef.FindStringSubmatch(id); m != nil {
		if n, _ := strconv.Atoi(m[1]); n >= 1 && n <= len(nb.heads) {
			return n - 1, fmt.Sprintf(" (%s taken as cell %d: no cell has that id)", id, n), nil
		}
	}
	const listed = 30
	var ids []string
	for i := range nb.heads[:min(len(nb.heads), listed)] {
		ids = append(ids, nb.idOf(i))
	}
	list := strings.Join(ids, ", ")
	if len(nb.heads) > listed {
		list += fmt.Sprintf(", … (%d more)", len(nb.heads)-listed)
	}
	if len(nb.heads) == 0 {
		return 0, "", Errorf(CodeNoCell, "%s has no cells, so there is no cell %q. Insert one with edit_mode insert and an empty cell_id.", shown, id)
	}
	return 0, "", Errorf(CodeNoCell, "%s has no cell %q. Its cells, in order: %s. Cells without an id are named cell-N, N counting from 1 as Read does.", shown, id, list)
}

// idOf is how a cell is named: its id, or cell-N without one.
func (nb *notebookDoc) idOf(i int) string {
	if id := nb.heads[i].ID; id != "" {
		return id
	}
	return fmt.Sprintf("cell-%d", i+1)
}

// name describes cell i for the result.
func (nb *notebookDoc) name(i int) string {
	if nb.heads[i].ID == "" {
		return fmt.Sprintf("cell %d (no id)", i+1)
	}
	return fmt.Sprintf("cell %d (id %s)", i+1, nb.heads[i].ID)
}

// encodeSource is src in the form the notebook stores sources: a list of
// lines, each with its newline (Jupyter's), or one string.
func (nb *notebookDoc) encodeSource(src string, lines bool) any {
	if !lines {
		return src
	}
	out := []string{}
	for _, l := range strings.SplitAfter(src, "\n") {
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

// replace sets cell i's source and, when given, its type.
func (nb *notebookDoc) replace(i int, src, cellType string) error {
	c, h := nb.cells[i], &nb.heads[i]
	old, _ := c.get("source")
	lines := nb.lineSources
	if old != nil {
		lines = bytes.HasPrefix(bytes.TrimSpace(old), []byte("["))
	}
	var err error
	if c, err = c.set("source", nb.encodeSource(src, lines)); err != nil {
		return err
	}
	if cellType != "" && cellType != h.CellType {
		if c, err = c.set("cell_type", cellType); err != nil {
			return err
		}
		if h.CellType == "code" {
			// Only code cells have outputs (nbformat's schema).
			c = c.del("outputs").del("execution_count")
		}
		h.CellType = cellType
	}
	if h.CellType == "code" {
		if c, err = c.set("execution_count", json.RawMessage("null")); err != nil {
			return err
		}
		if c, err = c.set("outputs", json.RawMessage("[]")); err != nil {
			return err
		}
	}
	h.Source = docread.NotebookText(src)
	nb.cells[i] = c
	return nil
}

// insert adds a new cell at index at.
func (nb *notebookDoc) insert(at int, src, cellType string) error {
	c := jsonObject{}
	var err error
	set := func(k string, v any) {
		if err == nil {
			c, err = c.set(k, v)
		}
	}
	set("cell_type", cellType)
	set("metadata", json.RawMessage("{}"))
	set("source", nb.encodeSource(src, nb.lineSources || !nb.sawSources))
	if cellType == "code" {
		set("execution_count", json.RawMessage("null"))
		set("outputs", json.RawMessage("[]"))
	}
	h := cellHead{CellType: cellType, Source: docread.NotebookText(src)}
	if nb.withIDs {
		h.ID = nb.newID()
		set("id", h.ID)
	}
	if err != nil {
		return err
	}
	nb.cells = append(nb.cells[:at], append([]jsonObject{c}, nb.cells[at:]...)...)
	nb.heads = append(nb.heads[:at], append([]cellHead{h}, nb.heads[at:]...)...)
	return nil
}

// delete removes cell i.
func (nb *notebookDoc) delete(i int) {
	nb.cells = append(nb.cells[:i], nb.cells[i+1:]...)
	nb.heads = append(nb.heads[:i], nb.heads[i+1:]...)
}

// newID is a fresh cell id, 8 hex digits as Jupyter makes them.
func (nb *notebookDoc) newID() string {
	for {
		b := make([]byte, 4)
		_, _ = rand.Read(b) // crypto/rand never fails on supported systems
		id := hex.EncodeToString(b)
		if _, _, err := nb.find("", id); err != nil {
			return id
		}
	}
}

// encode writes the notebook back in the style it was read in.
func (nb *notebookDoc) encode() ([]byte, error) {
	cells, err := marshalNoEscape(nb.cells)
	if err != nil {
		return nil, err
	}
	top, err := nb.top.set("cells", json.RawMessage(cells))
	if err != nil {
		return nil, err
	}
	flat, err := marshalNoEscape(top)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if nb.bom {
		out.Write([]byte{0xEF, 0xBB, 0xBF})
	}
	if nb.compact {
		out.Write(flat)
	} else if err := json.Indent(&out, flat, "", nb.indent); err != nil {
		return nil, err
	}
	if nb.finalNL {
		out.WriteByte('\n')
	}
	b := out.Bytes()
	if nb.crlf {
		b = bytes.ReplaceAll(b, []byte("\n"), []byte("\r\n")) // JSON strings hold no raw newline
	}
	return b, nil
}

// sourcesView is the text NotebookEdit's diff compares: each cell as a
// header line and its source, the way jupytext's percent format shows a
// notebook, without outputs.
func (nb *notebookDoc) sourcesView() string {
	var sb strings.Builder
	for _, h := range nb.heads {
		fmt.Fprintf(&sb, "# %%%% [%s]", h.CellType)
		if h.ID != "" {
			fmt.Fprintf(&sb, " id=%s", h.ID)
		}
		sb.WriteByte('\n')
		writeLine(&sb, string(h.Source))
	}
	return sb.String()
}
