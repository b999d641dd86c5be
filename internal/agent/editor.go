// What an editor attached to the session lends the agent (ferry acp):
// its files, its terminals and its MCP servers.

package agent

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/mcpclient"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs/overlay"
	"github.com/ferry-dev/ferry/protocol"
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

// mcpState is the session's connection to the MCP servers its editor
// lends: connected at the first turn that has them, kept while the list
// stays the same, reconnected when it changes, closed with the agent.
type mcpState struct {
	mu      sync.Mutex
	servers []mcpclient.Server // what set was connected with
	set     *mcpclient.Set
	told    map[string]string // server → the failure already reported
}

// maxMCPError bounds a server's failure text in agent.error (its stderr
// tail can be long).
const maxMCPError = 1000

// offerMCP adds the tools of the editor's MCP servers to this prompt's
// tools, (re)connecting them when the editor's list changed; a server that
// failed is reported once as agent.error mcp_server_failed, and the turn
// goes on without it.
func (t *turnRun) offerMCP(ctx context.Context) {
	if t.a.editor == nil {
		return
	}
	set, failures := t.a.mcpSet(ctx, t.a.editor().MCPServers)
	for _, f := range failures {
		ev := &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeMCPServerFailed,
			Message: runecut.Ellipsis(fmt.Sprintf("MCP server %q is not available; its tools are not offered: %s", f.Name, f.Err), maxMCPError)}
		if err := t.emit(ctx, protocol.TypeAgentError, ev); err != nil {
			t.a.log.Warn("agent.error not sent", "turn", t.id, "err", err)
		}
	}
	if set == nil {
		return
	}
	extra := set.Tools()
	if len(extra) == 0 {
		return
	}
	t.tools, t.specs = maps.Clone(t.a.tools), slices.Clone(t.a.specs)
	for _, tool := range extra {
		if _, dup := t.tools[tool.Name()]; dup {
			continue
		}
		t.tools[tool.Name()] = tool
		t.specs = append(t.specs, llm.ToolSpec{Name: tool.Name(), Description: tool.Description(), InputSchema: tool.InputSchema()})
	}
}

// mcpSet returns the set connected to servers, connecting it when the list
// differs from the last one, and the failures not reported yet.
func (a *Agent) mcpSet(ctx context.Context, servers []mcpclient.Server) (*mcpclient.Set, []mcpclient.ServerStatus) {
	m := &a.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	if !sameServers(m.servers, servers) {
		if m.set != nil {
			if err := m.set.Close(); err != nil {
				a.log.Warn("MCP servers did not close cleanly", "err", err)
			}
		}
		m.set, m.servers, m.told = nil, slices.Clone(servers), map[string]string{}
		if len(servers) > 0 {
			m.set = mcpclient.Connect(ctx, servers, mcpclient.Options{Logger: a.log, Workspace: a.root})
			if ctx.Err() != nil {
				// Cut short by the cancel: the next turn connects again.
				_ = m.set.Close()
				m.set, m.servers = nil, nil
			}
		}
	}
	if m.set == nil {
		return nil, nil
	}
	var failures []mcpclient.ServerStatus
	for _, st := range m.set.Status() {
		if st.OK || m.told[st.Name] == st.Err {
			continue
		}
		m.told[st.Name] = st.Err
		failures = append(failures, st)
	}
	return m.set, failures
}

// closeMCP stops the MCP servers the session connected.
func (a *Agent) closeMCP() {
	m := &a.mcp
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.set != nil {
		if err := m.set.Close(); err != nil {
			a.log.Warn("MCP servers did not close cleanly", "err", err)
		}
	}
	m.set, m.servers = nil, nil
}

// sameServers reports whether two lists configure the same servers.
func sameServers(a, b []mcpclient.Server) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
