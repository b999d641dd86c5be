// File-system errors turned into the tools' coded errors, with hints
// such as similar file names.

package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ferry-dev/ferry/internal/vfs"
)

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

// writeFSError turns a vfs error into the *Error the agent sees.
func writeFSError(name string, err error) error {
	var te *Error
	switch {
	case errors.As(err, &te):
		return te
	case errors.Is(err, vfs.ErrOutside):
		return &Error{Code: CodeOutside, Err: err, Message: fmt.Sprintf("%s. ferry only writes inside the workspace and the roots the user allowed; choose a path inside them.", trimErr(err))}
	case errors.Is(err, vfs.ErrNotRegular):
		return &Error{Code: CodeNotRegular, Err: err, Message: fmt.Sprintf("%s. Write and Edit only change regular files.", trimErr(err))}
	case errors.Is(err, vfs.ErrHardLinked):
		return hardLinked(name, err)
	case errors.Is(err, vfs.ErrIsDir):
		return &Error{Code: CodeIsDirectory, Err: err, Message: fmt.Sprintf("%s is a directory, not a file. Give the path of a file inside it.", name)}
	case errors.Is(err, vfs.ErrPermission):
		return &Error{Code: CodePermission, Err: err, Message: fmt.Sprintf("%s cannot be written: it (or its folder) is read-only, and ferry does not override a file's permissions. Ask the user to make it writable, or leave it unchanged.", name)}
	case errors.Is(err, syscall.ENOTDIR):
		return &Error{Code: CodeNotFound, Err: err, Message: fmt.Sprintf("%s cannot be created: part of its folder path is a file, not a directory. Check the path.", name)}
	case errors.Is(err, vfs.ErrNotExist):
		return &Error{Code: CodeNotFound, Err: err, Message: fmt.Sprintf("%s does not exist. Check the path (Glob can find the file).", name)}
	case errors.Is(err, syscall.ELOOP):
		return &Error{Code: CodeNotFound, Err: err, Message: fmt.Sprintf("%s cannot be resolved: too many symbolic links (a loop?).", name)}
	case errors.Is(err, fs.ErrInvalid), errors.Is(err, syscall.ENAMETOOLONG):
		return &Error{Code: CodeInvalidInput, Err: err, Message: fmt.Sprintf("%q is not a valid path.", name)}
	}
	return fmt.Errorf("%s: %w", name, err)
}

// hardLinked is CodeHardLinked for the file shown as name.
func hardLinked(name string, err error) *Error {
	return &Error{Code: CodeHardLinked, Err: err, Message: fmt.Sprintf("%s has other hard links (names elsewhere that share its content, possibly outside the workspace), so ferry does not write it. Leave it unchanged, or ask the user to replace it with a plain copy.", name)}
}

// trimErr is a vfs error's text without the sentinel suffix, which the
// code already says. vfs messages name only the paths involved.
func trimErr(err error) string {
	s := err.Error()
	for _, sentinel := range []error{vfs.ErrOutside, vfs.ErrNotRegular} {
		s = strings.TrimSuffix(s, ": "+sentinel.Error())
	}
	return s
}

// searchFSError turns a vfs error about a search path into the agent's
// error.
func searchFSError(fsys vfs.FS, tool, field, name string, err error) error {
	var code int
	var msg string
	switch {
	case errors.Is(err, vfs.ErrOutside):
		code = CodeOutside
		msg = fmt.Sprintf("%s is outside the workspace (%s); %s only searches inside the workspace and the roots the user allowed. Use a path inside them.",
			name, strings.Join(fsys.Roots(), ", "), tool)
	case errors.Is(err, vfs.ErrNotExist), errors.Is(err, syscall.ENOTDIR):
		code = CodeNotFound
		msg = fmt.Sprintf("%s does not exist (paths are relative to the workspace %s). Use Glob on a parent directory to see what is there.", name, searchWorkspace(fsys))
	case errors.Is(err, syscall.ELOOP):
		code = CodeNotFound
		msg = fmt.Sprintf("%s cannot be resolved: its symbolic links form a loop or a chain too long to follow.", name)
	case errors.Is(err, vfs.ErrNotRegular):
		code = CodeNotRegular
		msg = fmt.Sprintf("%s is not a regular file or directory (a device, FIFO, socket or a link to one); %s does not search these.", name, tool)
	case errors.Is(err, vfs.ErrPermission):
		code = CodePermission
		msg = fmt.Sprintf("the operating system refused to read %s (permission denied). Search another directory, or ask the user to make it readable.", name)
	case errors.Is(err, fs.ErrInvalid), errors.Is(err, syscall.ENAMETOOLONG):
		code = CodeInvalidInput
		msg = fmt.Sprintf("invalid input: field %q is not a valid path: %q", field, name)
	default:
		return fmt.Errorf("%s %s: %w", tool, name, err)
	}
	return &Error{Code: code, Message: msg, Err: err}
}
