package acp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-dev/ferry/internal/runecut"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/version"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// errAgentGone is returned once the agent's output has ended.
var errAgentGone = errors.New("acp: the agent process has exited")

// errDetached is an event of a turn whose Run has returned (detach).
var errDetached = errors.New("acp: the turn's Run has returned")

// session is one agent process with one ACP session.
//
// One goroutine, the dispatcher, handles everything the agent sends, in
// order, and owns the running turn (s.turn); Run, Answer, SetMode and
// Compact talk to it through the connection's ordered queue (s.do) and the
// mutex-guarded maps.
type session struct {
	a   *Adapter
	log *slog.Logger
	// onCommands gets the agent's slash commands (SessionConfig.Commands;
	// nil: nobody listens). Set before the handshake, never changed.
	onCommands func([]protocol.AgentCommand)
	// onTitle gets a title the agent made (session_info_update;
	// SessionConfig.Title; nil: nobody listens).
	onTitle func(string)
	// onCaps gets the session's capability (SessionConfig.Capabilities;
	// nil: nobody listens). Set before the handshake, never changed.
	onCaps func(protocol.AdapterCapability)
	// opened is set once the handshake is done: from then on a change of
	// the agent's commands is reported (reportCaps). capsMu orders the
	// reports, so the last one delivered is the latest state.
	opened atomic.Bool
	capsMu sync.Mutex
	c      *conn
	ws     string
	fs     *vfs.Local
	env    *tools.Env

	// ctx ends with Close.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	// busy is held from a prompt's request to its response, so prompts
	// never overlap (a cancelled one may still be winding down).
	busy chan struct{}
	// dead is closed when the agent's output ended.
	dead         chan struct{}
	dispatchDone chan struct{}

	// sid is set by handshake while the dispatcher may already read it
	// (an agent can send notifications before answering session/new).
	sid   atomic.Pointer[string]
	init  initializeResult
	modes *modeState
	// modeConfig is the id of the config option that is the agent's mode
	// selector, when its modes come as one (opencode) rather than as ACP
	// modes: switched with session/set_config_option. Set by handshake.
	modeConfig string

	mu        sync.Mutex
	mode      string // ferry's mode in force
	agentMode string
	calls     map[string]chan *message
	asks      map[string]*ask
	commands  map[string]bool
	used      int64
	gone      bool
	// relaxOK lets the agent's next switch to a less strict mode through:
	// the user allowed a switch_mode call (ExitPlanMode and the like).
	relaxOK bool
	closed  bool

	// Dispatcher-owned.
	turn     *turnState
	plans    int
	fsWrites int // numbers the fs writes no tool call claims
	// artifacts is SessionConfig.Artifacts: hand over written files.
	artifacts bool
	// rules are the permission rules of the latest prompt's
	// config_overrides (nil: none), in force until the next prompt.
	rules *permission.Rules
}

// turnState is the running turn, as the dispatcher sees it.
type turnState struct {
	id   string
	ctx  context.Context // the turn's ctx, also ended by Close
	stop context.CancelFunc
	emit adapter.Emit
	key  string // id key of its session/prompt
	// done is closed when the turn has ended; res is set before.
	done chan struct{}
	res  adapter.Result

	tools map[string]*toolState
	// artifacts are the files handed over so far (Result.Artifacts);
	// handed marks each tool call id and path registered. Dispatcher-owned.
	artifacts []artifact.File
	handed    map[string]bool

	mu        sync.Mutex
	text      strings.Builder
	truncated bool
	cancelled bool // guarded by session.mu
	// unheld: a call a deny rule covers completed without ferry's say
	// (stopUnheld); the turn ends with stop reason error. Dispatcher-owned.
	unheld bool

	// emitMu is held around each event of the turn; detached (guarded by
	// it) is set once Run returned before the agent answered a cancelled
	// prompt: no event of the turn may follow Run's return.
	emitMu   sync.Mutex
	detached bool
}

// ask is an open permission request.
type ask struct {
	rpcID  json.RawMessage
	turn   *turnState
	values map[string]string // interaction option value → ACP optionId
	kinds  map[string]string // interaction option value → ACP option kind
	reject string            // the optionId a timeout picks ("" : none)
	// switchMode marks a request to change the agent's mode (leaving plan
	// mode): allowing it lets ferry follow the agent's next mode switch.
	switchMode bool
	// call is the request as ModeAllows sees it: checked again when the
	// user answers, who may have switched the mode meanwhile.
	call permission.Call
}

func newSession(a *Adapter, c *conn, fsys *vfs.Local, ws string, log *slog.Logger) *session {
	ctx, cancel := context.WithCancel(context.Background())
	s := &session{
		a: a, log: log, c: c, ws: ws, fs: fsys, env: newToolsEnv(fsys),
		ctx: ctx, cancel: cancel,
		busy:         make(chan struct{}, 1),
		dead:         make(chan struct{}),
		dispatchDone: make(chan struct{}),
		mode:         protocol.ModeDefault,
		calls:        map[string]chan *message{},
		asks:         map[string]*ask{},
		commands:     map[string]bool{},
	}
	go s.dispatch()
	return s
}

// handshake runs initialize and session/new, then switches to mode.
func (s *session) handshake(ctx context.Context, mode string) error {
	raw, err := s.call(ctx, acpsdk.AgentMethodInitialize, initializeRequest(version.String()))
	if err != nil {
		return s.openError("initialize", err)
	}
	if err := json.Unmarshal(raw, &s.init); err != nil {
		s.log.Warn("acp: bad initialize answer", "err", err)
		return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.adapter", Message: "the ACP agent answered initialize with something ferry cannot read"}
	}
	if s.init.ProtocolVersion != acpsdk.ProtocolVersionNumber {
		return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.adapter",
			Message: fmt.Sprintf("the agent speaks ACP version %d; ferry speaks version %d", s.init.ProtocolVersion, acpsdk.ProtocolVersionNumber)}
	}
	s.log.Info("acp: agent initialized", "agent", s.init.AgentInfo, "load_session", s.init.AgentCapabilities.LoadSession, "auth_methods", len(s.init.AuthMethods))
	raw, err = s.call(ctx, acpsdk.AgentMethodSessionNew, acpsdk.NewSessionRequest{Cwd: s.ws, McpServers: []acpsdk.McpServer{}})
	if err != nil {
		return s.openError("session/new", err)
	}
	var ns newSessionResult
	if err := json.Unmarshal(raw, &ns); err != nil || ns.SessionID == "" {
		s.log.Warn("acp: bad session/new answer", "err", err)
		return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.adapter", Message: "the ACP agent answered session/new without a session id"}
	}
	s.sid.Store(&ns.SessionID)
	s.modes = ns.Modes
	if ns.Modes == nil {
		s.modeConfig, s.modes = modeOption(ns.ConfigOptions)
	}
	if s.modes != nil {
		s.mu.Lock()
		s.agentMode = s.modes.CurrentModeID
		s.mu.Unlock()
	}
	if mode != "" && mode != protocol.ModeDefault {
		if err := s.SetMode(mode, nil); err != nil {
			return err
		}
	}
	s.opened.Store(true)
	s.reportCaps()
	return nil
}

// capability is what this session's agent really offers: the adapter's
// declaration with the modes the agent has (default always: ferry enforces
// it with or without the agent), compaction when it lists a compact
// command, and the attachment kinds its prompt capabilities take (text
// always: it goes inline).
func (s *session) capability() protocol.AdapterCapability {
	c := s.a.Capability()
	for _, m := range []string{protocol.ModePlan, protocol.ModeReview} {
		if _, ok := s.agentModeFor(m); ok {
			c.Modes = append(c.Modes, m)
		}
	}
	s.mu.Lock()
	c.Compact = s.commands["compact"]
	s.mu.Unlock()
	pc := s.init.AgentCapabilities.PromptCapabilities
	if pc.Image {
		c.Attachments = append(c.Attachments, protocol.AttachImage)
	}
	if pc.EmbeddedContext {
		c.Attachments = append(c.Attachments, protocol.AttachPDF)
	}
	return c
}

// reportCaps hands the session's capability to SessionConfig.Capabilities.
func (s *session) reportCaps() {
	if s.onCaps == nil {
		return
	}
	s.capsMu.Lock()
	defer s.capsMu.Unlock()
	s.onCaps(s.capability())
}

// openError turns a failed handshake call into a coded error; the agent's
// own text stays in the log.
func (s *session) openError(step string, err error) error {
	s.log.Warn("acp: "+step+" failed", "err", err, "stderr", s.c.lastStderr())
	var re *rpcError
	switch {
	case errors.As(err, &re) && re.Code == rpcAuthRequired:
		return &protocol.Error{Code: protocol.CodeUnauthorized, Field: "payload.adapter", Message: s.authMessage()}
	case errors.Is(err, context.DeadlineExceeded):
		return &protocol.Error{Code: protocol.CodeInternal, Field: "payload.adapter", Message: "the ACP agent did not answer " + step + " in time"}
	case errors.Is(err, errAgentGone), errors.Is(err, errClosed):
		return &protocol.Error{Code: protocol.CodeInternal, Field: "payload.adapter", Message: "the ACP agent exited while starting; the client's log has its output"}
	}
	return &protocol.Error{Code: protocol.CodeInternal, Field: "payload.adapter", Message: "the ACP agent refused " + step + "; the client's log has the details"}
}

// authMessage says how to log in, by the methods the agent declared.
func (s *session) authMessage() string {
	var names []string
	for _, m := range s.init.AuthMethods {
		n := m.Name
		if m.Description != "" {
			n += " (" + m.Description + ")"
		}
		names = append(names, runecut.Prefix(n, 200))
	}
	msg := "the ACP agent needs you to log in first: run it once in a terminal on this machine"
	if len(names) > 0 {
		msg += "; it offers: " + strings.Join(names, "; ")
	}
	return msg
}

// do queues fn to run on the dispatcher, in order with what the agent sent
// before.
func (s *session) do(ctx context.Context, fn func()) error {
	select {
	case s.c.items <- item{fn: fn}:
		return nil
	case <-s.dispatchDone:
		return errAgentGone
	case <-ctx.Done():
		return fmt.Errorf("acp: %w", ctx.Err())
	}
}

// call sends a request and waits for its response's result.
func (s *session) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	id := s.c.newID()
	line, err := encodeRequest(id, method, params)
	if err != nil {
		return nil, err
	}
	key := fmt.Sprint(id)
	ch := make(chan *message, 1)
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return nil, errAgentGone
	}
	s.calls[key] = ch
	s.mu.Unlock()
	drop := func() {
		s.mu.Lock()
		delete(s.calls, key)
		s.mu.Unlock()
	}
	if err := s.c.send(ctx, line); err != nil {
		drop()
		return nil, err
	}
	select {
	case m := <-ch:
		if m == nil {
			return nil, errAgentGone
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		drop()
		return nil, fmt.Errorf("acp: %s: %w", method, ctx.Err())
	case <-s.ctx.Done():
		drop()
		return nil, errClosed
	}
}

// reply answers an agent's request.
func (s *session) reply(id json.RawMessage, result any) {
	line, err := encodeResult(id, result)
	if err != nil {
		s.log.Error("acp: encode a reply", "err", err)
		line, _ = encodeError(id, &rpcError{Code: rpcInternalError, Message: "internal error"})
	}
	if err := s.c.send(s.ctx, line); err != nil {
		s.log.Debug("acp: reply not sent", "err", err)
	}
}

// replyError answers an agent's request with an error.
func (s *session) replyError(id json.RawMessage, e *rpcError) {
	line, err := encodeError(id, e)
	if err != nil {
		s.log.Error("acp: encode an error reply", "err", err)
		return
	}
	if err := s.c.send(s.ctx, line); err != nil {
		s.log.Debug("acp: error reply not sent", "err", err)
	}
}

// notify sends a notification.
func (s *session) notify(method string, params any) {
	line, err := encodeNotification(method, params)
	if err == nil {
		err = s.c.send(s.ctx, line)
	}
	if err != nil {
		s.log.Debug("acp: notification not sent", "method", method, "err", err)
	}
}

// dispatch handles what the agent sends, in order, until its output ends
// or the session closes.
func (s *session) dispatch() {
	defer close(s.dispatchDone)
	for {
		select {
		case it := <-s.c.items:
			if it.fn != nil {
				it.fn()
				continue
			}
			for _, m := range it.msgs {
				s.handle(m)
			}
			if it.eof {
				s.agentGone()
				return
			}
		case <-s.ctx.Done():
			return
		}
	}
}

func (s *session) handle(m *message) {
	if s.log.Enabled(s.ctx, slog.LevelDebug) {
		s.log.Debug("acp: received", "method", m.Method, "id", runecut.Prefix(string(m.ID), 64), "error", m.Error != nil)
	}
	switch {
	case m.isResponse():
		s.onResponse(m)
	case m.isNotification():
		s.onNotification(m)
	default:
		s.onRequest(m)
	}
}

func (s *session) onResponse(m *message) {
	key := idKey(m.ID)
	if t := s.turn; t != nil && key == t.key {
		s.finishTurn(t, m)
		return
	}
	s.mu.Lock()
	ch := s.calls[key]
	delete(s.calls, key)
	s.mu.Unlock()
	if ch == nil {
		s.log.Warn("acp: a response to no open request was dropped", "id", runecut.Prefix(key, 64))
		return
	}
	ch <- m
}

func (s *session) onNotification(m *message) {
	switch m.Method {
	case acpsdk.ClientMethodSessionUpdate:
		var n sessionNotification
		if err := json.Unmarshal(m.Params, &n); err != nil || n.Update == nil {
			s.log.Warn("acp: an unreadable session/update was dropped", "err", err)
			return
		}
		if n.SessionID != s.sessionID() {
			s.log.Warn("acp: a session/update for another session was dropped")
			return
		}
		s.onUpdate(n.Update)
	default:
		s.log.Debug("acp: notification ignored", "method", runecut.Prefix(m.Method, 128))
	}
}

func (s *session) onRequest(m *message) {
	switch m.Method {
	case acpsdk.ClientMethodSessionRequestPermission:
		s.onPermission(m)
	case acpsdk.ClientMethodFsReadTextFile:
		s.onReadTextFile(m)
	case acpsdk.ClientMethodFsWriteTextFile:
		s.onWriteTextFile(m)
	default:
		s.replyError(m.ID, &rpcError{Code: rpcMethodNotFound, Message: "method not found"})
	}
}

// agentGone handles the end of the agent's output: calls fail, the running
// turn ends with agent.error, later turns report the agent stopped.
func (s *session) agentGone() {
	t := time.NewTimer(time.Second)
	select { // the exit status makes the log useful
	case <-s.c.exited:
		t.Stop()
	case <-t.C:
	}
	var status any = "running"
	select {
	case <-s.c.exited:
		status = s.c.p.Err()
	default:
	}
	s.mu.Lock()
	s.gone = true
	calls := s.calls
	s.calls = map[string]chan *message{}
	s.asks = map[string]*ask{}
	s.mu.Unlock()
	for _, ch := range calls {
		ch <- nil
	}
	defer close(s.dead)
	if ts := s.turn; ts != nil {
		s.log.Warn("acp: the agent exited during a turn", "exit", status, "stderr", s.c.lastStderr())
		res := adapter.Result{StopReason: protocol.StopError}
		if s.isCancelled(ts) {
			res.StopReason = protocol.StopCancelled
		} else {
			s.emit(ts, protocol.TypeAgentError, &protocol.AgentError{TurnID: ts.id, Code: protocol.AgentCodeAgentExited,
				Message: "the ACP agent stopped unexpectedly; open a new session to go on"})
		}
		s.endTurn(ts, res)
		return
	}
	s.log.Info("acp: the agent exited", "exit", status)
}

// acquire takes the prompt slot.
func (s *session) acquire(ctx context.Context) error {
	select {
	case s.busy <- struct{}{}:
		return nil
	case <-s.dead:
		return errAgentGone
	case <-s.ctx.Done():
		return errClosed
	case <-ctx.Done():
		return fmt.Errorf("acp: %w", ctx.Err())
	}
}

func (s *session) release() { <-s.busy }

// Run sends the prompt and streams the agent's updates until its response.
func (s *session) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	rules, refused := s.promptRules(turn.Request)
	if refused == nil {
		// The client asked already (AttachmentChecker); ferry run did not.
		if pe := s.CheckAttachments(turn.Attachments); pe != nil {
			refused = &protocol.AgentError{Code: pe.Code, Message: pe.Field + ": " + pe.Message}
		}
	}
	var files []attachment.File
	if refused == nil {
		// Images shrunk as ferry's Read does, so a large one fits what
		// the agent's model takes; one that cannot be is refused.
		var err error
		files, err = agent.PrepareAttachments(ctx, turn.Attachments, 0)
		var ae *agent.Error
		switch {
		case errors.As(err, &ae):
			refused = &protocol.AgentError{Code: ae.Code, Message: ae.Message}
		case err != nil:
			return adapter.Result{StopReason: protocol.StopError}, fmt.Errorf("acp: attachments: %w", err)
		}
	}
	if refused != nil {
		refused.TurnID = turn.ID
		s.log.Info("acp: prompt refused", "code", refused.Code, "why", refused.Message)
		if err := emit(ctx, protocol.TypeAgentError, refused); err != nil {
			return adapter.Result{StopReason: protocol.StopError}, fmt.Errorf("acp: %w", err)
		}
		return adapter.Result{StopReason: protocol.StopError}, nil
	}
	if err := s.acquire(ctx); err != nil {
		if errors.Is(err, errAgentGone) {
			return s.reportGone(ctx, turn.ID, emit)
		}
		if ctx.Err() != nil {
			return adapter.Result{StopReason: protocol.StopCancelled}, err
		}
		return adapter.Result{}, err
	}
	select {
	case <-s.dead:
		s.release()
		return s.reportGone(ctx, turn.ID, emit)
	default:
	}
	id := s.c.newID()
	line, err := encodeRequest(id, acpsdk.AgentMethodSessionPrompt, acpsdk.PromptRequest{
		SessionId: acpsdk.SessionId(s.sessionID()), Prompt: append(promptBlocks(adapter.InputTypeOf(turn.Request), turn.Prompt, s.ws), s.attachmentBlocks(files)...)})
	if err != nil {
		s.release()
		return adapter.Result{}, err
	}
	tctx, stop := context.WithCancel(ctx)
	cleanup := context.AfterFunc(s.ctx, stop)
	ts := &turnState{id: turn.ID, ctx: tctx, stop: func() { cleanup(); stop() }, emit: emit, key: fmt.Sprint(id),
		done: make(chan struct{}), tools: map[string]*toolState{}}
	// Attach the turn in order with what the agent sent so far: updates
	// read before this point are not the turn's.
	if err := s.do(ctx, func() { s.turn, s.rules = ts, rules }); err != nil {
		ts.stop()
		s.release()
		if ctx.Err() != nil {
			return adapter.Result{StopReason: protocol.StopCancelled}, err
		}
		return s.reportGone(ctx, turn.ID, emit)
	}
	if err := s.c.send(ctx, line); err != nil && ctx.Err() != nil {
		// Never sent: no response will come, so detach the turn here.
		_ = s.do(s.ctx, func() {
			if s.turn == ts {
				s.endTurn(ts, adapter.Result{StopReason: protocol.StopCancelled})
			}
		})
		return adapter.Result{StopReason: protocol.StopCancelled}, err
	}
	// A send that failed otherwise means the agent is going: its end of
	// output ends the turn below.
	select {
	case <-ts.done:
		return ts.res, nil
	case <-s.dead:
		// agentGone ends an attached turn before it closes dead; a turn
		// still open was never attached, and nothing will end it.
		select {
		case <-ts.done:
			return ts.res, nil
		default:
		}
		ts.stop()
		s.release()
		return s.reportGone(ctx, turn.ID, emit)
	case <-ctx.Done():
		return s.cancelTurn(ctx, ts)
	case <-s.ctx.Done():
		return adapter.Result{Text: ts.textSoFar(), StopReason: protocol.StopError}, errClosed
	}
}

// reportGone ends a turn that found the agent gone.
func (s *session) reportGone(ctx context.Context, turnID string, emit adapter.Emit) (adapter.Result, error) {
	if err := emit(ctx, protocol.TypeAgentError, &protocol.AgentError{TurnID: turnID, Code: protocol.AgentCodeAgentExited,
		Message: "the ACP agent has stopped; open a new session to go on"}); err != nil {
		return adapter.Result{StopReason: protocol.StopError}, fmt.Errorf("acp: %w", err)
	}
	return adapter.Result{StopReason: protocol.StopError}, nil
}

// cancelTurn is ACP's cancellation: session/cancel, every open permission
// request answered cancelled, then a short wait for the prompt's response.
// If it does not come within cancelWait, Run returns anyway and a reaper
// gives the agent killAfter before it kills the process group.
func (s *session) cancelTurn(ctx context.Context, ts *turnState) (adapter.Result, error) {
	s.notify(acpsdk.AgentMethodSessionCancel, acpsdk.CancelNotification{SessionId: acpsdk.SessionId(s.sessionID())})
	s.cancelAsks(ts)
	t := time.NewTimer(s.a.cancelWait)
	defer t.Stop()
	select {
	case <-ts.done:
		res := ts.res
		res.StopReason = protocol.StopCancelled
		return res, fmt.Errorf("acp: %w", ctx.Err())
	case <-t.C:
	}
	s.detach(ts)
	s.mu.Lock()
	if !s.closed { // Close waits for reapers: none may start after it
		s.wg.Add(1)
		go s.reap(ts)
	}
	s.mu.Unlock()
	return adapter.Result{Text: ts.textSoFar(), StopReason: protocol.StopCancelled}, fmt.Errorf("acp: %w", ctx.Err())
}

// detachWait bounds how long detach waits for the dispatcher.
const detachWait = 100 * time.Millisecond

// detach is Run returning before the agent answered ts's cancelled
// prompt: the calls ts left open are finished cancelled (on the
// dispatcher, which owns them, when it gets to it within detachWait), and
// from then on nothing of ts is emitted. The turn stays the agent's until
// it answers (its updates are still ts's, and dropped).
func (s *session) detach(ts *turnState) {
	ctx, cancel := context.WithTimeout(s.ctx, detachWait)
	defer cancel()
	done := make(chan struct{})
	if s.do(ctx, func() { s.finishOpenTools(ts, protocol.ToolCancelled, "cancelled"); close(done) }) == nil {
		select {
		case <-done:
		case <-ctx.Done():
		case <-s.dispatchDone:
		}
	}
	ts.emitMu.Lock()
	ts.detached = true
	ts.emitMu.Unlock()
}

// reap kills the agent when a cancelled prompt stays unanswered.
func (s *session) reap(ts *turnState) {
	defer s.wg.Done()
	t := time.NewTimer(s.a.killAfter)
	defer t.Stop()
	select {
	case <-ts.done:
	case <-s.dead:
	case <-s.ctx.Done():
	case <-t.C:
		s.log.Warn("acp: the agent did not end a cancelled prompt; killing it", "after", s.a.killAfter)
		s.c.kill()
	}
}

// cancelAsks marks ts cancelled and answers its open permission requests
// with outcome cancelled, as ACP requires after session/cancel.
func (s *session) cancelAsks(ts *turnState) {
	s.mu.Lock()
	ts.cancelled = true
	var open []*ask
	for id, a := range s.asks {
		if a.turn == ts {
			open = append(open, a)
			delete(s.asks, id)
		}
	}
	s.mu.Unlock()
	for _, a := range open {
		s.reply(a.rpcID, cancelledOutcome())
	}
}

func (s *session) isCancelled(ts *turnState) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return ts.cancelled
}

// finishTurn handles the prompt's response.
func (s *session) finishTurn(ts *turnState, m *message) {
	res := adapter.Result{StopReason: protocol.StopEndTurn}
	switch {
	case m.Error != nil && (s.isCancelled(ts) || m.Error.Code == rpcCancelled):
		res.StopReason = protocol.StopCancelled
	case m.Error != nil:
		s.log.Warn("acp: the agent failed the prompt", "code", m.Error.Code, "message", runecut.Prefix(m.Error.Message, 1024))
		ev := &protocol.AgentError{TurnID: ts.id, Code: protocol.AgentCodeAgentError, Message: fmt.Sprintf("the ACP agent failed the prompt (JSON-RPC error %d); the client's log has the details", m.Error.Code)}
		if m.Error.Code == rpcAuthRequired {
			ev.Code, ev.Message = protocol.AgentCodeAuthRequired, s.authMessage()
		}
		s.emit(ts, protocol.TypeAgentError, ev)
		res.StopReason = protocol.StopError
	default:
		var pr promptResult
		if err := json.Unmarshal(m.Result, &pr); err != nil {
			s.log.Warn("acp: unreadable prompt response", "err", err)
		}
		res.StopReason = mapStopReason(pr.StopReason)
		if s.isCancelled(ts) {
			res.StopReason = protocol.StopCancelled
		}
		if u := pr.Usage; u != nil {
			s.emit(ts, protocol.TypeUsage, &protocol.Usage{TurnID: ts.id, InputTokens: max(u.InputTokens, 0), OutputTokens: max(u.OutputTokens, 0),
				CacheReadTokens: max(u.CachedReadTokens, 0), CacheCreationTokens: max(u.CachedWriteTokens, 0)})
		}
	}
	if ts.unheld {
		res.StopReason = protocol.StopError
	}
	s.endTurn(ts, res)
}

// mapStopReason maps ACP's stop reasons onto ferry's.
func mapStopReason(r string) string {
	switch r {
	case "max_tokens", "max_turn_requests":
		return protocol.StopMaxTurns
	case "refusal":
		return protocol.StopRefusal
	case "cancelled":
		return protocol.StopCancelled
	}
	return protocol.StopEndTurn
}

// endTurn closes the turn's open tool calls, detaches it and wakes Run.
func (s *session) endTurn(ts *turnState, res adapter.Result) {
	status, out := protocol.ToolError, "the agent ended the turn without reporting this call's result"
	if res.StopReason == protocol.StopCancelled {
		status, out = protocol.ToolCancelled, "cancelled"
	}
	s.finishOpenTools(ts, status, out)
	res.Text = ts.textSoFar()
	res.Artifacts = ts.artifacts
	ts.res = res
	if s.turn == ts {
		s.turn = nil
	}
	s.mu.Lock()
	for id, a := range s.asks {
		if a.turn == ts { // the agent asked and then ended the turn itself
			delete(s.asks, id)
		}
	}
	s.mu.Unlock()
	ts.stop()
	close(ts.done)
	s.release()
}

// finishOpenTools ends ts's open tool calls with status and output.
// Dispatcher only.
func (s *session) finishOpenTools(ts *turnState, status, out string) {
	for id, st := range ts.tools {
		if !st.finished {
			s.startTool(ts, runecut.Prefix(id, 256), st)
			st.finished = true
			s.emit(ts, protocol.TypeToolFinished, &protocol.ToolFinished{TurnID: ts.id, ToolUseID: runecut.Prefix(id, 256), ToolName: st.name, Status: status, Output: out})
		}
	}
}

// emit sends an event of ts. Once the turn's ctx is done (cancel), a
// closing event still gets a short, bounded chance.
func (s *session) emit(ts *turnState, typ string, payload any) {
	_ = s.tryEmit(ts, typ, payload) // logged there; the turn goes on
}

// tryEmit is emit reporting whether the event was delivered.
func (s *session) tryEmit(ts *turnState, typ string, payload any) error {
	ctx := ts.ctx
	if ctx.Err() != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 100*time.Millisecond)
		defer cancel()
	}
	err := ts.send(ctx, typ, payload)
	if err != nil {
		s.log.Debug("acp: event not delivered", "type", typ, "err", err)
	}
	return err
}

// send is ts's emit, refused once ts is detached.
func (ts *turnState) send(ctx context.Context, typ string, payload any) error {
	ts.emitMu.Lock()
	defer ts.emitMu.Unlock()
	if ts.detached {
		return errDetached
	}
	return ts.emit(ctx, typ, payload)
}

// Answer delivers the user's answer to an open permission request.
func (s *session) Answer(interactionID string, resp *protocol.InteractionResponse) error {
	s.mu.Lock()
	a, ok := s.asks[interactionID]
	if !ok {
		s.mu.Unlock()
		return adapter.ErrUnknownInteraction
	}
	option := a.reject
	if resp != nil {
		var v string
		if len(resp.SelectedValue.Values) > 0 {
			v = resp.SelectedValue.Values[0]
		}
		if option, ok = a.values[v]; !ok {
			s.mu.Unlock()
			return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.selected_value", Message: "not one of the interaction's options"}
		}
	}
	delete(s.asks, interactionID)
	allowed := resp != nil && strings.HasPrefix(a.kinds[resp.SelectedValue.Values[0]], "allow")
	mode := s.mode
	if allowed {
		// The mode may have changed while the user thought about it.
		if ok, why := permission.ModeAllows(mode, a.call); !ok {
			s.log.Info("acp: permission refused by the mode after the answer", "mode", mode, "why", why)
			option, allowed = a.reject, false
		}
	}
	if allowed && a.switchMode {
		s.relaxOK = true
	}
	s.mu.Unlock()
	if option == "" {
		s.reply(a.rpcID, cancelledOutcome())
		return nil
	}
	s.reply(a.rpcID, selectedOutcome(option))
	return nil
}

func cancelledOutcome() acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Cancelled: &acpsdk.RequestPermissionOutcomeCancelled{Outcome: "cancelled"}}}
}

func selectedOutcome(optionID string) acpsdk.RequestPermissionResponse {
	return acpsdk.RequestPermissionResponse{Outcome: acpsdk.RequestPermissionOutcome{
		Selected: &acpsdk.RequestPermissionOutcomeSelected{Outcome: "selected", OptionId: acpsdk.PermissionOptionId(optionID)}}}
}

// SetMode switches the agent's mode with session/set_mode (to the mode the
// agent advertises under the same name; session/set_config_option when its
// modes are a config option) and enforces it on ferry's side.
func (s *session) SetMode(mode string, config json.RawMessage) error {
	switch mode {
	case protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview:
	default:
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.mode", Message: "no such mode"}
	}
	if err := adapter.CheckModeConfig(s.a.Capability(), config); err != nil {
		return err
	}
	id, ok := s.agentModeFor(mode)
	if !ok && mode == protocol.ModeDefault {
		// The agent has no mode of its own for it: ferry's default asks
		// nothing of the agent, so the switch is ferry's alone.
		s.mu.Lock()
		s.mode = mode
		s.mu.Unlock()
		return nil
	}
	if !ok {
		return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.mode",
			Message: fmt.Sprintf("this ACP agent has no %s mode", mode)}
	}
	ctx, cancel := context.WithTimeout(s.ctx, setModeTimeout)
	defer cancel()
	method, params := acpsdk.AgentMethodSessionSetMode, any(acpsdk.SetSessionModeRequest{
		SessionId: acpsdk.SessionId(s.sessionID()), ModeId: acpsdk.SessionModeId(id)})
	if s.modeConfig != "" {
		method, params = acpsdk.AgentMethodSessionSetConfigOption, acpsdk.SetSessionConfigOptionValueId{
			SessionId: acpsdk.SessionId(s.sessionID()), ConfigId: acpsdk.SessionConfigId(s.modeConfig), Value: acpsdk.SessionConfigValueId(id)}
	}
	if _, err := s.call(ctx, method, params); err != nil {
		s.log.Warn("acp: switching the agent's mode failed", "method", method, "mode", id, "err", err)
		return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.mode",
			Message: fmt.Sprintf("the ACP agent did not switch to %s mode", mode)}
	}
	s.mu.Lock()
	s.mode, s.agentMode = mode, id
	s.mu.Unlock()
	return nil
}

// agentModeFor finds the agent's mode for a ferry mode: the one with that
// id or name; for default, the agent's "default" or the mode it started in.
func (s *session) agentModeFor(mode string) (string, bool) {
	if s.modes == nil {
		return "", false
	}
	for _, m := range s.modes.AvailableModes {
		if strings.EqualFold(m.ID, mode) || strings.EqualFold(m.Name, mode) || strings.EqualFold(m.Name, mode+" mode") {
			return m.ID, true
		}
	}
	if mode == protocol.ModeDefault && s.modes.CurrentModeID != "" {
		// The mode the agent started in is its default, unless that is plan.
		if plan, ok := s.agentModeFor(protocol.ModePlan); !ok || plan != s.modes.CurrentModeID {
			return s.modes.CurrentModeID, true
		}
	}
	return "", false
}

// ferryMode maps an agent's mode id back onto ferry's modes.
func (s *session) ferryMode(agentID string) string {
	for _, m := range []string{protocol.ModePlan, protocol.ModeReview} {
		if id, ok := s.agentModeFor(m); ok && id == agentID {
			return m
		}
	}
	return protocol.ModeDefault
}

func (s *session) currentMode() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode
}

// Compact sends the agent's own compact command as a prompt, when it
// offers one; tokens before and after are the agent's usage reports.
func (s *session) Compact(ctx context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	s.mu.Lock()
	has := s.commands["compact"]
	s.mu.Unlock()
	if err := adapter.CheckCompact(s.a.Capability(), req, "an ACP agent's compact command takes no target size"); err != nil {
		return nil, err
	}
	if !has {
		return nil, &protocol.Error{Code: protocol.CodeUnsupported, Field: "type", Message: "this ACP agent offers no compact command"}
	}
	ctx, cancel := context.WithTimeout(ctx, compactTimeout)
	defer cancel()
	if err := s.acquire(ctx); err != nil {
		return nil, err
	}
	defer s.release()
	s.mu.Lock()
	before := s.used
	s.mu.Unlock()
	text := "/compact"
	if req != nil && strings.TrimSpace(req.Instruction) != "" {
		text += " " + req.Instruction
	}
	raw, err := s.call(ctx, acpsdk.AgentMethodSessionPrompt, acpsdk.PromptRequest{
		SessionId: acpsdk.SessionId(s.sessionID()), Prompt: []acpsdk.ContentBlock{acpsdk.TextBlock(text)}})
	if err != nil {
		return nil, fmt.Errorf("acp: compact: %w", err)
	}
	var pr promptResult
	if err := json.Unmarshal(raw, &pr); err == nil && pr.StopReason == "refusal" {
		return nil, errors.New("acp: compact: the agent refused")
	}
	s.mu.Lock()
	after := s.used
	s.mu.Unlock()
	return &protocol.CompactionDone{TokensBefore: max(before, 0), TokensAfter: max(after, 0)}, nil
}

// Close ends the session: the agent's stdin is closed, its process group
// killed after a grace period, and every goroutine of the session waited
// for.
func (s *session) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		s.cancel()
		s.c.close()
		<-s.dispatchDone
		s.wg.Wait()
		if err := s.fs.Close(); err != nil {
			s.log.Warn("acp: closing the workspace", "err", err)
		}
	})
	return nil
}

func (ts *turnState) addText(t string) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.truncated {
		return
	}
	if ts.text.Len()+len(t) > maxResultText {
		ts.text.WriteString(runecut.Prefix(t, maxResultText-ts.text.Len()))
		ts.text.WriteString(truncatedNote)
		ts.truncated = true
		return
	}
	ts.text.WriteString(t)
}

func (ts *turnState) textSoFar() string {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return ts.text.String()
}

// sessionID is the agent's session id ("" before session/new answered).
func (s *session) sessionID() string {
	if p := s.sid.Load(); p != nil {
		return *p
	}
	return ""
}
