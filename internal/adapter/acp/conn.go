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

	"github.com/ferry-dev/ferry/internal/lines"
	"github.com/ferry-dev/ferry/internal/procgroup"
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

// conn is an agent process and the JSON-RPC stream on its stdio: one
// goroutine reads stdout, one writes stdin, one drains stderr into the log.
type conn struct {
	log   *slog.Logger
	cmd   *exec.Cmd
	group *procgroup.Group // the agent's session and process group
	stdin io.WriteCloser

	out   chan []byte
	items chan item
	// stop ends the writer and unblocks the reader's queue sends.
	stop     chan struct{}
	stopOnce sync.Once
	// writerDone is closed when the writer gave up (stop or a write error).
	writerDone chan struct{}
	// exited is closed once the process was reaped; exitErr is its status.
	exited  chan struct{}
	exitErr error

	nextID atomic.Int64
	wg     sync.WaitGroup

	mu     sync.Mutex
	stderr []string
}

// startConn starts argv in dir with env added to the environment, in a
// session of its own (procgroup.Start), so that killing it reaches what it
// started and nothing it runs can use the user's terminal.
func startConn(argv []string, dir string, env []string, maxLine int, log *slog.Logger) (*conn, error) {
	cmd := exec.Command(argv[0], argv[1:]...) // #nosec G204 -- the user configured this agent command
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	// Plain os.Pipe ends, not exec's StdoutPipe: exec closes those right
	// after the process exits, which could drop the last lines the agent
	// wrote before dying. Our read ends see EOF once every process holding
	// the write ends is gone (the waiter kills the tree for that).
	var (
		parent []*os.File // ends ferry keeps
		child  []*os.File // ends the agent gets, closed here after Start
	)
	fail := func(err error) (*conn, error) {
		for _, f := range append(parent, child...) {
			_ = f.Close()
		}
		return nil, err
	}
	for range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("acp: pipe: %w", err))
		}
		if len(parent) == 0 { // stdin: the agent reads
			parent, child = append(parent, w), append(child, r)
		} else {
			parent, child = append(parent, r), append(child, w)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = child[0], child[1], child[2]
	group, err := procgroup.Start(cmd)
	if err != nil {
		return fail(fmt.Errorf("acp: start %s: %w", argv[0], err))
	}
	for _, f := range child {
		_ = f.Close()
	}
	stdin, stdout, stderr := parent[0], parent[1], parent[2]
	c := &conn{
		log:        log.With("pid", cmd.Process.Pid),
		cmd:        cmd,
		group:      group,
		stdin:      stdin,
		out:        make(chan []byte, outQueue),
		items:      make(chan item, inQueue),
		stop:       make(chan struct{}),
		writerDone: make(chan struct{}),
		exited:     make(chan struct{}),
	}
	readDone, stderrDone := make(chan struct{}), make(chan struct{})
	c.wg.Add(4)
	go func() { defer c.wg.Done(); defer close(readDone); defer stdout.Close(); c.readLoop(stdout, maxLine) }()
	go func() { defer c.wg.Done(); defer close(stderrDone); defer stderr.Close(); c.stderrLoop(stderr) }()
	go func() { defer c.wg.Done(); c.writeLoop() }()
	go func() {
		defer c.wg.Done()
		c.exitErr = cmd.Wait()
		// The agent is gone: whatever it left running goes too (what is
		// still in its group, and below that), which also lets the
		// readers see the end of their pipes.
		group.KillTree()
		close(c.exited)
		// Past pipeDrain the pipes are closed under their readers, which
		// ends their wait (os.ErrClosed, taken as the end of the output).
		t := time.NewTimer(pipeDrain)
		defer t.Stop()
		expired := false
		for _, p := range []struct {
			done <-chan struct{}
			f    *os.File
		}{{readDone, stdout}, {stderrDone, stderr}} {
			if !expired {
				select {
				case <-p.done:
					continue
				case <-t.C:
					expired = true
					c.log.Warn("acp: a process outside the agent's tree holds its output open; no longer reading it")
				}
			}
			_ = p.f.Close()
			<-p.done
		}
	}()
	return c, nil
}

// readLoop reads the agent's stdout and queues what it parses, in order.
// Lines that arrived in one read are queued as one batch, so the
// dispatcher handles them back to back (see session.dispatch).
func (c *conn) readLoop(r io.Reader, maxLine int) {
	lr := lines.NewReader(r, maxLine)
	for {
		var batch []*message
		var err error
		for {
			var (
				line    []byte
				skipped int64
			)
			line, skipped, err = lr.Next()
			switch {
			case skipped > 0:
				c.log.Warn("acp: skipped a line over the size limit", "bytes", skipped, "limit", lr.Max())
			case len(strings.TrimSpace(string(line))) == 0:
			default:
				m, perr := parseMessage(line)
				if perr != nil {
					c.log.Warn("acp: skipped a malformed JSON-RPC line", "err", perr, "bytes", len(line), "start", runecut.Prefix(string(line), 120))
					break
				}
				batch = append(batch, m)
			}
			if err != nil || !lr.LineBuffered() {
				break
			}
		}
		if len(batch) > 0 && !c.queue(item{msgs: batch}) {
			return
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, os.ErrClosed) {
				c.log.Warn("acp: reading the agent's output failed", "err", err)
			}
			c.queue(item{eof: true})
			return
		}
	}
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

// writeLoop writes queued lines to the agent's stdin.
func (c *conn) writeLoop() {
	defer close(c.writerDone)
	for {
		select {
		case b := <-c.out:
			if _, err := c.stdin.Write(b); err != nil {
				select {
				case <-c.stop: // closing: the pipe went first
				default:
					c.log.Warn("acp: writing to the agent failed", "err", err)
				}
				return
			}
		case <-c.stop:
			return
		}
	}
}

// stderrLoop logs the agent's stderr line by line and keeps the last lines.
func (c *conn) stderrLoop(r io.Reader) {
	lr := lines.NewReader(r, stderrLine)
	for {
		line, skipped, err := lr.Next()
		if len(line) > 0 || skipped > 0 {
			s := string(line)
			if skipped > 0 {
				s = fmt.Sprintf("(a line of %d bytes)", skipped)
			}
			c.log.Debug("acp: agent stderr", "line", s)
			c.mu.Lock()
			c.stderr = append(c.stderr, s)
			if len(c.stderr) > stderrKeep {
				c.stderr = c.stderr[len(c.stderr)-stderrKeep:]
			}
			c.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}

// lastStderr returns the last lines the agent wrote to stderr.
func (c *conn) lastStderr() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.stderr, "\n")
}

// send queues one encoded line for the writer.
func (c *conn) send(ctx context.Context, b []byte) error {
	select {
	case c.out <- b:
		return nil
	case <-c.writerDone:
		return errClosed
	case <-c.exited:
		return errClosed
	case <-ctx.Done():
		return fmt.Errorf("acp: send: %w", ctx.Err())
	}
}

// newID returns the next request id.
func (c *conn) newID() int64 { return c.nextID.Add(1) }

// kill ends the agent now, with its process group and every process below
// it, also those in sessions of their own (claude-code-acp runs Claude
// Code, which runs each Bash command under setsid).
func (c *conn) kill() { c.group.KillTree() }

// close stops the agent: its stdin is closed (an ACP agent exits at end of
// input), and after closeGrace its tree is killed. What it started is
// recorded before: once the agent exits, processes that left its group
// (and whose parents are gone) no longer lead back to it. It returns once
// the process is reaped, what was recorded is killed, and every goroutine
// of the connection has finished.
func (c *conn) close() {
	below := c.group.Snapshot()
	c.stopOnce.Do(func() {
		close(c.stop)
		_ = c.stdin.Close()
	})
	t := time.NewTimer(closeGrace)
	select {
	case <-c.exited:
		t.Stop()
	case <-t.C:
		c.kill()
		<-c.exited
	}
	below.Kill()
	c.wg.Wait()
}
