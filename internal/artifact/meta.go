package artifact

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"

	"github.com/gabriel-vasile/mimetype"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// errOutside: the file is not inside the workspace (the first root).
var errOutside = errors.New("the file is outside the workspace")

// errHardLinked: the file has other hard links, which may lie outside the
// workspace; it is never handed over (the client refuses it too).
var errHardLinked = errors.New("the file has other hard links (names that may lie outside the workspace)")

// workspaceRel returns p (a canonical absolute path) relative to the
// workspace, "/"-separated, or errOutside.
func workspaceRel(fsys vfs.FS, p string) (string, error) {
	roots := fsys.Roots()
	if len(roots) == 0 || p == "" || p == vfs.DevNull {
		return "", errOutside
	}
	rel, err := filepath.Rel(roots[0], p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", errOutside
	}
	return filepath.ToSlash(rel), nil
}

// meta is what a registration needs to know about a file.
type meta struct {
	size int64
	mime string
}

// lookup opens the file through the tools' file system (so it is confined
// like every other access) and takes its size from the open descriptor
// and its type from its first bytes.
func lookup(fsys vfs.FS, p string) (meta, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return meta{}, fmt.Errorf("open %s: %w", p, err)
	}
	defer func() { _ = f.Close() }()
	info := f.Info()
	if info.IsDir {
		return meta{}, fmt.Errorf("%s: %w", p, vfs.ErrIsDir)
	}
	if info.Links > 1 {
		return meta{}, fmt.Errorf("%s: %w", p, errHardLinked)
	}
	m, err := mimetype.DetectReader(f)
	if err != nil {
		return meta{}, fmt.Errorf("sniff %s: %w", p, err)
	}
	return meta{size: info.Stamp.Size, mime: refine(m.String(), p)}, nil
}

// sniffBytes is the type of a file with content data (Write's fallback).
func sniffBytes(data []byte, p string) string {
	return refine(mimetype.Detect(data).String(), p)
}

// textTypes name text formats that content sniffing reports as plain
// text, by extension: a CSV or Markdown report should reach the user's
// browser as what it is.
var textTypes = map[string]string{
	".md":       "text/markdown",
	".markdown": "text/markdown",
	".csv":      "text/csv",
	".tsv":      "text/tab-separated-values",
	".yaml":     "application/yaml",
	".yml":      "application/yaml",
	".toml":     "application/toml",
}

// refine narrows a sniffed text/plain by the file's extension, keeping the
// sniffed parameters (the charset).
func refine(sniffed, p string) string {
	base, params, _ := strings.Cut(sniffed, ";")
	if strings.TrimSpace(base) != "text/plain" {
		return sniffed
	}
	t, ok := textTypes[strings.ToLower(path.Ext(filepath.ToSlash(p)))]
	if !ok {
		return sniffed
	}
	if params != "" {
		return t + ";" + params
	}
	return t
}
