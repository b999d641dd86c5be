package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/protocol"
)

// MaxInstructionBytes caps the project instructions in the system prompt,
// all files together: a file that does not fit is cut with a visible note,
// the innermost (most specific) files keeping their room first.
const MaxInstructionBytes = 40 << 10

// Instruction file names: AGENTS.md, else CLAUDE.md in the same folder.
const (
	instructionsName = "AGENTS.md"
	fallbackName     = "CLAUDE.md"
)

// instructions are the project instructions of the system prompt and the
// files they came from (agent.instructions).
type instructions struct {
	text  string
	files []protocol.InstructionFile
	// warnings say which files were left out and why (logged once).
	warnings []string
}

// instructionSource is one place an instruction file may be.
type instructionSource struct {
	dir string // absolute folder
	// inWorkspace: read through the workspace FS (its confinement rules).
	inWorkspace bool
	// user: the user's own file (AGENTS.md only, any regular file).
	user bool
}

// instructionSources are where the instruction files are looked for,
// outermost first: the user's file, then each folder from the repository
// root (the nearest folder above the workspace holding .git) down to the
// workspace; the workspace only when it is in no repository. repo is the
// repository root (the workspace when there is none).
func instructionSources(root, userFile string) (srcs []instructionSource, repo string) {
	var out []instructionSource
	if userFile != "" {
		out = append(out, instructionSource{dir: filepath.Dir(userFile), user: true})
	}
	dirs := []string{root}
	for d := root; ; {
		if _, err := os.Lstat(filepath.Join(d, ".git")); err == nil {
			break
		}
		parent := filepath.Dir(d)
		if parent == d {
			dirs = []string{root} // no repository: the workspace alone
			break
		}
		d = parent
		dirs = append(dirs, d)
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		out = append(out, instructionSource{dir: dirs[i], inWorkspace: dirs[i] == root})
	}
	return out, dirs[len(dirs)-1]
}

// loadedFile is one instruction file read, up to the cap.
type loadedFile struct {
	path string
	size int64
	data []byte
}

// loadInstructions reads the instruction files and builds the system
// prompt's section. A file that cannot be read is left out, with a warning.
func (a *Agent) loadInstructions() instructions {
	var (
		files    []loadedFile
		warnings []string
	)
	for _, src := range a.instrSources {
		names := []string{instructionsName, fallbackName}
		if src.user {
			names = names[:1]
		}
		for _, name := range names {
			f, err := a.readInstructionFile(src, name)
			if errors.Is(err, fs.ErrNotExist) {
				continue // CLAUDE.md only where there is no AGENTS.md
			}
			if err != nil {
				warnings = append(warnings, err.Error())
			} else {
				files = append(files, f)
			}
			break
		}
	}
	in := buildInstructions(files)
	in.warnings = warnings
	return in
}

// readInstructionFile reads name in src.dir, at most MaxInstructionBytes.
// In the workspace it goes through the workspace FS, as the file tools
// do (a symbolic link out of the workspace is refused); above it, the
// file must resolve inside the repository root; the user's file is the
// user's own.
func (a *Agent) readInstructionFile(src instructionSource, name string) (loadedFile, error) {
	path := filepath.Join(src.dir, name)
	var (
		r    io.ReadCloser
		size int64
	)
	if src.inWorkspace {
		f, err := a.fs.Open(name)
		if err != nil {
			return loadedFile{}, err
		}
		r, size = f, f.Info().Stamp.Size
	} else {
		open := path
		if !src.user {
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				return loadedFile{}, err
			}
			if _, ok := within(real, a.instrRepo); !ok {
				return loadedFile{}, fmt.Errorf("%s resolves to %s, outside the repository %s", path, real, a.instrRepo)
			}
			open = real // the path checked, not the link again
		}
		f, fi, err := openRegular(open, path)
		if err != nil {
			return loadedFile{}, err
		}
		r, size = f, fi.Size()
	}
	defer r.Close()
	data, err := io.ReadAll(io.LimitReader(r, MaxInstructionBytes))
	if err != nil {
		return loadedFile{}, fmt.Errorf("read %s: %w", path, err)
	}
	return loadedFile{path: path, size: max(size, int64(len(data))), data: data}, nil
}

// buildInstructions is the system prompt's section for files (outermost
// first) within MaxInstructionBytes: the innermost files get their room
// first, a file cut says so where it was cut.
func buildInstructions(files []loadedFile) instructions {
	if len(files) == 0 {
		return instructions{}
	}
	texts := make([]string, len(files))
	out := instructions{files: make([]protocol.InstructionFile, len(files))}
	room := MaxInstructionBytes
	for i := len(files) - 1; i >= 0; i-- {
		f := files[i]
		text := runecut.Prefix(string(f.data), room)
		room -= len(text)
		cut := int64(len(text)) < f.size
		if cut {
			text += fmt.Sprintf("\n\n[ferry cut this file here: it has %d bytes, and the instructions are capped at %d KiB in all]", f.size, MaxInstructionBytes>>10)
		}
		texts[i] = "## " + f.path + "\n\n" + strings.TrimRight(text, "\n")
		out.files[i] = protocol.InstructionFile{Path: f.path, Bytes: f.size, Truncated: cut}
	}
	out.text = "# Instructions\n\nThe user and the project gave these instructions, outermost first (a later, more specific file wins where they disagree). Follow them unless the user asks otherwise.\n\n" +
		strings.Join(texts, "\n\n")
	return out
}

// refreshInstructions reloads the instruction files and reports whether
// their set (paths, sizes, cuts) changed. The system prompt takes the new
// text from the next model call.
func (a *Agent) refreshInstructions() ([]protocol.InstructionFile, bool) {
	in := a.loadInstructions()
	a.mu.Lock()
	defer a.mu.Unlock()
	changed := !slices.Equal(a.instr.files, in.files)
	warn := !slices.Equal(a.instr.warnings, in.warnings)
	a.instr = in
	if warn {
		for _, w := range in.warnings {
			a.log.Warn("instruction file left out", "why", w)
		}
	}
	return slices.Clone(in.files), changed
}

// Instructions are the instruction files in the system prompt, outermost
// first (agent.instructions), as the last reload found them.
func (a *Agent) Instructions() []protocol.InstructionFile {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.instr.files)
}

// openRegular opens a file outside the workspace FS (the user's, or one
// checked to be inside the repository) for reading: non-blocking, then
// checked on the descriptor, so a FIFO or device never holds a turn up.
// shown names it in the error.
func openRegular(path, shown string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) //nolint:gosec // the caller checked where it leads
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("%s is not a regular file", shown)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}
