package client

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// checkRefs refuses a prompt whose file references point outside the
// places a search of this workspace can offer (see allowed).
func (w *workspace) checkRefs(refs []protocol.FileReference) *protocol.Error {
	for i, r := range refs {
		for _, f := range [...]struct{ name, path string }{
			{"path", r.Path},
			{"workspace_relative_path", r.WorkspaceRelativePath},
		} {
			if f.path != "" && !w.allowed(f.path) {
				return &protocol.Error{
					Code:    protocol.CodeInvalidValue,
					Field:   fmt.Sprintf("payload.file_references[%d].%s", i, f.name),
					Message: "the path leaves the workspace",
				}
			}
		}
	}
	return nil
}

// allowed reports whether p (relative to the workspace, or absolute) lies
// inside one of the workspace's roots: the workspace itself, its
// repository's work tree (scope project) or another workspace of the client
// (scope global). ".." is taken lexically, then symlinks are resolved as far
// as the path exists, so a link inside that points outside is refused too.
func (w *workspace) allowed(p string) bool {
	if strings.ContainsRune(p, 0) {
		return false
	}
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(w.Path, p)
	}
	if !w.within(abs) {
		return false
	}
	return w.within(vfs.ResolveExisting(abs))
}

func (w *workspace) within(abs string) bool {
	for _, root := range w.roots {
		prefix := root
		if !strings.HasSuffix(prefix, string(os.PathSeparator)) {
			prefix += string(os.PathSeparator)
		}
		if abs == root || strings.HasPrefix(abs, prefix) {
			return true
		}
	}
	return false
}
