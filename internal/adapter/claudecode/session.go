package claudecode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/runecut"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/framing"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// errClosed is returned by a session that was closed.
var errClosed = errors.New("claudecode: the session is closed")

// sinkQueue bounds the stream lines waiting for the turn that consumes
// them; a full queue holds the reader back (and the CLI with it).
const sinkQueue = 64

// replyTimeout bounds writing one answer to the CLI.
const replyTimeout = 5 * time.Second

// session is one ferry session: one Claude Code conversation, run by one
// CLI process at a time, kept across turns.
type session struct {
	a *Adapter
	// onCommands gets the CLI's slash commands from each init
	// (SessionConfig.Commands; nil: nobody listens).
	onCommands func([]protocol.AgentCommand)
	// onTitle gets a title Claude Code made for the session
	// (session_title_changed, or the answer to ferry's
	// generate_session_title: title.go); nil: none wanted.
	onTitle func(string)
	id      string
	ws      string
	fs      *vfs.Local
	bin     string
	log     *slog.Logger

	// op serialises Run and Compact (the client runs one at a time; this
	// makes it a property of the session).
	op sync.Mutex

	mu        sync.Mutex
	mode      string
	claudeID  string
	proc      *proc
	sink      *sink
	pending   map[string]*ask // by interaction id
	byRequest map[string]*ask // by the CLI's request id
	denied    map[string]bool // tool_use ids ferry refused in this turn
	deny      *promptDeny     // the running prompt's denied_tools (nil: none)
	settle    chan struct{}   // closed when an interrupted turn has settled
	closed    bool
	// titlePrompt is the first prompt that says what the session is
	// about; titled is set once its title was asked for (or when the
	// session resumed a conversation, titled when it was new).
	titlePrompt string
	titled      bool
	// history records the file changes of Write and Edit (history.go);
	// before holds what a call's file held when its PreToolUse hook ran.
	history adapter.History
	before  map[string]snapshot
	// artifacts: hand over the files Write, Edit, MultiEdit and
	// NotebookEdit wrote (artifacts.go; SessionConfig.Artifacts).
	artifacts bool

	wg sync.WaitGroup // goroutines waiting for answers or settling a turn
}

var _ adapter.Session = (*session)(nil)

// sink is the consumer of one process's stream lines: the running turn (or
// compaction).
type sink struct {
	p    *proc
	ch   chan *line
	done chan struct{}
	once sync.Once
}

// Run runs one prompt: it sends the prompt as a stream-json user message
// with its file tokens as mentions, and turns the CLI's stream into agent.*
// events until the turn's result line. See the package doc.
func (s *session) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	if res, refused, err := adapter.RefusePrompt(ctx, s.a.Capability(), turn, emit, refusals); refused {
		return res, err
	}
	if res, refused, err := adapter.RefuseSlash(ctx, turn, emit, slashSettings, slashRefusal); refused {
		return res, err
	}
	if ae := badRule(turn.Request); ae != nil {
		ae.TurnID = turn.ID
		if err := emit(ctx, protocol.TypeAgentError, ae); err != nil {
			return adapter.Result{StopReason: protocol.StopError}, fmt.Errorf("claudecode: %w", err)
		}
		return adapter.Result{StopReason: protocol.StopError}, nil
	}
	// Images shrunk as ferry's Read does, so a large one does not fail at
	// the provider after the CLI started; one that cannot be, or a file
	// no model takes, is refused.
	files, err := agent.PrepareForModel(ctx, turn.Attachments, 0)
	var ae *agent.Error
	switch {
	case errors.As(err, &ae):
		if err := emit(ctx, protocol.TypeAgentError, &protocol.AgentError{TurnID: turn.ID, Code: ae.Code, Message: ae.Message}); err != nil {
			return adapter.Result{StopReason: protocol.StopError}, fmt.Errorf("claudecode: %w", err)
		}
		return adapter.Result{StopReason: protocol.StopError}, nil
	case err != nil:
		return adapter.Result{StopReason: protocol.StopError}, fmt.Errorf("claudecode: attachments: %w", err)
	}
	s.op.Lock()
	defer s.op.Unlock()
	if err := s.waitSettled(ctx); err != nil {
		return adapter.Result{StopReason: protocol.StopCancelled}, err
	}
	flags := flagsOf(turn.Request)
	t := newTurn(s, turn.ID, ctx, emit, flags.schema != "")
	p, err := s.ensure(ctx, flags, t)
	if err != nil {
		return s.startFailed(ctx, t, err)
	}
	s.mu.Lock()
	clear(s.denied)
	s.deny = denyOf(flags.denied, s.ws)
	s.mu.Unlock()
	t.p = p
	sk := s.openSink(p)
	if err := p.send(ctx, newPromptLine(framing.Prompt(adapter.InputTypeOf(turn.Request), turn.Prompt.Mentions()), files)); err != nil {
		if ctx.Err() != nil {
			// Cancelled before the prompt went out: nothing to interrupt.
			s.closeSink(sk)
			t.stopped.Store(true)
			return adapter.Result{StopReason: protocol.StopCancelled}, ctx.Err()
		}
		// The process died under us; drive reports it.
		s.log.Warn("cannot send the prompt to Claude Code", "err", err)
	}
	s.notePrompt(turn)
	res, err := s.drive(ctx, t, p, sk)
	if err == nil && res.StopReason == protocol.StopEndTurn && res.Text != "" {
		s.askTitle(p)
	}
	return res, err
}

// startFailed ends a turn whose process could not start.
func (s *session) startFailed(ctx context.Context, t *turn, err error) (adapter.Result, error) {
	switch {
	case ctx.Err() != nil:
		return adapter.Result{StopReason: protocol.StopCancelled}, ctx.Err()
	case errors.Is(err, errClosed) || s.isClosed():
		return adapter.Result{StopReason: protocol.StopError}, errClosed
	}
	s.log.Error("Claude Code did not start", "err", err)
	t.send(protocol.TypeAgentError, &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeAgentUnavailable,
		Message: "Claude Code did not start; the client's log has the details.", Retryable: true})
	t.stopped.Store(true)
	return adapter.Result{StopReason: protocol.StopError}, nil
}

// drive feeds the process's lines to the turn until its result, the
// process's end, or ctx's cancel.
func (s *session) drive(ctx context.Context, t *turn, p *proc, sk *sink) (adapter.Result, error) {
	for {
		select {
		case l := <-sk.ch:
			if t.handle(l) {
				s.closeSink(sk)
				return t.finish(), nil
			}
		case <-p.exited:
			// The reader is done, so what it read is in the queue.
			for {
				select {
				case l := <-sk.ch:
					if t.handle(l) {
						s.closeSink(sk)
						s.dropProc(p)
						return t.finish(), nil
					}
					continue
				default:
				}
				break
			}
			s.closeSink(sk)
			s.dropProc(p)
			if s.isClosed() {
				t.stopped.Store(true)
				return adapter.Result{Text: t.text.String(), StopReason: protocol.StopCancelled}, errClosed
			}
			return t.crashed(), nil
		case <-ctx.Done():
			return s.interrupt(ctx, t, p, sk)
		}
	}
}

// interrupt cancels the running turn: an interrupt control request, a
// short wait for the turn's end, and Run returns; a turn that has not ended
// by then settles in the background and its process is killed after
// cancelGrace. Either way the session stays usable: the next turn waits for
// the settling and, if the process was killed, resumes the conversation in
// a new one.
func (s *session) interrupt(ctx context.Context, t *turn, p *proc, sk *sink) (adapter.Result, error) {
	t.cancelling.Store(true)
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cancelWait)
	if err := p.notify(ictx, map[string]string{"subtype": "interrupt"}); err != nil {
		s.log.Debug("interrupt not sent", "err", err)
	}
	cancel()
	timer := time.NewTimer(cancelWait)
	defer timer.Stop()
	settled := false
wait:
	for {
		select {
		case l := <-sk.ch:
			if t.handle(l) {
				settled = true
				break wait
			}
		case <-p.exited:
			s.dropProc(p)
			settled = true
			break wait
		case <-timer.C:
			break wait
		}
	}
	t.finishOpen(protocol.ToolCancelled, "cancelled by the user")
	res := adapter.Result{Text: t.text.String(), StopReason: protocol.StopCancelled}
	t.stopped.Store(true)
	if settled {
		s.closeSink(sk)
		return res, ctx.Err()
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.settle = done
	s.mu.Unlock()
	s.wg.Add(1)
	go s.settleTurn(t, p, sk, done)
	return res, ctx.Err()
}

// settleTurn waits for an interrupted turn's result, killing the process
// when it does not come within cancelGrace.
func (s *session) settleTurn(t *turn, p *proc, sk *sink, done chan struct{}) {
	defer s.wg.Done()
	defer close(done)
	timer := time.NewTimer(cancelGrace)
	defer timer.Stop()
	for {
		select {
		case l := <-sk.ch:
			if t.handle(l) {
				s.closeSink(sk)
				return
			}
		case <-p.exited:
			s.closeSink(sk)
			s.dropProc(p)
			return
		case <-timer.C:
			s.log.Warn("an interrupted Claude Code turn did not end; killing the process", "grace", cancelGrace)
			s.closeSink(sk)
			s.dropProc(p)
			p.kill()
			<-p.exited
			return
		}
	}
}

// waitSettled waits for an interrupted turn to settle.
func (s *session) waitSettled(ctx context.Context) error {
	s.mu.Lock()
	ch := s.settle
	s.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		s.mu.Lock()
		if s.settle == ch {
			s.settle = nil
		}
		s.mu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("claudecode: waiting for the last turn to end: %w", ctx.Err())
	}
}

// ensure returns a live process started with flags, starting one (and
// stopping one started with other flags) when needed.
func (s *session) ensure(ctx context.Context, flags promptFlags, t *turn) (*proc, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errClosed
	}
	p := s.proc
	s.mu.Unlock()
	if p != nil && p.alive() && p.flags == flags.key() {
		return p, nil
	}
	if p != nil {
		s.dropProc(p)
		p.stop(ctx, stopGrace)
	}
	return s.start(ctx, flags, t)
}

// initRequest is the initialize control request: it registers ferry's
// PreToolUse hook on every tool (matcher null), so ferry sees each call
// before it runs, whatever Claude Code's own settings would allow.
var initRequest = map[string]any{
	"subtype": "initialize",
	"hooks": map[string]any{
		"PreToolUse": []any{map[string]any{"matcher": nil, "hookCallbackIds": []string{hookID}}},
	},
}

// hookID names ferry's PreToolUse hook.
const hookID = "ferry_mode_guard"

// start starts a process and completes the initialize handshake. When
// resuming fails because Claude Code no longer has the conversation, the
// session goes on with a new one (and says so).
func (s *session) start(ctx context.Context, flags promptFlags, t *turn) (*proc, error) {
	s.mu.Lock()
	mode, resume := s.mode, s.claudeID
	s.mu.Unlock()
	for {
		args := []string{"-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose",
			"--include-partial-messages", "--permission-prompt-tool", "stdio", "--permission-mode", cliMode(mode)}
		args = append(args, flags.args()...)
		if resume != "" {
			args = append(args, "--resume="+resume)
		}
		args = append(args, s.a.cfg.Args...)
		p, err := startProc(s.bin, args, s.a.environ(), s.ws, flags, s.a.maxLine, s.log, s.route)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			p.kill()
			<-p.exited
			return nil, errClosed
		}
		s.proc = p
		s.mu.Unlock()

		ictx, cancel := context.WithTimeout(ctx, startTimeout)
		_, err = p.request(ictx, initRequest)
		cancel()
		if err == nil {
			return p, nil
		}
		s.dropProc(p)
		p.kill()
		<-p.exited
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		tail := p.stderrTail()
		if resume != "" && errors.Is(err, errExited) && strings.Contains(strings.Join(tail, "\n"), "No conversation found") {
			s.log.Warn("Claude Code no longer has the session's conversation; starting a new one", "claude_session", resume)
			s.forgetClaudeID(resume)
			t.send(protocol.TypeAgentError, &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeSessionNotResumed,
				Message: "Claude Code could not resume this session's earlier conversation; this prompt starts a new one."})
			resume = ""
			continue
		}
		return nil, fmt.Errorf("claudecode: initialize (stderr: %q): %w", tail, err)
	}
}

// route is the reader's hand-off of one line: to the running turn, or,
// when none runs, control requests are answered at once and the rest is
// dropped.
func (s *session) route(p *proc, l *line) {
	if l.Cancel != nil {
		s.withdraw(l.Cancel.RequestID)
		return
	}
	s.mu.Lock()
	sk := s.sink
	s.mu.Unlock()
	if sk != nil && sk.p == p {
		select {
		case sk.ch <- l:
			return
		case <-sk.done:
		}
	}
	if l.Request != nil {
		s.answerIdle(p, l.Request)
	}
}

func (s *session) openSink(p *proc) *sink {
	sk := &sink{p: p, ch: make(chan *line, sinkQueue), done: make(chan struct{})}
	s.mu.Lock()
	s.sink = sk
	s.mu.Unlock()
	return sk
}

func (s *session) closeSink(sk *sink) {
	s.mu.Lock()
	if s.sink == sk {
		s.sink = nil
	}
	s.mu.Unlock()
	sk.once.Do(func() { close(sk.done) })
}

// dropProc forgets p as the session's process.
func (s *session) dropProc(p *proc) {
	s.mu.Lock()
	if s.proc == p {
		s.proc = nil
	}
	s.mu.Unlock()
}

func (s *session) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// reply writes an answer to one of the CLI's control requests.
func (s *session) reply(p *proc, v any) {
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	defer cancel()
	if err := p.send(ctx, v); err != nil {
		s.log.Debug("control response not sent", "err", err)
	}
}

// noteClaudeID records the Claude session id the CLI reports, persisting
// it so that the session resumes after a restart.
func (s *session) noteClaudeID(id string) {
	if id == "" {
		return
	}
	s.mu.Lock()
	if s.claudeID == id {
		s.mu.Unlock()
		return
	}
	s.claudeID = id
	s.mu.Unlock()
	if err := s.a.store.save(record{FerrySessionID: s.id, ClaudeSessionID: id, Workspace: s.ws}); err != nil {
		s.log.Error("cannot persist the Claude Code session id", "err", err)
	}
}

// forgetClaudeID drops a Claude session id that cannot be resumed.
func (s *session) forgetClaudeID(id string) {
	s.mu.Lock()
	if s.claudeID == id {
		s.claudeID = ""
	}
	s.mu.Unlock()
	if err := s.a.store.remove(s.id); err != nil {
		s.log.Error("cannot forget the Claude Code session id", "err", err)
	}
}

// Answer delivers the user's answer to an open interaction (nil: it timed
// out, a denial).
func (s *session) Answer(interactionID string, resp *protocol.InteractionResponse) error {
	s.mu.Lock()
	a, ok := s.pending[interactionID]
	delete(s.pending, interactionID)
	s.mu.Unlock()
	if !ok {
		return adapter.ErrUnknownInteraction
	}
	select {
	case a.answer <- resp:
	default: // one answer per interaction; the channel holds it
	}
	return nil
}

// SetMode switches the mode: ferry's own check applies from the next tool
// call on, and a running CLI is switched with set_permission_mode.
func (s *session) SetMode(mode string, config json.RawMessage) error {
	if !knownMode(mode) {
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.mode", Message: "Claude Code has no such mode"}
	}
	if err := adapter.CheckModeConfig(s.a.Capability(), config); err != nil {
		return err
	}
	s.mu.Lock()
	old := s.mode
	s.mode = mode
	p := s.proc
	s.mu.Unlock()
	if p == nil || !p.alive() || cliMode(old) == cliMode(mode) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), replyTimeout)
	defer cancel()
	if err := p.notify(ctx, map[string]string{"subtype": "set_permission_mode", "mode": cliMode(mode)}); err != nil {
		// ferry's hook still enforces the mode; the next start sets it.
		s.log.Warn("cannot switch Claude Code's permission mode", "err", err)
	}
	return nil
}

// Compact sends /compact (with the instruction) and reports the token
// counts Claude Code gives in its compact_boundary line. The target ratio
// has no Claude Code equivalent: a compaction asking for one is refused.
func (s *session) Compact(ctx context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	if err := adapter.CheckCompact(s.a.Capability(), req, "Claude Code's /compact takes no target size"); err != nil {
		return nil, err
	}
	s.op.Lock()
	defer s.op.Unlock()
	if err := s.waitSettled(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	started := s.claudeID != "" || s.proc != nil
	cur := s.proc
	s.mu.Unlock()
	if !started {
		return nil, errors.New("claudecode: nothing to compact: the session has no conversation yet")
	}
	flags := promptFlags{}
	if cur != nil && cur.alive() {
		flags = cur.flagSet
	}
	t := newTurn(s, "", ctx, nil, false)
	p, err := s.ensure(ctx, flags, t)
	if err != nil {
		return nil, fmt.Errorf("claudecode: compact: %w", err)
	}
	t.p = p
	sk := s.openSink(p)
	text := "/compact"
	if instr := strings.TrimSpace(req.Instruction); instr != "" {
		text += " " + instr
	}
	if err := p.send(ctx, newUserLine(text)); err != nil {
		if ctx.Err() != nil {
			s.closeSink(sk)
			return nil, fmt.Errorf("claudecode: compact: %w", ctx.Err())
		}
		s.log.Warn("cannot send /compact to Claude Code", "err", err)
	}
	res, err := s.drive(ctx, t, p, sk)
	if err != nil {
		return nil, err
	}
	if t.compact == nil {
		why := t.compactErr
		if why == "" {
			why = runecut.Ellipsis(res.Text, 500)
		}
		return nil, fmt.Errorf("claudecode: Claude Code did not compact: %s", why)
	}
	return &protocol.CompactionDone{TokensBefore: max(t.compact.PreTokens, 0), TokensAfter: max(t.compact.PostTokens, 0)}, nil
}

// Close ends the session: the CLI's stdin is closed, and the process is
// killed (with everything it started) if it does not exit within stopGrace.
func (s *session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p != nil {
		p.stop(context.Background(), stopGrace)
	}
	s.wg.Wait()
	if err := s.fs.Close(); err != nil {
		return fmt.Errorf("claudecode: close: %w", err)
	}
	return nil
}
