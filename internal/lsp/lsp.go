// Package lsp gives ferry's agent the diagnostics of language servers
// after its file tools changed a file (issue 36, item 7): the errors an
// edit made reach the model in the same tool result, so it fixes them in
// the same turn.
//
// It speaks LSP with go.lsp.dev/protocol's types over go.lsp.dev/jsonrpc2
// (a maintained library of the protocol's types rather than hand-written
// ones; the one exception is the whole-document didChange, see
// didChange).
//
// Guarantees:
//
//   - A Manager serves one workspace (Acquire shares it between the
//     sessions of that workspace in a process): one server per language (per
//     command), started lazily at the first changed file of that language
//     when its program is on PATH (gopls, basedpyright-langserver or
//     pyright-langserver, typescript-language-server, rust-analyzer), or
//     as the user's lsp.json says (Config). Nothing starts before an edit,
//     and a file outside the workspace asks no server.
//   - Servers run through internal/childproc: in a session and process
//     group of their own, with the workspace as their directory; Close
//     asks them to shut down, kills each tree after a short grace, and
//     returns once every goroutine ended.
//   - Diagnostics never blocks its caller longer than the wait (Config,
//     3 s by default) or its context: a slow server gives "" (the tool's
//     result without diagnostics) and its late answer is dropped; a server
//     that exits while a call waits gives "" at once.
//   - A server that crashed is started again at the next edit, at most
//     MaxRestarts times in a Manager's life; then it is given up, logged
//     once, and its files get no diagnostics.
//   - The text for the model lists the diagnostics of the changed file
//     only, errors only by default (Config.Severity), sorted by position,
//     "path:line:col: message" (path relative to the workspace, line and
//     byte column from 1), under a header naming the server and the count,
//     capped at Config.MaxLines with a line saying how many were left out;
//     "" when there are none.
//   - A server's message is bounded (MaxMessage): a confused server cannot
//     make ferry allocate without limit.
//
// A Manager is safe for concurrent use.
package lsp

import (
	"context"
	"log/slog"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.lsp.dev/protocol"
)

// Manager keeps the language servers of one workspace.
type Manager struct {
	root     string
	cfg      Config
	log      *slog.Logger
	lookPath func(string) (string, error)

	ctx    context.Context // ends with Close: the servers' own work
	cancel context.CancelFunc

	mu      sync.Mutex
	closed  bool
	exts    map[string]*binding // by extension; nil: no server for it
	servers map[string]*server  // by argv
}

// binding is what serves one extension.
type binding struct {
	srv        *server
	languageID string
	wait       time.Duration
}

// NewManager returns the Manager of the workspace at root (canonical,
// absolute). It starts nothing. log nil is slog.Default().
func NewManager(root string, cfg Config, log *slog.Logger) *Manager {
	if log == nil {
		log = slog.Default()
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Manager{
		root: root, cfg: cfg, log: log, lookPath: exec.LookPath,
		ctx: ctx, cancel: cancel,
		exts: map[string]*binding{}, servers: map[string]*server{},
	}
}

// Diagnostics sends path's new content to its language server and returns
// the server's diagnostics of that version as text for the model, ""
// when there are none, when no server serves the file, or when the server
// did not answer within the wait (see the package doc). Its error is only
// ctx's.
func (m *Manager) Diagnostics(ctx context.Context, path string, content []byte) (string, error) {
	rel, err := filepath.Rel(m.root, path)
	if err != nil || !filepath.IsAbs(path) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", nil
	}
	b := m.bind(strings.ToLower(filepath.Ext(path)))
	if b == nil {
		return "", nil
	}
	timer := time.NewTimer(b.wait)
	defer timer.Stop()
	type submitted struct {
		ch  <-chan []protocol.Diagnostic
		err error
	}
	sub := make(chan submitted, 1)
	go func() {
		// On the Manager's context, not the call's: a server still
		// starting when the call stops waiting gets the file anyway, so
		// the next edit finds it ready.
		ch, err := b.srv.submit(m.ctx, path, b.languageID, content)
		sub <- submitted{ch, err}
	}()
	var s submitted
	select {
	case s = <-sub:
	case <-timer.C:
		m.log.Debug("no diagnostics: the language server is not ready", "lsp", b.srv.name, "path", rel)
		return "", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
	if s.err != nil {
		m.log.Debug("no diagnostics", "lsp", b.srv.name, "path", rel, "err", s.err)
		return "", nil
	}
	select {
	case d, ok := <-s.ch:
		if !ok {
			return "", nil // the server exited
		}
		return format(b.srv.name, rel, content, d, m.cfg.Severity, m.cfg.MaxLines), nil
	case <-timer.C:
		m.log.Debug("no diagnostics within the wait", "lsp", b.srv.name, "path", rel, "wait", b.wait)
		return "", nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// bind finds (once per extension) the server of ext.
func (m *Manager) bind(ext string) *binding {
	if ext == "" {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return nil
	}
	if b, ok := m.exts[ext]; ok {
		return b
	}
	r := m.cfg.resolve(ext, m.lookPath)
	if r == nil {
		m.exts[ext] = nil
		return nil
	}
	key := strings.Join(r.argv, "\x00")
	srv := m.servers[key]
	if srv == nil {
		srv = newServer(r.argv, m.root, r.initOpts, m.log)
		m.servers[key] = srv
	}
	b := &binding{srv: srv, languageID: r.languageID, wait: r.wait}
	m.exts[ext] = b
	return b
}

// Close stops every server (see the package doc); later calls of
// Diagnostics return "". It is idempotent.
func (m *Manager) Close() {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	m.closed = true
	servers := make([]*server, 0, len(m.servers))
	for _, s := range m.servers {
		servers = append(servers, s)
	}
	m.mu.Unlock()
	m.cancel()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(s.close)
	}
	wg.Wait()
}
