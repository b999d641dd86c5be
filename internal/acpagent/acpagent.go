// Package acpagent is ferry's face as an ACP agent (the Agent Client
// Protocol editors speak: Zed, JetBrains, Neovim, acpx): JSON-RPC on stdio
// on one side, and on the other a UI of a ferry master, speaking ferry's UI
// protocol over a real WebSocket. An ACP session is a ferry session (same
// id): every other UI of that master (the web UI, a phone) sees and drives
// it too, and what they do reaches the editor as session/update.
//
// Guarantees:
//   - stdout carries only JSON-RPC: one message a line.
//   - Bad input never ends the process: a line that is not JSON is
//     answered -32700, one that is not a JSON-RPC request -32600, a method
//     before initialize -32600, an unknown method -32601, an unknown
//     session or bad params -32602.
//   - A permission is answered once: the face's own rules first (Config.
//     Rules), else the editor's answer, else another UI's (first wins; the
//     editor's open question is then withdrawn).
//   - session/cancel and a vanished client (stdin closed) cancel the
//     running turns; Serve returns once they ended (or 2 s passed).
//   - What an editor lends (files, terminals, MCP servers) is registered
//     for its sessions only in local mode, only for what its
//     clientCapabilities offer, and removed when the editor goes.
package acpagent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/mcpclient"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// Target is the ferry master a session of the editor runs on.
type Target struct {
	// URL is the master's http(s) base URL; Token a UI token of it.
	URL, Token string
	// HTTPClient dials it (nil: http.DefaultClient).
	HTTPClient *http.Client
	// Machine names the machine (its name or id); "": the only one
	// online, else the first that serves Workspace.
	Machine string
	// Workspace is the workspace's absolute path on that machine.
	Workspace string
	// Adapter is the agent to start (an adapter id, e.g. "builtin";
	// "": builtin when the machine offers it, else its first available).
	Adapter string
	// Lend is true when the editor's files, terminals and MCP servers
	// reach the session's agent (local mode: the agent runs here).
	Lend bool
}

// Backend gives the master serving a workspace.
type Backend interface {
	// Open returns the master for the editor's cwd (absolute), starting
	// it when needed. An *acp.RequestError is passed to the editor as it
	// is; any other error is logged and answered as an internal error.
	Open(ctx context.Context, cwd string) (Target, error)
}

// Config configures the face.
type Config struct {
	Backend Backend
	// Registry receives what editors lend (nil: nothing is lent).
	Registry *editorlink.Registry
	// Rules answer permission requests before the editor is asked (ferry
	// acp --master's --allow and --deny; locally ferry's agent applies
	// them itself).
	Rules permission.Rules
	// Mode of new sessions ("": default); Model their model ("": the
	// agent's default).
	Mode, Model string
	// Version is ferry's, as agentInfo says.
	Version string
	Logger  *slog.Logger
}

// cancelWait bounds how long a cancelled turn may take to end.
const cancelWait = 2 * time.Second

// Serve runs the face on in (the client's requests) and out (only
// JSON-RPC) until in ends or ctx is done; then it cancels the running
// turns, waits for them (at most 2 s), and returns nil.
func Serve(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: out}
	a := &Agent{cfg: cfg, log: cfg.Logger, uis: map[string]*uiConn{}, sessions: map[string]*session{}}
	a.ctx, a.stop = context.WithCancel(context.Background())
	defer a.stop()
	pr, pw := io.Pipe()
	a.conn = acp.NewAgentSideConnection(a, w, pr)
	a.conn.SetLogger(cfg.Logger)
	// Lines flow only once a.conn is set: the connection's handlers use it.
	go filterLines(in, pw, w, cfg.Logger)
	select {
	case <-a.conn.Done():
	case <-ctx.Done():
		_ = pr.CloseWithError(ctx.Err())
	}
	a.shutdown()
	return nil
}

// Agent is the face: the acp.Agent of one connection.
type Agent struct {
	cfg  Config
	log  *slog.Logger
	conn *acp.AgentSideConnection
	// ctx lives as long as the connection; stop ends it.
	ctx  context.Context
	stop context.CancelFunc

	mu          sync.Mutex
	initialized bool
	clientCaps  acp.ClientCapabilities
	uis         map[string]*uiConn // by master URL
	sessions    map[string]*session
}

var (
	_ acp.Agent       = (*Agent)(nil)
	_ acp.AgentLoader = (*Agent)(nil)
)

// shutdown cancels every running turn and waits for them, withdraws what
// was lent and closes the connections to the masters.
func (a *Agent) shutdown() {
	a.mu.Lock()
	ss := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		ss = append(ss, s)
	}
	a.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.cancelAndWait(cancelWait)
		}()
	}
	wg.Wait()
	a.stop()
	a.mu.Lock()
	for _, s := range a.sessions {
		if a.cfg.Registry != nil {
			a.cfg.Registry.Delete(s.id)
		}
	}
	uis := a.uis
	a.uis = map[string]*uiConn{}
	a.mu.Unlock()
	for _, u := range uis {
		u.close()
	}
}

// reqErr is a JSON-RPC error with a message for people.
func reqErr(code int, format string, args ...any) *acp.RequestError {
	msg := fmt.Sprintf(format, args...)
	return &acp.RequestError{Code: code, Message: msg, Data: map[string]any{"error": msg}}
}

// JSON-RPC codes the face answers with.
const (
	codeInvalidRequest = -32600
	codeInvalidParams  = -32602
	codeInternal       = -32603
	codeResourceGone   = -32002 // ACP's resource not found
)

func errNotInitialized() error {
	return reqErr(codeInvalidRequest, "Invalid request: send initialize first")
}

func (a *Agent) ready() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.initialized {
		return errNotInitialized()
	}
	return nil
}

// Initialize answers with ACP's protocol version this SDK speaks (the
// client decides whether it can go on when it asked another) and what the
// face really offers.
func (a *Agent) Initialize(_ context.Context, p acp.InitializeRequest) (acp.InitializeResponse, error) {
	a.mu.Lock()
	a.initialized = true
	a.clientCaps = p.ClientCapabilities
	a.mu.Unlock()
	if int(p.ProtocolVersion) != acp.ProtocolVersionNumber {
		a.log.Info("the ACP client asked another protocol version; answering with ours", "asked", p.ProtocolVersion, "ours", acp.ProtocolVersionNumber)
	}
	version := a.cfg.Version
	if version == "" {
		version = "dev"
	}
	return acp.InitializeResponse{
		ProtocolVersion: acp.ProtocolVersion(acp.ProtocolVersionNumber),
		AgentCapabilities: acp.AgentCapabilities{
			LoadSession: true,
			// Images ride ferry's attachments; an embedded resource is text
			// in the prompt.
			PromptCapabilities: acp.PromptCapabilities{Image: true, EmbeddedContext: true},
			McpCapabilities:    acp.McpCapabilities{Http: true},
			SessionCapabilities: acp.SessionCapabilities{
				List:   &acp.SessionListCapabilities{},
				Close:  &acp.SessionCloseCapabilities{},
				Resume: &acp.SessionResumeCapabilities{},
			},
		},
		AgentInfo:   &acp.Implementation{Name: "ferry", Title: acp.Ptr("ferry"), Version: version},
		AuthMethods: []acp.AuthMethod{},
	}, nil
}

// Authenticate succeeds: ferry needs no login from the editor (the
// master's token is ferry acp's own).
func (a *Agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	if err := a.ready(); err != nil {
		return acp.AuthenticateResponse{}, err
	}
	return acp.AuthenticateResponse{}, nil
}

// maxListed bounds session/list: the newest sessions of the workspace, on
// one page.
const maxListed = 1000

// ListSessions lists the ferry sessions of the workspace cwd names (the
// archived ones too), newest first, on one page: what session/load takes.
func (a *Agent) ListSessions(ctx context.Context, p acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	if err := a.ready(); err != nil {
		return acp.ListSessionsResponse{}, err
	}
	switch {
	case p.Cwd == nil:
		return acp.ListSessionsResponse{}, reqErr(codeInvalidParams, "Invalid params: cwd is required: ferry keeps sessions per workspace")
	case p.Cursor != nil:
		// Every answer is one page: no cursor was ever handed out.
		return acp.ListSessionsResponse{}, reqErr(codeInvalidParams, "Invalid params: unknown cursor %q", *p.Cursor)
	case len(p.AdditionalDirectories) > 0:
		return acp.ListSessionsResponse{Sessions: []acp.SessionInfo{}}, nil // ferry's sessions have no additional roots
	}
	t, u, err := a.openTarget(ctx, *p.Cwd)
	if err != nil {
		return acp.ListSessionsResponse{}, err
	}
	ms, err := machines(ctx, u)
	if err != nil {
		return acp.ListSessionsResponse{}, a.wireErr(err, "list the machines")
	}
	type place struct{ machine, workspace string }
	here := map[place]bool{}
	for _, m := range ms {
		if t.Machine != "" && m.Name != t.Machine && m.ID != t.Machine {
			continue
		}
		for _, w := range m.Workspaces {
			if filepath.Clean(w.Path) == filepath.Clean(t.Workspace) {
				here[place{m.ID, w.ID}] = true
			}
		}
	}
	out := []acp.SessionInfo{}
	limit := maxListed
	for _, archived := range []bool{false, true} {
		r, err := u.request(ctx, protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{Limit: &limit, Archived: archived}), 30*time.Second)
		if err != nil {
			return acp.ListSessionsResponse{}, a.wireErr(err, "list the sessions")
		}
		ss, ok := r.Payload.(*protocol.Sessions)
		if !ok {
			return acp.ListSessionsResponse{}, a.wireErr(fmt.Errorf("sessions list answered %s", r.Type), "list the sessions")
		}
		for _, si := range ss.Sessions {
			if !here[place{si.MachineID, si.WorkspaceID}] {
				continue
			}
			info := acp.SessionInfo{SessionId: acp.SessionId(si.ID), Cwd: *p.Cwd}
			if si.Title != "" {
				info.Title = acp.Ptr(si.Title)
			}
			if si.UpdatedAt != "" {
				info.UpdatedAt = acp.Ptr(si.UpdatedAt)
			}
			out = append(out, info)
		}
	}
	// Newest first across both lists; at most maxListed.
	slices.SortStableFunc(out, func(x, y acp.SessionInfo) int { return strings.Compare(deref(y.UpdatedAt), deref(x.UpdatedAt)) })
	if len(out) > maxListed {
		out = out[:maxListed]
	}
	return acp.ListSessionsResponse{Sessions: out}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// CloseSession stops following a session: its running turn of this
// editor is cancelled (at most 2 s), what the editor lent it withdrawn.
// The ferry session stays on the master, for session/load, the web UI
// and the phone.
func (a *Agent) CloseSession(_ context.Context, p acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.CloseSessionResponse{}, err
	}
	s.cancelAndWait(cancelWait)
	if a.cfg.Registry != nil {
		a.cfg.Registry.Delete(s.id)
	}
	a.drop(s)
	return acp.CloseSessionResponse{}, nil
}

// openTarget resolves cwd to its master and the UI connection to it.
func (a *Agent) openTarget(ctx context.Context, cwd string) (Target, *uiConn, error) {
	if cwd == "" || !filepath.IsAbs(cwd) {
		return Target{}, nil, reqErr(codeInvalidParams, "Invalid params: cwd must be an absolute path, not %q", cwd)
	}
	t, err := a.cfg.Backend.Open(ctx, filepath.Clean(cwd))
	if err != nil {
		return Target{}, nil, a.wireErr(err, "start ferry for "+cwd)
	}
	a.mu.Lock()
	u := a.uis[t.URL]
	a.mu.Unlock()
	if u != nil {
		select {
		case <-u.done:
			u = nil // gone: dial again
		default:
		}
	}
	if u == nil {
		if u, err = dialUI(ctx, t, a.log); err != nil {
			return Target{}, nil, a.wireErr(err, "connect to the master")
		}
		a.mu.Lock()
		a.uis[t.URL] = u
		a.mu.Unlock()
	}
	return t, u, nil
}

// wireErr is what the editor is told of err: a RequestError as it is,
// another error as an internal error whose detail stays in the log.
func (a *Agent) wireErr(err error, what string) error {
	var re *acp.RequestError
	if errors.As(err, &re) {
		return re
	}
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return reqErr(codeInvalidParams, "Invalid params: %s", pe.Message)
	}
	a.log.Error("acp: "+what, "err", err)
	return reqErr(codeInternal, "Internal error: could not %s (see ferry acp's log)", what)
}

// session returns the session id names, or -32602.
func (a *Agent) session(id acp.SessionId) (*session, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	s := a.sessions[string(id)]
	a.mu.Unlock()
	if s == nil {
		return nil, reqErr(codeInvalidParams, "Invalid params: no session %q on this connection (session/new or session/load it first)", string(id))
	}
	return s, nil
}

// NewSession starts a ferry session in cwd on the target's machine.
func (a *Agent) NewSession(ctx context.Context, p acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	if err := a.ready(); err != nil {
		return acp.NewSessionResponse{}, err
	}
	t, u, err := a.openTarget(ctx, p.Cwd)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	m, ws, adapterID, err := a.place(ctx, u, t)
	if err != nil {
		return acp.NewSessionResponse{}, err
	}
	mode := a.cfg.Mode
	if mode == "" {
		mode = protocol.ModeDefault
	}
	r, err := u.request(ctx, protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{
		MachineID: m.ID, WorkspaceID: ws.ID, Adapter: adapterID, Mode: mode,
	}), 30*time.Second)
	if err != nil {
		return acp.NewSessionResponse{}, a.wireErr(err, "start a session")
	}
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok {
		return acp.NewSessionResponse{}, a.wireErr(fmt.Errorf("session start answered %s", r.Type), "start a session")
	}
	s := a.newSession(u, t, ans.Session, m)
	if _, err := s.subscribe(ctx, 0, ""); err != nil {
		a.drop(s)
		return acp.NewSessionResponse{}, a.wireErr(err, "follow the session")
	}
	s.replayDone()
	if a.cfg.Model != "" {
		if err := s.setModel(ctx, a.cfg.Model); err != nil {
			a.log.Warn("acp: could not set the session's model", "model", a.cfg.Model, "err", err)
		}
	}
	a.lend(s, t, p.McpServers)
	modes, opts := s.modeState(), s.configOptions(ctx)
	return acp.NewSessionResponse{SessionId: acp.SessionId(s.id), Modes: modes, ConfigOptions: opts, Models: s.modelState()}, nil
}

// LoadSession follows an existing ferry session: its stored events are
// replayed as session/update, then new ones stream.
func (a *Agent) LoadSession(ctx context.Context, p acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	s, err := a.attach(ctx, p.SessionId, p.Cwd, p.McpServers, false)
	if err != nil {
		return acp.LoadSessionResponse{}, err
	}
	return acp.LoadSessionResponse{Modes: s.modeState(), ConfigOptions: s.configOptions(ctx), Models: s.modelState()}, nil
}

// ResumeSession follows a ferry session as session/load does, without
// showing its history again: the editor that resumes already shows it.
// What is still open comes to it (a question is asked, a running turn
// goes on), and so do the slash commands.
func (a *Agent) ResumeSession(ctx context.Context, p acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	s, err := a.attach(ctx, p.SessionId, p.Cwd, p.McpServers, true)
	if err != nil {
		return acp.ResumeSessionResponse{}, err
	}
	s.mu.Lock()
	cmds := s.cmdDefs
	s.mu.Unlock()
	if len(cmds) > 0 {
		s.update(commandsUpdate(cmds))
	}
	return acp.ResumeSessionResponse{Modes: s.modeState(), ConfigOptions: s.configOptions(ctx), Models: s.modelState()}, nil
}

// attach follows the ferry session id of the workspace cwd names (load,
// or resume when quiet: its history is not shown) and lends it the
// editor's MCP servers.
func (a *Agent) attach(ctx context.Context, id acp.SessionId, cwd string, mcp []acp.McpServer, quiet bool) (*session, error) {
	if err := a.ready(); err != nil {
		return nil, err
	}
	a.mu.Lock()
	old := a.sessions[string(id)]
	a.mu.Unlock()
	if old != nil {
		a.drop(old)
	}
	t, u, err := a.openTarget(ctx, cwd)
	if err != nil {
		return nil, err
	}
	info, err := findSession(ctx, u, string(id))
	if err != nil {
		return nil, a.wireErr(err, "find the session")
	}
	if info == nil {
		return nil, reqErr(codeResourceGone, "Resource not found: no session %q on this ferry master", string(id))
	}
	ms, err := machines(ctx, u)
	if err != nil {
		return nil, a.wireErr(err, "list the machines")
	}
	var m protocol.Machine
	for _, x := range ms {
		if x.ID == info.MachineID {
			m = x
		}
	}
	s := a.newSession(u, t, *info, m)
	s.quiet.Store(quiet)
	replayed, err := s.subscribe(ctx, 0, info.Epoch)
	if err != nil {
		a.drop(s)
		return nil, a.wireErr(err, "follow the session")
	}
	select {
	case <-replayed:
	case <-ctx.Done():
		a.drop(s)
		return nil, ctx.Err()
	}
	s.replayDone()
	a.lend(s, t, mcp)
	return s, nil
}

func (a *Agent) newSession(u *uiConn, t Target, info protocol.SessionInfo, m protocol.Machine) *session {
	s := newSession(a, u, t, info, m)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	return s
}

// drop forgets s (a failed start, or a load again).
func (a *Agent) drop(s *session) {
	a.mu.Lock()
	if a.sessions[s.id] == s {
		delete(a.sessions, s.id)
	}
	a.mu.Unlock()
	s.close()
}

// lend registers what the editor offers for s, when s runs here.
func (a *Agent) lend(s *session, t Target, servers []acp.McpServer) {
	if a.cfg.Registry == nil || !t.Lend {
		return
	}
	a.mu.Lock()
	caps := a.clientCaps
	a.mu.Unlock()
	var l editorlink.Lent
	if caps.Fs.ReadTextFile && caps.Fs.WriteTextFile {
		l.Files = &editorFiles{conn: a.conn, sid: acp.SessionId(s.id)}
	}
	if caps.Terminal {
		l.Terminals = &editorTerminals{conn: a.conn, sid: acp.SessionId(s.id)}
	}
	for _, srv := range servers {
		switch {
		case srv.Stdio != nil:
			env := map[string]string{}
			for _, e := range srv.Stdio.Env {
				env[e.Name] = e.Value
			}
			l.MCPServers = append(l.MCPServers, mcpclient.Server{Name: srv.Stdio.Name, Command: srv.Stdio.Command,
				Args: slices.Clone(srv.Stdio.Args), Env: env})
		case srv.Http != nil:
			h := map[string]string{}
			for _, e := range srv.Http.Headers {
				h[e.Name] = e.Value
			}
			l.MCPServers = append(l.MCPServers, mcpclient.Server{Name: srv.Http.Name, URL: srv.Http.Url, Headers: h})
		default:
			a.log.Warn("acp: an MCP server over a transport ferry does not offer (sse, acp) was left out")
		}
	}
	a.cfg.Registry.Set(s.id, l)
}

// Prompt runs one turn and returns how it ended.
func (a *Agent) Prompt(ctx context.Context, p acp.PromptRequest) (acp.PromptResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	return s.prompt(ctx, p.Prompt)
}

// Cancel cancels the session's running turn.
func (a *Agent) Cancel(_ context.Context, p acp.CancelNotification) error {
	s, err := a.session(p.SessionId)
	if err != nil {
		return err
	}
	s.cancel()
	return nil
}

// SetSessionMode switches ferry's mode (default, plan, review).
func (a *Agent) SetSessionMode(ctx context.Context, p acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	if err := s.setMode(ctx, string(p.ModeId)); err != nil {
		return acp.SetSessionModeResponse{}, err
	}
	return acp.SetSessionModeResponse{}, nil
}

// SetSessionConfigOption sets the mode or the model.
func (a *Agent) SetSessionConfigOption(ctx context.Context, p acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	if p.ValueId == nil {
		if err := a.ready(); err != nil {
			return acp.SetSessionConfigOptionResponse{}, err
		}
		return acp.SetSessionConfigOptionResponse{}, reqErr(codeInvalidParams, "Invalid params: ferry's options (mode, model) take a value id")
	}
	v := p.ValueId
	s, err := a.session(v.SessionId)
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	switch v.ConfigId {
	case configMode:
		err = s.setMode(ctx, string(v.Value))
	case configModel:
		err = s.setModel(ctx, string(v.Value))
	default:
		err = reqErr(codeInvalidParams, "Invalid params: no config option %q (ferry has mode and model)", string(v.ConfigId))
	}
	if err != nil {
		return acp.SetSessionConfigOptionResponse{}, err
	}
	return acp.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions(ctx)}, nil
}

// UnstableSetSessionModel is ACP's unstable session/set_model.
func (a *Agent) UnstableSetSessionModel(ctx context.Context, p acp.UnstableSetSessionModelRequest) (acp.UnstableSetSessionModelResponse, error) {
	s, err := a.session(p.SessionId)
	if err != nil {
		return acp.UnstableSetSessionModelResponse{}, err
	}
	if err := s.setModel(ctx, string(p.ModelId)); err != nil {
		return acp.UnstableSetSessionModelResponse{}, err
	}
	return acp.UnstableSetSessionModelResponse{}, nil
}

// place picks the machine, workspace and adapter of a new session.
func (a *Agent) place(ctx context.Context, u *uiConn, t Target) (protocol.Machine, protocol.Workspace, string, error) {
	var (
		ms  []protocol.Machine
		err error
	)
	// The machine may be connecting still (ferry acp's own client, just
	// started): wait for it a little.
	deadline := time.Now().Add(20 * time.Second)
	for {
		ms, err = machines(ctx, u)
		if err != nil {
			return protocol.Machine{}, protocol.Workspace{}, "", a.wireErr(err, "list the machines")
		}
		m, ws, ok, why := pick(ms, t)
		if ok {
			id, e := pickAdapter(m, t.Adapter)
			if e != nil {
				return m, ws, "", e
			}
			return m, ws, id, nil
		}
		if time.Now().After(deadline) {
			return protocol.Machine{}, protocol.Workspace{}, "", reqErr(codeInvalidParams, "Invalid params: %s", why)
		}
		select {
		case <-ctx.Done():
			return protocol.Machine{}, protocol.Workspace{}, "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// pick finds the online machine and workspace t names.
func pick(ms []protocol.Machine, t Target) (protocol.Machine, protocol.Workspace, bool, string) {
	var online []protocol.Machine
	for _, m := range ms {
		if m.Online && (t.Machine == "" || m.Name == t.Machine || m.ID == t.Machine) {
			online = append(online, m)
		}
	}
	if len(online) == 0 {
		if t.Machine != "" {
			return protocol.Machine{}, protocol.Workspace{}, false, fmt.Sprintf("no machine %q is online on the master", t.Machine)
		}
		return protocol.Machine{}, protocol.Workspace{}, false, "no machine is online on the master"
	}
	var served []string
	for _, m := range online {
		for _, w := range m.Workspaces {
			if filepath.Clean(w.Path) == filepath.Clean(t.Workspace) {
				return m, w, true, ""
			}
			served = append(served, m.Name+":"+w.Path)
		}
	}
	return protocol.Machine{}, protocol.Workspace{}, false, fmt.Sprintf("no machine serves the workspace %s (served: %v); start ferry connect --workspace %s there, or pass --workspace", t.Workspace, served, t.Workspace)
}

// pickAdapter returns the adapter id of a new session on m.
func pickAdapter(m protocol.Machine, want string) (string, error) {
	var avail []string
	for _, c := range m.Adapters {
		if c.Unavailable == "" {
			avail = append(avail, c.ID)
		}
		if want != "" && c.ID == want {
			if c.Unavailable != "" {
				return "", reqErr(codeInvalidParams, "Invalid params: the agent %s cannot start on %s: %s", want, m.Name, c.Unavailable)
			}
			return want, nil
		}
	}
	if want != "" {
		return "", reqErr(codeInvalidParams, "Invalid params: the machine %s offers no agent %s (it offers %v)", m.Name, want, avail)
	}
	if slices.Contains(avail, "builtin") {
		return "builtin", nil
	}
	if len(avail) == 0 {
		why := "no agent"
		for _, c := range m.Adapters {
			why = c.ID + ": " + c.Unavailable
			break
		}
		return "", reqErr(codeInvalidParams, "Invalid params: no agent can start on %s (%s)", m.Name, why)
	}
	return avail[0], nil
}

// machines lists the machines the UI token may use.
func machines(ctx context.Context, u *uiConn) ([]protocol.Machine, error) {
	r, err := u.request(ctx, protocol.New(protocol.TypeMachinesList, &protocol.MachinesList{}), 30*time.Second)
	if err != nil {
		return nil, err
	}
	ms, ok := r.Payload.(*protocol.Machines)
	if !ok {
		return nil, fmt.Errorf("machines list answered %s", r.Type)
	}
	return ms.Machines, nil
}

// findSession returns the session id names (archived or not), nil when the
// master has none.
func findSession(ctx context.Context, u *uiConn, id string) (*protocol.SessionInfo, error) {
	limit := 1000
	for _, archived := range []bool{false, true} {
		r, err := u.request(ctx, protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{Limit: &limit, Archived: archived}), 30*time.Second)
		if err != nil {
			return nil, err
		}
		ss, ok := r.Payload.(*protocol.Sessions)
		if !ok {
			return nil, fmt.Errorf("sessions list answered %s", r.Type)
		}
		for i := range ss.Sessions {
			if ss.Sessions[i].ID == id {
				return &ss.Sessions[i], nil
			}
		}
	}
	return nil, nil
}

// lockedWriter serialises the writes of the SDK and of the line filter:
// each is one whole message, so the lines never interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
