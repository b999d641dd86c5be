package acp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-dev/ferry/internal/runecut"

	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/lines"
)

// Bounds of a connection's queues and shutdown.
const (
	// outQueue is how many lines may wait for the writer.
	outQueue = 256
	// inQueue is how many batches of inbound messages may wait for the
	// session's dispatcher; the reader blocks (and so the agent) past it.
	inQueue = 64
	// closeGrace is how long Close lets the agent exit after its stdin is
	// closed before its process tree is killed.
	closeGrace = 500 * time.Millisecond
	// pipeDrain is how long the agent's output is still read after it
	// exited and its tree was killed: a process that escaped the kill (a
	// daemon that left every process ferry can see) may hold the pipes
	// open for ever, and Close must still return.
	pipeDrain = 2 * time.Second
	// stderrLine caps a logged line of the agent's stderr.
	stderrLine = 4 << 10
	// stderrKeep is how many last stderr lines are kept for the crash log.
	stderrKeep = 20
)

// errClosed is returned by send once the connection is down.
var errClosed = errors.New("acp: the agent's connection is closed")

// item is one unit of the dispatcher's ordered queue: inbound messages (a
// batch read together), a function to run in order with them, or the end
// of the agent's output.
type item struct {
	msgs []*message
	fn   func()
	eof  bool
}

// conn is an agent process (a childproc.Proc: one goroutine reads stdout,
// one writes stdin, one drains stderr into the log) and the JSON-RPC
// stream on its stdio.
type conn struct {
	log *slog.Logger // with the pid, set before any callback of p runs
	p   *childproc.Proc
	cmd *exec.Cmd // p's command

	items chan item
	// stop unblocks the reader's queue sends once the connection closes.
	stop     chan struct{}
	stopOnce sync.Once
	// exited is closed once the process was reaped (p.Err is its status).
	exited <-chan struct{}

	nextID atomic.Int64
	batch  []*message // the reader's batch being gathered
}

// startConn starts argv in dir with env added to the environment, in a
// session of its own (childproc, procgroup.Start), so that killing it
// reaches what it started and nothing it runs can use the user's terminal.
func startConn(argv []string, dir string, env []string, maxLine int, log *slog.Logger) (*conn, error) {
	c := &conn{
		items: make(chan item, inQueue),
		stop:  make(chan struct{}),
	}
	limit := maxLine
	if limit <= 0 {
		limit = lines.DefaultMax
	}
	c.p = childproc.New(argv, childproc.Options{
		Dir:        dir,
		Env:        append(os.Environ(), env...),
		MaxLine:    maxLine,
		Queue:      outQueue,
		Drain:      pipeDrain,
		StderrLine: stderrLine,
		StderrTail: stderrKeep,
		OnStart:    func(pid int) { c.log = log.With("pid", pid) },
		OnLine:     func(l childproc.Line) bool { return c.readLine(l, limit) },
		OnEOF:      c.readEnd,
		OnStderr: func(line []byte, skipped int64) string {
			if len(line) == 0 && skipped == 0 {
				return ""
			}
			s := string(line)
			if skipped > 0 {
				s = fmt.Sprintf("(a line of %d bytes)", skipped)
			}
			c.log.Debug("acp: agent stderr", "line", s)
			return s
		},
		OnWriteError: func(err error) { c.log.Warn("acp: writing to the agent failed", "err", err) },
		OnDrainTimeout: func() {
			c.log.Warn("acp: a process outside the agent's tree holds its output open; no longer reading it")
		},
	})
	if err := c.p.Start(); err != nil {
		return nil, fmt.Errorf("acp: %w", err)
	}
	c.cmd, c.exited = c.p.Cmd(), c.p.Exited()
	return c, nil
}

// readLine parses one line of the agent's stdout and queues what it
// parsed, in order. Lines that arrived in one read are queued as one
// batch, so the dispatcher handles them back to back (see
// session.dispatch).
func (c *conn) readLine(l childproc.Line, limit int) bool {
	switch {
	case l.Err != nil:
		c.log.Warn("acp: skipped a line over the size limit", "bytes", l.Skipped, "limit", limit)
	case len(strings.TrimSpace(string(l.Data))) == 0:
	default:
		m, perr := parseMessage(l.Data)
		if perr != nil {
			c.log.Warn("acp: skipped a malformed JSON-RPC line", "err", perr, "bytes", len(l.Data), "start", runecut.Prefix(string(l.Data), 120))
			break
		}
		c.batch = append(c.batch, m)
	}
	if l.More {
		return true
	}
	batch := c.batch
	c.batch = nil
	return len(batch) == 0 || c.queue(item{msgs: batch})
}

// readEnd queues the end of the agent's output.
func (c *conn) readEnd(err error) {
	if len(c.batch) > 0 && !c.queue(item{msgs: c.batch}) {
		return
	}
	c.batch = nil
	if !errors.Is(err, io.EOF) {
		c.log.Warn("acp: reading the agent's output failed", "err", err)
	}
	c.queue(item{eof: true})
}

// queue hands it to the dispatcher; false once the connection is stopped.
func (c *conn) queue(it item) bool {
	select {
	case c.items <- it:
		return true
	case <-c.stop:
		return false
	}
}

// lastStderr returns the last lines the agent wrote to stderr.
func (c *conn) lastStderr() string { return strings.Join(c.p.StderrTail(), "\n") }

// send queues one encoded line for the writer.
func (c *conn) send(ctx context.Context, b []byte) error {
	err := c.p.Send(ctx, b)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, childproc.ErrClosed):
		return errClosed
	default:
		return fmt.Errorf("acp: send: %w", ctx.Err())
	}
}

// newID returns the next request id.
func (c *conn) newID() int64 { return c.nextID.Add(1) }

// kill ends the agent now, with its process group and every process below
// it, also those in sessions of their own (claude-code-acp runs Claude
// Code, which runs each Bash command under setsid).
func (c *conn) kill() { c.p.Kill() }

// close stops the agent: its stdin is closed (an ACP agent exits at end of
// input), and after closeGrace its tree is killed, with what it had
// started (childproc.Proc.Close). It returns once the process is reaped
// and every goroutine of the connection has finished.
func (c *conn) close() {
	c.stopOnce.Do(func() { close(c.stop) })
	c.p.Close(context.Background(), closeGrace)
}
