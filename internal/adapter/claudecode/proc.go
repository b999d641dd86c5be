package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/lines"
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

// proc is one running Claude Code CLI: a childproc.Proc (a child in a
// session and process group of its own, with one writer goroutine on its
// stdin, one reader on its stdout, which hands every decoded line to
// route, in order, and one on its stderr, which logs, boundedly).
type proc struct {
	cp      *childproc.Proc
	cmd     *exec.Cmd // cp's command
	log     *slog.Logger
	flagSet promptFlags // the per-prompt flags it was started with
	flags   string      // flagSet.key()

	out     chan []byte // cp's input queue
	stopOut chan struct{}
	stopped sync.Once
	exited  chan struct{} // closed when the process is gone and its pipes read
	waitErr error         // valid once exited is closed

	mu       sync.Mutex
	pending  map[string]chan *controlResponseLine
	seq      int
	lastCost float64 // the CLI's cumulative total_cost_usd so far
}

// startProc starts command with args in dir; route gets every decoded
// stdout line except answers to ferry's own control requests.
func startProc(command string, args, env []string, dir string, flags promptFlags, maxLine int, log *slog.Logger, route func(*proc, *line)) (*proc, error) {
	p := &proc{
		log: log, flagSet: flags, flags: flags.key(),
		out: make(chan []byte, outQueue), stopOut: make(chan struct{}), exited: make(chan struct{}),
		pending: map[string]chan *controlResponseLine{},
	}
	limit := maxLine
	if limit <= 0 {
		limit = lines.DefaultMax
	}
	logged := 0 // stderr lines logged, counted on the stderr goroutine
	p.cp = childproc.New(append([]string{command}, args...), childproc.Options{
		Dir:        dir,
		Env:        env,
		MaxLine:    maxLine,
		Input:      p.out,
		Drain:      pipeDrain,
		StderrLine: 1 << 20,
		StderrTail: stderrTail,
		OnStart:    func(pid int) { p.log = log.With("pid", pid) },
		OnLine:     func(l childproc.Line) bool { p.readLine(l, limit, route); return true },
		OnEOF: func(err error) {
			if !errors.Is(err, io.EOF) {
				p.log.Debug("claude stdout", "err", err)
			}
		},
		OnStderr: func(b []byte, _ int64) string {
			s := runecut.Ellipsis(strings.TrimSpace(string(b)), stderrLine)
			if s == "" {
				return ""
			}
			switch {
			case logged < stderrLines:
				p.log.Info("claude stderr", "line", s)
			case logged == stderrLines:
				p.log.Info("claude stderr: further lines are not logged")
			}
			logged++
			return s
		},
		OnWriteError: func(err error) { p.log.Debug("claude stdin closed", "err", err) },
	})
	if err := p.cp.Start(); err != nil {
		return nil, fmt.Errorf("claudecode: %w", err)
	}
	p.cmd = p.cp.Cmd()
	go func() {
		// exited closes once the pipes are read too: every line the CLI
		// wrote is routed before anyone sees it gone.
		err := p.cp.Wait()
		p.waitErr = err
		p.log.Debug("Claude Code exited", "err", err)
		close(p.exited)
	}()
	return p, nil
}

// readLine decodes one stdout line and routes it, or resolves the control
// request it answers.
func (p *proc) readLine(cl childproc.Line, limit int, route func(*proc, *line)) {
	b := cl.Data
	switch {
	case cl.Err != nil:
		p.log.Warn("a Claude Code stream line is over the size limit; skipped", "bytes", cl.Skipped, "limit", limit)
		return
	case len(b) == 0:
		return
	}
	l, err := decodeLine(b)
	if err != nil {
		p.log.Warn("malformed Claude Code stream line; skipped", "err", err, "line", runecut.Ellipsis(string(b), 200))
		return
	}
	if l.Reply != nil {
		p.resolve(l.Reply)
		return
	}
	route(p, l)
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
	if p.cp == nil {
		return nil
	}
	return p.cp.StderrTail()
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
	if p.cp != nil {
		p.cp.CloseInput()
	}
}

// kill ends the process and everything it started, at once, including
// the Bash commands Claude Code runs in sessions of their own. The tree is
// killed before stdin is closed: a CLI that exits on EOF would orphan its
// children before they could be found.
func (p *proc) kill() {
	if p.alive() && p.cp != nil {
		p.cp.Kill()
	}
	p.closeInput()
}

// stop asks the process to end (stdin closed), waits up to grace (less
// when ctx ends first), then kills it; it returns once the process is gone.
// What the CLI started and left running when it exited is killed too
// (childproc.Proc.Close).
func (p *proc) stop(ctx context.Context, grace time.Duration) {
	p.stopped.Do(func() { close(p.stopOut) })
	if p.cp != nil {
		p.cp.Close(ctx, grace)
	}
	<-p.exited
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
