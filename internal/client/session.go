package client

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/attachment"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// sessionQueue bounds the control messages waiting for one session's worker.
const sessionQueue = 64

// errTurnOver is returned by Emit after the turn's Run returned.
var errTurnOver = errors.New("client: the turn is over")

// session is one session the master opened on this client.
type session struct {
	c         *Client
	id        string
	ws        *workspace
	adapterID string
	ad        adapter.Adapter
	queue     chan *protocol.Message

	// dead is set (under c.mu) when the session is gone: nothing more is
	// queued.
	dead bool

	// sess is set by the worker when the adapter session is open; only
	// the worker writes it.
	sess adapter.Session

	mu     sync.Mutex
	mode   string
	turn   *turn
	picker *search.Picker
	// searches maps each search in flight to its message id (the parent
	// of its answer); at most the newest two are kept.
	searches map[*protocol.FileSearch]string

	// waiting holds the ids of the interactions the agent waits on
	// (waiting.go). Guarded by mu.
	waiting map[string]struct{}

	// permTimeout is the session's own permission timeout in ms (nil:
	// the client's default); see timeout.go. Guarded by mu.
	permTimeout *int
	// model and effort are the session's own model and thinking effort
	// ("" : the adapter's default); see models.go. Guarded by mu.
	model, effort string
	// listing is set while a model list is being fetched (one at a time).
	listing atomic.Bool
	// commands are the agent's slash commands last sent as agent.commands
	// (commands.go). Guarded by mu.
	commands     []protocol.AgentCommand
	commandsSent bool
	// instructions are the instruction files last sent as
	// agent.instructions (commands.go). Guarded by mu.
	instructions     []protocol.InstructionFile
	instructionsSent bool
	titleSent        string // the last agent.title sent
	// caps is the session's own capability, as its agent last reported
	// it and agent.capabilities sent it (nil: the adapter's declaration
	// holds; see capabilities). Guarded by mu.
	caps *protocol.AdapterCapability
	// hist is the session's file history and hfs the workspace its
	// restores write through (history.go); set by the worker on open.
	hist *filehistory.Journal
	hfs  *vfs.Local
	// iso is set for an isolated session (isolated.go): ws is then the
	// workspace derived from its worktree. Set by the worker on open.
	iso *isolated
}

// turn is the running turn of a session.
type turn struct {
	id     string
	cancel context.CancelFunc
	// byUser is set when control.prompt.cancel stopped the turn (else a
	// cancelled turn was stopped by the client shutting down).
	byUser atomic.Bool
	// mu guards ended; Emit holds it shared while writing an event, so
	// no event can follow the turn's agent.text.done.
	mu    sync.RWMutex
	ended bool
	// finished is closed once the turn's agent.text.done is queued and
	// the session is free (see waitEnding).
	finished chan struct{}
}

// idleOrRefuse reports whether no turn runs (after waitEnding); when one
// does, m is refused as busy with why.
func (s *session) idleOrRefuse(m *protocol.Message, why string) bool {
	s.waitEnding()
	s.mu.Lock()
	busy := s.turn != nil
	s.mu.Unlock()
	if busy {
		s.fail(m, protocol.CodeBusy, "", why)
	}
	return !busy
}

// waitEnding waits for a turn whose adapter has returned but whose
// agent.text.done is still being queued: a prompt (or compaction, undo)
// the user sends on seeing that done must not be refused as busy, and
// must not overtake it.
func (s *session) waitEnding() {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t == nil {
		return
	}
	t.mu.RLock()
	ended := t.ended
	t.mu.RUnlock()
	if ended {
		<-t.finished
	}
}

// dispatch handles one decoded message from the master (on the reader).
func (c *Client) dispatch(cn *conn, m *protocol.Message) {
	switch p := m.Payload.(type) {
	case *protocol.Ack:
		if _, err := c.out.Ack(p.Through); err != nil {
			c.log.Error("outbox ack", "err", err)
		}
		return
	case *protocol.Error:
		c.log.Warn("the master reports an error", "code", p.Code, "field", p.Field, "message", p.Message, "parent_id", m.ParentID)
		return
	case *protocol.SessionOpen:
		c.openSession(cn, m, p)
		return
	}
	if c.dispatchDownload(cn, m) {
		return
	}
	if !slices.Contains(handledMessages, m.Type) {
		c.reply(cn, protocol.ErrorMessage(m.MessageID, m.SessionID, &protocol.Error{
			Code: protocol.CodeUnsupported, Field: "type", Message: fmt.Sprintf("a client does not handle %s", m.Type),
		}))
		return
	}
	if m.Type == protocol.TypePromptRequest && c.answeredAlready(cn, m) {
		return
	}
	c.mu.Lock()
	s := c.sessions[m.SessionID]
	c.mu.Unlock()
	if s == nil {
		c.refuse(cn, m, &protocol.Error{
			Code: protocol.CodeNotFound, Field: "session_id", Message: "no such session is open on this client; send control.session.open first",
		})
		return
	}
	switch p := m.Payload.(type) {
	case *protocol.PromptCancel:
		s.cancelTurn(p.TargetTurnID)
	case *protocol.FileSearch:
		s.search(m, p)
	case *protocol.ModelsList:
		s.listModels(m, p)
	case *protocol.FileSearchCancel:
		s.mu.Lock()
		picker := s.picker
		s.mu.Unlock()
		if picker != nil {
			picker.Cancel(p.QueryID)
		}
	default:
		c.enqueue(cn, s, m)
	}
}

// enqueue hands m to the session's worker, or answers an error when the
// session is gone or its queue is full.
func (c *Client) enqueue(cn *conn, s *session, m *protocol.Message) {
	c.mu.Lock()
	var e *protocol.Error
	if s.dead {
		e = &protocol.Error{Code: protocol.CodeNotFound, Field: "session_id", Message: "the session could not be opened"}
	} else {
		select {
		case s.queue <- m:
		default:
			e = &protocol.Error{Code: protocol.CodeBusy, Message: "the session has too many control messages waiting"}
		}
	}
	c.mu.Unlock()
	if e != nil {
		c.refuse(cn, m, e)
	}
}

// openSession creates the session on its first control.session.open and
// queues the open for its worker (a repeated open is answered again).
func (c *Client) openSession(cn *conn, m *protocol.Message, p *protocol.SessionOpen) {
	fail := func(code, field, msg string) {
		c.reply(cn, protocol.ErrorMessage(m.MessageID, m.SessionID, &protocol.Error{Code: code, Field: field, Message: msg}))
	}
	c.mu.Lock()
	s := c.sessions[m.SessionID]
	if s == nil {
		ws := c.workspace(p.WorkspaceID)
		ad := c.adapters[p.Adapter]
		mode := p.Mode
		if mode == "" {
			mode = protocol.ModeDefault
		}
		switch {
		case ws == nil:
			c.mu.Unlock()
			fail(protocol.CodeNotFound, "payload.workspace_id", "this client serves no such workspace")
			return
		case ad == nil:
			c.mu.Unlock()
			fail(protocol.CodeNotFound, "payload.adapter", "this client has no such adapter")
			return
		}
		s = &session{
			c: c, id: m.SessionID, ws: ws, adapterID: p.Adapter, ad: ad, mode: mode,
			queue:    make(chan *protocol.Message, sessionQueue),
			searches: map[*protocol.FileSearch]string{},
		}
		c.sessions[s.id] = s
		c.wg.Add(1)
		go s.work()
	}
	c.mu.Unlock()
	c.enqueue(cn, s, m)
}

func (c *Client) workspace(id string) *workspace {
	for _, w := range c.workspaces {
		if w.ID == id {
			return w
		}
	}
	return nil
}

// fail answers m with a coded error (not kept).
func (s *session) fail(m *protocol.Message, code, field, msg string) {
	s.c.refuse(nil, m, &protocol.Error{Code: code, Field: field, Message: msg})
}

// failWith answers m with err when it is a coded protocol error, else with
// a generic internal error (the details go to the log).
func (s *session) failWith(m *protocol.Message, what string, err error) {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		s.c.refuse(nil, m, pe)
		return
	}
	s.c.log.Error(what, "session", s.id, "err", err)
	s.fail(m, protocol.CodeInternal, "", what+" failed")
}

// work runs the session's control messages in order.
func (s *session) work() {
	defer s.c.wg.Done()
	for {
		select {
		case <-s.c.stop.Done():
			return
		case m := <-s.queue:
			if !s.handle(m) {
				return
			}
		}
	}
}

// handle runs one queued message; false means the session is gone.
func (s *session) handle(m *protocol.Message) bool {
	if _, isOpen := m.Payload.(*protocol.SessionOpen); !isOpen && s.sess == nil {
		// Only an open can come first (openSession queues it first).
		s.fail(m, protocol.CodeNotFound, "session_id", "the session is not open")
		return true
	}
	switch p := m.Payload.(type) {
	case *protocol.SessionOpen:
		return s.open(m, p)
	case *protocol.PromptRequest:
		s.prompt(m, p)
	case *protocol.InteractionResponse:
		err := s.sess.Answer(p.InteractionID, p)
		if err == nil || errors.Is(err, adapter.ErrUnknownInteraction) {
			s.settled(p.InteractionID)
		}
		if err != nil {
			if errors.Is(err, adapter.ErrUnknownInteraction) {
				s.fail(m, protocol.CodeNotFound, "payload.interaction_id", "the session waits for no such interaction")
			} else {
				s.failWith(m, "answer", err)
			}
		}
	case *protocol.InteractionTimeout:
		s.timedOut(p)
	case *protocol.SessionSettings:
		s.changeSettings(m, p)
	case *protocol.ModeSwitch:
		s.switchMode(m, p)
	case *protocol.SessionCompact:
		s.compact(m, p)
	case *protocol.HistoryUndo, *protocol.HistoryRewind, *protocol.HistoryList:
		s.handleHistory(m)
	case *protocol.WorktreeDiffRequest, *protocol.WorktreeStatusRequest, *protocol.WorktreePropose, *protocol.WorktreeShip,
		*protocol.WorktreeUpdate, *protocol.WorktreeAbortUpdate, *protocol.WorktreeTest, *protocol.WorktreeRemove:
		s.handleWorktree(m)
		s.c.mu.Lock()
		dead := s.dead
		s.c.mu.Unlock()
		return !dead
	}
	return true
}

// open opens the adapter session (the first time) and answers
// session.opened.
func (s *session) open(m *protocol.Message, p *protocol.SessionOpen) bool {
	if s.sess != nil {
		switch {
		case p.WorkspaceID != s.ws.ID:
			s.fail(m, protocol.CodeInvalidValue, "payload.workspace_id", "the session is open on another workspace")
			return true
		case p.Adapter != s.adapterID:
			s.fail(m, protocol.CodeInvalidValue, "payload.adapter", "the session is open with another adapter")
			return true
		}
	} else {
		s.mu.Lock()
		mode := s.mode
		s.mu.Unlock()
		if p.Isolation != nil {
			iso, isNew, err := s.isolate(s.c.stop, p)
			if err != nil {
				s.c.refuse(nil, m, s.c.wireError("open the session's worktree", err))
				s.c.removeSession(s)
				return false
			}
			// From here on the session lives in its worktree.
			iso.fresh = isNew
			s.mu.Lock()
			s.iso, s.ws = iso, iso.ws
			s.mu.Unlock()
		}
		hist := s.openHistory()
		sess, err := s.ad.Open(s.c.stop, adapter.SessionConfig{SessionID: s.id, Workspace: s.ws.Workspace, Mode: mode, History: hist, Transcripts: s.c.transcripts, Artifacts: true,
			Commands: s.commandsChanged, Instructions: s.instructionsChanged, Capabilities: s.capabilitiesChanged, Title: s.titleChanged})
		if err == nil && !slices.Contains(s.capabilities().Modes, mode) {
			// A mode the session's agent does not offer (the adapter's
			// declaration, or what the agent said while opening).
			_ = sess.Close()
			err = &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.mode", Message: "the session's agent has no " + mode + " mode"}
		}
		if err != nil {
			_ = s.closeHistory()
			s.failWith(m, "open session", err)
			s.dropWorktree()
			s.c.removeSession(s)
			return false
		}
		s.sess = sess
		s.restoreModel(p.Model, p.Effort) // the master keeps the session's own values
	}
	s.setPermTimeout(p.PermissionTimeoutMS) // the master keeps the session's own value
	s.mu.Lock()
	mode, st := s.mode, s.settingsLocked()
	s.mu.Unlock()
	opened := &protocol.SessionOpened{Adapter: s.adapterID, Mode: mode, Settings: &st}
	if s.iso != nil {
		w := s.worktreeInfo(s.c.stop)
		opened.Worktree = &w
	}
	if err := s.c.emit(s.c.stop, m.Reply(protocol.TypeSessionOpened, opened)); err != nil {
		s.c.log.Error("session.opened", "session", s.id, "err", err)
	}
	if s.iso != nil {
		// A new worktree's setup runs before anything queued behind the
		// open (a prompt waits for it), its output streamed.
		if s.iso.fresh {
			s.iso.fresh = false
			s.runSetup(s.c.stop)
		}
		s.sendStatus(s.c.stop, nil)
	}
	return true
}

// removeSession forgets a session whose open failed and answers what was
// queued behind the open.
func (c *Client) removeSession(s *session) {
	c.mu.Lock()
	s.dead = true
	if c.sessions[s.id] == s {
		delete(c.sessions, s.id)
	}
	c.mu.Unlock()
	for {
		select {
		case m := <-s.queue:
			s.fail(m, protocol.CodeNotFound, "session_id", "the session could not be opened")
		default:
			return
		}
	}
}

// prompt starts a turn, unless it answered m before (prompts.go): a copy
// queued behind the first is checked again here, where prompts are
// answered one at a time.
func (s *session) prompt(m *protocol.Message, p *protocol.PromptRequest) {
	if s.c.answeredAlready(nil, m) {
		return
	}
	if s.iso != nil && !s.present(m) {
		return // its worktree was removed by hand: worktree_missing
	}
	caps := s.capabilities()
	if !slices.Contains(caps.InputTypes, p.InputType) {
		s.fail(m, protocol.CodeUnsupported, "payload.input_type", "the adapter takes no such input")
		return
	}
	prompt := s.c.resolveRefs(s, fileref.Parse(p.PromptText, p.FileReferences))
	files, e := s.attachments(p)
	if e != nil {
		s.c.log.Info("prompt refused: its attachments", "session", s.id, "code", e.Code, "field", e.Field)
		s.c.refuse(nil, m, e)
		return
	}

	s.waitEnding()
	s.mu.Lock()
	if s.turn != nil {
		s.mu.Unlock()
		s.fail(m, protocol.CodeBusy, "", "the session already runs a turn")
		return
	}
	ctx, cancel := context.WithCancel(s.c.stop)
	t := &turn{id: protocol.NewID(), cancel: cancel, finished: make(chan struct{})}
	s.turn = t
	mode := s.mode
	s.mu.Unlock()

	s.rememberPrompt(p.PromptText)
	started := m.Reply(protocol.TypeTurnStarted, &protocol.TurnStarted{TurnID: t.id, InputType: p.InputType, Mode: mode, Adapter: s.adapterID})
	// Queued with its mark (a restart from here on ends the turn:
	// cutturns.go) and the prompt's record (it never runs again:
	// prompts.go), all or none. On a failure nothing answers the prompt,
	// and the master sends it again later.
	err := s.c.emitWith(s.c.stop, started, s.c.marks.markIn(s.id, t.id), s.c.prompts.startedIn(m.MessageID, s.id))
	if err != nil {
		s.c.log.Error("agent.turn.started", "session", s.id, "err", err)
		cancel()
		s.mu.Lock()
		s.turn = nil
		s.mu.Unlock()
		close(t.finished)
		return
	}
	s.beginTurnHistory(t.id)
	s.c.wg.Add(1)
	go s.runTurn(ctx, t, adapter.Turn{ID: t.id, Request: p, Prompt: prompt, Attachments: files})
}

// attachments fetches and checks a prompt's context_files before its turn
// starts, and has the adapter's session vet them when it takes some kinds
// only (adapter.AttachmentChecker): any refusal is the prompt's coded
// error, and no turn runs. A session that runs a turn is answered busy
// without fetching anything, and so is an adapter that takes no
// attachments: it refuses the setting itself (adapter.RefusePrompt).
func (s *session) attachments(p *protocol.PromptRequest) ([]attachment.File, *protocol.Error) {
	if len(p.ContextFiles) == 0 || !slices.Contains(s.capabilities().Settings, adapter.SettingContextFiles) {
		return nil, nil
	}
	s.mu.Lock()
	busy := s.turn != nil
	s.mu.Unlock()
	if busy {
		return nil, &protocol.Error{Code: protocol.CodeBusy, Message: "the session already runs a turn"}
	}
	files, e := s.c.fetch.Fetch(s.c.stop, p.ContextFiles)
	if e != nil {
		return nil, e
	}
	if ck, ok := s.sess.(adapter.AttachmentChecker); ok {
		if e := ck.CheckAttachments(files); e != nil {
			return nil, e
		}
	}
	return files, nil
}

// runTurn runs the adapter's turn and ends it with exactly one
// agent.text.done.
func (s *session) runTurn(ctx context.Context, t *turn, at adapter.Turn) {
	defer s.c.wg.Done()
	res, err := s.sess.Run(ctx, at, s.emitFor(t))
	cancelled := ctx.Err() != nil
	t.cancel()
	t.mu.Lock()
	t.ended = true
	t.mu.Unlock()

	done := &protocol.TextDone{TurnID: t.id, Text: res.Text}
	switch {
	case cancelled && !t.byUser.Load() && s.c.stop.Err() != nil:
		// ferry is stopping: say so rather than a bare "cancelled"
		// (the user sees it after the restart).
		s.endRestarted(t.id)
		done.StopReason = "error"
	case cancelled || res.StopReason == "cancelled":
		done.IsCancelled = true
		done.StopReason = "cancelled"
	case err != nil:
		s.c.log.Error("turn failed", "session", s.id, "turn", t.id, "err", err)
		ev := protocol.New(protocol.TypeAgentError, &protocol.AgentError{TurnID: t.id, Code: protocol.AgentCodeAgentFailed, Message: "the agent failed; the client's log has the details"})
		ev.SessionID = s.id
		if err := s.c.emit(s.c.drain, ev); err != nil {
			s.c.log.Error("agent.error", "session", s.id, "err", err)
		}
		done.StopReason = "error"
	default:
		switch res.StopReason {
		case "end_turn", "max_turns", "error", "refusal":
			done.StopReason = res.StopReason
		default:
			done.StopReason = "end_turn"
		}
		done.Result = res.Structured
	}
	msg := protocol.New(protocol.TypeTextDone, done)
	msg.SessionID = s.id
	if _, err := checkedEncode(msg); err != nil {
		// The adapter's text or result cannot travel: the turn still ends.
		s.c.log.Error("agent.text.done", "session", s.id, "turn", t.id, "err", err)
		msg = protocol.New(protocol.TypeTextDone, &protocol.TextDone{TurnID: t.id, IsCancelled: done.IsCancelled, StopReason: protocol.StopError})
		msg.SessionID = s.id
	}
	if err := s.c.emitEnd(s.c.drain, msg, s.id, t.id); err != nil {
		s.c.log.Error("agent.text.done lost", "session", s.id, "turn", t.id, "err", err)
	}
	// While the turn still counts as ending (waitEnding), so that a ship
	// or removal the user sends on seeing the done comes after it.
	s.turnEnded(res.Text)
	s.mu.Lock()
	s.turn = nil
	clear(s.waiting) // the turn's questions died with it
	s.mu.Unlock()
	close(t.finished)
}

// emitFor is the Emit of one turn: it checks what the adapter sends and
// refuses anything after the turn's end.
func (s *session) emitFor(t *turn) adapter.Emit {
	return func(ctx context.Context, msgType string, payload any) error {
		if !strings.HasPrefix(msgType, "agent.") || !protocol.SentBy(msgType, protocol.RoleClient) ||
			msgType == protocol.TypeTurnStarted || msgType == protocol.TypeTextDone {
			return fmt.Errorf("client: an adapter may not emit %q", msgType)
		}
		if reflect.TypeOf(payload) != payloadTypes[msgType] {
			return fmt.Errorf("client: %s wants a %v payload, got %T", msgType, payloadTypes[msgType], payload)
		}
		if mc, ok := payload.(*protocol.ModeChanged); ok {
			// The agent switched itself (a /mode command): later turns
			// report the mode in force.
			s.mu.Lock()
			s.mode = mc.Mode
			s.mu.Unlock()
		}
		if cd, ok := payload.(*protocol.CompactionDone); ok {
			cd.FillRatio() // an automatic compaction (Claude Code's) reports its ratio too
		}
		payload = s.withTimeout(payload)
		art, isArtifact := payload.(*protocol.Artifact)
		if isArtifact && art.ArtifactID == "" {
			art.ArtifactID = newArtifactID()
		}
		m := protocol.New(msgType, payload)
		m.SessionID = s.id
		t.mu.RLock()
		defer t.mu.RUnlock()
		if t.ended {
			return errTurnOver
		}
		if !isArtifact {
			if req, ok := payload.(*protocol.InteractionRequest); ok {
				s.waitingOn(req.InteractionID) // first: its answer may come at once
			}
			return s.c.emit(ctx, m)
		}
		// Checked first, recorded second, sent last: a download can only
		// ever name an artifact the master saw, and every artifact the
		// master sees can be read.
		data, err := checkedEncode(m)
		if err != nil {
			return err
		}
		if err := s.recordArtifact(ctx, art); err != nil {
			return err
		}
		return s.c.out.Append(ctx, m.MessageID, data)
	}
}

// cancelTurn cancels the running turn if it is turnID; otherwise nothing
// happens (the turn may just have ended, and its agent.text.done says so).
func (s *session) cancelTurn(turnID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn != nil && s.turn.id == turnID {
		s.turn.byUser.Store(true)
		s.turn.cancel()
	}
}

func (s *session) switchMode(m *protocol.Message, p *protocol.ModeSwitch) {
	if !slices.Contains(s.capabilities().Modes, p.Mode) {
		s.fail(m, protocol.CodeUnsupported, "payload.mode", "the session's agent has no such mode")
		return
	}
	if err := s.sess.SetMode(p.Mode, p.Config); err != nil {
		s.failWith(m, "switch mode", err)
		return
	}
	s.mu.Lock()
	s.mode = p.Mode
	s.mu.Unlock()
	if err := s.c.emit(s.c.stop, m.Reply(protocol.TypeModeChanged, &protocol.ModeChanged{Mode: p.Mode})); err != nil {
		s.c.log.Error("agent.mode.changed", "session", s.id, "err", err)
	}
}

func (s *session) compact(m *protocol.Message, p *protocol.SessionCompact) {
	if !s.capabilities().Compact {
		s.fail(m, protocol.CodeUnsupported, "type", "the session's agent cannot compact")
		return
	}
	if !s.idleOrRefuse(m, "the session runs a turn; compact after it") {
		return
	}
	res, err := s.sess.Compact(s.c.stop, p)
	var pe *protocol.Error
	if errors.As(err, &pe) {
		// The adapter refused the request (a setting it cannot honour):
		// the code and field say which, as for a refused mode switch.
		s.failWith(m, "compact", err)
		return
	}
	var ev *protocol.Message
	if err != nil || res == nil {
		s.c.log.Error("compact", "session", s.id, "err", err)
		ev = m.Reply(protocol.TypeAgentError, &protocol.AgentError{Code: protocol.AgentCodeCompactionFailed, Message: "the agent could not compact the session; the client's log has the details"})
	} else {
		res.FillRatio()
		ev = m.Reply(protocol.TypeCompactionDone, res)
	}
	if err := s.c.emit(s.c.stop, ev); err != nil {
		s.c.log.Error(ev.Type, "session", s.id, "err", err)
	}
}

// search runs a file search on the session's picker (newest query wins).
func (s *session) search(m *protocol.Message, p *protocol.FileSearch) {
	s.mu.Lock()
	if s.picker == nil {
		svc := s.c.svc
		if s.iso != nil { // set under s.mu
			svc = s.iso.svc // the worktree's own index
		}
		s.picker = search.NewPicker(svc, s.ws.ID, s.deliver)
	}
	picker := s.picker
	s.searches[p] = m.MessageID
	s.mu.Unlock()
	picker.Search(s.c.stop, p)
	// Once the new search is submitted no older one can be answered: drop
	// their bookkeeping.
	s.mu.Lock()
	for q := range s.searches {
		if q != p {
			delete(s.searches, q)
		}
	}
	s.mu.Unlock()
}

// deliver sends a search's answer (called by the picker, for the newest
// query only).
func (s *session) deliver(req *protocol.FileSearch, resp *protocol.FileCandidates, err error) {
	s.mu.Lock()
	parent, ok := s.searches[req]
	delete(s.searches, req)
	s.mu.Unlock()
	if !ok {
		return
	}
	if err != nil {
		var pe *protocol.Error
		if !errors.As(err, &pe) {
			s.c.log.Error("file search", "session", s.id, "err", err)
			pe = &protocol.Error{Code: protocol.CodeInternal, Message: "the file search failed"}
		}
		s.c.sendDirect(protocol.ErrorMessage(parent, s.id, pe))
		return
	}
	ans := protocol.New(protocol.TypeFileCandidates, resp)
	ans.ParentID = parent
	ans.SessionID = s.id
	s.c.sendDirect(ans)
}

// close ends the session's picker and adapter session (Close).
func (s *session) close() error {
	s.mu.Lock()
	picker := s.picker
	s.mu.Unlock()
	if picker != nil {
		picker.Close()
	}
	var err error
	if s.sess != nil {
		if cerr := s.sess.Close(); cerr != nil {
			err = fmt.Errorf("client: close session %s: %w", s.id, cerr)
		}
	}
	s.iso.close()
	return errors.Join(err, s.closeHistory())
}
