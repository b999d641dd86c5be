package fileref

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

// Token syntax shared by the composer and the parser.
const (
	tokenOpen   = "<@"
	fileMarker  = "file:"
	tokenPrefix = tokenOpen + fileMarker
	refSep      = '|'
	tokenClose  = '>'
	refIDPrefix = "ref_"
)

// Escape makes typed text safe to place in prompt_text: "\" becomes "\\"
// and "<@" becomes "\<@", so no token can be typed by hand (§16.2.2).
func Escape(typed string) string {
	// Fast path: most prompts contain neither a backslash nor "<@".
	if !strings.Contains(typed, `\`) && !strings.Contains(typed, tokenOpen) {
		return typed
	}
	var b strings.Builder
	b.Grow(len(typed) + len(typed)/8)
	writeEscaped(&b, typed)
	return b.String()
}

func writeEscaped(b *strings.Builder, typed string) {
	start := 0
	for i := 0; i < len(typed); i++ {
		switch {
		case typed[i] == '\\':
			b.WriteString(typed[start : i+1])
			b.WriteByte('\\')
			start = i + 1
		case typed[i] == '<' && i+1 < len(typed) && typed[i+1] == '@':
			b.WriteString(typed[start:i])
			b.WriteString(`\<@`)
			i++
			start = i + 1
		}
	}
	b.WriteString(typed[start:])
}

// Errors a FieldError wraps, for errors.Is.
var (
	ErrUnknownKind = errors.New("unknown segment kind")
	ErrMissingFile = errors.New("file segment without file")
	ErrEmptyPath   = errors.New("empty path")
)

// FieldError is a Compose failure that names the field at fault, in the
// wire's JSON names, e.g. "segments[3].file.path".
type FieldError struct {
	Field string
	Err   error
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Err.Error() }

// Unwrap lets errors.Is match ErrUnknownKind, ErrMissingFile or ErrEmptyPath.
func (e *FieldError) Unwrap() error { return e.Err }

// Compose builds prompt_text and file_references from what the user composed:
// text segments are escaped, each file segment becomes a token. A file (a
// path in a workspace) picked more than once shares the reference of its
// first pick. refs is nil when no file was picked. Fields a segment's kind
// does not use are ignored.
func Compose(segments []protocol.PromptSegment) (promptText string, refs []protocol.FileReference, err error) {
	var (
		b       strings.Builder
		pending strings.Builder // typed text not yet escaped
		byPath  map[string]string
	)
	// Adjacent text segments are escaped as one, or "<" + "@" split across
	// two segments would come out as an unescaped "<@".
	flush := func() {
		writeEscaped(&b, pending.String())
		pending.Reset()
	}
	for i, seg := range segments {
		switch seg.Kind {
		case protocol.SegmentText:
			pending.WriteString(seg.Text)
		case protocol.SegmentFile:
			f := seg.File
			if f == nil {
				return "", nil, &FieldError{Field: segField(i, "file"), Err: ErrMissingFile}
			}
			if f.Path == "" {
				return "", nil, &FieldError{Field: segField(i, "file.path"), Err: ErrEmptyPath}
			}
			// The same path in two workspaces (scope global) is two files.
			key := f.WorkspaceID + "\x00" + f.Path
			id, ok := byPath[key]
			if !ok {
				id = refIDPrefix + strconv.Itoa(len(refs))
				if byPath == nil {
					byPath = make(map[string]string)
				}
				byPath[key] = id
				refs = append(refs, fileReference(id, f))
			}
			flush()
			b.WriteString(tokenPrefix)
			b.WriteString(id)
			b.WriteByte(refSep)
			b.WriteString(tokenDisplayPath(f))
			b.WriteByte(tokenClose)
		default:
			return "", nil, &FieldError{Field: segField(i, "kind"), Err: ErrUnknownKind}
		}
	}
	flush()
	return b.String(), refs, nil
}

func segField(i int, name string) string {
	return "segments[" + strconv.Itoa(i) + "]." + name
}

func fileReference(id string, f *protocol.PickedFile) protocol.FileReference {
	name := f.Name
	if name == "" {
		name = baseName(f.Path)
	}
	ext := f.Extension
	if ext == "" {
		ext = extension(name)
	}
	var size *int64
	if f.SizeBytes != nil {
		n := *f.SizeBytes // copy: the reference must not alias the caller's segment
		size = &n
	}
	return protocol.FileReference{
		RefID:                 id,
		Path:                  f.Path,
		Name:                  name,
		Extension:             ext,
		MimeType:              f.MimeType,
		SizeBytes:             size,
		WorkspaceRelativePath: f.Path,
		WorkspaceID:           f.WorkspaceID,
	}
}

// baseName is the last element of a path. Both separators count because the
// client's workspace may be on Windows; a path of separators only is its own
// name, since name must not be empty.
func baseName(p string) string {
	trimmed := strings.TrimRight(p, `/\`)
	if trimmed == "" {
		return p
	}
	return trimmed[strings.LastIndexAny(trimmed, `/\`)+1:]
}

// extension is ".ts" for "auth.ts", in the form session.file.candidates uses;
// a dotfile such as ".gitignore" and a trailing dot have none.
func extension(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return ""
	}
	return name[i:]
}

// tokenDisplayPath is the display path as the token carries it: see the
// package doc, "Display paths".
func tokenDisplayPath(f *protocol.PickedFile) string {
	d := f.DisplayPath
	if d == "" {
		d = f.Path
	}
	if !needsSanitizing(d) {
		return d
	}
	return strings.Map(func(r rune) rune {
		switch {
		case r == tokenClose:
			return '›'
		case isLineOrControl(r):
			return ' '
		}
		return r // strings.Map already turned invalid UTF-8 into U+FFFD
	}, d)
}

func needsSanitizing(s string) bool {
	for _, r := range s {
		if r == tokenClose || r == utf8.RuneError || isLineOrControl(r) {
			return true
		}
	}
	return false
}

func isLineOrControl(r rune) bool {
	return unicode.IsControl(r) || r == '\u2028' || r == '\u2029'
}
