package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// Config option ids of a session (CONTRACT: mode, model).
const (
	configMode  = "mode"
	configModel = "model"
)

// session is one ACP session: a ferry session the face follows.
type session struct {
	a       *Agent
	ui      *uiConn
	t       Target
	id      string
	machine protocol.Machine
	log     *slog.Logger

	ctx  context.Context // lives until close
	stop context.CancelFunc

	// The queue of events from the master, handled in order by loop.
	qmu    sync.Mutex
	queue  []*protocol.Message
	paused bool
	qsig   chan struct{}

	mu       sync.Mutex
	info     protocol.SessionInfo
	mode     string
	modeSig  chan struct{} // closed and replaced when the mode changes
	settings protocol.Settings
	models   *protocol.Models
	caps     *protocol.AdapterCapability
	commands []string                // the agent's slash commands
	cmdDefs  []protocol.AgentCommand // and as the agent gave them
	// quiet holds back what the replay of a session/resume would show: the
	// editor already shows the conversation. Set before subscribing, it is
	// cleared as the replay ends (endReplay).
	quiet       atomic.Bool
	replaying   bool
	replayUntil uint64
	replayed    chan struct{}
	// lastSeq is the newest event handled, of history epoch: where a
	// subscription made again after a dropped connection goes on from.
	lastSeq uint64
	epoch   string
	held    []*protocol.InteractionRequest
	own     map[string]bool // ids of the prompts this face sent
	turn    *turn
	tools   map[string]*toolState
	asks    map[string]context.CancelFunc // open questions to the editor, by interaction id
	askTool map[string]string             // interaction id → tool_use_id
	settled map[string]bool
	rules   permission.Rules // the face's rules, and the editor's "reject always"
}

// turn is the prompt of this face that is running.
type turn struct {
	promptID, turnID string
	cancelled        bool
	unsent           context.CancelFunc // ends the wait of a prompt not sent yet
	lastErr          string
	done             chan turnEnd
}

type turnEnd struct {
	stop string
	err  error
}

// toolState is what the face knows of one tool call.
type toolState struct {
	name   string
	input  json.RawMessage
	output strings.Builder
}

// maxToolOutput bounds the output a tool call shows in the editor (the
// start is kept; the agent had all of it).
const maxToolOutput = 64 << 10

func newSession(a *Agent, u *uiConn, t Target, info protocol.SessionInfo, m protocol.Machine) *session {
	s := &session{a: a, ui: u, t: t, id: info.ID, machine: m, log: a.log.With("session", info.ID),
		qsig: make(chan struct{}, 1), info: info, mode: info.Mode, modeSig: make(chan struct{}),
		own: map[string]bool{}, tools: map[string]*toolState{}, asks: map[string]context.CancelFunc{},
		askTool: map[string]string{}, settled: map[string]bool{}, rules: a.cfg.Rules, replayed: make(chan struct{})}
	s.rules.Workspace = t.Workspace
	if s.mode == "" {
		s.mode = protocol.ModeDefault
	}
	if info.Settings != nil {
		s.settings = *info.Settings
	}
	for i := range m.Adapters {
		if m.Adapters[i].ID == info.Adapter {
			c := m.Adapters[i]
			s.caps = &c
		}
	}
	s.ctx, s.stop = context.WithCancel(a.ctx)
	go s.loop()
	return s
}

// close stops following the session.
func (s *session) close() {
	s.stop()
	s.ui.unfollow(s.id)
}

// uiGone is called when the connection to the master is gone for good: a
// turn of this face cannot end any more.
func (s *session) uiGone() {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		s.finish(t, turnEnd{err: reqErr(codeInternal, "Internal error: the connection to the ferry master closed during the turn")})
	}
}

// resume follows the session again on a connection dialled again after
// one dropped: the events after the last one handled are replayed (a
// question still open is asked again once they are), then live ones go
// on. Events lost to retention meanwhile are said, not replayed from a
// snapshot the editor already shows.
func (s *session) resume() {
	s.mu.Lock()
	after, epoch := s.lastSeq, s.epoch
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(s.ctx, time.Minute)
	defer cancel()
	replayed, err := s.subscribe(ctx, after, epoch)
	if err != nil {
		if s.ctx.Err() == nil {
			s.log.Warn("acp: follow the session again after reconnecting", "err", err)
		}
		return
	}
	select {
	case <-replayed:
		s.replayDone()
	case <-s.ctx.Done():
	}
}

func (s *session) enqueue(m *protocol.Message) {
	s.qmu.Lock()
	s.queue = append(s.queue, m)
	s.qmu.Unlock()
	select {
	case s.qsig <- struct{}{}:
	default:
	}
}

func (s *session) setPaused(p bool) {
	s.qmu.Lock()
	s.paused = p
	s.qmu.Unlock()
	select {
	case s.qsig <- struct{}{}:
	default:
	}
}

func (s *session) loop() {
	for {
		s.qmu.Lock()
		var batch []*protocol.Message
		if !s.paused {
			batch, s.queue = s.queue, nil
		}
		s.qmu.Unlock()
		for _, m := range batch {
			s.handle(m)
		}
		select {
		case <-s.ctx.Done():
			return
		case <-s.qsig:
		}
	}
}

// subscribe follows the session from after on. The returned channel is
// closed once the events stored before the subscription were handled.
func (s *session) subscribe(ctx context.Context, after uint64, epoch string) (<-chan struct{}, error) {
	s.setPaused(true)
	defer s.setPaused(false)
	s.ui.follow(s.id, s)
	m := protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: after, Epoch: epoch})
	m.SessionID = s.id
	r, err := s.ui.request(ctx, m, 30*time.Second)
	if err != nil {
		s.ui.unfollow(s.id)
		return nil, err
	}
	sub, ok := r.Payload.(*protocol.Subscribed)
	if !ok {
		s.ui.unfollow(s.id)
		return nil, fmt.Errorf("subscribe answered %s", r.Type)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.replayed = make(chan struct{})
	resumed := after > 0
	if sub.Epoch != s.epoch || !sub.Recovered {
		s.lastSeq = 0 // what follows is counted afresh
	}
	s.epoch = sub.Epoch
	switch {
	case sub.Recovered && sub.LastSeq > after:
		s.replaying, s.replayUntil = true, sub.LastSeq
	case !sub.Recovered && resumed:
		s.replaying = true
		s.update(acp.UpdateAgentMessageText("\n\n**ferry:** events of this session were lost while the connection to the ferry master was down; load the session again to see all of it.\n"))
		s.lastSeq = sub.LastSeq
		s.endReplay()
	case !sub.Recovered && sub.Snapshot != nil:
		s.replaying = true
		s.replaySnapshot(sub.Snapshot)
		s.lastSeq = sub.LastSeq
		s.endReplay()
	default:
		s.replaying = true // until replayDone: questions wait for it
		s.endReplay()
	}
	return s.replayed, nil
}

// endReplay marks the events stored before the subscription handled.
// s.mu is held.
func (s *session) endReplay() {
	close(s.replayed)
	s.quiet.Store(false)
}

// replaySnapshot shows the turns of a snapshot (the events are beyond
// retention): each prompt and final answer. s.mu is held.
func (s *session) replaySnapshot(snap *protocol.SessionSnapshot) {
	for _, t := range snap.Turns {
		if t.Prompt != "" {
			s.update(acp.UpdateUserMessageText(t.Prompt))
		}
		if t.Text != "" {
			s.update(acp.UpdateAgentMessageText(t.Text))
		}
	}
	if len(snap.Commands) > 0 {
		s.setCommands(snap.Commands)
	}
	if snap.Capabilities != nil {
		s.caps = snap.Capabilities
	}
	s.mode = snap.Session.Mode
	if snap.Session.Settings != nil {
		s.settings = *snap.Session.Settings
	}
}

// replayDone ends the replay: the questions still open are asked.
func (s *session) replayDone() {
	s.mu.Lock()
	held := s.held
	s.held, s.replaying = nil, false
	s.mu.Unlock()
	for _, r := range held {
		go s.ask(r)
	}
}

// update sends one session/update to the editor.
func (s *session) update(u acp.SessionUpdate) {
	if s.quiet.Load() {
		return
	}
	if err := s.a.conn.SessionUpdate(s.a.ctx, acp.SessionNotification{SessionId: acp.SessionId(s.id), Update: u}); err != nil {
		s.log.Debug("acp: session/update not sent", "err", err)
	}
}

// handle turns one of the session's events into what the editor sees.
func (s *session) handle(m *protocol.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	defer func() {
		if s.replayUntil > 0 && m.Seq >= s.replayUntil {
			s.replayUntil = 0
			s.endReplay()
		}
	}()
	if m.Seq > 0 {
		if m.Seq <= s.lastSeq {
			return // handled before the connection dropped
		}
		s.lastSeq = m.Seq
	}
	t := s.turn
	switch p := m.Payload.(type) {
	case *protocol.PromptRequest:
		if m.Seq > 0 && !s.own[m.MessageID] {
			s.update(acp.UpdateUserMessageText(fileref.Parse(p.PromptText, p.FileReferences).Literal()))
		}
	case *protocol.TurnStarted:
		if t != nil && m.ParentID == t.promptID {
			t.turnID = p.TurnID
			if t.cancelled {
				go s.sendCancel(p.TurnID)
			}
		}
		if p.Mode != "" {
			s.mode = p.Mode
		}
	case *protocol.TextDelta:
		if p.Channel == "thinking" {
			s.update(acp.UpdateAgentThoughtText(p.Delta))
		} else {
			s.update(acp.UpdateAgentMessageText(p.Delta))
		}
	case *protocol.TextDone:
		if t != nil && p.TurnID == t.turnID {
			go s.finish(t, endOf(p, t.lastErr))
		}
	case *protocol.ToolStarted:
		s.toolStarted(p)
	case *protocol.ToolUpdated:
		s.toolUpdated(p)
	case *protocol.ToolFinished:
		s.toolFinished(p)
	case *protocol.InteractionRequest:
		if s.settled[p.InteractionID] {
			break
		}
		if s.replaying {
			if !slices.ContainsFunc(s.held, func(r *protocol.InteractionRequest) bool { return r.InteractionID == p.InteractionID }) {
				s.held = append(s.held, p)
			}
			break
		}
		go s.ask(p)
	case *protocol.InteractionResolved:
		s.resolved(p)
	case *protocol.AgentCommands:
		s.setCommands(p.Commands)
	case *protocol.AgentCapabilities:
		c := p.Adapter
		s.caps = &c
	case *protocol.ModeChanged:
		s.setModeLocked(p.Mode)
		s.update(acp.SessionUpdate{CurrentModeUpdate: &acp.SessionCurrentModeUpdate{CurrentModeId: acp.SessionModeId(p.Mode)}})
	case *protocol.AgentError:
		s.update(acp.UpdateAgentMessageText(fmt.Sprintf("\n\n**ferry: %s** (%s)\n", p.Message, p.Code)))
		if t != nil {
			t.lastErr = p.Message + " (" + p.Code + ")"
		}
	case *protocol.PromptRefused:
		if t != nil && m.ParentID == t.promptID {
			go s.finish(t, turnEnd{err: reqErr(codeInvalidParams, "Invalid params: the prompt did not run: %s (%s)", p.Message, p.Code)})
		}
	case *protocol.Error:
		if t != nil && m.ParentID == t.promptID {
			go s.finish(t, turnEnd{err: reqErr(codeInvalidParams, "Invalid params: the prompt did not run: %s (%s)", p.Message, p.Code)})
		}
	case *protocol.SessionChanged:
		if p.Session.Settings != nil {
			s.settings = *p.Session.Settings
		}
	}
}

// setCommands records the agent's commands and shows them. s.mu is held.
func (s *session) setCommands(cmds []protocol.AgentCommand) {
	s.commands, s.cmdDefs = s.commands[:0], cmds
	for _, c := range cmds {
		s.commands = append(s.commands, c.Name)
	}
	s.update(commandsUpdate(cmds))
}

// setModeLocked records mode and wakes who waits for it. s.mu is held.
func (s *session) setModeLocked(mode string) {
	s.mode = mode
	close(s.modeSig)
	s.modeSig = make(chan struct{})
}

// endOf is how a turn that ended with d ends for the editor.
func endOf(d *protocol.TextDone, lastErr string) turnEnd {
	switch d.StopReason {
	case protocol.StopCancelled:
		return turnEnd{stop: string(acp.StopReasonCancelled)}
	case protocol.StopMaxTurns:
		return turnEnd{stop: string(acp.StopReasonMaxTurnRequests)}
	case protocol.StopRefusal:
		return turnEnd{stop: string(acp.StopReasonRefusal)}
	case protocol.StopError:
		if d.IsCancelled {
			return turnEnd{stop: string(acp.StopReasonCancelled)}
		}
		if lastErr == "" {
			lastErr = "the agent failed"
		}
		return turnEnd{err: reqErr(codeInternal, "Internal error: %s", lastErr)}
	}
	if d.IsCancelled {
		return turnEnd{stop: string(acp.StopReasonCancelled)}
	}
	return turnEnd{stop: string(acp.StopReasonEndTurn)}
}

// finish ends t once.
func (s *session) finish(t *turn, e turnEnd) {
	select {
	case t.done <- e:
	default:
	}
}

// prompt sends the editor's prompt and waits for its turn to end.
func (s *session) prompt(ctx context.Context, blocks []acp.ContentBlock) (acp.PromptResponse, error) {
	p, err := s.compose(ctx, blocks)
	if err != nil {
		return acp.PromptResponse{}, err
	}
	m := protocol.New(protocol.TypeUIPrompt, p)
	m.SessionID = s.id
	t := &turn{promptID: m.MessageID, done: make(chan turnEnd, 1)}
	s.mu.Lock()
	if s.turn != nil {
		s.mu.Unlock()
		return acp.PromptResponse{}, reqErr(codeInvalidRequest, "Invalid request: a prompt of this session is running; cancel it or wait for its end")
	}
	s.turn = t
	s.own[m.MessageID] = true
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.turn == t {
			s.turn = nil
		}
		s.mu.Unlock()
	}()
	// While the connection to the master is down the prompt waits for it;
	// a session/cancel meanwhile withdraws it unsent.
	waitCtx, unsent := context.WithCancel(ctx)
	s.mu.Lock()
	t.unsent = unsent
	s.mu.Unlock()
	err = s.ui.waitUp(waitCtx)
	unsent()
	s.mu.Lock()
	withdrawn := t.cancelled
	s.mu.Unlock()
	if withdrawn || ctx.Err() != nil {
		// Cancelled, or the client withdrew the request, before it was sent.
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	if err == nil {
		err = s.ui.send(ctx, m)
	}
	if err != nil {
		return acp.PromptResponse{}, s.a.wireErr(err, "send the prompt")
	}
	var end turnEnd
	select {
	case end = <-t.done:
	case <-ctx.Done():
		// The client withdrew the request or went away: the turn is
		// cancelled, as session/cancel would.
		s.cancel()
		select {
		case end = <-t.done:
		case <-time.After(cancelWait):
		}
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case <-s.ctx.Done():
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	}
	if end.err != nil {
		return acp.PromptResponse{}, end.err
	}
	return acp.PromptResponse{StopReason: acp.StopReason(end.stop), UserMessageId: nil}, nil
}

// cancel cancels this face's running turn: the editor's open questions
// are withdrawn and the turn is cancelled (at once, or as soon as it
// started).
func (s *session) cancel() {
	s.mu.Lock()
	t := s.turn
	var asks []context.CancelFunc
	for _, c := range s.asks {
		asks = append(asks, c)
	}
	var unsent context.CancelFunc
	if t != nil {
		t.cancelled = true
		unsent = t.unsent
	}
	s.mu.Unlock()
	if unsent != nil {
		unsent()
	}
	for _, c := range asks {
		c()
	}
	if t != nil && t.turnID != "" {
		s.sendCancel(t.turnID)
	}
}

func (s *session) sendCancel(turnID string) {
	m := protocol.New(protocol.TypePromptCancel, &protocol.PromptCancel{TargetTurnID: turnID, Reason: "user_cancelled"})
	m.SessionID = s.id
	if err := s.sendOnceUp(m); err != nil {
		s.log.Warn("acp: could not cancel the turn", "turn", turnID, "err", err)
	}
}

// cancelAndWait cancels this face's running turn and waits at most d for
// it to end; then it stops following the session.
func (s *session) cancelAndWait(d time.Duration) {
	s.mu.Lock()
	t := s.turn
	s.mu.Unlock()
	if t != nil {
		s.cancel()
		select {
		case e := <-t.done:
			s.finish(t, e) // the prompt call may still want it
		case <-time.After(d):
			s.log.Warn("acp: the cancelled turn did not end in time", "wait", d)
		}
	}
	s.close()
}

// modes are ferry's modes the session's agent offers.
func (s *session) modes() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.caps != nil && len(s.caps.Modes) > 0 {
		return slices.Clone(s.caps.Modes)
	}
	return []string{protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview}
}

var modeText = map[string][2]string{
	protocol.ModeDefault: {"Default", "Asks before changing files or running commands"},
	protocol.ModePlan:    {"Plan", "Reads and searches only, and proposes a plan"},
	protocol.ModeReview:  {"Review", "Read-only, with read-only git"},
}

func (s *session) modeState() *acp.SessionModeState {
	st := &acp.SessionModeState{}
	for _, m := range s.modes() {
		t := modeText[m]
		if t[0] == "" {
			t[0] = m
		}
		st.AvailableModes = append(st.AvailableModes, acp.SessionMode{Id: acp.SessionModeId(m), Name: t[0], Description: acp.Ptr(t[1])})
	}
	s.mu.Lock()
	st.CurrentModeId = acp.SessionModeId(s.mode)
	s.mu.Unlock()
	return st
}

// setMode switches the session's mode and waits until it is in force.
func (s *session) setMode(ctx context.Context, mode string) error {
	if !slices.Contains(s.modes(), mode) {
		return reqErr(codeInvalidParams, "Invalid params: no mode %q (ferry's are %s)", mode, strings.Join(s.modes(), ", "))
	}
	s.mu.Lock()
	cur := s.mode
	s.mu.Unlock()
	if cur == mode {
		return nil
	}
	m := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: mode})
	m.SessionID = s.id
	if _, err := s.ui.request(ctx, m, 30*time.Second); err != nil {
		return s.a.wireErr(err, "switch the mode")
	}
	// The answer (agent.mode.changed) is also an event: wait until the
	// loop handled it, so the next request sees the mode.
	deadline := time.After(5 * time.Second)
	for {
		s.mu.Lock()
		cur, sig := s.mode, s.modeSig
		s.mu.Unlock()
		if cur == mode {
			return nil
		}
		select {
		case <-sig:
		case <-deadline:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// loadModels asks the session's client for its models, once.
func (s *session) loadModels(ctx context.Context) *protocol.Models {
	s.mu.Lock()
	ms, caps := s.models, s.caps
	s.mu.Unlock()
	if ms != nil || caps == nil || !caps.Models {
		return ms
	}
	m := protocol.New(protocol.TypeModelsList, &protocol.ModelsList{})
	m.SessionID = s.id
	r, err := s.ui.request(ctx, m, 15*time.Second)
	if err != nil {
		s.log.Info("acp: no model list", "err", err)
		return nil
	}
	got, ok := r.Payload.(*protocol.Models)
	if !ok {
		return nil
	}
	s.mu.Lock()
	s.models = got
	s.mu.Unlock()
	return got
}

// currentModel is the session's model: its own, else the provider's
// default.
func (s *session) currentModel(ms *protocol.Models) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.settings.Model != "" {
		return s.settings.Model
	}
	if ms != nil {
		return ms.Default
	}
	return ""
}

// configOptions are the session's options: the mode, and the model when
// the agent offers a choice.
func (s *session) configOptions(ctx context.Context) []acp.SessionConfigOption {
	var modeOpts acp.SessionConfigSelectOptionsUngrouped
	for _, m := range s.modes() {
		t := modeText[m]
		if t[0] == "" {
			t[0] = m
		}
		modeOpts = append(modeOpts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m), Name: t[0], Description: acp.Ptr(t[1])})
	}
	s.mu.Lock()
	cur := s.mode
	s.mu.Unlock()
	opts := []acp.SessionConfigOption{{Select: &acp.SessionConfigOptionSelect{
		Id: configMode, Name: "Mode", Category: acp.Ptr(acp.SessionConfigOptionCategoryMode),
		CurrentValue: acp.SessionConfigValueId(cur), Options: acp.SessionConfigSelectOptions{Ungrouped: &modeOpts},
	}}}
	ms := s.loadModels(ctx)
	if ms == nil || len(ms.Models) == 0 {
		return opts
	}
	var modelOpts acp.SessionConfigSelectOptionsUngrouped
	for _, m := range ms.Models {
		name := m.Name
		if name == "" {
			name = m.ID
		}
		modelOpts = append(modelOpts, acp.SessionConfigSelectOption{Value: acp.SessionConfigValueId(m.ID), Name: name})
	}
	return append(opts, acp.SessionConfigOption{Select: &acp.SessionConfigOptionSelect{
		Id: configModel, Name: "Model", Category: acp.Ptr(acp.SessionConfigOptionCategoryModel),
		CurrentValue: acp.SessionConfigValueId(s.currentModel(ms)), Options: acp.SessionConfigSelectOptions{Ungrouped: &modelOpts},
	}})
}

// modelState is the unstable models field of session/new and load.
func (s *session) modelState() *acp.SessionModelState {
	s.mu.Lock()
	ms := s.models
	s.mu.Unlock()
	if ms == nil || len(ms.Models) == 0 {
		return nil
	}
	st := &acp.SessionModelState{CurrentModelId: acp.ModelId(s.currentModel(ms))}
	for _, m := range ms.Models {
		name := m.Name
		if name == "" {
			name = m.ID
		}
		st.AvailableModels = append(st.AvailableModels, acp.ModelInfo{ModelId: acp.ModelId(m.ID), Name: name})
	}
	return st
}

// setModel makes model the session's, keeping its other settings.
func (s *session) setModel(ctx context.Context, model string) error {
	ms := s.loadModels(ctx)
	if ms != nil && !slices.ContainsFunc(ms.Models, func(m protocol.ModelInfo) bool { return m.ID == model }) {
		return reqErr(codeInvalidParams, "Invalid params: no model %q (see the model option's values)", model)
	}
	s.mu.Lock()
	st := s.settings
	s.mu.Unlock()
	set := &protocol.SessionSettings{Model: model, Effort: st.Effort}
	if st.PermissionTimeoutSet {
		ms := st.PermissionTimeoutMS
		set.PermissionTimeoutMS = &ms
	}
	m := protocol.New(protocol.TypeSessionSettings, set)
	m.SessionID = s.id
	r, err := s.ui.request(ctx, m, 30*time.Second)
	if err != nil {
		return s.a.wireErr(err, "set the model")
	}
	if got, ok := r.Payload.(*protocol.Settings); ok {
		s.mu.Lock()
		s.settings = *got
		s.mu.Unlock()
	}
	return nil
}
