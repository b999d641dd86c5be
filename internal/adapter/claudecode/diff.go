package claudecode

import (
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strings"

	"github.com/ferry-dev/ferry/internal/runecut"

	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/protocol"
)

// Bounds of a diff built from Claude Code's structuredPatch, the same as
// textdiff's defaults.
const (
	maxDiffLines    = 5000
	maxDiffBytes    = 512 << 10
	maxDiffLineSize = 4 << 10
	// maxDiffFile bounds a file read to show a permission request's diff.
	maxDiffFile = 4 << 20
)

// resultDiff is the change a finished Edit or Write made, from the patch
// Claude Code reports (nil when it reports none).
func (s *session) resultDiff(r *toolUseResult) *protocol.FileDiff {
	if r.FilePath == "" {
		return nil
	}
	path := runecut.Ellipsis(s.rel(r.FilePath), 4096)
	if len(r.StructuredPatch) == 0 {
		if r.Type == "create" && r.Content != "" {
			d := textdiff.Diff(path, "", r.Content, 3)
			d.IsNewFile = true
			return d
		}
		return nil
	}
	return patchDiff(path, r.StructuredPatch, r.Type == "create")
}

// patchDiff converts a structuredPatch into protocol hunks. The counts are
// taken from the lines themselves, so the diff is valid whatever the
// headers say; past the caps it is cut with Truncated set.
func patchDiff(path string, hunks []patchHunk, isNew bool) *protocol.FileDiff {
	d := &protocol.FileDiff{Path: path, IsNewFile: isNew, Hunks: []protocol.DiffHunk{}}
	lines, size := 0, 0
	for _, h := range hunks {
		dh := protocol.DiffHunk{OldStart: max(h.OldStart, 0), NewStart: max(h.NewStart, 0), Lines: []protocol.DiffLine{}}
		for _, l := range h.Lines {
			if l == "" {
				continue
			}
			var op string
			switch l[0] {
			case ' ':
				op = "context"
			case '-':
				op = "delete"
			case '+':
				op = "add"
			default:
				continue // "\ No newline at end of file"
			}
			text := strings.ToValidUTF8(l[1:], "\uFFFD")
			if len(text) > maxDiffLineSize {
				text = runecut.Ellipsis(text, maxDiffLineSize)
				d.Truncated = true
			}
			if lines >= maxDiffLines || size+len(text) > maxDiffBytes {
				d.Truncated = true
				break
			}
			lines++
			size += len(text)
			dh.Lines = append(dh.Lines, protocol.DiffLine{Op: op, Text: text})
			if op != "add" {
				dh.OldLines++
			}
			if op != "delete" {
				dh.NewLines++
			}
		}
		if len(dh.Lines) > 0 {
			d.Hunks = append(d.Hunks, dh)
		}
		if d.Truncated && (lines >= maxDiffLines || size >= maxDiffBytes) {
			break
		}
	}
	return d
}

// proposedDiff is the change an Edit, MultiEdit or Write asks permission
// for, computed from the file as it is now (nil when it cannot be: the
// file is outside the workspace, too big, or the edit does not apply).
func (s *session) proposedDiff(tool string, input json.RawMessage) *protocol.FileDiff {
	var in struct {
		FilePath   string `json:"file_path"`
		Content    string `json:"content"`
		OldString  string `json:"old_string"`
		NewString  string `json:"new_string"`
		ReplaceAll bool   `json:"replace_all"`
		Edits      []struct {
			OldString  string `json:"old_string"`
			NewString  string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		} `json:"edits"`
	}
	if tool != "Edit" && tool != "MultiEdit" && tool != "Write" {
		return nil
	}
	if err := json.Unmarshal(input, &in); err != nil || in.FilePath == "" {
		return nil
	}
	rel := s.rel(in.FilePath)
	if len(rel) > 4096 {
		return nil
	}
	old, exists, ok := s.readForDiff(in.FilePath)
	if !ok {
		return nil
	}
	switch tool {
	case "Write":
		d := textdiff.Diff(rel, old, in.Content, 3)
		d.IsNewFile = !exists
		return d
	case "Edit":
		in.Edits = append(in.Edits[:0], struct {
			OldString  string `json:"old_string"`
			NewString  string `json:"new_string"`
			ReplaceAll bool   `json:"replace_all"`
		}{in.OldString, in.NewString, in.ReplaceAll})
	}
	cur := old
	for _, e := range in.Edits {
		if e.OldString == "" || !strings.Contains(cur, e.OldString) {
			return nil
		}
		if e.ReplaceAll {
			cur = strings.ReplaceAll(cur, e.OldString, e.NewString)
		} else {
			cur = strings.Replace(cur, e.OldString, e.NewString, 1)
		}
	}
	return textdiff.Diff(rel, old, cur, 3)
}

// readForDiff reads a workspace file through the session's confined file
// system: ok is false when it cannot or should not be read.
func (s *session) readForDiff(path string) (content string, exists, ok bool) {
	f, err := s.fs.Open(s.rel(path))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, true
	}
	if err != nil {
		return "", false, false
	}
	defer func() { _ = f.Close() }()
	b, err := io.ReadAll(io.LimitReader(f, maxDiffFile+1))
	if err != nil || len(b) > maxDiffFile {
		return "", true, false
	}
	return string(b), true, true
}
