package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/lines"
	"github.com/ferry-dev/ferry/internal/procgroup"
	"github.com/ferry-dev/ferry/internal/runecut"
)

// Bounds of one CLI process's plumbing.
const (
	// outQueue bounds the lines waiting for the CLI's stdin.
	outQueue = 64
	// pipeDrain is how long the output pipes may stay open after the CLI
	// exited (a grandchild holding them) before ferry stops reading.
	pipeDrain = 2 * time.Second
	// stderrLine cuts a logged stderr line; stderrLines bounds how many
	// lines of one process are logged; stderrTail is how many are kept
	// for the log entry of a crash.
	stderrLine  = 2 << 10
	stderrLines = 200
	stderrTail  = 8
)

// errExited is returned for a request to a process that is gone.
var errExited = errors.New("claudecode: the Claude Code process exited")

// proc is one running Claude Code CLI: a child in a session and process
// group of its own (procgroup.Start), with one writer goroutine on its
// stdin, one reader on its stdout (which hands every decoded line to
// route, in order) and one on its stderr (which logs, boundedly).
type proc struct {
	cmd     *exec.Cmd
	group   *procgroup.Group
	log     *slog.Logger
	flagSet promptFlags // the per-prompt flags it was started with
	flags   string      // flagSet.key()

	out     chan []byte
	stopOut chan struct{}
	stopped sync.Once
	exited  chan struct{} // closed when the process is gone and its pipes read
	waitErr error         // valid once exited is closed

	mu       sync.Mutex
	pending  map[string]chan *controlResponseLine
	seq      int
	tail     []string // the last stderr lines
	lastCost float64  // the CLI's cumulative total_cost_usd so far
}

// startProc starts command with args in dir; route gets every decoded
// stdout line except answers to ferry's own control requests.
func startProc(command string, args, env []string, dir string, flags promptFlags, maxLine int, log *slog.Logger, route func(*proc, *line)) (*proc, error) {
	cmd := exec.Command(command, args...) //nolint:gosec // the user configures which claude to run
	cmd.Dir = dir
	cmd.Env = env

	// Plain pipes (not Cmd.StdoutPipe): Wait then only waits for the
	// process, and ferry decides how long to keep reading after it.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("claudecode: stdin pipe: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW)
		return nil, fmt.Errorf("claudecode: stdout pipe: %w", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closeAll(inR, inW, outR, outW)
		return nil, fmt.Errorf("claudecode: stderr pipe: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	group, err := procgroup.Start(cmd)
	if err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return nil, fmt.Errorf("claudecode: start %s: %w", command, err)
	}
	closeAll(inR, outW, errW) // the child's ends

	p := &proc{
		cmd: cmd, group: group, log: log.With("pid", cmd.Process.Pid), flagSet: flags, flags: flags.key(),
		out: make(chan []byte, outQueue), stopOut: make(chan struct{}), exited: make(chan struct{}),
		pending: map[string]chan *controlResponseLine{},
	}
	readDone := make(chan struct{})
	errDone := make(chan struct{})
	go p.write(inW)
	go p.read(outR, maxLine, route, readDone)
	go p.readStderr(errR, errDone)
	go p.wait(outR, errR, readDone, errDone)
	return p, nil
}

func closeAll(fs ...*os.File) {
	for _, f := range fs {
		_ = f.Close()
	}
}

// write is the one writer of the CLI's stdin. It ends (closing stdin, which
// tells the CLI to finish) on closeInput or when the process is gone.
func (p *proc) write(w *os.File) {
	defer func() { _ = w.Close() }()
	for {
		select {
		case b := <-p.out:
			if _, err := w.Write(b); err != nil {
				p.log.Debug("claude stdin closed", "err", err)
				// Keep consuming so senders never block on a dead pipe.
				for {
					select {
					case <-p.out:
					case <-p.stopOut:
						return
					case <-p.exited:
						return
					}
				}
			}
		case <-p.stopOut:
			return
		case <-p.exited:
			return
		}
	}
}

// read is the one reader of the CLI's stdout.
func (p *proc) read(r io.Reader, maxLine int, route func(*proc, *line), done chan<- struct{}) {
	defer close(done)
	lr := lines.NewReader(r, maxLine)
	for {
		b, skipped, err := lr.Next()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				p.log.Debug("claude stdout", "err", err)
			}
			return
		}
		if skipped > 0 {
			p.log.Warn("a Claude Code stream line is over the size limit; skipped", "bytes", skipped, "limit", lr.Max())
			continue
		}
		if len(b) == 0 {
			continue
		}
		l, err := decodeLine(b)
		if err != nil {
			p.log.Warn("malformed Claude Code stream line; skipped", "err", err, "line", runecut.Ellipsis(string(b), 200))
			continue
		}
		if l.Reply != nil {
			p.resolve(l.Reply)
			continue
		}
		route(p, l)
	}
}

// readStderr logs the CLI's stderr, boundedly, and keeps its tail.
func (p *proc) readStderr(r io.Reader, done chan<- struct{}) {
	defer close(done)
	lr := lines.NewReader(r, 1<<20)
	logged := 0
	for {
		b, _, err := lr.Next()
		if err != nil {
			return
		}
		s := runecut.Ellipsis(strings.TrimSpace(string(b)), stderrLine)
		if s == "" {
			continue
		}
		p.mu.Lock()
		p.tail = append(p.tail, s)
		if len(p.tail) > stderrTail {
			p.tail = p.tail[len(p.tail)-stderrTail:]
		}
		p.mu.Unlock()
		switch {
		case logged < stderrLines:
			p.log.Info("claude stderr", "line", s)
		case logged == stderrLines:
			p.log.Info("claude stderr: further lines are not logged")
		}
		logged++
	}
}

// wait reaps the process, gives its pipes a moment to drain, then marks it
// exited. Whatever is left in its process group, and below that, is killed:
// nothing the CLI started outlives it (see stop for what has left the
// group, and whose parent is gone, by then).
func (p *proc) wait(outR, errR *os.File, readDone, errDone <-chan struct{}) {
	err := p.cmd.Wait()
	p.group.KillTree()
	// Past pipeDrain a process outside the tree holds the pipes: they are
	// closed, which ends their readers' wait. (Once the timer has fired it
	// fires no more: the second pipe is closed at once then.)
	timer := time.NewTimer(pipeDrain)
	defer timer.Stop()
	expired := false
	for _, c := range []struct {
		done <-chan struct{}
		f    *os.File
	}{{readDone, outR}, {errDone, errR}} {
		if !expired {
			select {
			case <-c.done:
			case <-timer.C:
				expired = true
			}
		}
		_ = c.f.Close()
		<-c.done
	}
	p.waitErr = err
	p.log.Debug("Claude Code exited", "err", err)
	close(p.exited)
}

// alive reports whether the process still runs.
func (p *proc) alive() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stderrTail is the last lines the CLI wrote to stderr.
func (p *proc) stderrTail() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.tail...)
}

// send queues one line for the CLI's stdin.
func (p *proc) send(ctx context.Context, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("claudecode: encode: %w", err)
	}
	b = append(b, '\n')
	select {
	case p.out <- b:
		return nil
	case <-p.exited:
		return errExited
	case <-p.stopOut:
		return errExited
	case <-ctx.Done():
		return fmt.Errorf("claudecode: send: %w", ctx.Err())
	}
}

// request sends a control request and waits for its response.
func (p *proc) request(ctx context.Context, body any) (json.RawMessage, error) {
	id, ch := p.newRequest()
	defer p.dropRequest(id)
	if err := p.send(ctx, outRequest{Type: typeControlRequest, RequestID: id, Request: body}); err != nil {
		return nil, err
	}
	select {
	case r := <-ch:
		if r.Response.Subtype == "error" {
			return nil, fmt.Errorf("claudecode: control request refused: %s", runecut.Ellipsis(r.Response.Error, 500))
		}
		return r.Response.Response, nil
	case <-p.exited:
		return nil, errExited
	case <-ctx.Done():
		return nil, fmt.Errorf("claudecode: control request: %w", ctx.Err())
	}
}

// notify sends a control request without waiting for its answer (the
// answer is dropped when it comes).
func (p *proc) notify(ctx context.Context, body any) error {
	p.mu.Lock()
	p.seq++
	id := "ferry-" + strconv.Itoa(p.seq)
	p.mu.Unlock()
	return p.send(ctx, outRequest{Type: typeControlRequest, RequestID: id, Request: body})
}

func (p *proc) newRequest() (string, chan *controlResponseLine) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	id := "ferry-" + strconv.Itoa(p.seq)
	ch := make(chan *controlResponseLine, 1)
	p.pending[id] = ch
	return id, ch
}

func (p *proc) dropRequest(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.pending, id)
}

// resolve hands a control response to the request waiting for it.
func (p *proc) resolve(r *controlResponseLine) {
	p.mu.Lock()
	ch := p.pending[r.Response.RequestID]
	delete(p.pending, r.Response.RequestID)
	p.mu.Unlock()
	if ch != nil {
		ch <- r // buffered, one response per request
	}
}

// closeInput closes the CLI's stdin: it finishes what it does and exits.
func (p *proc) closeInput() {
	p.stopped.Do(func() { close(p.stopOut) })
}

// kill ends the process and everything it started, at once, including
// the Bash commands Claude Code runs in sessions of their own. The tree is
// killed before stdin is closed: a CLI that exits on EOF would orphan its
// children before they could be found.
func (p *proc) kill() {
	if p.alive() {
		p.group.KillTree()
	}
	p.closeInput()
}

// stop asks the process to end (stdin closed), waits up to grace (less
// when ctx ends first), then kills it; it returns once the process is gone.
// What the CLI started and left running when it exited is killed too.
func (p *proc) stop(ctx context.Context, grace time.Duration) {
	below := p.group.Snapshot() // before the CLI's end orphans them
	p.closeInput()
	timer := time.NewTimer(grace)
	defer timer.Stop()
	select {
	case <-p.exited:
		below.Kill()
		return
	case <-timer.C:
	case <-ctx.Done():
	}
	p.kill()
	<-p.exited
	below.Kill()
}

// addCost records the CLI's cumulative cost and returns what it grew by.
func (p *proc) addCost(total float64) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	d := total - p.lastCost
	if d < 0 {
		d = total
	}
	p.lastCost = total
	return max(d, 0)
}
