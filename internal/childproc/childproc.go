// Package childproc owns one agent child process and its stdio: the pipe
// setup, a bounded writer queue on its stdin, a line reader on its stdout,
// a bounded tail of its stderr, and the end sequence (wait, kill the tree,
// drain the pipes, close them). It builds on procgroup, which only starts
// and signals process groups; this package adds the I/O around them, so
// that every adapter ends its agent the same way.
//
// Guarantees:
//
//   - The child runs in a session of its own (procgroup.Start): nothing it
//     starts can use the user's terminal, and killing it reaches its tree.
//   - Its stdio are plain os.Pipe ends, not exec's StdoutPipe, which exec
//     closes as soon as the process exits and so could drop the last lines
//     it wrote. The reader sees EOF once every holder of a write end is
//     gone; the end sequence kills the tree for that.
//   - A stdout line longer than Options.MaxLine is read through without
//     being held and reported as a Line with Err set to ErrLineTooLong; the
//     stream goes on with the next line. A long line never hangs the reader.
//   - Once the child is reaped, what it left running in its tree is killed,
//     and the pipes are read at most Options.Drain longer (a process that
//     escaped the kill may hold them open for ever); then they are closed.
//   - Close closes stdin, waits up to a grace period for the child to exit,
//     kills the whole tree, and returns once every goroutine has ended. It
//     is idempotent and safe to call concurrently, also while a read or a
//     Send is blocked.
//
// A Proc is safe for concurrent use.
//
// Stream (stream.go) is the other shape of the same child: one merged
// stdout+stderr byte stream, stdin from /dev/null, and a staged stop
// (SIGTERM, SIGKILL after a grace, bounded reap and drain), for a tool
// such as Bash that captures a command's output rather than talks to it.
package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/lines"
	"github.com/ferry-dev/ferry/internal/procgroup"
)

// Defaults of Options fields left zero.
const (
	DefaultQueue      = 64
	DefaultDrain      = 2 * time.Second
	DefaultStderrLine = 4 << 10
	DefaultStderrTail = 20
)

// ErrClosed is returned by Send once stdin is closed, the writer failed,
// or the child exited.
var ErrClosed = errors.New("childproc: the child's input is closed")

// ErrLineTooLong marks a stdout line over Options.MaxLine.
var ErrLineTooLong = errors.New("childproc: line over the size limit")

// Line is one line of the child's stdout.
type Line struct {
	// Data is the line without its newline, valid only during the call.
	Data []byte
	// Err is ErrLineTooLong for an over-long line (Skipped is its size).
	Err     error
	Skipped int64
	// More reports that another whole line is already buffered, so a
	// caller that handles lines in batches can take them together.
	More bool
}

// Options configure Start.
type Options struct {
	Dir string
	// Env is the child's whole environment (nil: ferry's own).
	Env []string
	// MaxLine bounds a stdout line (lines.DefaultMax when <= 0).
	MaxLine int
	// Queue bounds the lines waiting for the writer (DefaultQueue).
	Queue int
	// Drain is how long the pipes are read after the child was reaped
	// and its tree killed (DefaultDrain).
	Drain time.Duration
	// StderrLine bounds a stderr line (DefaultStderrLine); StderrTail is
	// how many last stderr lines are kept (DefaultStderrTail).
	StderrLine int
	StderrTail int
	// Input, when set, is where the writer takes its lines from instead of
	// Send's queue: for a caller that owns its queue. After a failed write
	// the writer keeps taking them (and drops them) until stdin is closed
	// or the child exited, so the caller's senders never block on a dead
	// pipe.
	Input <-chan []byte
	// OnStart is called with the pid once the process started, before
	// any other callback.
	OnStart func(pid int)
	// OnLine gets every stdout line in order, on the reader goroutine;
	// returning false stops reading.
	OnLine func(Line) bool
	// OnEOF is called once stdout ended (io.EOF, or another read error),
	// unless OnLine stopped the reader.
	OnEOF func(err error)
	// OnStderr gets every stderr line (skipped > 0 for one over
	// StderrLine) and returns what to keep of it in the tail, "" for
	// nothing. Nil keeps the line as it is.
	OnStderr func(line []byte, skipped int64) string
	// OnDrainTimeout is called when Drain passed with a pipe still open:
	// a process outside the child's tree holds it.
	OnDrainTimeout func()
	// OnWriteError is called when a write to stdin fails while stdin
	// was not being closed.
	OnWriteError func(err error)
}

// Proc is a running child process (see the package doc).
type Proc struct {
	cmd   *exec.Cmd
	group *procgroup.Group
	stdin *os.File
	opt   Options

	out      chan []byte
	stop     chan struct{} // closed by CloseInput
	stopOnce sync.Once
	// writerDone is closed when the writer gave up (stop or write error).
	writerDone chan struct{}
	exited     chan struct{} // reaped, tree killed
	done       chan struct{} // pipes drained and closed
	exitErr    error

	mu   sync.Mutex
	tail []string
}

// Start starts argv with o (see the package doc): New, then Proc.Start.
func Start(argv []string, o Options) (*Proc, error) {
	p := New(argv, o)
	if err := p.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

// New prepares argv with o without starting it, so that a caller can keep
// the Proc where its callbacks find it before any of them runs.
func New(argv []string, o Options) *Proc {
	if o.Queue <= 0 {
		o.Queue = DefaultQueue
	}
	if o.Drain <= 0 {
		o.Drain = DefaultDrain
	}
	if o.StderrLine <= 0 {
		o.StderrLine = DefaultStderrLine
	}
	if o.StderrTail <= 0 {
		o.StderrTail = DefaultStderrTail
	}
	p := &Proc{
		opt: o,
		out: make(chan []byte, o.Queue), stop: make(chan struct{}),
		writerDone: make(chan struct{}), exited: make(chan struct{}), done: make(chan struct{}),
	}
	if len(argv) > 0 {
		p.cmd = exec.Command(argv[0], argv[1:]...) // #nosec G204 -- running the configured agent is the caller's purpose
		p.cmd.Dir = o.Dir
		p.cmd.Env = o.Env
	}
	return p
}

// Start starts the process New prepared; call it once. OnStart, then the
// goroutines that call the other callbacks, run after the process started.
func (p *Proc) Start() error {
	if p.cmd == nil {
		return errors.New("childproc: no command")
	}
	group, stdin, stdout, stderr, err := StartPiped(p.cmd)
	if err != nil {
		if !errors.Is(err, ErrPipe) {
			err = fmt.Errorf("start %s: %w", p.cmd.Args[0], err)
		}
		return err
	}
	p.group, p.stdin = group, stdin
	if p.opt.OnStart != nil {
		p.opt.OnStart(p.cmd.Process.Pid)
	}
	readDone, errDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(readDone); p.readStdout(stdout) }()
	go func() { defer close(errDone); p.readStderr(stderr) }()
	go p.write()
	go p.wait(stdout, stderr, readDone, errDone)
	return nil
}

// ErrPipe marks StartPiped's failure to make a pipe (not to start).
var ErrPipe = errors.New("pipe")

// StartPiped starts cmd in a session of its own (procgroup.Start) with
// plain pipes on its stdin, stdout and stderr, and returns ferry's ends.
// The child's ends are closed here, so EOF means every holder is gone.
// A pipe that cannot be made gives "pipe: <cause>"; a start that fails
// gives procgroup.Start's error as it is, for the caller to name.
// (Errors of Start and StartPiped carry no package prefix: the adapter
// adds its own, so its messages stay what its users know.)
func StartPiped(cmd *exec.Cmd) (g *procgroup.Group, stdin, stdout, stderr *os.File, err error) {
	var parent, child []*os.File
	fail := func(err error) (*procgroup.Group, *os.File, *os.File, *os.File, error) {
		for _, f := range append(parent, child...) {
			_ = f.Close()
		}
		return nil, nil, nil, nil, err
	}
	for i := range 3 {
		r, w, err := os.Pipe()
		if err != nil {
			return fail(fmt.Errorf("%w: %w", ErrPipe, err))
		}
		if i == 0 { // stdin: the child reads
			parent, child = append(parent, w), append(child, r)
		} else {
			parent, child = append(parent, r), append(child, w)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = child[0], child[1], child[2]
	g, err = procgroup.Start(cmd)
	for _, f := range child {
		_ = f.Close()
	}
	child = nil
	if err != nil {
		return fail(err)
	}
	return g, parent[0], parent[1], parent[2], nil
}

// Pid is the child's pid.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Cmd is the child's command, for reading (its Process, its state once
// Exited is closed); the Proc owns it.
func (p *Proc) Cmd() *exec.Cmd { return p.cmd }

// Group is the child's session and process group.
func (p *Proc) Group() *procgroup.Group { return p.group }

// Exited is closed once the child was reaped and its tree killed.
func (p *Proc) Exited() <-chan struct{} { return p.exited }

// Done is closed once, after Exited, the pipes were drained and closed.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the child's exit status (as exec.Cmd.Wait), valid once Exited
// is closed.
func (p *Proc) Err() error {
	<-p.exited
	return p.exitErr
}

// Wait waits for Done and returns the exit status.
func (p *Proc) Wait() error {
	<-p.done
	return p.exitErr
}

// Send queues b (one whole line, with its newline) for the child's stdin.
func (p *Proc) Send(ctx context.Context, b []byte) error {
	select {
	case <-p.stop:
		return ErrClosed
	default:
	}
	select {
	case p.out <- b:
		return nil
	case <-p.writerDone:
		return ErrClosed
	case <-p.exited:
		return ErrClosed
	case <-ctx.Done():
		return fmt.Errorf("childproc: send: %w", ctx.Err())
	}
}

// StderrTail returns the last kept stderr lines.
func (p *Proc) StderrTail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tail...)
}

// CloseInput closes the child's stdin (most agents exit at end of input)
// and stops the writer; what is still queued is dropped. Idempotent.
func (p *Proc) CloseInput() {
	p.stopOnce.Do(func() {
		close(p.stop)
		_ = p.stdin.Close()
	})
}

// Kill kills the child's whole tree now, without waiting.
func (p *Proc) Kill() { p.group.KillTree() }

// Close ends the child: stdin is closed, and once grace has passed (or
// ctx ended) its tree is killed. What the child started is recorded
// first: once it exits, processes that left its group and whose parents
// are gone no longer lead back to it. Close returns once every goroutine
// has ended. It is idempotent.
func (p *Proc) Close(ctx context.Context, grace time.Duration) {
	below := p.group.Snapshot()
	p.CloseInput()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.exited:
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-p.exited:
	default:
		p.Kill()
		<-p.exited
	}
	below.Kill()
	<-p.done
}

func (p *Proc) write() {
	defer close(p.writerDone)
	in := p.opt.Input
	if in == nil {
		in = p.out
	}
	for {
		select {
		case b := <-in:
			if _, err := p.stdin.Write(b); err != nil {
				select {
				case <-p.stop: // closing: the pipe went first
				default:
					if p.opt.OnWriteError != nil {
						p.opt.OnWriteError(err)
					}
				}
				if p.opt.Input != nil {
					p.discard(in)
				}
				return
			}
		case <-p.stop:
			return
		case <-p.exited:
			return
		}
	}
}

// discard takes and drops what is sent on in until stdin is closed or the
// child exited.
func (p *Proc) discard(in <-chan []byte) {
	for {
		select {
		case <-in:
		case <-p.stop:
			return
		case <-p.exited:
			return
		}
	}
}

func (p *Proc) readStdout(r io.Reader) {
	lr := lines.NewReader(r, p.opt.MaxLine)
	for {
		b, skipped, err := lr.Next()
		if err != nil {
			if errors.Is(err, os.ErrClosed) {
				err = io.EOF // closed after the drain: the end of the output
			}
			if p.opt.OnEOF != nil {
				p.opt.OnEOF(err)
			}
			return
		}
		l := Line{Data: b, More: lr.LineBuffered()}
		if skipped > 0 {
			l.Err, l.Skipped = ErrLineTooLong, skipped
		}
		if p.opt.OnLine != nil && !p.opt.OnLine(l) {
			return
		}
	}
}

func (p *Proc) readStderr(r io.Reader) {
	lr := lines.NewReader(r, p.opt.StderrLine)
	for {
		b, skipped, err := lr.Next()
		if err != nil {
			return
		}
		var keep string
		if p.opt.OnStderr != nil {
			keep = p.opt.OnStderr(b, skipped)
		} else {
			keep = string(b)
		}
		if keep == "" {
			continue
		}
		p.mu.Lock()
		p.tail = append(p.tail, keep)
		if len(p.tail) > p.opt.StderrTail {
			p.tail = p.tail[len(p.tail)-p.opt.StderrTail:]
		}
		p.mu.Unlock()
	}
}

// wait reaps the child, kills what it left in its tree, then drains the
// pipes for at most Drain before closing them under their readers.
func (p *Proc) wait(stdout, stderr *os.File, readDone, errDone <-chan struct{}) {
	p.exitErr = p.cmd.Wait()
	p.group.KillTree()
	close(p.exited)
	t := time.NewTimer(p.opt.Drain)
	defer t.Stop()
	expired := false
	for _, c := range []struct {
		done <-chan struct{}
		f    *os.File
	}{{readDone, stdout}, {errDone, stderr}} {
		if !expired {
			select {
			case <-c.done:
			case <-t.C:
				expired = true
				if p.opt.OnDrainTimeout != nil {
					p.opt.OnDrainTimeout()
				}
			}
		}
		_ = c.f.Close()
		<-c.done
	}
	p.CloseInput() // nobody reads it any more
	<-p.writerDone
	close(p.done)
}
