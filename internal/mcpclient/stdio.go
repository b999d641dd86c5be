package mcpclient

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ferry-dev/ferry/internal/childproc"
)

// Bounds of a stdio server's pipes.
const (
	// maxMessage bounds one message from a server: the SDK's own bound.
	maxMessage = mcp.DefaultMaxLineLength
	// closeGrace is how long a server has to exit once its stdin is
	// closed before its process tree is killed.
	closeGrace = time.Second
	// pipeDrain bounds reading a server's pipes after its tree was killed
	// (a process that escaped the kill may hold them for ever).
	pipeDrain = time.Second
	// stderrLine and stderrLines bound what is kept of a server's stderr;
	// stderrShown is how much of it an error message quotes.
	stderrLine  = 1 << 10
	stderrLines = 16
	stderrShown = 2 << 10
)

// errTooLong is the read error of a message over maxMessage.
var errTooLong = fmt.Errorf("sent a message over %d MB", maxMessage>>20)

// stdioTransport is an mcp.Transport over a childproc.Proc: the child runs
// in a session of its own (so Close reaches everything it started), its
// stdout is read line by line with a bound, and the last lines of its
// stderr are kept for the messages that tell why it failed.
type stdioTransport struct {
	argv []string
	opts childproc.Options
	log  *slog.Logger
	conn *stdioConn // set by Connect
}

func (t *stdioTransport) Connect(context.Context) (mcp.Connection, error) {
	c := &stdioConn{in: make(chan []byte), closed: make(chan struct{}), eof: make(chan struct{}), tooLong: make(chan struct{})}
	o := t.opts
	o.MaxLine = maxMessage
	o.Drain = pipeDrain
	o.StderrLine = stderrLine
	o.StderrTail = stderrLines
	o.OnLine = c.line
	o.OnEOF = func(err error) { c.end(err) }
	o.OnStderr = func(line []byte, skipped int64) string {
		if skipped > 0 {
			return fmt.Sprintf("(a line of %d bytes)", skipped)
		}
		s := strings.TrimRight(string(line), "\r")
		if s != "" {
			t.log.Debug("mcp: server stderr", "line", s)
		}
		return s
	}
	c.p = childproc.New(t.argv, o)
	if err := c.p.Start(); err != nil {
		return nil, err
	}
	t.conn = c
	return c, nil
}

// stdioConn is the JSON-RPC connection on a stdio server's pipes.
type stdioConn struct {
	p         *childproc.Proc
	in        chan []byte
	closed    chan struct{}
	closeOnce sync.Once
	eof       chan struct{}
	eofOnce   sync.Once
	eofErr    error // valid once eof is closed
	tooLong   chan struct{}
	// skipped counts stdout lines that were no JSON-RPC message.
	mu      sync.Mutex
	skipped int
}

// line hands one stdout line to Read. A line that is no JSON is skipped
// (servers that log to stdout by mistake are common, and one stray line
// must not end the session); a line over maxMessage ends the connection,
// since the call it answered can no longer be told.
func (c *stdioConn) line(l childproc.Line) bool {
	if l.Err != nil {
		close(c.tooLong)
		c.end(errTooLong)
		return false
	}
	data := bytes.TrimSpace(l.Data)
	if len(data) == 0 {
		return true
	}
	select {
	case c.in <- bytes.Clone(data):
		return true
	case <-c.closed:
		return false
	}
}

func (c *stdioConn) end(err error) {
	c.eofOnce.Do(func() {
		c.eofErr = err
		close(c.eof)
	})
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		select {
		case data := <-c.in:
			msg, err := jsonrpc.DecodeMessage(data)
			if err != nil {
				c.mu.Lock()
				c.skipped++
				c.mu.Unlock()
				continue
			}
			return msg, nil
		case <-c.eof:
			if c.eofErr == nil {
				return nil, errors.New("stdout closed")
			}
			return nil, c.eofErr
		case <-c.closed:
			return nil, mcp.ErrConnectionClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return err
	}
	return c.p.Send(ctx, append(data, '\n'))
}

// Close ends the server: stdin closed, closeGrace to exit, then its tree
// killed; it returns once the pipes are closed and every goroutine of the
// Proc ended.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	c.p.Close(context.Background(), closeGrace)
	return nil
}

func (c *stdioConn) SessionID() string { return "" }

// ended reports whether the server ended its side of the session (its
// process exited, or it sent a message over maxMessage), waiting up to
// wait for that to show (a failed read or call is often seen first), and
// says why, with the last of its stderr: "exited: exit status 3; stderr:
// …" or "was disconnected: it sent a message over 16 MB".
func (c *stdioConn) ended(wait time.Duration) (string, bool) {
	tooLong, exited := c.endedNow()
	if !tooLong && !exited && wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-c.tooLong:
			tooLong = true
		case <-c.p.Exited():
			exited = true
		case <-t.C:
		}
		t.Stop()
	}
	var msg string
	switch {
	case tooLong:
		msg = "was disconnected: it " + errTooLong.Error()
	case exited:
		<-c.p.Done() // stderr read to its end (at most pipeDrain)
		msg = "exited: exit status 0"
		if err := c.p.Err(); err != nil {
			msg = "exited: " + err.Error()
		}
	default:
		return "", false
	}
	if tail := stderrTail(c.p.StderrTail()); tail != "" {
		msg += "; stderr: " + tail
	}
	return msg, true
}

// endedNow reports, without waiting, whether a message over maxMessage
// came and whether the process exited.
func (c *stdioConn) endedNow() (tooLong, exited bool) {
	select {
	case <-c.tooLong:
		return true, false
	default:
	}
	select {
	case <-c.p.Exited():
		return false, true
	default:
		return false, false
	}
}

// stderrTail joins the last kept stderr lines, at most stderrShown bytes
// (the end kept: the last lines say why).
func stderrTail(lines []string) string {
	s := strings.TrimSpace(strings.Join(lines, "\n"))
	if len(s) <= stderrShown {
		return s
	}
	cut := len(s) - stderrShown
	for cut < len(s) && (s[cut]&0xC0) == 0x80 {
		cut++
	}
	return "…" + s[cut:]
}
