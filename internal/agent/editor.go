// What an editor attached to the session lends the agent (ferry acp):
// its files and its terminals (its MCP servers: mcp.go).

package agent

import (
	"context"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs/overlay"
)

// editorFileTools read and write file content through the editor's
// buffers when it lends its files. Glob and Grep list and search ferry's
// disk: asking the editor for every file of a tree would be slow, and
// names are the same on both.
var editorFileTools = map[string]bool{"Read": true, "Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// lend points env, a copy for one call of the tool named tool, at what the
// editor lends now: the overlay over ferry's FS for the file tools, its
// terminals for Bash. Nothing is kept past the call.
func (a *Agent) lend(ctx context.Context, env *tools.Env, tool string) {
	if a.editor == nil {
		return
	}
	lent := a.editor()
	if lent.Files != nil && editorFileTools[tool] {
		env.FS = overlay.New(ctx, a.fs, lent.Files)
		if env.Diagnostics != nil {
			// The server gets what the editor's buffer now holds.
			env.Diagnostics = a.diagnostics(env.FS)
		}
	}
	if lent.Terminals != nil {
		env.Shell = terminalShell{lent.Terminals}
	}
}

// terminalShell runs Bash's commands in the editor's terminals.
type terminalShell struct{ t editorlink.Terminals }

var _ tools.Shell = terminalShell{}

func (s terminalShell) RunShell(ctx context.Context, c tools.ShellCommand) (tools.ShellRun, error) {
	out, truncated, exit, err := s.t.Run(ctx, editorlink.Command{Command: c.Path, Args: c.Args, Env: c.Env, Cwd: c.Dir, OutputByteLimit: c.OutputLimit})
	return tools.ShellRun{Output: out, Truncated: truncated, ExitCode: exit.Code, Signal: exit.Signal}, err
}
