package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/childproc"
	"github.com/ferry-dev/ferry/internal/procgroup"
	"github.com/ferry-dev/ferry/protocol"
)

// Timing bounds of stopping a command; none is a wait on a healthy path.
const (
	// KillGrace is how long a command's process group gets between SIGTERM
	// and SIGKILL when its turn is cancelled, or when the command exited
	// and left processes behind.
	KillGrace = 250 * time.Millisecond
	// drainWait bounds how long output is still read once the command's
	// process group is gone: a process that left the group (setsid, a
	// daemon) may hold the pipes open for ever, and the turn must end.
	drainWait = 500 * time.Millisecond
	// reapWait bounds the wait for the command to be reaped after SIGKILL.
	// Only a process stuck in the kernel takes longer; Run then returns and
	// a goroutine reaps it when it can.
	reapWait = 2 * time.Second
)

// readChunk is the most one read of standard output takes, so the most one
// delta carries (plus up to three bytes of a split UTF-8 sequence).
const readChunk = 32 << 10

// deltaQueue bounds the deltas read ahead of emit: a command that writes
// faster than the client sends is slowed by the pipe, not buffered here.
const deltaQueue = 8

// runner is one turn of a session.
type runner struct {
	s         *session
	turnID    string
	inputType string
	emit      adapter.Emit

	text      strings.Builder
	truncated bool

	filter markerFilter // takes ArtifactMarker lines out of the output
	named  []string     // the files they named
}

// run starts the command, streams its output and reports how it ended.
func (r *runner) run(ctx context.Context, text string, args []string) (adapter.Result, error) {
	log := r.s.a.log.With("session", r.s.id, "turn", r.turnID)
	var before snapshot
	if r.s.artifacts {
		before = r.s.takeSnapshot(ctx, log)
	}
	p, err := start(r.s, r.inputType, text, args)
	if err != nil {
		log.Error("script did not start", "command", r.s.a.command[0], "err", err)
		msg := fmt.Sprintf("the script's command %q could not be started; the client's log has the details", filepath.Base(r.s.a.command[0]))
		return r.fail(ctx, CodeStartFailed, msg)
	}
	defer p.release()
	log.Debug("script started", "pid", p.group.Pid(), "args", len(args))

	deltas, waited := p.deltas, p.waited
	var leftovers chan struct{} // closed once what the command left running is stopped
	for deltas != nil || waited != nil || leftovers != nil {
		select {
		case <-ctx.Done():
			p.stop()
			return adapter.Result{Text: r.final(), StopReason: protocol.StopCancelled}, ctx.Err()
		case d, ok := <-deltas:
			var named []string
			if ok {
				d, named = r.filter.feed(d)
			} else {
				deltas = nil
				d, named = r.filter.end()
			}
			r.named = append(r.named, named...)
			if d == "" {
				continue
			}
			if err := r.emit(ctx, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: r.turnID, Delta: d, Channel: "text"}); err != nil {
				if ctx.Err() != nil {
					continue // the cancel case above ends the turn
				}
				p.stop()
				return adapter.Result{Text: r.final(), StopReason: protocol.StopError}, fmt.Errorf("script: emit: %w", err)
			}
			r.add(d)
		case <-waited:
			waited = nil
			leftovers = make(chan struct{})
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				defer close(leftovers)
				p.stopLeftovers()
			}()
		case <-leftovers:
			leftovers = nil
			// The group is gone: what still holds the pipes left it.
			p.drain(drainWait)
		}
	}
	<-p.stderrDone // bounded: the readers drain

	// What the script wrote is handed over however it ended.
	var files []artifact.File
	if r.s.artifacts {
		files = r.handOver(ctx, log, before)
	} else if len(r.named) > 0 {
		log.Debug("script named files; artifacts are off for the session", "files", len(r.named))
	}
	ps := p.cmd.ProcessState
	stderr := p.stderrTail.bytes()
	if ps.Success() {
		if len(stderr) > 0 {
			log.Debug("script standard error", "stderr", string(stderr))
		}
		return adapter.Result{Text: r.final(), StopReason: protocol.StopEndTurn, Artifacts: files}, nil
	}
	code, status := CodeExitStatus, fmt.Sprintf("the script exited with status %d", ps.ExitCode())
	if sig, ok := procgroup.ExitSignal(ps); ok {
		code, status = CodeKilled, fmt.Sprintf("the script was killed by signal %d (%s)", int(sig), sig)
	}
	log.Warn("script failed", "status", ps.String(), "stderr", string(stderr))
	res, err := r.fail(ctx, code, status+reportTail(stderr))
	res.Text, res.Artifacts = r.final(), files
	return res, err
}

// fail emits the turn's agent.error and returns the error result.
func (r *runner) fail(ctx context.Context, code, msg string) (adapter.Result, error) {
	res := adapter.Result{StopReason: protocol.StopError}
	err := r.emit(ctx, protocol.TypeAgentError, &protocol.AgentError{TurnID: r.turnID, Code: code, Message: msg})
	if err != nil {
		if ctx.Err() != nil {
			res.StopReason = protocol.StopCancelled
			return res, ctx.Err()
		}
		return res, fmt.Errorf("script: emit: %w", err)
	}
	return res, nil
}

// reportTail is the end of standard error for the failure message.
func reportTail(stderr []byte) string {
	if len(stderr) > maxReported {
		stderr = stderr[len(stderr)-maxReported:]
		for len(stderr) > 0 && !utf8.RuneStart(stderr[0]) {
			stderr = stderr[1:]
		}
	}
	s := strings.TrimSpace(strings.ToValidUTF8(string(stderr), "\uFFFD"))
	if s == "" {
		return ""
	}
	return "; the end of its standard error:\n" + s
}

// add keeps d in the final text, up to MaxText.
func (r *runner) add(d string) {
	if r.truncated {
		return
	}
	if room := MaxText - r.text.Len(); len(d) > room {
		r.text.WriteString(cutRunes(d, room))
		r.truncated = true
		return
	}
	r.text.WriteString(d)
}

func (r *runner) final() string {
	if r.truncated {
		return r.text.String() + truncatedNote
	}
	return r.text.String()
}

// proc is one running command with its pipes and goroutines.
type proc struct {
	cmd   *exec.Cmd
	group *procgroup.Group // the command's session and process group

	stdin, stdout, stderr *os.File // our ends of the pipes

	deltas     chan string   // standard output, closed after EOF
	outEOF     chan struct{} // closed when standard output is closed by every holder
	stderrTail tail
	stderrDone chan struct{}
	waited     chan struct{} // closed when the command is reaped

	quit     chan struct{} // closed when nobody reads deltas any more
	quitOnce sync.Once
	wg       sync.WaitGroup // the stdin writer, the readers, the leftover stopper

	// drainNs, once non-zero, bounds each wait of the readers for data:
	// that many nanoseconds, or none at all when negative (see drain).
	drainNs atomic.Int64
}

// drainReader reads a pipe; once its proc drains, each read waits for data
// at most the drain time. The bound is per read, not for the whole drain,
// so output still buffered in the pipe is read whole however slowly the
// deltas are sent on.
type drainReader struct {
	f *os.File
	p *proc
}

func (r drainReader) Read(b []byte) (int, error) {
	if ns := r.p.drainNs.Load(); ns != 0 {
		_ = r.f.SetReadDeadline(time.Now().Add(time.Duration(max(ns, 0))))
	}
	return r.f.Read(b)
}

// start starts the command with text on its standard input.
func start(s *session, inputType, text string, args []string) (_ *proc, err error) {
	if !procgroup.Supported {
		return nil, errUnsupportedOS
	}
	argv := append(append([]string(nil), s.a.command[1:]...), args...)
	cmd := exec.Command(s.a.command[0], argv...) //nolint:gosec // running the configured command is this adapter's purpose
	cmd.Dir = s.ws
	cmd.Env = s.environ(inputType)
	// A new session: its own process group (so the whole tree can be
	// signalled) and no controlling terminal (so nothing can read from or
	// prompt on the user's terminal). The child's pipe ends are closed,
	// so that EOF means every process holding the pipe has closed it.
	group, inW, outR, errR, err := childproc.StartPiped(cmd)
	if err != nil {
		if errors.Is(err, childproc.ErrPipe) {
			return nil, err
		}
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &proc{
		cmd: cmd, group: group,
		stdin: inW, stdout: outR, stderr: errR,
		deltas: make(chan string, deltaQueue), outEOF: make(chan struct{}),
		stderrDone: make(chan struct{}), waited: make(chan struct{}), quit: make(chan struct{}),
	}
	go func() {
		defer close(p.waited)
		_ = cmd.Wait() // the status is read from cmd.ProcessState
	}()
	p.wg.Add(3)
	go func() {
		defer p.wg.Done()
		// A command that never reads its input gets EPIPE here once it
		// exits, or blocks this write until release closes the pipe.
		_, _ = io.WriteString(inW, text)
		_ = inW.Close()
	}()
	go func() {
		defer p.wg.Done()
		p.readStdout()
	}()
	go func() {
		defer p.wg.Done()
		defer close(p.stderrDone)
		_, _ = io.Copy(&p.stderrTail, drainReader{errR, p})
	}()
	return p, nil
}

// readStdout sends standard output as deltas until its end, or until
// nobody reads them (then it discards the rest).
func (p *proc) readStdout() {
	defer close(p.deltas)
	if !streamUTF8(drainReader{p.stdout, p}, p.send) {
		p.discard()
		return
	}
	close(p.outEOF)
}

// streamUTF8 reads r to its end (or first error) and hands what it reads to
// send in pieces that are valid UTF-8 and never end inside a multi-byte
// sequence: the start of one is held for the next read. It returns false
// when send refuses a piece.
func streamUTF8(r io.Reader, send func(string) bool) bool {
	buf := make([]byte, readChunk+utf8.UTFMax)
	held := 0 // bytes of an incomplete sequence kept at buf[:held]
	for {
		n, err := r.Read(buf[held : held+readChunk])
		n += held
		cut := n
		if err == nil {
			cut = completeUpTo(buf[:n])
		}
		if cut > 0 && !send(strings.ToValidUTF8(string(buf[:cut]), "\uFFFD")) {
			return false
		}
		held = copy(buf, buf[cut:n])
		if err != nil {
			return true
		}
	}
}

// discard reads standard output to its end once nobody wants it, so
// writers are not blocked on a full pipe while they are being stopped.
func (p *proc) discard() {
	_, _ = io.Copy(io.Discard, drainReader{p.stdout, p})
	close(p.outEOF)
}

// send queues one delta; false when nobody reads deltas any more.
func (p *proc) send(d string) bool {
	select {
	case p.deltas <- d:
		return true
	case <-p.quit:
		return false
	}
}

// completeUpTo returns how much of b ends on a rune boundary: b without a
// trailing multi-byte sequence that is still incomplete. An invalid
// sequence counts as complete (it becomes U+FFFD).
func completeUpTo(b []byte) int {
	for i := len(b) - 1; i >= 0 && i >= len(b)-(utf8.UTFMax-1); i-- {
		if utf8.RuneStart(b[i]) {
			if utf8.FullRune(b[i:]) {
				return len(b)
			}
			return i
		}
	}
	return len(b)
}

// stop ends the command: SIGTERM to its group, SIGKILL once the group has
// closed its output and the command is reaped, or KillGrace has passed.
func (p *proc) stop() {
	p.quitOnce.Do(func() { close(p.quit) })
	p.group.Terminate()
	graceEnd := time.Now().Add(KillGrace)
	if waitUntil(p.waited, graceEnd) {
		waitUntil(p.outEOF, graceEnd)
	}
	p.group.Kill()
	waitUntil(p.waited, time.Now().Add(reapWait))
}

// stopLeftovers stops what the exited command left running in its group:
// SIGTERM, then SIGKILL once they have closed the output or KillGrace has
// passed.
func (p *proc) stopLeftovers() {
	if !p.group.Terminate() {
		return // nobody left
	}
	waitUntil(p.outEOF, time.Now().Add(KillGrace))
	p.group.Kill()
}

// drain bounds each wait of the output readers for more data to d; with
// d < 0 they stop at once.
func (p *proc) drain(d time.Duration) {
	if d == 0 {
		d = -1
	}
	p.drainNs.Store(int64(d))
	t := time.Now().Add(max(d, 0))
	_ = p.stdout.SetReadDeadline(t)
	_ = p.stderr.SetReadDeadline(t)
}

// release closes our pipe ends, which ends the goroutines, and waits for
// them.
func (p *proc) release() {
	p.quitOnce.Do(func() { close(p.quit) })
	_ = p.stdin.Close()
	p.drain(-1) // readers still blocked return at once
	p.wg.Wait()
	_ = p.stdout.Close()
	_ = p.stderr.Close()
}

// waitUntil waits for ch to close until t; false when t came first.
func waitUntil(ch <-chan struct{}, t time.Time) bool {
	select {
	case <-ch:
		return true
	default:
	}
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ch:
		return true
	case <-timer.C:
		return false
	}
}

// tail keeps the last MaxStderr bytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*MaxStderr {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-MaxStderr:]...)
	}
	return len(b), nil
}

func (t *tail) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.buf) > MaxStderr {
		return append([]byte(nil), t.buf[len(t.buf)-MaxStderr:]...)
	}
	return append([]byte(nil), t.buf...)
}

var errUnsupportedOS = errors.New("script agents need a Unix system (process groups)")
