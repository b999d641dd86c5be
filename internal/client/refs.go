package client

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// resolveRefs returns the prompt with every file reference resolved for
// the agent of a session of ws (see resolveRef). A reference that does not
// resolve inside the roots does not refuse the prompt: its token reaches
// the agent as its display path, as text, and its file is not handed over
// (§16.3: a token the client cannot interpret becomes its display path).
func (c *Client) resolveRefs(s *session, pr fileref.Prompt) fileref.Prompt {
	return pr.Resolve(func(r protocol.FileReference) (protocol.FileReference, bool) {
		out, ok := c.resolveRef(s.ws, r)
		if !ok {
			c.log.Info("file reference outside the workspace roots: passed to the agent as its display path",
				"session", s.id, "ref_id", r.RefID)
		}
		return out, ok
	})
}

// resolveRef checks a file reference of a prompt to a session of ws, and
// returns it with the path its agent should be given. Both path and
// workspace_relative_path must lie inside the roots the reference can come
// from:
//
//   - no workspace_id, or ws's own: relative to ws, inside ws's roots (ws,
//     its repository's work tree for scope project, or, as an absolute
//     path an older search gave, another workspace of the client); the
//     reference is passed on as it came;
//   - another workspace's id (scope global): relative to that workspace
//     and inside it; the agent is given the file's absolute path, since a
//     relative one would name a file of ws.
//
// An unknown workspace_id does not resolve.
func (c *Client) resolveRef(ws *workspace, r protocol.FileReference) (protocol.FileReference, bool) {
	base, roots := ws, ws.roots
	if r.WorkspaceID != "" && r.WorkspaceID != ws.ID {
		if base = c.workspace(r.WorkspaceID); base == nil {
			return r, false
		}
		roots = []string{base.Path}
	}
	var abs string
	for _, p := range [...]string{r.WorkspaceRelativePath, r.Path} {
		if p == "" {
			continue
		}
		a, ok := inside(base.Path, roots, p)
		if !ok {
			return r, false
		}
		abs = a
	}
	if base != ws && abs != "" {
		r.Path = abs
	}
	return r, true
}

// inside resolves p (relative to dir, or absolute) and reports whether it
// lies inside one of roots. ".." is taken lexically, then symlinks are
// resolved as far as the path exists, so a link inside that points outside
// is refused too.
func inside(dir string, roots []string, p string) (string, bool) {
	if strings.ContainsRune(p, 0) {
		return "", false
	}
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(dir, p)
	}
	if !within(roots, abs) || !within(roots, vfs.ResolveExisting(abs)) {
		return "", false
	}
	return abs, true
}

func within(roots []string, abs string) bool {
	for _, root := range roots {
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
