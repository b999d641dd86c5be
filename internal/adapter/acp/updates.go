package acp

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/protocol"
)

// Sizes that keep every event under protocol.MaxMessageBytes (4 MiB) even
// when JSON escaping grows text sixfold.
const (
	// maxDelta is the largest text delta; a bigger chunk is split.
	maxDelta = 512 << 10
	// maxResultText caps Result.Text (the deltas carry all of it).
	maxResultText = 512 << 10
	// maxToolOutput caps agent.tool.finished output.
	maxToolOutput = 64 << 10
	// maxToolInput is the largest tool input passed on whole.
	maxToolInput = 64 << 10
	// maxLocations is how many locations of a call ferry keeps.
	maxLocations = 64
)

const truncatedNote = "\n[… cut here: the whole text was streamed]"

// toolState is a tool call the turn has seen.
type toolState struct {
	name      string
	title     string
	content   json.RawMessage
	rawOutput json.RawMessage
	finished  bool
	// What the permission rules look at, as the updates gave it (a
	// permission request may leave it out).
	kind      string
	rawInput  json.RawMessage
	locations []string
	// started: agent.tool.started was emitted (it waits for the input of
	// a call announced without one).
	started bool
}

// onUpdate handles one session/update. Session bookkeeping (commands,
// mode, usage) happens whenever it comes; events only while a turn runs.
func (s *session) onUpdate(u *sessionUpdate) {
	ts := s.turn
	switch u.SessionUpdate {
	case "available_commands_update":
		cmds := map[string]bool{}
		list := make([]protocol.AgentCommand, 0, len(u.AvailableCommands))
		for _, c := range u.AvailableCommands {
			cmds[c.Name] = true
			ac := protocol.AgentCommand{Name: c.Name, Description: c.Description}
			if c.Input != nil {
				ac.Hint = c.Input.Hint
			}
			list = append(list, ac)
		}
		s.mu.Lock()
		s.commands = cmds
		s.mu.Unlock()
		if s.onCommands != nil {
			s.onCommands(list) // the UI accepts and completes them
		}
		if s.opened.Load() {
			s.reportCaps() // compaction may have come or gone
		}
		return
	case "current_mode_update":
		s.onModeUpdate(ts, u.CurrentModeID)
		return
	case "usage_update":
		if u.Used != nil {
			s.mu.Lock()
			s.used = *u.Used
			s.mu.Unlock()
		}
		return
	case "session_info_update":
		// ACP's (unstable) session metadata: a title the agent made.
		// null clears it: ferry keeps the last one.
		if u.Title != nil && *u.Title != "" && s.onTitle != nil {
			s.onTitle(*u.Title)
		}
		return
	case "config_option_update":
		// The agent's own switch of its mode selector, when it has one.
		for _, o := range u.ConfigOptions {
			var cur string
			if s.modeConfig != "" && o.ID == s.modeConfig && json.Unmarshal(o.CurrentValue, &cur) == nil {
				s.onModeUpdate(ts, cur)
			}
		}
		return
	case "user_message_chunk":
		return
	}
	if ts == nil {
		s.log.Info("acp: an update outside a turn was dropped", "update", runecut.Prefix(u.SessionUpdate, 64))
		return
	}
	switch u.SessionUpdate {
	case "agent_message_chunk":
		text := chunkText(u.Content)
		ts.addText(text)
		s.streamText(ts, text, "text")
	case "agent_thought_chunk":
		s.streamText(ts, chunkText(u.Content), "thinking")
	case "tool_call", "tool_call_update":
		s.onToolCall(ts, u)
	case "plan":
		s.onPlan(ts, u.Entries)
	default:
		s.log.Debug("acp: update ignored", "update", runecut.Prefix(u.SessionUpdate, 64))
	}
}

// streamText emits text as deltas of at most maxDelta bytes.
func (s *session) streamText(ts *turnState, text, channel string) {
	for text != "" {
		piece := runecut.Prefix(text, maxDelta)
		if piece == "" { // bytes that are no UTF-8 may offer no rune start to cut at
			piece = text
		}
		text = text[len(piece):]
		s.emit(ts, protocol.TypeTextDelta, &protocol.TextDelta{TurnID: ts.id, Delta: piece, Channel: channel})
	}
}

// chunkText is the text of a message chunk's content block: a text block's
// text, a resource's text, a link's URI; nothing for media.
func chunkText(raw json.RawMessage) string {
	var b contentBlock
	if len(raw) == 0 || json.Unmarshal(raw, &b) != nil {
		return ""
	}
	return blockText(b)
}

func blockText(b contentBlock) string {
	switch b.Type {
	case "text":
		return b.Text
	case "resource_link":
		return b.URI
	case "resource":
		if b.Resource != nil {
			return b.Resource.Text
		}
	}
	return ""
}

// onToolCall maps tool_call and tool_call_update: the first sight of a
// call is agent.tool.started, a new title agent.tool.updated, status
// completed or failed agent.tool.finished.
func (s *session) onToolCall(ts *turnState, u *sessionUpdate) {
	if u.ToolCallID == "" {
		s.log.Warn("acp: a tool call without an id was dropped")
		return
	}
	id := runecut.Prefix(u.ToolCallID, 256)
	st := ts.tools[u.ToolCallID]
	if st == nil {
		st = &toolState{name: toolName(deref(u.Kind))}
		ts.tools[u.ToolCallID] = st
	}
	if k := deref(u.Kind); k != "" {
		st.kind = k
	}
	if inputGiven(u.RawInput) {
		st.rawInput = u.RawInput
	}
	status := deref(u.Status)
	// A pending call without its input is announced only: opencode sends
	// rawInput {} first and the input in a later update. The event waits
	// for the input, or for the call to run or end without one.
	if !st.started && (st.rawInput != nil || status != "" && status != "pending") {
		s.startTool(ts, id, st)
	}
	for _, l := range u.Locations[:min(len(u.Locations), maxLocations)] {
		if len(st.locations) < maxLocations && l.Path != "" && !slices.Contains(st.locations, l.Path) {
			st.locations = append(st.locations, l.Path)
		}
	}
	if st.finished || !st.started {
		return
	}
	if t := deref(u.Title); t != "" && t != st.title {
		st.title = t
		s.emit(ts, protocol.TypeToolUpdated, &protocol.ToolUpdated{TurnID: ts.id, ToolUseID: id, Status: runecut.Prefix(t, 1024)})
	}
	if len(u.Content) > 0 && string(u.Content) != "null" {
		st.content = u.Content
	}
	if len(u.RawOutput) > 0 && string(u.RawOutput) != "null" {
		st.rawOutput = u.RawOutput
	}
	if status != "completed" && status != "failed" {
		return
	}
	st.finished = true
	fin := &protocol.ToolFinished{TurnID: ts.id, ToolUseID: id, ToolName: st.name, Status: protocol.ToolOK}
	if status == "failed" {
		fin.Status = protocol.ToolError
	}
	fin.Output, fin.Diff = s.toolOutput(st)
	fin.Images = toolImages(st.content)
	s.emit(ts, protocol.TypeToolFinished, fin)
	if status == "completed" {
		s.stopUnheld(ts, u.ToolCallID)
	}
	if status == "completed" && st.kind == "edit" {
		for _, l := range st.locations {
			s.handOver(ts, u.ToolCallID, l)
		}
	}
}

// startTool emits a call's agent.tool.started, once, with the input known
// so far.
func (s *session) startTool(ts *turnState, id string, st *toolState) {
	if st.started {
		return
	}
	st.started = true
	s.emit(ts, protocol.TypeToolStarted, &protocol.ToolStarted{TurnID: ts.id, ToolUseID: id, ToolName: st.name, Input: toolInput(st.rawInput)})
}

// inputGiven reports whether raw is a call's input: not absent, null or
// the empty object an agent sends before it knows the input.
func inputGiven(raw json.RawMessage) bool {
	t := strings.TrimSpace(string(raw))
	if t == "" || t == "null" {
		return false
	}
	var m map[string]json.RawMessage
	return json.Unmarshal([]byte(t), &m) != nil || len(m) > 0
}

// toolName names a call by its ACP kind: ACP gives calls a kind and a
// human title, not a tool name.
func toolName(kind string) string {
	switch kind {
	case "read":
		return "Read"
	case "edit":
		return "Edit"
	case "delete":
		return "Delete"
	case "move":
		return "Move"
	case "search":
		return "Search"
	case "execute":
		return "Execute"
	case "think":
		return "Think"
	case "fetch":
		return "Fetch"
	case "switch_mode":
		return "SwitchMode"
	}
	return "Tool"
}

// toolInput is a call's raw input as an event input: an object as it is,
// anything else wrapped, an oversized one replaced by a note.
func toolInput(raw json.RawMessage) json.RawMessage {
	raw = json.RawMessage(strings.TrimSpace(string(raw)))
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil
	case len(raw) > maxToolInput:
		b, _ := json.Marshal(map[string]any{"truncated": true, "bytes": len(raw)}) // always encodes
		return b
	case raw[0] == '{':
		return raw
	}
	b, _ := json.Marshal(map[string]json.RawMessage{"value": raw}) // raw is valid JSON
	return b
}

// toolOutput renders a finished call's content: text blocks as text, the
// first diff as a FileDiff (inside the workspace), terminals as a note;
// with no content, the raw output.
func (s *session) toolOutput(st *toolState) (string, *protocol.FileDiff) {
	var (
		parts []string
		diff  *protocol.FileDiff
	)
	var items []toolContent
	if len(st.content) > 0 && json.Unmarshal(st.content, &items) == nil {
		for _, c := range items {
			switch c.Type {
			case "content":
				if c.Content != nil && c.Content.Type == "image" {
					// The image itself goes in the event (toolImages) when
					// it fits; the text says what it was either way.
					parts = append(parts, "[image "+c.Content.MimeType+"]")
				} else if c.Content != nil {
					if t := blockText(*c.Content); t != "" {
						parts = append(parts, t)
					}
				}
			case "diff":
				rel, ok := s.relPath(c.Path)
				if !ok {
					parts = append(parts, "changed a file outside the workspace")
					continue
				}
				parts = append(parts, "changed "+rel)
				if diff == nil {
					diff = textdiff.Diff(rel, deref(c.OldText), c.NewText, 3)
					diff.IsNewFile = c.OldText == nil
				}
			case "terminal":
				parts = append(parts, "(terminal output)")
			}
		}
	}
	if len(parts) == 0 && len(st.rawOutput) > 0 {
		var str string
		if json.Unmarshal(st.rawOutput, &str) == nil {
			parts = append(parts, str)
		} else {
			parts = append(parts, string(st.rawOutput))
		}
	}
	out := strings.Join(parts, "\n")
	if len(out) > maxToolOutput {
		out = runecut.Prefix(out, maxToolOutput) + "\n[… output cut]"
	}
	return out, diff
}

// toolImages are the image blocks of a call's content that an
// agent.tool.finished can carry (protocol.AppendToolImage: one too large,
// or of a type the UI does not show, is left out).
func toolImages(content json.RawMessage) []protocol.ToolImage {
	var items []toolContent
	if len(content) == 0 || json.Unmarshal(content, &items) != nil {
		return nil
	}
	var imgs []protocol.ToolImage
	for _, c := range items {
		if c.Type == "content" && c.Content != nil && c.Content.Type == "image" {
			imgs, _ = protocol.AppendToolImage(imgs, c.Content.MimeType, c.Content.Data)
		}
	}
	return imgs
}

// relPath makes an agent's absolute path workspace-relative.
func (s *session) relPath(p string) (string, bool) {
	if p == "" {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(s.ws, p)
	}
	rel, err := filepath.Rel(s.ws, filepath.Clean(p))
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

// onPlan shows a plan update as a "Plan" tool call whose output is the
// checklist: ACP sends the whole plan each time, so each update is a call
// of its own.
func (s *session) onPlan(ts *turnState, entries []planEntry) {
	s.plans++
	id := fmt.Sprintf("ferry-plan-%d", s.plans)
	input, _ := json.Marshal(map[string]any{"entries": entries}) // plain strings: always encodes
	if len(input) > maxToolInput {
		input = toolInput(input)
	}
	var b strings.Builder
	for _, e := range entries {
		mark := " "
		switch e.Status {
		case "completed":
			mark = "x"
		case "in_progress":
			mark = "~"
		}
		fmt.Fprintf(&b, "- [%s] %s\n", mark, e.Content)
	}
	out := b.String()
	if len(out) > maxToolOutput {
		out = runecut.Prefix(out, maxToolOutput) + "\n[… plan cut]"
	}
	s.emit(ts, protocol.TypeToolStarted, &protocol.ToolStarted{TurnID: ts.id, ToolUseID: id, ToolName: "Plan", Input: input})
	s.emit(ts, protocol.TypeToolFinished, &protocol.ToolFinished{TurnID: ts.id, ToolUseID: id, ToolName: "Plan", Status: protocol.ToolOK, Output: out})
}

// onModeUpdate follows the agent's own mode switches (e.g. leaving plan
// mode after the user approved the plan).
func (s *session) onModeUpdate(ts *turnState, agentID string) {
	if agentID == "" {
		return
	}
	mode := s.ferryMode(agentID)
	s.mu.Lock()
	if strictness(mode) < strictness(s.mode) && !s.relaxOK {
		// Never trust the agent to keep to a mode: it may not leave one on
		// its own, only after the user allowed it (or by SetMode).
		cur := s.mode
		s.agentMode = agentID
		s.mu.Unlock()
		s.log.Warn("acp: the agent left a mode without the user's leave; ferry keeps enforcing it", "mode", cur, "agent_mode", runecut.Prefix(agentID, 64))
		return
	}
	s.relaxOK = false
	changed := s.mode != mode
	s.mode, s.agentMode = mode, agentID
	s.mu.Unlock()
	if changed && ts != nil {
		s.emit(ts, protocol.TypeModeChanged, &protocol.ModeChanged{Mode: mode})
	}
}

// strictness orders the modes: plan allows least, default most.
func strictness(mode string) int {
	switch mode {
	case protocol.ModePlan:
		return 2
	case protocol.ModeReview:
		return 1
	}
	return 0
}

// onPermission turns session/request_permission into an interaction.
func (s *session) onPermission(m *message) {
	var p permissionRequest
	if err := json.Unmarshal(m.Params, &p); err != nil || len(p.Options) == 0 || p.SessionID != s.sessionID() {
		s.replyError(m.ID, &rpcError{Code: rpcInvalidParams, Message: "invalid params: a known sessionId, a toolCall and options are required"})
		return
	}
	ts := s.turn
	if ts == nil {
		// Nobody to ask outside a turn (ACP only asks while a prompt runs).
		s.reply(m.ID, cancelledOutcome())
		return
	}
	reject := ""
	for _, kind := range []string{"reject_once", "reject_always"} {
		for _, o := range p.Options {
			if reject == "" && o.Kind == kind {
				reject = o.OptionID
			}
		}
	}
	// Never trust the agent to keep to the mode: a writing or executing
	// call is refused in plan and review mode without asking.
	mc := modeCall(p.ToolCall)
	if mc.Tool == "Bash" {
		mc.Dir = s.ws // the agent's session cwd (session/new)
	}
	if ok, why := permission.ModeAllows(s.currentMode(), mc); !ok {
		s.log.Info("acp: permission refused by the mode", "tool", runecut.Prefix(deref(p.ToolCall.Title), 200), "why", why)
		if reject != "" {
			s.reply(m.ID, selectedOutcome(reject))
		} else {
			s.reply(m.ID, cancelledOutcome())
		}
		return
	}
	// The prompt's rules answer what they decide: a denied call is
	// rejected, one allow rules cover is allowed once, neither asked.
	switch s.ruleDecision(knownCall(ts, p.ToolCall)) {
	case permission.Deny:
		s.log.Info("acp: permission refused by a rule of the prompt", "tool", runecut.Prefix(deref(p.ToolCall.Title), 200))
		if reject != "" {
			s.reply(m.ID, selectedOutcome(reject))
		} else {
			s.reply(m.ID, cancelledOutcome())
		}
		return
	case permission.Allow:
		for _, o := range p.Options {
			if o.Kind == "allow_once" {
				s.log.Info("acp: permission allowed by a rule of the prompt", "tool", runecut.Prefix(deref(p.ToolCall.Title), 200))
				s.reply(m.ID, selectedOutcome(o.OptionID))
				return
			}
		}
	}
	a := &ask{rpcID: m.ID, turn: ts, values: map[string]string{}, kinds: map[string]string{}, reject: reject,
		switchMode: deref(p.ToolCall.Kind) == "switch_mode", call: mc}
	var opts []protocol.Option
	for i, o := range p.Options {
		v := optionValue(o.Kind)
		if _, dup := a.values[v]; v == "" || dup {
			v = fmt.Sprintf("option_%d", i+1)
		}
		a.values[v], a.kinds[v] = o.OptionID, o.Kind
		label := runecut.Prefix(o.Name, 1024)
		if label == "" {
			label = v
		}
		opts = append(opts, protocol.Option{Value: v, Label: label})
	}
	tc := p.ToolCall
	title := runecut.Prefix(deref(tc.Title), 1024)
	if title == "" {
		title = "The agent asks for permission"
	}
	name := toolName(deref(tc.Kind))
	if st := ts.tools[tc.ToolCallID]; st != nil {
		if deref(tc.Kind) == "" {
			name = st.name
		}
		if !st.started { // the interaction names a call already shown
			if st.rawInput == nil && inputGiven(tc.RawInput) {
				st.rawInput = tc.RawInput
			}
			s.startTool(ts, runecut.Prefix(tc.ToolCallID, 256), st)
		}
	}
	st := &toolState{content: tc.Content}
	msg, diff := s.toolOutput(st)
	id := protocol.NewID()
	s.mu.Lock()
	if ts.cancelled {
		s.mu.Unlock()
		s.reply(m.ID, cancelledOutcome())
		return
	}
	s.asks[id] = a
	s.mu.Unlock()
	if err := s.tryEmit(ts, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
		InteractionID: id, TurnID: ts.id, Kind: protocol.InteractionPermission,
		Title: title, Message: runecut.Prefix(msg, 65536), Options: opts,
		ToolUseID: runecut.Prefix(tc.ToolCallID, 256), ToolName: name, ToolInput: toolInput(tc.RawInput), Diff: diff,
	}); err != nil {
		// Nobody was asked: the agent must not wait for an answer.
		s.mu.Lock()
		_, open := s.asks[id]
		delete(s.asks, id)
		s.mu.Unlock()
		if open {
			s.reply(m.ID, cancelledOutcome())
		}
	}
}

// optionValue maps an ACP permission option kind onto ferry's values.
func optionValue(kind string) string {
	switch kind {
	case "allow_once":
		return protocol.AllowOnce
	case "allow_always":
		return protocol.AllowAlways
	case "reject_once":
		return protocol.Deny
	case "reject_always":
		return "deny_always"
	}
	return ""
}

// modeCall describes a permission request for permission.ModeAllows: read,
// search, think, fetch and mode switches are read-only; an execute call is
// a Bash command (review mode allows read-only git).
func modeCall(tc sessionUpdate) permission.Call {
	kind := deref(tc.Kind)
	switch kind {
	case "read", "search", "think", "fetch", "switch_mode":
		return permission.Call{Tool: toolName(kind), ReadOnly: true}
	case "execute":
		var in struct {
			Command string `json:"command"`
		}
		_ = json.Unmarshal(tc.RawInput, &in) // no command: refused as a write
		return permission.Call{Tool: "Bash", Command: in.Command}
	}
	return permission.Call{Tool: toolName(kind)}
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
