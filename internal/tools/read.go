package tools

import (
	"context"
	"crypto/sha256"
	_ "embed" // read.md is the tool's description
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ferry-dev/ferry/internal/vfs"
)

//go:embed read.md
var readDescription string

// Read reads a file of the workspace: text as numbered lines, images, PDFs
// and Jupyter notebooks. See read.md for what the agent is told and
// docs/tools.md for the limits.
//
// Its guarantees:
//   - Memory is bounded by what is returned, not by the file: text is
//     streamed, lines before offset are scanned and dropped, a long line
//     keeps only Limits.MaxLineRunes runes.
//   - Output over Limits.MaxReadTokens is refused (CodeTooLarge) with a
//     range that fits, never truncated (the two-stage gate in read_gate.go).
//   - Every successful read is recorded in Env.State, marked Partial unless
//     the agent saw the whole file exactly (a text window keeps its line
//     range, so windows can cover a file for Write); a repeated read of the same view
//     of an unchanged file gets a short stub while the earlier result is
//     still in the agent's context.
type Read struct{}

var _ Tool = Read{}

// Name implements Tool.
func (Read) Name() string { return "Read" }

// Description implements Tool.
func (Read) Description() string { return readDescription }

// ReadOnly implements Tool: Read never writes.
func (Read) ReadOnly() bool { return true }

var readSchema = inputSchema[readParams]()

// InputSchema implements Tool.
func (Read) InputSchema() json.RawMessage { return readSchema }

// readParams is Read's input as the agent sends it.
type readParams struct {
	FilePath string  `json:"file_path" jsonschema:"required" jsonschema_description:"The file to read: relative to the workspace root, or absolute."`
	Offset   *int    `json:"offset" jsonschema:"minimum=0" jsonschema_description:"The line number to start reading at (1-based; 0 means 1). For notebooks, the cell number."`
	Limit    *int    `json:"limit" jsonschema:"minimum=1" jsonschema_description:"How many lines to read (default 2000). For notebooks, how many cells."`
	Pages    *string `json:"pages" jsonschema_description:"PDF only: the pages to read, e.g. \"3\", \"1-5\" or \"1,3-4\" (at most 20 pages a call)."`
}

// maxLineNumber clamps offset and limit, so offset+limit cannot overflow;
// no file has that many lines.
const maxLineNumber = 1 << 40

// readRequest is a validated call.
type readRequest struct {
	path string
	// start is the first line (or cell), 1-based; count how many.
	start, count int
	// ranged is set when offset or limit was given.
	ranged bool
	// pages is the PDF page selection, nil when not given.
	pages []pageRange
	// pagesText is pages as given, normalised.
	pagesText string
}

func (p readParams) validate(l Limits) (readRequest, error) {
	r := readRequest{path: p.FilePath, start: 1, count: l.DefaultReadLines}
	if strings.TrimSpace(p.FilePath) == "" {
		return r, Errorf(CodeInvalidInput, "invalid input: field \"file_path\" is required: the file to read, relative to the workspace or absolute")
	}
	if p.Offset != nil {
		if *p.Offset < 0 {
			return r, Errorf(CodeInvalidInput, "invalid input: field \"offset\" must be a line number of 1 or more, got %d", *p.Offset)
		}
		r.start = min(max(*p.Offset, 1), maxLineNumber)
		r.ranged = true
	}
	if p.Limit != nil {
		if *p.Limit < 1 {
			return r, Errorf(CodeInvalidInput, "invalid input: field \"limit\" must be 1 or more, got %d; leave it out to read %d lines", *p.Limit, l.DefaultReadLines)
		}
		r.count = min(*p.Limit, maxLineNumber)
		r.ranged = true
	}
	if p.Pages != nil {
		ranges, err := parsePages(*p.Pages)
		if err != nil {
			return r, err
		}
		r.pages = ranges
		r.pagesText = formatPages(ranges)
	}
	return r, nil
}

// withDefaults fills the zero fields of l from DefaultLimits, so an Env
// built without Limits still works.
func withDefaults(l Limits) Limits {
	d := DefaultLimits()
	set := func(v *int, def int) {
		if *v <= 0 {
			*v = def
		}
	}
	set(&l.MaxReadTokens, d.MaxReadTokens)
	set(&l.DefaultReadLines, d.DefaultReadLines)
	set(&l.MaxLineRunes, d.MaxLineRunes)
	set(&l.MaxPDFPagesPerCall, d.MaxPDFPagesPerCall)
	set(&l.PDFPagesRequiredAbove, d.PDFPagesRequiredAbove)
	set(&l.MaxImageDimension, d.MaxImageDimension)
	set(&l.MaxNotebookOutputRunes, d.MaxNotebookOutputRunes)
	set(&l.MaxSearchResults, d.MaxSearchResults)
	return l
}

// sniffBytes is how much of a file's head decides its kind: the magic
// numbers, a byte order mark, and NUL bytes for binary (as git does).
const sniffBytes = 8 << 10

// fileKind is what Read makes of a file.
type fileKind int

const (
	kindText fileKind = iota
	kindBinary
	kindImage
	kindPDF
	kindNotebook
)

// classifyFile decides by content, not by name, except for notebooks, which are
// JSON and can only be told apart by their extension.
func classifyFile(head []byte, name string) (fileKind, string) {
	if strings.HasPrefix(string(head), "%PDF-") {
		return kindPDF, ""
	}
	if format := imageFormat(head); format != "" {
		return kindImage, format
	}
	if strings.EqualFold(path.Ext(filepath.ToSlash(name)), ".ipynb") {
		return kindNotebook, ""
	}
	if detectEncoding(head) != encUTF8 {
		return kindText, ""
	}
	if strings.IndexByte(string(head), 0) >= 0 {
		return kindBinary, ""
	}
	return kindText, ""
}

// Run implements Tool.
func (Read) Run(ctx context.Context, env *Env, input json.RawMessage) (*Result, error) {
	var p readParams
	if err := DecodeInput(input, &p); err != nil {
		return nil, err
	}
	limits := withDefaults(env.Limits)
	req, err := p.validate(limits)
	if err != nil {
		return nil, err
	}
	info, err := env.FS.Stat(req.path)
	if err != nil {
		return nil, readFSError(env.FS, req.path, err)
	}
	if info.IsDir {
		return nil, isDirError(req.path, err)
	}
	f, err := env.FS.Open(req.path)
	if err != nil {
		return nil, readFSError(env.FS, req.path, err)
	}
	defer f.Close()
	info = f.Info()

	head := make([]byte, sniffBytes)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, readFSError(env.FS, req.path, err)
	}
	head = head[:n]
	kind, format := classifyFile(head, info.Path)

	if req.pages != nil && kind != kindPDF {
		return nil, Errorf(CodeInvalidInput, "invalid input: field \"pages\" applies only to PDF files, and %s is not one; leave it out (use offset and limit for text)", displayName(info, req.path))
	}
	if req.ranged && (kind == kindPDF || kind == kindImage) {
		hint := ""
		if kind == kindPDF {
			hint = ", and use pages to choose PDF pages"
		}
		return nil, Errorf(CodeInvalidInput, "invalid input: offset and limit apply to text files and notebooks; %s is a %s: leave them out%s",
			displayName(info, req.path), kindName(kind, format), hint)
	}

	rc := &readCall{ctx: ctx, env: env, limits: limits, req: req, f: f, info: info, head: head, name: displayName(info, req.path)}
	switch kind {
	case kindBinary:
		return nil, Errorf(CodeEncoding, "%s is a binary file (it contains NUL bytes), not text, an image, a PDF or a notebook; Read cannot show it. Use a command-line tool suited to its format if you need its content.", rc.name)
	case kindImage:
		return rc.image(format)
	case kindPDF:
		return rc.pdf()
	case kindNotebook:
		return rc.notebook()
	default:
		return rc.text()
	}
}

// readCall is one Read in progress.
type readCall struct {
	ctx    context.Context
	env    *Env
	limits Limits
	req    readRequest
	f      vfs.File
	info   vfs.Info
	head   []byte
	// name is how the file is named in messages: workspace-relative.
	name string
}

// dedup returns the stub result if the agent already has this view of the
// unchanged file in its context.
func (rc *readCall) dedup(view string) *Result {
	if rc.env.State == nil {
		return nil
	}
	hash := func() (Hash, error) { return hashFile(rc.env.FS, rc.info.Path) }
	if !rc.env.State.Dedupable(ReadEntry{Path: rc.info.Path, Stamp: rc.info.Stamp, View: view}, hash) {
		return nil
	}
	return &Result{
		Blocks: Text(fmt.Sprintf("%s is unchanged since your last Read of it (%s); that earlier result is still current.", rc.name, view)),
		Path:   rc.info.Path,
		Rel:    rc.info.Rel,
	}
}

// record stores what this read saw. hash is meaningful only for a full read.
func (rc *readCall) record(view string, partial bool, hash Hash) {
	if rc.env.State == nil {
		return
	}
	rc.env.State.Record(ReadEntry{Path: rc.info.Path, Stamp: rc.info.Stamp, Hash: hash, Partial: partial, View: view})
}

// result builds a successful result.
func (rc *readCall) result(blocks []Block) *Result {
	return &Result{Blocks: blocks, Path: rc.info.Path, Rel: rc.info.Rel}
}

// hashFile hashes the whole file, streaming.
func (rc *readCall) hashFile() (Hash, error) {
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(rc.f, 0, 1<<62)); err != nil {
		return Hash{}, fmt.Errorf("hash %s: %w", rc.name, err)
	}
	var sum Hash
	h.Sum(sum[:0])
	return sum, nil
}

func displayName(info vfs.Info, given string) string {
	if info.Rel != "" && info.Rel != "." {
		return info.Rel
	}
	if info.Path != "" {
		return info.Path
	}
	return given
}

func kindName(k fileKind, format string) string {
	switch k {
	case kindImage:
		return strings.ToUpper(format) + " image"
	case kindPDF:
		return "PDF"
	case kindNotebook:
		return "notebook"
	}
	return "text file"
}

func isDirError(name string, err error) error {
	return &Error{Code: CodeIsDirectory, Err: err, Message: fmt.Sprintf(
		"%s is a directory, not a file. Use Glob to list the files in it, then Read one of them.", name)}
}

// readFSError turns a vfs error into the agent's error.
func readFSError(fsys vfs.FS, name string, err error) error {
	var msg string
	var code int
	switch {
	case errors.Is(err, vfs.ErrNotRegular):
		code = CodeNotRegular
		msg = fmt.Sprintf("%s is not a regular file (a device, FIFO, socket or other special file, or a link to one); Read only reads regular files, and refuses these without opening them (/dev/null reads as empty).", name)
	case errors.Is(err, vfs.ErrOutside):
		code = CodeOutside
		msg = fmt.Sprintf("%s is outside the workspace (%s); Read only reads files inside the workspace and the roots the user allowed. Use a path inside them.", name, strings.Join(fsys.Roots(), ", "))
	case errors.Is(err, vfs.ErrIsDir), errors.Is(err, syscall.EISDIR):
		return isDirError(name, err)
	case errors.Is(err, vfs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		code = CodeNotFound
		msg = fmt.Sprintf("%s does not exist (paths are relative to the workspace %s).", name, firstRoot(fsys))
		if s := suggestSimilar(fsys, name); s != "" {
			msg += " Did you mean " + s + "?"
		} else {
			msg += " Use Glob to find the file."
		}
	case errors.Is(err, syscall.ELOOP):
		code = CodeNotFound
		msg = fmt.Sprintf("%s cannot be resolved: its symbolic links form a loop or a chain too long to follow.", name)
	case errors.Is(err, vfs.ErrPermission):
		code = CodePermission
		msg = fmt.Sprintf("the operating system refused to read %s (permission denied). Ask the user to make it readable, or read another file.", name)
	case errors.Is(err, fs.ErrInvalid), errors.Is(err, syscall.ENAMETOOLONG):
		code = CodeInvalidInput
		msg = fmt.Sprintf("invalid input: field \"file_path\" is not a valid path: %q", name)
	default:
		return fmt.Errorf("read %s: %w", name, err)
	}
	return &Error{Code: code, Message: msg, Err: err}
}

func firstRoot(fsys vfs.FS) string {
	if r := fsys.Roots(); len(r) > 0 {
		return r[0]
	}
	return "."
}

// maxSuggestEntries bounds the directory listing a "did you mean" costs.
const maxSuggestEntries = 10000

// suggestSimilar names a file in the same directory whose name is close to
// name's: the same but for case, the same stem with another extension, or a
// small edit distance. "" when none is, or the directory cannot be listed.
func suggestSimilar(fsys vfs.FS, name string) string {
	slashed := filepath.ToSlash(name)
	dir, base := path.Split(slashed)
	if base == "" {
		return ""
	}
	listDir := dir
	if listDir == "" {
		listDir = "."
	}
	entries, err := fsys.ReadDir(listDir)
	if err != nil || len(entries) > maxSuggestEntries {
		return ""
	}
	stem := strings.TrimSuffix(base, path.Ext(base))
	best, bestScore := "", 1<<30
	for _, e := range entries {
		n := e.Name()
		score := 1 << 30
		switch {
		case strings.EqualFold(n, base):
			score = 0
		case stem != "" && strings.TrimSuffix(n, path.Ext(n)) == stem:
			score = 1
		default:
			limit := max(1, min(3, len(base)/4))
			if d := textDistance(strings.ToLower(n), strings.ToLower(base), limit); d <= limit {
				score = 1 + d
			}
		}
		if score < bestScore {
			best, bestScore = n, score
		}
	}
	if best == "" {
		return ""
	}
	return dir + best
}

// textDistance (Read's "did you mean" and Edit's closest candidate) is the
// optimal-string-alignment distance of a and b in runes (Levenshtein plus adjacent transpositions, the commonest typo), or
// limit+1 once it is known to exceed limit.
func textDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
