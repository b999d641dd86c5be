// The session's MCP servers: the user's configuration file, the
// workspace's .mcp.json once the user approved it, and what an editor
// lends (ferry acp), connected together.

package agent

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/mcpclient"
	"github.com/ferry-dev/ferry/internal/mcpconfig"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/protocol"
)

// mcpState is the session's connection to its MCP servers: connected at
// the first turn that has them, kept while the list stays the same,
// reconnected when it changes (a configuration file or the editor's list
// changed), closed with the agent.
type mcpState struct {
	mu      sync.Mutex
	servers []mcpclient.Server // what set was connected with
	set     *mcpclient.Set
	told    map[string]string // server → the failure already reported
	// noted are the configuration problems already reported.
	noted map[string]bool
	// putOff are the contents of the workspace's .mcp.json the user
	// answered "not now" (or let time out) in this session; approved the
	// ones approved for it (also when the approval could not be kept).
	putOff, approved map[string]bool
}

// maxMCPError bounds a server's failure text in agent.error (its stderr
// tail can be long).
const maxMCPError = 1000

// Answers of the approval of a workspace's .mcp.json, beside
// protocol.AllowAlways (approve) and protocol.Deny (not now).
const mcpNever = "never"

// offerMCP adds the tools of the session's MCP servers to this prompt's
// tools, (re)connecting them when their list changed. A workspace's
// .mcp.json is asked about first (when nobody can be asked, it is left
// out and the user told how to trust it). A server or configuration that
// failed is reported once as agent.error mcp_server_failed, and the turn
// goes on without it. Its error is ctx's, when cancelled while asking.
func (t *turnRun) offerMCP(ctx context.Context) error {
	if t.a.editor == nil && t.a.mcpSources == nil {
		return nil
	}
	servers, notes, err := t.configuredMCP(ctx)
	if err != nil {
		return err
	}
	if t.a.editor != nil {
		servers = mergeServers(servers, t.a.editor().MCPServers)
	}
	set := t.a.mcpSet(ctx, servers)
	t.reportMCP(ctx, notes)
	if set == nil {
		return nil
	}
	extra := set.Tools()
	if len(extra) == 0 {
		return nil
	}
	t.tools, t.specs = maps.Clone(t.a.tools), slices.Clone(t.a.specs)
	for _, tool := range extra {
		if _, dup := t.tools[tool.Name()]; dup {
			continue
		}
		t.tools[tool.Name()] = tool
		t.specs = append(t.specs, llm.ToolSpec{Name: tool.Name(), Description: tool.Description(), InputSchema: tool.InputSchema()})
	}
	return nil
}

// configuredMCP reads the configuration files (every turn: a changed file
// takes effect at the next one) and returns the user's servers and the
// workspace's approved ones (these win a name clash), and the problems
// met, worded for the user.
func (t *turnRun) configuredMCP(ctx context.Context) ([]mcpclient.Server, []string, error) {
	src := t.a.mcpSources
	if src == nil {
		return nil, nil, nil
	}
	l := src.Load()
	notes := make([]string, 0, len(l.Problems))
	for _, p := range l.Problems {
		notes = append(notes, "MCP configuration: "+p.Error())
	}
	servers := l.User
	w := l.Workspace
	if w == nil || len(w.Servers) == 0 {
		return servers, notes, nil
	}
	m := &t.a.mcp
	m.mu.Lock()
	ok := src.Trust || w.Decision == mcpconfig.Approved || m.approved[w.SHA256]
	ask := !ok && w.Decision == mcpconfig.Unknown && !m.putOff[w.SHA256]
	m.mu.Unlock()
	switch {
	case ask && t.a.headless:
		notes = append(notes, fmt.Sprintf("%s is not approved, so its MCP servers (%s) were not started: a repository must not start programs by itself. "+
			"Pass --trust-mcp to ferry run to use it for this run, or approve it in a ferry UI session.", w.Path, serverNames(w.Servers)))
	case ask:
		approved, note, err := t.approveMCP(ctx, w)
		if err != nil {
			return nil, nil, err
		}
		if note != "" {
			notes = append(notes, note)
		}
		ok = approved
	}
	if ok {
		ws, err := src.Servers(w)
		if err != nil {
			notes = append(notes, "MCP configuration: "+err.Error())
		}
		servers = mergeServers(servers, ws)
	}
	return servers, notes, nil
}

// approveMCP asks the user whether the workspace's .mcp.json may start
// its servers, and keeps the answer: approve and never are recorded for
// this content, not now (or no answer) holds for the session. note is a
// problem keeping the answer.
func (t *turnRun) approveMCP(ctx context.Context, w *mcpconfig.WorkspaceConfig) (approved bool, note string, err error) {
	req := &protocol.InteractionRequest{
		InteractionID: protocol.NewID(),
		TurnID:        t.id,
		Kind:          protocol.InteractionPermission,
		Title:         runecut.Ellipsis("Start the MCP servers of this workspace's .mcp.json ("+serverNames(w.Servers)+")?", 1000),
		Message: "This workspace's `" + mcpconfig.WorkspaceFile + "` asks ferry to start these MCP servers for the agent. " +
			"They run as programs on this machine with your rights (or are reached over HTTP):\n\n" + mcpconfig.Describe(w.Servers) +
			"\nApprove only if you trust this repository. If the file changes, you are asked again.",
		Options: []protocol.Option{
			{Value: protocol.AllowAlways, Label: "Approve", Description: "Start these servers now and in later sessions, while the file stays as it is"},
			{Value: protocol.Deny, Label: "Not now", Description: "Do not start them in this session; ask again in the next one"},
			{Value: mcpNever, Label: "Never", Description: "Never start the servers of this version of the file, and do not ask again"},
		},
		DefaultValue: protocol.Deny, // a timeout never approves
	}
	resp, err := t.interact(ctx, req)
	if err != nil {
		return false, "", err
	}
	d := mcpconfig.Unknown
	if resp != nil {
		switch {
		case slices.Contains(resp.SelectedValue.Values, protocol.AllowAlways):
			d = mcpconfig.Approved
		case slices.Contains(resp.SelectedValue.Values, mcpNever):
			d = mcpconfig.Never
		}
	}
	m := &t.a.mcp
	m.mu.Lock()
	switch d {
	case mcpconfig.Approved:
		m.approved[w.SHA256] = true
	default:
		m.putOff[w.SHA256] = true // never: also if it cannot be kept
	}
	m.mu.Unlock()
	if a := t.a.mcpSources.Approvals; d != mcpconfig.Unknown && a != nil {
		if err := a.Set(t.a.mcpSources.Workspace, w.SHA256, d); err != nil {
			note = "MCP configuration: your answer holds for this session only: " + err.Error()
		}
	}
	return d == mcpconfig.Approved, note, nil
}

// reportMCP reports, once each, the configuration problems in notes and
// the servers that failed since the last report.
func (t *turnRun) reportMCP(ctx context.Context, notes []string) {
	m := &t.a.host().mcp // a sub-agent's calls use the session's servers
	m.mu.Lock()
	var msgs []string
	for _, n := range notes {
		if !m.noted[n] {
			m.noted[n] = true
			msgs = append(msgs, n)
		}
	}
	if m.set != nil {
		for _, st := range m.set.Status() {
			if st.OK || m.told[st.Name] == st.Err {
				continue
			}
			m.told[st.Name] = st.Err
			msgs = append(msgs, fmt.Sprintf("MCP server %q is not available; its tools are not offered: %s", st.Name, st.Err))
		}
	}
	m.mu.Unlock()
	for _, msg := range msgs {
		ev := &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeMCPServerFailed, Message: runecut.Ellipsis(msg, maxMCPError)}
		if err := t.emit(ctx, protocol.TypeAgentError, ev); err != nil {
			t.a.log.Warn("agent.error not sent", "turn", t.id, "err", err)
		}
	}
}

// mcpSet returns the set connected to servers, connecting it when the list
// differs from the last one (nil: no server).
func (a *Agent) mcpSet(ctx context.Context, servers []mcpclient.Server) *mcpclient.Set {
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
			m.set = mcpclient.Connect(ctx, servers, mcpclient.Options{Logger: a.log, Workspace: a.root, ConnectTimeout: a.mcpConnectTimeout})
			if ctx.Err() != nil {
				// Cut short by the cancel: the next turn connects again.
				_ = m.set.Close()
				m.set, m.servers = nil, nil
			}
		}
	}
	return m.set
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

func newMCPState() mcpState {
	return mcpState{told: map[string]string{}, noted: map[string]bool{}, putOff: map[string]bool{}, approved: map[string]bool{}}
}

// mergeServers is base with over's servers added, an over server
// replacing base's of the same name.
func mergeServers(base, over []mcpclient.Server) []mcpclient.Server {
	if len(over) == 0 {
		return base
	}
	out := slices.DeleteFunc(slices.Clone(base), func(s mcpclient.Server) bool {
		return slices.ContainsFunc(over, func(o mcpclient.Server) bool { return o.Name == s.Name })
	})
	return append(out, over...)
}

func serverNames(servers []mcpclient.Server) string {
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.Name
	}
	return runecut.Ellipsis(strings.Join(names, ", "), 300)
}

// sameServers reports whether two lists configure the same servers.
func sameServers(a, b []mcpclient.Server) bool {
	if len(a) == 0 && len(b) == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}
