// Package artifact hands the files an agent made to the user (spec 004): the
// metadata of such a file, the per-run Collector that gathers them, and the
// tool decorators that register them.
//
// What it guarantees:
//
//   - Values are immutable. File (the collector side) and llm.Artifact (the
//     message side, serialised with the transcript) share the six fields of
//     Metadata and the same rules: a non-blank path and file name, a size
//     that is not negative. FileName never fails: it handles "/" and "\",
//     drops trailing separators, and returns "" and separator-only inputs as
//     given, so registration cannot fail on a file name.
//   - A Collector belongs to one run (a turn, or a sub-run's own run) and is
//     safe under parallel Adds. Artifacts returns a snapshot that later Adds
//     never change; SliceFrom takes one snapshot and slices it, so an Add
//     between reading the size and reading the items cannot shift the
//     window; an out-of-range mark gives an empty list, never a panic.
//   - The decorators (WrapWrite, WrapEdit, WrapBash) keep the delegate's
//     name, description, read-only flag and every behaviour: the delegate
//     runs first and its result and error are returned unchanged.
//     Registration happens only after a success, only when a Collector is in
//     the context (CollectorFrom), and its failures — a metadata lookup that
//     fails, a panic — end in a warning in the log, never in a changed tool
//     result: the write already happened, and an error would make the model
//     write the file again.
//   - Write and Edit gain the boolean input `artifact` (default true): the
//     model says whether a file is a deliverable or a scratch file. A value
//     that is not a boolean logs a warning and counts as true; it never
//     fails the write. The key is removed before the delegate decodes the
//     input (the tools refuse unknown keys). Permissions stay the
//     delegate's: the agent decides on the tool name and the path, and the
//     flag is not part of what is decided on.
//   - Bash gains the optional `artifact_paths`: the files the command
//     declares it will create or overwrite. After a successful run each one
//     that is a regular file inside the workspace and was created or changed
//     during the run (its vfs.Stamp differs) is registered; a path outside
//     the workspace, a directory, an unchanged file or a file with other
//     hard links (another name may lie outside the workspace) is skipped
//     with a warning. Bash gives no other way to know which files a command meant
//     for the user.
//   - Paths are workspace-relative and "/"-separated, taken from the
//     canonical path the tool wrote (symlinks resolved); a file outside the
//     workspace (an extra root) is not registered, since a download is
//     confined to the workspace; nor is a file with other hard links. Size and MIME type come from the file
//     (vfs open and stat, then a content sniff with mimetype); when that
//     fails Write falls back to the UTF-8 byte length of its content (and a
//     sniff of it) and Edit to size 0 (spec §5).
//   - Decorate derives the decorated set from the same list that gives every
//     session its workspace-confined tools (tools.AllTools): every tool of
//     that list has a decision here, checked by a test, so a new file tool
//     cannot silently bypass artifacts.
//
// ferry has no browser screenshot tool, so there is no screenshot decorator
// (spec §5's ArtifactAwareBrowserTool). A sub-agent of ferry's agent (its
// Task tool) runs with a collector of its own from Fork, whose Artifacts
// the Task call then hands to its prompt (spec §10's first item).
package artifact

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/llm"
)

// Metadata is the contract both forms of an artifact share (spec §3).
type Metadata interface {
	// Path is where the file is: workspace-relative, "/"-separated.
	Path() string
	// FileName is what the user sees and what a download is named.
	FileName() string
	// Size in bytes when the file was registered.
	Size() int64
	// MimeType is the media type, "" when unknown.
	MimeType() string
	// ToolUseID names the tool call that made the file, "" when unknown.
	ToolUseID() string
	// DownloadToken is the application's download token, "" when none.
	DownloadToken() string
}

var (
	_ Metadata = File{}
	_ Metadata = llm.Artifact{}
)

// File is an artifact on the collector side: what a run gathered. It is
// immutable; the message-side form is ToMessage.
type File struct {
	a llm.Artifact
}

// Option sets an optional field of New.
type Option func(*llm.ArtifactFields)

// WithMimeType sets the media type.
func WithMimeType(m string) Option { return func(f *llm.ArtifactFields) { f.MimeType = m } }

// WithToolUseID sets the tool call that made the file.
func WithToolUseID(id string) Option { return func(f *llm.ArtifactFields) { f.ToolUseID = id } }

// WithFileName replaces the name derived from the path (FileName).
func WithFileName(name string) Option { return func(f *llm.ArtifactFields) { f.FileName = name } }

// WithDownloadToken sets the download token.
func WithDownloadToken(tok string) Option {
	return func(f *llm.ArtifactFields) { f.DownloadToken = tok }
}

// New makes a File of the file at path with size bytes. The path may not
// be blank, the size not negative; the file name is FileName(path) unless
// WithFileName gives one, and may not be blank either. The error wraps
// llm.ErrInvalidArtifact.
func New(path string, size int64, opts ...Option) (File, error) {
	f := llm.ArtifactFields{Path: path, FileName: FileName(path), Size: size}
	for _, o := range opts {
		o(&f)
	}
	a, err := llm.NewArtifact(f)
	if err != nil {
		return File{}, fmt.Errorf("artifact: %w", err)
	}
	return File{a: a}, nil
}

// FromMessage is the collector-side form of a message's artifact.
func FromMessage(a llm.Artifact) File { return File{a: a} }

// Path implements Metadata.
func (f File) Path() string { return f.a.Path() }

// FileName implements Metadata.
func (f File) FileName() string { return f.a.FileName() }

// Size implements Metadata.
func (f File) Size() int64 { return f.a.Size() }

// MimeType implements Metadata.
func (f File) MimeType() string { return f.a.MimeType() }

// ToolUseID implements Metadata.
func (f File) ToolUseID() string { return f.a.ToolUseID() }

// DownloadToken implements Metadata.
func (f File) DownloadToken() string { return f.a.DownloadToken() }

// ToMessage is the message-side form, which travels with the transcript.
func (f File) ToMessage() llm.Artifact { return f.a }

// ToMessages converts a list (nil for an empty one).
func ToMessages(fs []File) []llm.Artifact {
	if len(fs) == 0 {
		return nil
	}
	out := make([]llm.Artifact, len(fs))
	for i, f := range fs {
		out[i] = f.ToMessage()
	}
	return out
}

// FileName is the name of the file at path (spec §3): backslashes count as
// separators, trailing separators are dropped, and the last piece is the
// name, so "/reports/" is "reports" and `a\b\c.txt` is "c.txt". An empty
// path, or one of separators only, is returned as given: a file name must
// never be the reason a registration fails.
func FileName(path string) string {
	p := strings.TrimRight(strings.ReplaceAll(path, `\`, "/"), "/")
	if p == "" {
		return path
	}
	return p[strings.LastIndexByte(p, '/')+1:]
}

// Collector gathers the artifacts of one run. It is safe for concurrent
// use; the zero value is ready, and a nil *Collector ignores Adds and is
// empty.
type Collector struct {
	mu    sync.Mutex
	files []File
}

// NewCollector returns an empty collector.
func NewCollector() *Collector { return &Collector{} }

// Add registers f.
func (c *Collector) Add(f File) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.files = append(c.files, f)
}

// Len is how many artifacts were added so far: the mark for SliceFrom.
func (c *Collector) Len() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.files)
}

// Artifacts returns a snapshot of everything added, in order; later Adds
// do not change it.
func (c *Collector) Artifacts() []File {
	return c.SliceFrom(0)
}

// SliceFrom returns what was added since mark (a Len taken earlier), from
// one snapshot. A mark out of range (negative, or past the end) gives an
// empty list: nothing was added since, as far as the caller can tell, and a
// run's bookkeeping is no reason to fail it.
func (c *Collector) SliceFrom(mark int) []File {
	if c == nil {
		return []File{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if mark < 0 || mark > len(c.files) {
		return []File{}
	}
	out := make([]File, len(c.files)-mark)
	copy(out, c.files[mark:])
	return out
}

type collectorKey struct{}

// WithCollector returns ctx carrying c: the tools called with it register
// their artifacts in c.
func WithCollector(ctx context.Context, c *Collector) context.Context {
	return context.WithValue(ctx, collectorKey{}, c)
}

// CollectorFrom returns the collector in ctx, or nil: the decorators then
// register nothing, so the tools work the same without one.
func CollectorFrom(ctx context.Context) *Collector {
	c, _ := ctx.Value(collectorKey{}).(*Collector)
	return c
}

// Fork gives a sub-run (a subagent) a collector of its own: the tools of the
// returned context register there and not in the parent's collector, so
// another run's files never mix into this one's result. The sub-run puts
// sub.Artifacts() into its own result; the parent decides what of it to
// surface (Add them to its own collector, for instance).
func Fork(ctx context.Context) (context.Context, *Collector) {
	sub := NewCollector()
	return WithCollector(ctx, sub), sub
}
