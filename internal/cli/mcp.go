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
	// request read has its answer (piped requests are all answered).
	pend := newPendingRequests()
	in := &requestReader{ctx: ctx, r: env.Stdin, p: pend}
	out := &answerWriter{w: env.Stdout, p: pend}
	if err := server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in), Writer: out}); err != nil && ctx.Err() == nil {
		return fmt.Errorf("ferry mcp: %w", err)
	}
	return nil
}

// pendingRequests keeps the ids of the JSON-RPC requests read and not yet
// answered, so that the end of input waits for their answers. Answers go
// out as the server finishes them, in any order, as JSON-RPC allows: a slow
// tool call holds up no other answer.
type pendingRequests struct {
	mu      sync.Mutex
	open    []string      // ids of unanswered requests
	changed chan struct{} // closed and replaced when one is answered
}

func newPendingRequests() *pendingRequests {
	return &pendingRequests{changed: make(chan struct{})}
}

// rpcMessage is what tells a request (id and method) from an answer (id
// only) and a notification (method only).
type rpcMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
}

// nextLine cuts the first complete line off *buf; ok is false when there
// is none. A batch (an array, gone from MCP since 2025-06-18) has no
// single id, so it is not waited for.
func nextLine(buf *[]byte) (line []byte, id string, m rpcMessage, ok bool) {
	i := bytes.IndexByte(*buf, '\n')
	if i < 0 {
		return nil, "", m, false
	}
	line = (*buf)[:i+1]
	*buf = (*buf)[i+1:]
	var v any
	if json.Unmarshal(line, &m) == nil && json.Unmarshal(m.ID, &v) == nil && v != nil {
		// Re-encoded, so the request's 1.0 or "\u0061" is its answer's 1 or "a".
		b, _ := json.Marshal(v)
		id = string(b)
	}
	return line, id, m, true
}

// requestReader reads the client's messages, noting requests, and holds
// back the end of input until they are all answered (or ctx ends).
type requestReader struct {
	ctx context.Context
	r   io.Reader
	p   *pendingRequests
	buf []byte
}

func (r *requestReader) Read(b []byte) (int, error) {
	n, err := r.r.Read(b)
	r.buf = append(r.buf, b[:n]...)
	if err != nil {
		r.buf = append(r.buf, '\n') // a last line with no newline
	}
	r.p.mu.Lock()
	for {
		_, id, m, ok := nextLine(&r.buf)
		if !ok {
			break
		}
		if id != "" && m.Method != "" {
			r.p.open = append(r.p.open, id)
		}
	}
	r.p.mu.Unlock()
	if err == nil || n > 0 {
		return n, nil // the error comes again on the next Read
	}
	for {
		r.p.mu.Lock()
		left, changed := len(r.p.open), r.p.changed
		r.p.mu.Unlock()
		if left == 0 {
			return 0, err
		}
		select {
		case <-changed:
		case <-r.ctx.Done():
			return 0, err
		}
	}
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
		line, id, m, ok := nextLine(&w.buf)
		if !ok {
			break
		}
		if _, err := w.w.Write(line); err != nil {
			return 0, err
		}
		if id == "" || m.Method != "" {
			continue
		}
		if i := slices.Index(w.p.open, id); i >= 0 {
			w.p.open = slices.Delete(w.p.open, i, i+1)
			close(w.p.changed)
			w.p.changed = make(chan struct{})
		}
	}
	return len(b), nil
}

func (*answerWriter) Close() error { return nil }
