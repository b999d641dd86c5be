package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/runecut"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// Control request subtypes ferry serves.
const (
	subCanUseTool   = "can_use_tool"
	subHookCallback = "hook_callback"
)

// askUserQuestion is Claude Code's tool for questions to the user; it comes
// to ferry as a can_use_tool request whose answer carries the answers.
const askUserQuestion = "AskUserQuestion"

// readOnlyTools are Claude Code tools that change nothing in the workspace
// and run nothing: plan and review mode let them run. Agent (Task) starts a
// subagent, whose own tool calls each pass ferry's check. Anything else,
// MCP tools included, counts as writing.
var readOnlyTools = map[string]bool{
	"Read": true, "Glob": true, "Grep": true, "LS": true, "NotebookRead": true,
	"WebFetch": true, "WebSearch": true, askUserQuestion: true,
	"TodoWrite": true, "TodoRead": true, "TaskCreate": true, "TaskGet": true, "TaskList": true,
	"TaskUpdate": true, "TaskOutput": true, "BashOutput": true,
	"Task": true, "Agent": true, "Skill": true, "StructuredOutput": true, "ToolSearch": true,
	"ListMcpResourcesTool": true, "ReadMcpResourceTool": true, "EnterPlanMode": true,
}

// toolArgs are the fields of a tool's input that ferry's checks look at.
type toolArgs struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Command      string `json:"command"`
	URL          string `json:"url"`
}

// callFor is a tool call as ferry's permission rules see it.
func (s *session) callFor(tool string, input json.RawMessage) permission.Call {
	var in toolArgs
	_ = json.Unmarshal(input, &in) // a malformed input has no path or command
	c := permission.Call{Tool: tool, ReadOnly: readOnlyTools[tool]}
	if tool == "Bash" {
		c.Command, c.Dir = in.Command, s.ws // Claude Code starts in the workspace
	}
	if tool == "WebFetch" {
		// ferry's WebFetch rules are per domain, for Claude Code's too.
		if u, err := url.Parse(in.URL); err == nil {
			c.Domain = permission.NormalizeDomain(u.Hostname())
		}
		return c
	}
	for _, p := range []string{in.FilePath, in.NotebookPath, in.Path} {
		if p != "" {
			c.Path = s.rel(p)
			break
		}
	}
	return c
}

// rel is p relative to the workspace when it lies inside, else p.
func (s *session) rel(p string) string {
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	r, err := filepath.Rel(s.ws, p)
	if err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		return p
	}
	return filepath.ToSlash(r)
}

// modeAllows applies the session's mode to a call; why is what the model
// is told when it does not.
func (s *session) modeAllows(c permission.Call) (ok bool, why string) {
	s.mu.Lock()
	mode := s.mode
	s.mu.Unlock()
	ok, reason := permission.ModeAllows(mode, c)
	if ok {
		return true, ""
	}
	if c.Tool == "ExitPlanMode" {
		return false, fmt.Sprintf("Refused by ferry: the session is in %s mode, and only the user switches modes. Present your plan as your answer and end the turn.", mode)
	}
	return false, fmt.Sprintf("Refused by ferry: the session is in %s mode (%s). Do not retry this call; continue within the mode's limits or tell the user what you would do.", mode, reason)
}

func (s *session) markDenied(toolUseID string) {
	if toolUseID == "" {
		return
	}
	s.mu.Lock()
	s.denied[toolUseID] = true
	s.mu.Unlock()
}

func (s *session) wasDenied(toolUseID string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.denied[toolUseID]
}

// answerHook answers ferry's PreToolUse hook: a call the mode or the
// prompt's denied_tools forbid is refused before Claude Code's own
// permission flow sees it; anything else passes on to it.
func (s *session) answerHook(p *proc, r *controlRequestLine) {
	var in hookInput
	if err := json.Unmarshal(r.Request.Input, &in); err != nil || in.HookEventName != "PreToolUse" {
		s.reply(p, successResponse(r.RequestID, hookPass))
		return
	}
	c := s.callFor(in.ToolName, in.ToolInput)
	if c.Tool == "Bash" && filepath.IsAbs(in.Cwd) {
		c.Dir = in.Cwd // where Claude Code's shell is now (cd persists)
	}
	if ok, why := s.modeAllows(c); !ok {
		s.markDenied(in.ToolUseID)
		s.reply(p, successResponse(r.RequestID, hookDeny(why)))
		return
	}
	s.mu.Lock()
	deny := s.deny
	s.mu.Unlock()
	if deny.denies(c) {
		s.markDenied(in.ToolUseID)
		s.reply(p, successResponse(r.RequestID, hookDeny(deniedByPrompt)))
		return
	}
	s.snapshotBefore(in.ToolName, in.ToolInput, in.ToolUseID)
	s.reply(p, successResponse(r.RequestID, hookPass))
}

// deniedByPrompt is what the model is told of a call the prompt's
// denied_tools refuse.
const deniedByPrompt = "Refused by ferry: a denied_tools rule of this prompt forbids this call. Do not retry it; do without it or tell the user what you need."

// answerIdle answers a control request that came with no turn to ask in.
func (s *session) answerIdle(p *proc, r *controlRequestLine) {
	switch r.Request.Subtype {
	case subHookCallback:
		s.answerHook(p, r)
	case subCanUseTool:
		s.markDenied(r.Request.ToolUseID)
		s.reply(p, successResponse(r.RequestID, deny("Refused by ferry: no prompt is running, so the user cannot be asked.")))
	default:
		s.reply(p, errorResponse(r.RequestID, "ferry does not serve "+runecut.Ellipsis(r.Request.Subtype, 64)))
	}
}

// ask is one can_use_tool request waiting for the user.
type ask struct {
	t         *turn
	requestID string
	answer    chan *protocol.InteractionResponse
	withdrawn chan struct{}
	once      sync.Once
	id        string // the open interaction (guarded by session.mu)
}

// open registers a's next interaction under id.
func (s *session) open(a *ask, id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a.id = id
	s.pending[id] = a
	s.byRequest[a.requestID] = a
}

// forget drops a's registration.
func (s *session) forget(a *ask) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, a.id)
	if s.byRequest[a.requestID] == a {
		delete(s.byRequest, a.requestID)
	}
}

// withdraw is control_cancel_request: the CLI no longer waits for the
// answer (it was interrupted); the interaction is closed.
func (s *session) withdraw(requestID string) {
	s.mu.Lock()
	a := s.byRequest[requestID]
	if a != nil {
		delete(s.byRequest, requestID)
		delete(s.pending, a.id)
	}
	s.mu.Unlock()
	if a != nil {
		a.once.Do(func() { close(a.withdrawn) })
	}
}

// outcome of waiting for an answer.
type outcome int

const (
	answered outcome = iota
	withdrawn
	cancelled
	gone
)

// await waits for a's open interaction to be answered.
func (s *session) await(a *ask) (*protocol.InteractionResponse, outcome) {
	select {
	case r := <-a.answer:
		return r, answered
	case <-a.withdrawn:
		return nil, withdrawn
	case <-a.t.ctx.Done():
		s.forget(a)
		return nil, cancelled
	case <-a.t.p.exited:
		s.forget(a)
		return nil, gone
	}
}

// canUseTool handles a permission request of the CLI, in stream order (so
// the interaction follows its tool's agent.tool.started). The mode is
// checked first: a call the mode forbids never reaches the user.
func (t *turn) canUseTool(r *controlRequestLine) {
	s := t.s
	req := &r.Request
	call := s.callFor(req.ToolName, req.Input)
	if ok, why := s.modeAllows(call); !ok {
		s.markDenied(req.ToolUseID)
		s.reply(t.p, successResponse(r.RequestID, deny(why)))
		return
	}
	if t.emit == nil || t.ctx.Err() != nil || t.stopped.Load() {
		s.markDenied(req.ToolUseID)
		s.reply(t.p, successResponse(r.RequestID, deny("Refused by ferry: the prompt is over, so the user cannot be asked.")))
		return
	}
	a := &ask{t: t, requestID: r.RequestID, answer: make(chan *protocol.InteractionResponse, 1), withdrawn: make(chan struct{})}
	if req.ToolName == askUserQuestion {
		var q questionInput
		if err := json.Unmarshal(req.Input, &q); err == nil && len(q.Questions) > 0 {
			ir := questionRequest(t.id, req, q.Questions, 0)
			s.open(a, ir.InteractionID)
			t.send(protocol.TypeInteractionRequest, ir)
			s.wg.Add(1)
			go s.awaitQuestions(a, req.Input, req.ToolUseID, q.Questions)
			return
		}
	}
	ir := s.permissionRequest(t.id, req, call)
	s.open(a, ir.InteractionID)
	t.send(protocol.TypeInteractionRequest, ir)
	s.wg.Add(1)
	go s.awaitPermission(a, req.ToolName, req.Input, req.ToolUseID, req.PermissionSuggestions)
}

// awaitPermission waits for the user's answer and gives it to the CLI.
func (s *session) awaitPermission(a *ask, tool string, input json.RawMessage, toolUseID string, suggestions []json.RawMessage) {
	defer s.wg.Done()
	resp, out := s.await(a)
	var res permissionResult
	switch out {
	case withdrawn, gone:
		return
	case cancelled:
		res = deny("The user cancelled the prompt.")
	default:
		var vals []string
		if resp != nil {
			vals = resp.SelectedValue.Values
		}
		always := sessionScoped(suggestions)
		switch {
		case resp == nil:
			res = deny("The user did not answer in time; the call was not run.")
		case slices.Contains(vals, protocol.AllowAlways) && len(always) > 0:
			res = allow(input, always)
		case slices.Contains(vals, protocol.AllowOnce), slices.Contains(vals, protocol.AllowAlways):
			res = allow(input, nil)
		default:
			res = deny(deniedByUser(resp.Note))
		}
		// The mode may have changed while the user thought about it.
		if res.Behavior == "allow" {
			if ok, why := s.modeAllows(s.callFor(tool, input)); !ok {
				res = deny(why)
			}
		}
	}
	if res.Behavior != "allow" {
		s.markDenied(toolUseID)
	}
	s.forget(a)
	s.reply(a.t.p, successResponse(a.requestID, res))
}

// deniedByUser is the deny message Claude Code hands its model as the
// call's tool result: with the user's note when there is one.
func deniedByUser(note string) string {
	if note = strings.TrimSpace(note); note == "" {
		return "The user denied this call."
	}
	return "The user denied this call and said: " + strconv.Quote(note) + ". Do not retry it; do what the user said instead."
}

// sessionScoped keeps the permission updates Claude Code suggests for
// "allow always" that stay within the session: rules and the acceptEdits
// mode, each with destination "session" (ferry's "allow always" lasts for
// the session, never written into the user's settings files).
func sessionScoped(suggestions []json.RawMessage) []json.RawMessage {
	var out []json.RawMessage
	for _, raw := range suggestions {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			continue
		}
		var typ, mode string
		_ = json.Unmarshal(m["type"], &typ)
		_ = json.Unmarshal(m["mode"], &mode)
		switch {
		case typ == "addRules" || typ == "addDirectories":
		case typ == "setMode" && mode == "acceptEdits":
		default:
			continue
		}
		m["destination"] = json.RawMessage(`"session"`)
		b, err := json.Marshal(m)
		if err != nil {
			continue
		}
		out = append(out, b)
	}
	return out
}

// describeSuggestions says in words what "allow always" would allow.
func describeSuggestions(suggestions []json.RawMessage) string {
	var parts []string
	for _, raw := range suggestions {
		var sg struct {
			Type  string `json:"type"`
			Mode  string `json:"mode"`
			Rules []struct {
				ToolName    string `json:"toolName"`
				RuleContent string `json:"ruleContent"`
			} `json:"rules"`
			Directories []string `json:"directories"`
		}
		if json.Unmarshal(raw, &sg) != nil {
			continue
		}
		switch sg.Type {
		case "setMode":
			parts = append(parts, "accept all file edits")
		case "addRules":
			for _, r := range sg.Rules {
				if r.RuleContent != "" {
					parts = append(parts, r.ToolName+"("+r.RuleContent+")")
				} else {
					parts = append(parts, r.ToolName)
				}
			}
		case "addDirectories":
			parts = append(parts, "access to "+strings.Join(sg.Directories, ", "))
		}
	}
	if len(parts) == 0 {
		return "Allow calls like this one without asking for the rest of this session"
	}
	return "Allow " + strings.Join(parts, ", ") + " without asking for the rest of this session"
}

// permissionRequest is the interaction for a tool permission.
func (s *session) permissionRequest(turnID string, req *controlRequest, call permission.Call) *protocol.InteractionRequest {
	title := fmt.Sprintf("Allow %s?", req.ToolName)
	var msg strings.Builder
	switch {
	case call.Command != "":
		title = "Allow Bash to run " + shorten(call.Command, 200) + "?"
		msg.WriteString("Claude Code wants to run:\n\n```sh\n" + runecut.Ellipsis(call.Command, 8<<10) + "\n```")
	case call.Path != "":
		title = fmt.Sprintf("Allow %s on %s?", req.ToolName, shorten(call.Path, 200))
		fmt.Fprintf(&msg, "Claude Code wants to use %s on `%s`.", req.ToolName, runecut.Ellipsis(call.Path, 4<<10))
	default:
		fmt.Fprintf(&msg, "Claude Code wants to use %s.", req.ToolName)
	}
	if d := strings.TrimSpace(req.Description); d != "" && call.Path == "" {
		msg.WriteString("\n\n" + runecut.Ellipsis(d, 4<<10))
	}
	if req.BlockedPath != nil && *req.BlockedPath != "" {
		msg.WriteString("\n\nIt reaches outside the allowed directories: `" + runecut.Ellipsis(*req.BlockedPath, 4<<10) + "`.")
	}
	opts := []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow once"}}
	if always := sessionScoped(req.PermissionSuggestions); len(always) > 0 {
		opts = append(opts, protocol.Option{Value: protocol.AllowAlways, Label: "Allow always",
			Description: shorten(describeSuggestions(always), 1000)})
	}
	opts = append(opts, protocol.Option{Value: protocol.Deny, Label: "Deny"})
	return &protocol.InteractionRequest{
		InteractionID: protocol.NewID(),
		TurnID:        turnID,
		Kind:          protocol.InteractionPermission,
		Title:         shorten(title, 1000),
		Message:       runecut.Ellipsis(msg.String(), 60<<10),
		Options:       opts,
		DefaultValue:  protocol.Deny, // what a timeout does: it never grants
		ToolUseID:     runecut.Ellipsis(req.ToolUseID, 256),
		ToolName:      runecut.Ellipsis(req.ToolName, 256),
		ToolInput:     eventInput(req.Input),
		Diff:          s.proposedDiff(req.ToolName, req.Input),
	}
}

// questionInput is AskUserQuestion's input.
type questionInput struct {
	Questions []question `json:"questions"`
}

type question struct {
	Question    string `json:"question"`
	Header      string `json:"header"`
	MultiSelect bool   `json:"multiSelect"`
	Options     []struct {
		Label       string `json:"label"`
		Description string `json:"description"`
	} `json:"options"`
}

// optionValues are the option values of a question: the labels when they
// are usable as values (unique, short enough), else "option_N".
func optionValues(q question) []string {
	vals := make([]string, len(q.Options))
	seen := map[string]bool{}
	usable := true
	for i, o := range q.Options {
		if o.Label == "" || len(o.Label) > 256 || seen[o.Label] {
			usable = false
		}
		seen[o.Label] = true
		vals[i] = o.Label
	}
	if !usable {
		for i := range vals {
			vals[i] = "option_" + strconv.Itoa(i+1)
		}
	}
	return vals
}

// questionRequest is the interaction for question i of an AskUserQuestion
// call: a single or multi select over its options, or text input when it
// has none.
func questionRequest(turnID string, req *controlRequest, qs []question, i int) *protocol.InteractionRequest {
	q := qs[i]
	title := strings.TrimSpace(q.Question)
	if title == "" {
		title = "Claude Code has a question"
	}
	var msg string
	if h := strings.TrimSpace(q.Header); h != "" {
		msg = "**" + runecut.Ellipsis(h, 1<<10) + "**"
	}
	if len(qs) > 1 {
		if msg != "" {
			msg += " · "
		}
		msg += fmt.Sprintf("question %d of %d", i+1, len(qs))
	}
	ir := &protocol.InteractionRequest{
		InteractionID: protocol.NewID(),
		TurnID:        turnID,
		Kind:          protocol.InteractionTextInput,
		Title:         shorten(title, 1000),
		Message:       msg,
		ToolUseID:     runecut.Ellipsis(req.ToolUseID, 256),
		ToolName:      askUserQuestion,
	}
	if len(q.Options) == 0 {
		return ir
	}
	ir.Kind = protocol.InteractionSingleSelect
	if q.MultiSelect {
		ir.Kind = protocol.InteractionMultiSelect
	}
	vals := optionValues(q)
	for j, o := range q.Options {
		label := shorten(o.Label, 1000)
		if label == "" {
			label = "Option " + strconv.Itoa(j+1)
		}
		ir.Options = append(ir.Options, protocol.Option{Value: vals[j], Label: label, Description: shorten(o.Description, 4000)})
	}
	return ir
}

// awaitQuestions asks the questions one after the other and gives Claude
// Code the answers (the tool's input with "answers" added: question text →
// the chosen labels, joined with ", "). Any question left unanswered denies
// the call.
func (s *session) awaitQuestions(a *ask, input json.RawMessage, toolUseID string, qs []question) {
	defer s.wg.Done()
	answers := map[string]string{}
	for i, q := range qs {
		if i > 0 {
			req := &controlRequest{ToolUseID: toolUseID}
			ir := questionRequest(a.t.id, req, qs, i)
			s.open(a, ir.InteractionID)
			a.t.send(protocol.TypeInteractionRequest, ir)
		}
		resp, out := s.await(a)
		switch {
		case out == withdrawn || out == gone:
			return
		case out == cancelled:
			s.markDenied(toolUseID)
			s.reply(a.t.p, successResponse(a.requestID, deny("The user cancelled the prompt.")))
			return
		case resp == nil:
			s.forget(a)
			s.markDenied(toolUseID)
			s.reply(a.t.p, successResponse(a.requestID, deny("The user did not answer in time.")))
			return
		}
		answers[q.Question] = answerText(q, resp)
	}
	s.forget(a)
	var m map[string]json.RawMessage
	if err := json.Unmarshal(input, &m); err != nil || m == nil {
		m = map[string]json.RawMessage{}
	}
	b, _ := json.Marshal(answers)
	m["answers"] = b
	updated, err := json.Marshal(m)
	if err != nil {
		s.reply(a.t.p, successResponse(a.requestID, deny("ferry could not pass the answers on.")))
		return
	}
	s.reply(a.t.p, successResponse(a.requestID, allow(updated, nil)))
}

// answerText is an answer as Claude Code takes it: the chosen options'
// labels joined with ", ", or the text typed.
func answerText(q question, resp *protocol.InteractionResponse) string {
	if len(q.Options) == 0 || (len(resp.SelectedValue.Values) == 0 && resp.TextInput != "") {
		return resp.TextInput
	}
	vals := optionValues(q)
	var labels []string
	for _, v := range resp.SelectedValue.Values {
		if i := slices.Index(vals, v); i >= 0 {
			labels = append(labels, q.Options[i].Label)
		} else {
			labels = append(labels, v)
		}
	}
	return strings.Join(labels, ", ")
}

// shorten folds white space and cuts s to n runes.
func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// maxEventInput bounds a tool input carried in an event; longer string
// fields are cut so the event stays small (a Write's content can be
// megabytes).
const (
	maxEventInput  = 64 << 10
	maxInputString = 8 << 10
)

// eventInput is a tool input fit for an event: a JSON object (nil when it
// is not one), its long strings cut when it is too big.
func eventInput(in json.RawMessage) json.RawMessage {
	in = bytes.TrimSpace(in)
	if len(in) == 0 || in[0] != '{' || !json.Valid(in) {
		return nil
	}
	if len(in) <= maxEventInput && utf8.Valid(in) {
		return in
	}
	var v any
	if err := json.Unmarshal(in, &v); err != nil {
		return nil
	}
	// Marshal also replaces bytes that are not UTF-8 (an event must be).
	b, err := json.Marshal(cutStrings(v))
	if err != nil || len(b) > maxEventInput {
		return json.RawMessage(`{"ferry_truncated":true}`)
	}
	return b
}

func cutStrings(v any) any {
	switch x := v.(type) {
	case string:
		if len(x) > maxInputString {
			return runecut.Ellipsis(x, maxInputString) + fmt.Sprintf(" [%d bytes in all]", len(x))
		}
		return x
	case []any:
		for i := range x {
			x[i] = cutStrings(x[i])
		}
		return x
	case map[string]any:
		for k := range x {
			x[k] = cutStrings(x[k])
		}
		return x
	}
	return v
}
