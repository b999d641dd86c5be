package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/mcpserver"
	"github.com/ferry-dev/ferry/internal/redact"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/version"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return fmt.Sprint(*s) }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

func runMCP(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry mcp", flag.ContinueOnError)
	workspace := fs.String("workspace", ".", "the workspace `DIR` the tools are confined to")
	var allow stringList
	fs.Var(&allow, "allow", "an extra `DIR` the tools may reach (repeatable)")
	maxTokens := fs.Int("max-read-tokens", tools.DefaultLimits().MaxReadTokens, "Read's token gate")
	historyDir := fs.String("history", "", "keep what Write and Edit replace in `DIR` (default $XDG_STATE_HOME/ferry/history)")
	noHistory := fs.Bool("no-history", false, "keep no file history")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry mcp [--workspace DIR] [--allow DIR]...",
		"\nServes ferry's file tools (Read, Write, Edit, Glob, Grep) to an MCP client over",
		"standard input and output, with the read-before-write contract per connection.",
		"Example client config: {\"command\": \"ferry\", \"args\": [\"mcp\", \"--workspace\", \"/path/to/project\"]}",
	); !ok {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("ferry mcp: unexpected argument %q", fs.Arg(0))
	}
	if *maxTokens < 1 {
		return usageErrorf("ferry mcp: --max-read-tokens must be at least 1")
	}
	local, err := vfs.NewLocal(*workspace, allow...)
	if err != nil {
		return fmt.Errorf("ferry mcp: %w", err)
	}
	defer func() { _ = local.Close() }()
	var history tools.FileHistory
	if !*noHistory {
		dir := *historyDir
		if dir == "" {
			if dir, err = filehistory.DefaultDir(); err != nil {
				return fmt.Errorf("ferry mcp: %w (or pass --no-history)", err)
			}
		}
		store, err := filehistory.Open(dir, 0)
		if err != nil {
			return fmt.Errorf("ferry mcp: %w (or pass --no-history)", err)
		}
		history = store
	}
	limits := tools.DefaultLimits()
	limits.MaxReadTokens = *maxTokens
	// Logs go to stderr: stdout carries the protocol.
	log := slog.New(redact.NewHandler(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	server := mcpserver.New(version.String(), tools.FileTools(), func() *tools.Env {
		return &tools.Env{FS: local, State: tools.NewReadState(), Limits: limits, History: history}
	}, log)
	// The transport closes the connection at the end of input, dropping
	// the answers still being worked on: hold the end back until every
	// request read has its answer (piped requests are all answered). It
	// also ends the connection on a line it cannot decode: such lines are
	// answered with their JSON-RPC error before it sees them.
	pend := newPendingRequests()
	out := &answerWriter{w: env.Stdout, p: pend}
	in := &requestReader{ctx: ctx, r: env.Stdin, p: pend, w: out}
	if err := server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: out}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("ferry mcp: %w", err)
	}
	return nil
}

// pendingRequests keeps the JSON-RPC requests read and not yet answered,
// so that the end of input waits for their answers. Answers go out as the
// server finishes them, in any order, as JSON-RPC allows: a slow tool call
// holds up no other answer.
type pendingRequests struct {
	mu          sync.Mutex
	open        []pendingRequest // unanswered requests
	changed     chan struct{}    // closed and replaced when one is answered
	initialized bool             // initialize was answered with a result
}

// pendingRequest is a request read and not answered yet.
type pendingRequest struct{ id, method string }

func newPendingRequests() *pendingRequests {
	return &pendingRequests{changed: make(chan struct{})}
}

// rpcMessage is what tells a request (id and method) from an answer (id
// only) and a notification (method only).
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
}

// nextLine cuts the first complete line off *buf; ok is false when there
// is none.
func nextLine(buf *[]byte) (line []byte, ok bool) {
	i := bytes.IndexByte(*buf, '\n')
	if i < 0 {
		return nil, false
	}
	line = (*buf)[:i+1]
	*buf = (*buf)[i+1:]
	return line, true
}

// parseMessage reads a line's id (re-encoded, so the request's 1.0 or
// "\u0061" is its answer's 1 or "a"; "" when it has none) and method.
func parseMessage(line []byte) (id string, m rpcMessage) {
	var v any
	if json.Unmarshal(line, &m) == nil && json.Unmarshal(m.ID, &v) == nil && v != nil {
		b, _ := json.Marshal(v)
		id = string(b)
	}
	return id, m
}

// requestReader reads the client's messages line by line. A line the MCP
// server could not decode is answered here with its JSON-RPC error (see
// checkMCPLine) and not passed on, so the server never sees it and keeps
// serving. Requests passed on are noted, and the end of input is held back
// until they are all answered (or ctx ends).
type requestReader struct {
	ctx context.Context
	r   io.Reader
	p   *pendingRequests
	w   *answerWriter // where refusals are answered
	buf []byte        // read, not yet cut into lines
	out []byte        // lines checked, not yet read by the server
	// skipping is set while the rest of a line longer than maxMCPLine is
	// dropped.
	skipping bool
	err      error // the input's end (or failure), once reached
}

func (r *requestReader) Read(b []byte) (int, error) {
	for len(r.out) == 0 && r.err == nil {
		chunk := make([]byte, 32<<10)
		n, err := r.r.Read(chunk)
		r.buf = append(r.buf, chunk[:n]...)
		if err != nil {
			r.err = err
			r.buf = append(r.buf, '\n') // a last line with no newline
		}
		if err := r.cutLines(); err != nil {
			return 0, err
		}
	}
	if len(r.out) > 0 {
		n := copy(b, r.out)
		r.out = r.out[n:]
		return n, nil
	}
	for {
		r.p.mu.Lock()
		left, changed := len(r.p.open), r.p.changed
		r.p.mu.Unlock()
		if left == 0 {
			return 0, r.err
		}
		select {
		case <-changed:
		case <-r.ctx.Done():
			return 0, r.err
		}
	}
}

// cutLines checks the complete lines in buf, moving those the server may
// read to out and answering the others.
func (r *requestReader) cutLines() error {
	for {
		line, ok := nextLine(&r.buf)
		if !ok {
			break
		}
		if r.skipping {
			r.skipping = false
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if refusal := checkMCPLine(line[:len(line)-1]); refusal != nil {
			if err := r.w.writeLine(refusal.answer()); err != nil {
				return err
			}
			continue
		}
		if id, m := parseMessage(line); id != "" && m.Method != "" {
			r.p.mu.Lock()
			r.p.open = append(r.p.open, pendingRequest{id: id, method: m.Method})
			r.p.mu.Unlock()
		}
		r.out = append(r.out, line...)
	}
	if len(r.buf) > maxMCPLine && !r.skipping {
		// Too long to be a message the server takes: answer it now and
		// drop the rest of it as it comes.
		r.buf, r.skipping = r.buf[:0], true
		refusal := &mcpRefusal{code: rpcInvalidRequest, message: fmt.Sprintf("invalid request: a line longer than %d MiB", maxMCPLine>>20)}
		return r.w.writeLine(refusal.answer())
	}
	if r.skipping {
		r.buf = r.buf[:0]
	}
	return nil
}

// answerWriter writes the server's messages and notes each answer to a
// pending request. It never closes w: stdout is not the transport's to
// close.
type answerWriter struct {
	w   io.Writer
	p   *pendingRequests
	buf []byte
}

func (w *answerWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	w.buf = append(w.buf, b...)
	for {
		line, ok := nextLine(&w.buf)
		if !ok {
			break
		}
		id, m := parseMessage(line)
		i := -1
		if id != "" && m.Method == "" {
			i = slices.IndexFunc(w.p.open, func(r pendingRequest) bool { return r.id == id })
		}
		if i >= 0 {
			req := w.p.open[i]
			line = fixErrorCode(line, req.method, w.p.initialized)
			if req.method == "initialize" && len(m.Result) > 0 {
				w.p.initialized = true
			}
		}
		if _, err := w.w.Write(line); err != nil {
			return 0, err
		}
		if i >= 0 {
			w.p.open = slices.Delete(w.p.open, i, i+1)
			close(w.p.changed)
			w.p.changed = make(chan struct{})
		}
	}
	return len(b), nil
}

// writeLine writes one whole line of ferry's own (a refusal) between the
// server's lines.
func (w *answerWriter) writeLine(line []byte) error {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	_, err := w.w.Write(line)
	return err
}

func (*answerWriter) Close() error { return nil }
