package lsp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"go.lsp.dev/jsonrpc2"
	"go.lsp.dev/protocol"
	"go.lsp.dev/uri"

	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/lines"
	"github.com/ferry-dev/ferry/internal/procgroup"
)

// Timeouts of a server's life outside a tool's wait.
const (
	// initTimeout bounds initialize: a server that loads a big project
	// first may take long, but one that never answers is given up.
	initTimeout = 2 * time.Minute
	// shutdownGrace bounds Close's polite shutdown before the kill.
	shutdownGrace = time.Second
)

var (
	// errGaveUp: the server crashed MaxRestarts+1 times this session.
	errGaveUp = errors.New("lsp: server given up after repeated crashes")
	// errExited: the server ended while a call waited on it.
	errExited = errors.New("lsp: server exited")
)

// server is one language server of a workspace: started at the first
// file of its languages, restarted after a crash at most MaxRestarts
// times, stopped by Manager.Close.
type server struct {
	name     string // argv[0]'s base name, for results and logs
	argv     []string
	root     string
	initOpts json.RawMessage
	log      *slog.Logger

	sem chan struct{} // one submit at a time: a document's versions stay in order

	mu     sync.Mutex
	run    *running // nil when not running
	starts int
	gaveUp bool
	closed bool
	wg     sync.WaitGroup // the monitors of every run
}

// running is one process of a server.
type running struct {
	group   *procgroup.Group
	conn    jsonrpc2.Conn
	stderr  *os.File
	exited  chan struct{}
	closing bool // set under server.mu when Close ends it on purpose

	mu      sync.Mutex
	docs    map[protocol.DocumentURI]int32 // open documents and their last version
	waiters map[protocol.DocumentURI][]waiter
	dead    bool
	tail    []string // last lines of stderr, for the give-up log
}

// waiter is a submit waiting for the diagnostics of version or later.
type waiter struct {
	version int32
	ch      chan []protocol.Diagnostic // buffered 1; closed when the server exits
}

func newServer(argv []string, root string, initOpts json.RawMessage, log *slog.Logger) *server {
	return &server{
		name: filepath.Base(argv[0]), argv: argv, root: root, initOpts: initOpts,
		log: log.With("lsp", filepath.Base(argv[0])), sem: make(chan struct{}, 1),
	}
}

// submit sends path's new content (didOpen the first time, didChange
// after) and returns where its diagnostics will come: one value, or a
// close when the server exits first. It starts the server if needed. It
// may block on a slow server; the caller bounds its own wait, not this.
func (s *server) submit(ctx context.Context, path, languageID string, content []byte) (<-chan []protocol.Diagnostic, error) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-s.sem }()
	r, err := s.ensure(ctx)
	if err != nil {
		return nil, err
	}
	u := uri.File(path)
	r.mu.Lock()
	if r.dead {
		r.mu.Unlock()
		return nil, errExited
	}
	v := r.docs[u] + 1
	r.docs[u] = v
	w := waiter{version: v, ch: make(chan []protocol.Diagnostic, 1)}
	r.waiters[u] = append(r.waiters[u], w)
	r.mu.Unlock()
	if v == 1 {
		err = r.conn.Notify(ctx, protocol.MethodTextDocumentDidOpen, &protocol.DidOpenTextDocumentParams{
			TextDocument: protocol.TextDocumentItem{URI: u, LanguageID: protocol.LanguageIdentifier(languageID), Version: v, Text: string(content)},
		})
	} else {
		err = r.conn.Notify(ctx, protocol.MethodTextDocumentDidChange, &didChange{
			TextDocument:   protocol.VersionedTextDocumentIdentifier{TextDocumentIdentifier: protocol.TextDocumentIdentifier{URI: u}, Version: v},
			ContentChanges: []fullText{{Text: string(content)}},
		})
	}
	if err != nil {
		return nil, fmt.Errorf("lsp: %s: send %s: %w", s.name, path, err)
	}
	return w.ch, nil
}

// didChange is protocol.DidChangeTextDocumentParams with a whole-document
// change: v0.12.0's TextDocumentContentChangeEvent always sends its Range
// (not a pointer, no omitempty), which a server reads as an insertion at
// 0:0, not as the new content. This is the one hand-written LSP type.
type didChange struct {
	TextDocument   protocol.VersionedTextDocumentIdentifier `json:"textDocument"`
	ContentChanges []fullText                               `json:"contentChanges"`
}

type fullText struct {
	Text string `json:"text"`
}

// ensure returns the running process, starting it when there is none and
// the restart budget allows.
func (s *server) ensure(ctx context.Context) (*running, error) {
	s.mu.Lock()
	if s.run != nil {
		r := s.run
		s.mu.Unlock()
		return r, nil
	}
	if s.closed {
		s.mu.Unlock()
		return nil, errExited
	}
	if s.gaveUp {
		s.mu.Unlock()
		return nil, errGaveUp
	}
	s.starts++
	s.mu.Unlock()
	r, err := s.start(ctx)
	if err != nil {
		s.failed(nil, err)
		return nil, err
	}
	return r, nil
}

// start runs the server and initializes it with the workspace root.
func (s *server) start(ctx context.Context) (*running, error) {
	cmd := exec.Command(s.argv[0], s.argv[1:]...) // #nosec G204 -- the language server the user has on PATH or configured
	cmd.Dir = s.root
	group, stdin, stdout, stderr, err := childproc.StartPiped(cmd)
	if err != nil {
		return nil, fmt.Errorf("lsp: start %s: %w", s.name, err)
	}
	r := &running{
		group: group, stderr: stderr, exited: make(chan struct{}),
		docs: map[protocol.DocumentURI]int32{}, waiters: map[protocol.DocumentURI][]waiter{},
	}
	r.conn = jsonrpc2.NewConn(newStream(&pipes{Reader: stdout, Writer: stdin, closers: []io.Closer{stdin, stdout}}))
	s.mu.Lock()
	s.run = r
	s.wg.Add(2)
	s.mu.Unlock()
	go func() { defer s.wg.Done(); r.readStderr() }()
	go func() { defer s.wg.Done(); s.monitor(r, cmd) }()
	r.conn.Go(context.Background(), r.handle(s.root))

	ictx, cancel := context.WithTimeout(ctx, initTimeout)
	defer cancel()
	params := &protocol.InitializeParams{
		ProcessID:             int32(os.Getpid()), // #nosec G115 -- a pid fits
		ClientInfo:            &protocol.ClientInfo{Name: "ferry"},
		RootURI:               uri.File(s.root), //nolint:staticcheck // servers that predate workspace folders read it
		InitializationOptions: s.initOpts,
		WorkspaceFolders:      []protocol.WorkspaceFolder{{URI: string(uri.File(s.root)), Name: filepath.Base(s.root)}},
		Capabilities: protocol.ClientCapabilities{
			Workspace: &protocol.WorkspaceClientCapabilities{Configuration: true, WorkspaceFolders: true},
			TextDocument: &protocol.TextDocumentClientCapabilities{
				Synchronization:    &protocol.TextDocumentSyncClientCapabilities{},
				PublishDiagnostics: &protocol.PublishDiagnosticsClientCapabilities{VersionSupport: true},
			},
		},
	}
	if len(s.initOpts) == 0 {
		params.InitializationOptions = nil // a nil RawMessage would marshal as null
	}
	// The result is not decoded: ferry uses none of the server's
	// capabilities, and a newer server's may not fit v0.12.0's types.
	var result json.RawMessage
	if _, err := r.conn.Call(ictx, protocol.MethodInitialize, params, &result); err != nil {
		s.kill(r)
		return nil, fmt.Errorf("lsp: initialize %s: %w", s.name, err)
	}
	if err := r.conn.Notify(ictx, protocol.MethodInitialized, &protocol.InitializedParams{}); err != nil {
		s.kill(r)
		return nil, fmt.Errorf("lsp: initialized %s: %w", s.name, err)
	}
	return r, nil
}

// handle answers what the server sends: diagnostics go to the waiters;
// the requests a server blocks on get a neutral answer.
func (r *running) handle(root string) jsonrpc2.Handler {
	return func(ctx context.Context, reply jsonrpc2.Replier, req jsonrpc2.Request) error {
		switch req.Method() {
		case protocol.MethodTextDocumentPublishDiagnostics:
			var p protocol.PublishDiagnosticsParams
			if err := json.Unmarshal(req.Params(), &p); err == nil {
				r.published(p)
			}
			return reply(ctx, nil, nil)
		case protocol.MethodWorkspaceConfiguration:
			var p protocol.ConfigurationParams
			_ = json.Unmarshal(req.Params(), &p)
			cfg := make([]map[string]any, len(p.Items)) // {} each: the server's defaults
			for i := range cfg {
				cfg[i] = map[string]any{}
			}
			return reply(ctx, cfg, nil)
		case protocol.MethodWorkspaceWorkspaceFolders:
			return reply(ctx, []protocol.WorkspaceFolder{{URI: string(uri.File(root)), Name: filepath.Base(root)}}, nil)
		case protocol.MethodWorkDoneProgressCreate, protocol.MethodClientRegisterCapability,
			protocol.MethodClientUnregisterCapability, protocol.MethodWindowShowMessageRequest:
			return reply(ctx, nil, nil)
		}
		if _, isCall := req.(*jsonrpc2.Call); isCall {
			return reply(ctx, nil, fmt.Errorf("%q: %w", req.Method(), jsonrpc2.ErrMethodNotFound))
		}
		return nil // other notifications (logs, progress) are not needed
	}
}

// published hands p to the waiters of its document whose version it
// covers. A server that sends no version (0) answers every waiter.
func (r *running) published(p protocol.PublishDiagnosticsParams) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ws := r.waiters[p.URI]
	keep := ws[:0]
	for _, w := range ws {
		if p.Version == 0 || int64(p.Version) >= int64(w.version) {
			w.ch <- p.Diagnostics
			continue
		}
		keep = append(keep, w)
	}
	if len(keep) == 0 {
		delete(r.waiters, p.URI)
	} else {
		r.waiters[p.URI] = keep
	}
}

func (r *running) readStderr() {
	lr := lines.NewReader(r.stderr, 1024)
	for {
		b, _, err := lr.Next()
		if err != nil {
			return
		}
		r.mu.Lock()
		r.tail = append(r.tail, string(b))
		if len(r.tail) > 5 {
			r.tail = r.tail[1:]
		}
		r.mu.Unlock()
	}
}

// monitor reaps the process, kills what it left, ends the connection and
// wakes every waiter; an exit Close did not ask for is a crash.
func (s *server) monitor(r *running, cmd *exec.Cmd) {
	err := cmd.Wait()
	if err == nil {
		err = errors.New("exit status 0")
	}
	r.group.KillTree()
	_ = r.conn.Close()
	<-r.conn.Done()
	_ = r.stderr.Close()
	r.mu.Lock()
	r.dead = true
	waiters := r.waiters
	r.waiters = nil
	tail := append([]string(nil), r.tail...)
	r.mu.Unlock()
	// Forgotten before the waiters wake: the next edit starts it again.
	s.failed(r, fmt.Errorf("%w: %w; stderr: %q", errExited, err, tail))
	for _, ws := range waiters {
		for _, w := range ws {
			close(w.ch)
		}
	}
	close(r.exited)
}

// failed forgets r (nil: a start that failed before it ran) and, when
// it was not closed on purpose, counts the failure against the restart
// budget, logging once when the budget is spent.
func (s *server) failed(r *running, cause error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r != nil {
		if s.run == r {
			s.run = nil
		}
		if r.closing {
			return
		}
	}
	if s.closed || s.gaveUp {
		return
	}
	if s.starts > MaxRestarts {
		s.gaveUp = true
		s.log.Warn("language server given up: no diagnostics from it this session", "starts", s.starts, "err", cause)
		return
	}
	s.log.Debug("language server ended; it starts again at the next edit", "err", cause)
}

// kill ends r at once (a failed initialize); monitor does the rest.
func (s *server) kill(r *running) {
	r.group.KillTree()
	<-r.exited
}

// close stops the server: shutdown and exit, politely for a short
// while, then the kill. It returns once its goroutines ended.
func (s *server) close() {
	s.mu.Lock()
	s.closed = true
	r := s.run
	if r != nil {
		r.closing = true
	}
	s.mu.Unlock()
	if r != nil {
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := r.conn.Call(ctx, protocol.MethodShutdown, nil, nil); err == nil {
				_ = r.conn.Notify(ctx, protocol.MethodExit, nil)
			}
		}()
		select {
		case <-r.exited:
		case <-ctx.Done():
		}
		cancel()
		r.group.KillTree()
		<-r.exited
		<-done
	}
	s.wg.Wait()
}
