package artifact

import (
	"errors"
	"fmt"

	"github.com/ferry-dev/ferry/internal/vfs"
)

// ErrNotHandedOver marks a file Register refuses: outside the workspace,
// a directory, or with other hard links. The caller logs it and goes on;
// the agent's write already happened.
var ErrNotHandedOver = errors.New("artifact: not handed over")

// Register makes the File for a file an agent that ferry does not run
// the tools of (Claude Code, an ACP agent, a script) reports it wrote:
// name is resolved through fsys (confined like every tool access, symlinks
// resolved), must be a regular file inside the workspace (fsys's first
// root) with no other hard link, and its size and type are read from
// disk now. The path is workspace-relative and "/"-separated.
func Register(fsys vfs.FS, name, toolUseID string) (File, error) {
	p, err := fsys.Resolve(name)
	if err != nil {
		return File{}, fmt.Errorf("%w: %s: %w", ErrNotHandedOver, name, err)
	}
	rel, err := workspaceRel(fsys, p)
	if err != nil {
		return File{}, fmt.Errorf("%w: %s: %w", ErrNotHandedOver, name, err)
	}
	m, err := lookup(fsys, p)
	if err != nil {
		return File{}, fmt.Errorf("%w: %s: %w", ErrNotHandedOver, rel, err)
	}
	opts := []Option{WithMimeType(m.mime)}
	if toolUseID != "" {
		opts = append(opts, WithToolUseID(toolUseID))
	}
	return New(rel, m.size, opts...)
}
