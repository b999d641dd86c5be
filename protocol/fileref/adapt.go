package fileref

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

// Conversions of §16.3. Each writes text parts as they are and hands every
// file part with a usable path to a per-style writer; a file part without
// one, or that the writer cannot express, is written as its display path.

// usablePath is the path a conversion writes for a reference: Path, else
// WorkspaceRelativePath. A path that is empty, invalid UTF-8 or holds a
// control character cannot be written into prompt text readably, so such a
// token is not converted.
func usablePath(r protocol.FileReference) (string, bool) {
	p := r.Path
	if p == "" {
		p = r.WorkspaceRelativePath
	}
	if p == "" || !utf8.ValidString(p) {
		return "", false
	}
	for _, c := range p {
		if isLineOrControl(c) {
			return "", false
		}
	}
	return p, true
}

// render writes the prompt, calling file for each file part with a usable
// path. file reports false when it wrote nothing and the display path should
// stand in.
func (pr Prompt) render(file func(b *strings.Builder, i int, path string) bool) string {
	var b strings.Builder
	for i, part := range pr.Parts {
		if !part.IsFile() {
			b.WriteString(part.Text)
			continue
		}
		if path, ok := usablePath(*part.File); !ok || !file(&b, i, path) {
			b.WriteString(part.DisplayPath)
		}
	}
	return b.String()
}

// Resolve returns the prompt with each file part's reference replaced by
// what resolve makes of it (the path the agent should be given, say), for
// the conversions to use. A part whose reference resolve refuses (false)
// becomes its display path as text: §16.3's fallback for a token the
// receiver cannot interpret (never dropped, never the raw token). resolve
// sees each distinct reference once, and parts that shared a reference
// share its replacement; text parts stay non-empty and never adjacent.
// The receiver is not changed.
func (pr Prompt) Resolve(resolve func(protocol.FileReference) (protocol.FileReference, bool)) Prompt {
	type resolved struct {
		ref *protocol.FileReference
		ok  bool
	}
	done := make(map[*protocol.FileReference]resolved)
	parts := make([]Part, 0, len(pr.Parts))
	for _, part := range pr.Parts {
		if part.IsFile() {
			r, seen := done[part.File]
			if !seen {
				ref, ok := resolve(*part.File)
				r = resolved{&ref, ok}
				done[part.File] = r
			}
			if r.ok {
				parts = append(parts, Part{File: r.ref, DisplayPath: part.DisplayPath})
				continue
			}
			part = Part{Text: part.DisplayPath}
		}
		if n := len(parts); n > 0 && !parts[n-1].IsFile() {
			parts[n-1].Text += part.Text
			continue
		}
		parts = append(parts, part)
	}
	return Prompt{Parts: parts}
}

// Files returns the distinct files the prompt references, by path, in order
// of first mention. Files without a usable path (non-empty, valid UTF-8, no
// control characters) are left out: an agent could not open them.
func (pr Prompt) Files() []protocol.FileReference {
	var (
		files []protocol.FileReference
		seen  map[string]bool
	)
	for _, part := range pr.Parts {
		if !part.IsFile() {
			continue
		}
		path, ok := usablePath(*part.File)
		if !ok || seen[path] {
			continue
		}
		if seen == nil {
			seen = make(map[string]bool)
		}
		seen[path] = true
		files = append(files, *part.File)
	}
	return files
}

// Literal writes every token as its display path: what the user saw, and the
// spec's fallback for an agent that understands no file reference.
func (pr Prompt) Literal() string {
	return pr.render(func(*strings.Builder, int, string) bool { return false })
}

// FileList is the style of agents that load files themselves (Claude Code
// row of §16.3): the tokens leave the text, the files travel separately. So
// that the sentence still reads ("fix the bug in src/auth.ts"), each token is
// replaced by its file's path as plain text.
func (pr Prompt) FileList() (text string, files []protocol.FileReference) {
	return pr.render(writePath), pr.Files()
}

// ScriptArgs is the style of CLI agents: the text with each token replaced by
// its path, and the distinct paths, in order of first mention, to pass as
// process arguments.
func (pr Prompt) ScriptArgs() (text string, args []string) {
	for _, f := range pr.Files() {
		p, _ := usablePath(f)
		args = append(args, p)
	}
	return pr.render(writePath), args
}

func writePath(b *strings.Builder, _ int, path string) bool {
	b.WriteString(path)
	return true
}

// Labels is the generic-LLM style: each token becomes "[File: path]".
func (pr Prompt) Labels() string {
	return pr.render(writeLabel)
}

func writeLabel(b *strings.Builder, _ int, path string) bool {
	b.WriteString("[File: ")
	b.WriteString(path)
	b.WriteByte(']')
	return true
}

// Mentions writes each token as a Claude Code mention: "@path", or
// `@"path"` when the bare form would not be read back whole (spaces, a
// character Claude Code's mention pattern stops at or reads as something
// else, or no whitespace after it). Claude Code only sees a mention at the
// start of the text or after whitespace, so a space is put before one that
// would follow other text. A path with `"` or "#" cannot be written as a
// mention (Claude Code reads "#" as a line range) and falls back to the
// display path.
func (pr Prompt) Mentions() string {
	return pr.render(func(b *strings.Builder, i int, path string) bool {
		if strings.ContainsAny(path, `"#`) || strings.HasSuffix(path, " (agent)") {
			return false // the last is how Claude Code marks an agent mention
		}
		if b.Len() > 0 {
			if r, _ := utf8.DecodeLastRuneInString(b.String()); !unicode.IsSpace(r) {
				b.WriteByte(' ')
			}
		}
		if bareMention(path) && pr.spaceOrEndAfter(i) {
			b.WriteByte('@')
			b.WriteString(path)
			return true
		}
		b.WriteString(`@"`)
		b.WriteString(path)
		b.WriteByte('"')
		return true
	})
}

// bareMention reports whether Claude Code's unquoted pattern, (^|\s)@(\S+)\b,
// captures path whole and as a file: only [A-Za-z0-9._/-], ending in a word
// character, and not "agent-…" (an agent mention).
func bareMention(path string) bool {
	if strings.HasPrefix(path, "agent-") || !isWordByte(path[len(path)-1]) {
		return false
	}
	for i := range len(path) {
		c := path[i]
		if !isWordByte(c) && c != '.' && c != '/' && c != '-' {
			return false
		}
	}
	return true
}

func isWordByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_'
}

// spaceOrEndAfter reports whether part i is followed by nothing, by
// whitespace, or by another file part (which puts a space before itself).
func (pr Prompt) spaceOrEndAfter(i int) bool {
	if i+1 >= len(pr.Parts) {
		return true
	}
	next := pr.Parts[i+1]
	if next.IsFile() {
		return true
	}
	r, _ := utf8.DecodeRuneInString(next.Text)
	return unicode.IsSpace(r)
}

// Loader returns the content of a referenced file, for Inline.
type Loader func(protocol.FileReference) (string, error)

// Inline is the generic-LLM style that inlines content: each token becomes
// "[File: path]" followed by the file's content in a fenced block, on lines of
// their own. load is called once per distinct path; a path mentioned again
// gets the label only, since its content is already above. A token whose file
// cannot be loaded (or when load is nil) is written as its display path.
func (pr Prompt) Inline(load Loader) string {
	type loaded struct {
		content string
		ok      bool
		shown   bool
	}
	cache := make(map[string]*loaded)
	return pr.render(func(b *strings.Builder, i int, path string) bool {
		l := cache[path]
		if l == nil {
			l = &loaded{}
			if load != nil {
				content, err := load(*pr.Parts[i].File)
				l.content, l.ok = content, err == nil
			}
			cache[path] = l
		}
		if !l.ok {
			return false
		}
		if l.shown {
			return writeLabel(b, i, path)
		}
		l.shown = true
		if s := b.String(); s != "" && !strings.HasSuffix(s, "\n") {
			b.WriteByte('\n')
		}
		writeLabel(b, i, path)
		fence := strings.Repeat("`", max(3, longestRun(l.content, '`')+1))
		b.WriteString("\n" + fence + "\n")
		b.WriteString(l.content)
		if l.content != "" && !strings.HasSuffix(l.content, "\n") {
			b.WriteByte('\n')
		}
		b.WriteString(fence)
		if !pr.newlineOrEndAfter(i) {
			b.WriteByte('\n')
		}
		return true
	})
}

// newlineOrEndAfter reports whether part i is followed by nothing or by text
// that starts a new line.
func (pr Prompt) newlineOrEndAfter(i int) bool {
	if i+1 >= len(pr.Parts) {
		return true
	}
	next := pr.Parts[i+1]
	return !next.IsFile() && strings.HasPrefix(next.Text, "\n")
}

// longestRun is the length of the longest run of c in s; a fence must be
// longer than any run of backticks in the content it encloses.
func longestRun(s string, c byte) int {
	best, run := 0, 0
	for i := range len(s) {
		if s[i] == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}
