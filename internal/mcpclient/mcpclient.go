// Package mcpclient connects ferry's agent to MCP servers (stdio and
// streamable HTTP) and offers their tools to the model as
// mcp__SERVER__TOOL.
//
// Guarantees:
//
//   - Connect never fails as a whole: every server is connected at once,
//     each within Options.ConnectTimeout, and one that cannot be started,
//     reached, initialised or listed is reported by Status (with the last
//     of its stderr for a stdio server) while the others are used.
//   - A stdio server runs in a session and process group of its own
//     (childproc, procgroup): its stdin is closed, then its whole tree is
//     killed, when the Set closes. Env adds to ferry's environment (a PATH
//     there is where the command is looked up); Cwd (relative to
//     Options.Workspace, or that when empty) is its folder.
//   - Tool names are mcp__NAME__TOOL with both parts reduced to
//     [A-Za-z0-9_-], at most 64 characters; an over-long or colliding name
//     gets a suffix hashed from the server's and tool's own names, so the
//     same configuration always gives the same names.
//   - A tool whose inputSchema is not an object schema is left out, with a
//     note in its server's Status. A server that says its tools changed is
//     listed again; the next Tools has the new list.
//   - A call is bounded by Options.CallTimeout and by its ctx (ending
//     either cancels the request on the server, as MCP does). Its result
//     reaches the model through Read's gates: text over the token gate is
//     cut with a note saying what was cut; images are shrunk and
//     re-encoded as Read's are. Errors the model sees are *tools.Error
//     with tools.CodeMCP (a tool's isError, a refused call, a server that
//     exited) or tools.CodeTimeout.
//   - A server that exits or drops its connection mid-session (or sends a
//     message over the SDK's 16 MB bound, which ends it) marks its tools
//     failed ("MCP server X exited: …") and its Status; the other servers
//     keep working. A stdout line of a stdio server that is no JSON-RPC
//     message is skipped.
//   - Close ends every session, kills every stdio server's tree and
//     returns once no goroutine of the Set is left.
package mcpclient

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/tools"
)

// Server is one MCP server to connect to: a stdio server when Command is
// set, else a streamable-HTTP server at URL.
type Server struct {
	// Name is unique among a session's servers; its tools are offered as
	// mcp__NAME__TOOL.
	Name string `json:"name"`
	// Command, Args, Env and Cwd start a stdio server (Cwd "": the
	// session's workspace). Env adds to ferry's environment.
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	// URL and Headers reach a streamable-HTTP server.
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

// Defaults of Options fields left zero.
const (
	DefaultConnectTimeout = 10 * time.Second
	DefaultCallTimeout    = 2 * time.Minute
)

// Options configure Connect.
type Options struct {
	// Logger gets the servers' stderr (debug) and their failures; nil
	// logs nothing.
	Logger *slog.Logger
	// Workspace is a stdio server's folder when its Cwd is empty, and what
	// a relative Cwd is relative to.
	Workspace string
	// ConnectTimeout bounds starting and initialising one server
	// (DefaultConnectTimeout); CallTimeout bounds one tool call
	// (DefaultCallTimeout).
	ConnectTimeout, CallTimeout time.Duration
	// Getenv, when set, expands ${VAR} and ${VAR:-default} in a server's
	// Command, Args, Env values, Cwd, URL and Headers values (as Claude
	// Code's .mcp.json does). Nil expands nothing: the values are used as
	// given.
	Getenv func(string) string
}

// ServerStatus is what the user is shown of one server.
type ServerStatus struct {
	Name string `json:"name"`
	// OK is true while the server is connected.
	OK bool `json:"ok"`
	// Tools is how many of its tools are offered.
	Tools int `json:"tools"`
	// Err says why the server is not OK, or (with OK) which of its tools
	// were left out and why.
	Err string `json:"err,omitempty"`
}

// Set is the connected servers of one session.
type Set struct {
	opts Options
	log  *slog.Logger
	// ctx is every call's parent; Close cancels it.
	ctx     context.Context
	cancel  context.CancelFunc
	servers []*server
	// mu guards tools and closed.
	mu     sync.Mutex
	tools  []tools.Tool
	closed bool
	// httpTransport serves every HTTP server of the Set; Close closes its
	// idle connections.
	httpTransport *http.Transport
	// watchers are the goroutines that notice a server's end or re-list
	// its tools.
	watchers  sync.WaitGroup
	closeOnce sync.Once
}

// server is one configured server and its session.
type server struct {
	cfg Server

	mu      sync.Mutex
	session *mcp.ClientSession
	stdio   *stdioConn // nil for HTTP
	down    string     // why it is not (or no longer) connected; "" when up
	notes   []string   // tools left out
	tools   []*mcpTool
	// relisting is set while its tools are listed again; again asks for
	// one more listing after it (a change came meanwhile).
	relisting, again bool
}

// Connect connects every server at once and returns the Set; a server that
// fails is in Status, never an error of Connect. ctx bounds the connecting
// only, not the sessions.
func Connect(ctx context.Context, servers []Server, opts Options) *Set {
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = DefaultConnectTimeout
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	s := &Set{opts: opts, log: opts.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.httpTransport = http.DefaultTransport.(*http.Transport).Clone()
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for _, cfg := range servers {
		srv := &server{cfg: cfg}
		s.servers = append(s.servers, srv)
		if err := s.check(&srv.cfg, seen); err != nil {
			srv.down = err.Error()
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.connect(ctx, srv)
		}()
	}
	wg.Wait()
	s.mu.Lock()
	s.tools = nameTools(s.servers)
	s.mu.Unlock()
	return s
}

// check validates and expands cfg.
func (s *Set) check(cfg *Server, seen map[string]bool) error {
	switch {
	case cfg.Name == "":
		return errors.New("the server has no name")
	case seen[cfg.Name]:
		return fmt.Errorf("another server is named %q", cfg.Name)
	}
	seen[cfg.Name] = true
	if s.opts.Getenv != nil {
		if err := expandServer(cfg, s.opts.Getenv); err != nil {
			return err
		}
	}
	switch {
	case cfg.Command != "" && cfg.URL != "":
		return errors.New("both a command and a URL are set; give one")
	case cfg.Command == "" && cfg.URL == "":
		return errors.New("neither a command nor a URL is set")
	case cfg.URL != "":
		return checkURL(cfg.URL)
	}
	return nil
}

// connect starts or dials srv, initialises the session and lists its
// tools, within ConnectTimeout.
func (s *Set) connect(ctx context.Context, srv *server) {
	ctx, cancel := context.WithTimeout(ctx, s.opts.ConnectTimeout)
	defer cancel()
	log := s.log.With("mcp_server", srv.cfg.Name)
	var (
		transport mcp.Transport
		stdio     *stdioTransport
	)
	if srv.cfg.Command != "" {
		o := s.procOptions(srv.cfg)
		stdio = &stdioTransport{argv: append([]string{commandPath(srv.cfg, o.Dir)}, srv.cfg.Args...), opts: o, log: log}
		transport = stdio
	} else {
		transport = &mcp.StreamableClientTransport{
			Endpoint:   srv.cfg.URL,
			HTTPClient: &http.Client{Transport: headerTransport{base: s.httpTransport, headers: srv.cfg.Headers}},
			// A dropped stream is tried again a few times, not for ever:
			// the user should learn the server is gone.
			MaxRetries: 2,
		}
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "ferry"}, &mcp.ClientOptions{
		Logger:                 log,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { s.toolsChanged(srv) },
	})
	cs, err := client.Connect(ctx, transport, nil)
	var sc *stdioConn
	if stdio != nil {
		sc = stdio.conn
	}
	fail := func(what string, err error) {
		var msg string
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			msg = fmt.Sprintf("did not finish connecting within %s", s.opts.ConnectTimeout)
		default:
			msg = fmt.Sprintf("%s: %v", what, err)
		}
		if sc != nil {
			// A server that timed out is closed by the SDK, and may exit
			// on its closed stdin: the timeout is the news then.
			if why, ok := sc.ended(endWait); ok && ctx.Err() == nil {
				msg = why
			} else if tail := stderrTail(sc.p.StderrTail()); tail != "" {
				msg += "; stderr: " + tail
			}
		}
		if cs != nil {
			_ = cs.Close()
		}
		if sc != nil {
			_ = sc.Close()
		}
		log.Warn("mcp: server not connected", "err", msg)
		srv.mu.Lock()
		srv.down = msg
		srv.mu.Unlock()
	}
	if err != nil {
		fail("could not connect", err)
		return
	}
	var (
		list  []*mcp.Tool
		notes []string
	)
	if init := cs.InitializeResult(); init != nil && init.Capabilities != nil && init.Capabilities.Tools == nil {
		// Prompts or resources only: connected, with nothing to offer.
		notes = append(notes, "the server offers no tools")
	} else {
		for t, err := range cs.Tools(ctx, nil) {
			if err != nil {
				fail("could not list its tools", err)
				return
			}
			list = append(list, t)
		}
	}
	made, dropped := makeTools(s, srv, list)
	notes = append(notes, dropped...)
	srv.mu.Lock()
	srv.session, srv.stdio, srv.tools, srv.notes = cs, sc, made, notes
	srv.mu.Unlock()
	s.watchers.Add(1)
	go s.watch(srv, cs, sc)
}

// endWait is how long a failed read or call waits to learn whether its
// stdio server ended, and why: the pipe is often seen closed before the
// exit is.
const endWait = 200 * time.Millisecond

// watch marks srv down once its session ends without Close.
func (s *Set) watch(srv *server, cs *mcp.ClientSession, sc *stdioConn) {
	defer s.watchers.Done()
	_ = cs.Wait()
	if s.ctx.Err() != nil {
		return // closing
	}
	why := "was disconnected: the connection closed"
	if sc != nil {
		if w, ok := sc.ended(endWait); ok {
			why = w
		} else {
			why = "was disconnected: its output closed"
		}
		_ = sc.Close() // kill what it left
	}
	why = srv.markDown(why)
	s.log.Warn("mcp: server ended", "mcp_server", srv.cfg.Name, "why", why)
}

// toolsChanged lists srv's tools again (its server said they changed) in a
// goroutine of its own: the SDK calls this on its reading goroutine, which
// the listing needs. Changes that come while a listing runs are coalesced
// into one more listing.
func (s *Set) toolsChanged(srv *server) {
	srv.mu.Lock()
	if srv.relisting {
		srv.again = true
		srv.mu.Unlock()
		return
	}
	srv.relisting = true
	srv.mu.Unlock()
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.watchers.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.watchers.Done()
		for s.relist(srv) {
		}
	}()
}

// relist lists srv's tools once and renames every server's tools; it
// reports whether another listing was asked for meanwhile.
func (s *Set) relist(srv *server) bool {
	srv.mu.Lock()
	cs, down := srv.session, srv.down
	srv.mu.Unlock()
	if cs != nil && down == "" {
		ctx, cancel := context.WithTimeout(s.ctx, s.opts.ConnectTimeout)
		var list []*mcp.Tool
		var err error
		for t, e := range cs.Tools(ctx, nil) {
			if e != nil {
				err = e
				break
			}
			list = append(list, t)
		}
		cancel()
		if err != nil {
			s.log.Warn("mcp: listing changed tools failed; keeping the old list", "mcp_server", srv.cfg.Name, "err", err)
		} else {
			made, notes := makeTools(s, srv, list)
			srv.mu.Lock()
			srv.tools, srv.notes = made, notes
			srv.mu.Unlock()
			s.mu.Lock()
			s.tools = nameTools(s.servers)
			s.mu.Unlock()
		}
	}
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.again && s.ctx.Err() == nil {
		srv.again = false
		return true
	}
	srv.relisting, srv.again = false, false
	return false
}

// markDown records why srv is down, unless it already was, and returns
// why it is down.
func (srv *server) markDown(why string) string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if srv.down == "" {
		srv.down = why
	}
	return srv.down
}

// procOptions are the childproc options of a stdio server.
func (s *Set) procOptions(cfg Server) childproc.Options {
	dir := s.opts.Workspace
	if cfg.Cwd != "" {
		dir = cfg.Cwd
		if !filepath.IsAbs(dir) && s.opts.Workspace != "" {
			dir = filepath.Join(s.opts.Workspace, dir)
		}
	}
	env := os.Environ()
	keys := make([]string, 0, len(cfg.Env))
	for k := range cfg.Env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		env = append(env, k+"="+cfg.Env[k]) // exec keeps the last of a duplicate
	}
	return childproc.Options{Dir: dir, Env: env}
}

// commandPath is cfg's command, looked up in the PATH of its Env when that
// sets one (as a shell started with that environment would), else as exec
// looks it up (ferry's PATH; a relative path with a slash from dir).
func commandPath(cfg Server, dir string) string {
	path, ok := cfg.Env["PATH"]
	if !ok || strings.ContainsRune(cfg.Command, filepath.Separator) {
		return cfg.Command
	}
	for _, d := range filepath.SplitList(path) {
		if d == "" {
			d = "."
		}
		if !filepath.IsAbs(d) {
			d = filepath.Join(dir, d)
		}
		p := filepath.Join(d, cfg.Command)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return cfg.Command // exec's error names it
}

// Tools returns the tools of every connected server, mcp__NAME__TOOL,
// in the servers' order and each server's tools by name.
func (s *Set) Tools() []tools.Tool {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.tools)
}

// Status reports every server, in the order given to Connect.
func (s *Set) Status() []ServerStatus {
	if s == nil {
		return nil
	}
	out := make([]ServerStatus, 0, len(s.servers))
	for _, srv := range s.servers {
		srv.mu.Lock()
		if srv.down == "" && srv.stdio != nil {
			if why, ok := srv.stdio.ended(0); ok { // before its watcher saw it
				srv.down = why
			}
		}
		st := ServerStatus{Name: srv.cfg.Name, OK: srv.down == "" && srv.session != nil, Tools: len(srv.tools)}
		switch {
		case srv.down != "":
			st.Err = srv.down
		case len(srv.notes) > 0:
			st.Err = strings.Join(srv.notes, "; ")
		}
		srv.mu.Unlock()
		out = append(out, st)
	}
	return out
}

// Close ends every session and stdio server and waits for the Set's
// goroutines. It is idempotent.
func (s *Set) Close() error {
	if s == nil {
		return nil
	}
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true // no new watcher
		s.mu.Unlock()
		s.cancel() // calls in flight return first
		var wg sync.WaitGroup
		for _, srv := range s.servers {
			srv.mu.Lock()
			cs, sc := srv.session, srv.stdio
			if srv.down == "" {
				srv.down = "was closed with the session"
			}
			srv.mu.Unlock()
			if cs == nil {
				continue
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if sc != nil {
					_ = sc.Close() // before the session: a hung server cannot hold it
				}
				_ = cs.Close()
			}()
		}
		wg.Wait()
		s.watchers.Wait()
		s.httpTransport.CloseIdleConnections()
	})
	return nil
}
