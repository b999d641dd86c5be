package acpagent

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// toolKind is ACP's kind of a ferry (or Claude Code) tool.
func toolKind(name string) acp.ToolKind {
	switch name {
	case "Read", "NotebookRead", "LS":
		return acp.ToolKindRead
	case "Write", "Edit", "MultiEdit", "NotebookEdit":
		return acp.ToolKindEdit
	case "Glob", "Grep", "WebSearch":
		return acp.ToolKindSearch
	case "Bash", "BashOutput", "KillShell":
		return acp.ToolKindExecute
	case "WebFetch":
		return acp.ToolKindFetch
	case "Task", "TodoWrite", "ExitPlanMode":
		return acp.ToolKindThink
	}
	return acp.ToolKindOther
}

// toolInput is the fields of a tool's input the editor is shown.
type toolInput struct {
	FilePath     string `json:"file_path"`
	NotebookPath string `json:"notebook_path"`
	Path         string `json:"path"`
	Pattern      string `json:"pattern"`
	Command      string `json:"command"`
	URL          string `json:"url"`
	Description  string `json:"description"`
	Content      string `json:"content"`
	OldString    string `json:"old_string"`
	NewString    string `json:"new_string"`
	Todos        []struct {
		Content string `json:"content"`
		Status  string `json:"status"`
	} `json:"todos"`
}

func parseInput(raw json.RawMessage) toolInput {
	var in toolInput
	_ = json.Unmarshal(raw, &in) // what is not there stays empty
	return in
}

// file is the file the call acts on, absolute ("" for none).
func (in toolInput) file(workspace string) string {
	p := in.FilePath
	if p == "" {
		p = in.NotebookPath
	}
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(workspace, p)
	}
	return filepath.Clean(p)
}

// toolTitle is the line the editor shows for a call.
func toolTitle(name string, in toolInput, workspace string) string {
	rel := func(p string) string {
		if r, err := filepath.Rel(workspace, p); err == nil && !strings.HasPrefix(r, "..") {
			return r
		}
		return p
	}
	switch {
	case in.file(workspace) != "":
		return name + " " + rel(in.file(workspace))
	case in.Command != "":
		c := in.Command
		if len(c) > 200 {
			c = c[:200] + "…"
		}
		return name + ": " + c
	case in.Pattern != "":
		return name + " " + in.Pattern
	case in.URL != "":
		return name + " " + in.URL
	case in.Description != "":
		return name + ": " + in.Description
	}
	return name
}

func locations(in toolInput, workspace string) []acp.ToolCallLocation {
	if f := in.file(workspace); f != "" {
		return []acp.ToolCallLocation{{Path: f}}
	}
	return nil
}

// rawInput is the call's input as JSON for the editor.
func rawInput(raw json.RawMessage) any {
	if len(raw) == 0 {
		return nil
	}
	return raw
}

// diffContent is an edit's change as ACP's diff: from the input (Edit's
// strings, Write's content), else from ferry's hunks.
func diffContent(name string, in toolInput, d *protocol.FileDiff, workspace string) []acp.ToolCallContent {
	path := in.file(workspace)
	switch {
	case name == "Edit" && path != "" && (in.OldString != "" || in.NewString != ""):
		return []acp.ToolCallContent{acp.ToolDiffContent(path, in.NewString, in.OldString)}
	case name == "Write" && path != "" && (d == nil || d.IsNewFile):
		return []acp.ToolCallContent{acp.ToolDiffContent(path, in.Content)}
	case d != nil:
		if path == "" {
			path = filepath.Join(workspace, filepath.FromSlash(d.Path))
		}
		var old, neu strings.Builder
		for i, h := range d.Hunks {
			if i > 0 {
				old.WriteString("…\n")
				neu.WriteString("…\n")
			}
			for _, l := range h.Lines {
				if l.Op != "add" {
					old.WriteString(l.Text + "\n")
				}
				if l.Op != "delete" {
					neu.WriteString(l.Text + "\n")
				}
			}
		}
		if d.IsNewFile {
			return []acp.ToolCallContent{acp.ToolDiffContent(path, neu.String())}
		}
		return []acp.ToolCallContent{acp.ToolDiffContent(path, neu.String(), old.String())}
	}
	return nil
}

// plan is a todo list (Claude Code's TodoWrite) as ACP's plan.
func plan(in toolInput) []acp.PlanEntry {
	var entries []acp.PlanEntry
	for _, t := range in.Todos {
		st := acp.PlanEntryStatusPending
		switch t.Status {
		case "in_progress":
			st = acp.PlanEntryStatusInProgress
		case "completed":
			st = acp.PlanEntryStatusCompleted
		}
		entries = append(entries, acp.PlanEntry{Content: t.Content, Priority: acp.PlanEntryPriorityMedium, Status: st})
	}
	return entries
}

func commandsUpdate(cmds []protocol.AgentCommand) acp.SessionUpdate {
	out := make([]acp.AvailableCommand, 0, len(cmds))
	for _, c := range cmds {
		ac := acp.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &acp.AvailableCommandInput{Unstructured: &acp.UnstructuredCommandInput{Hint: c.Hint}}
		}
		out = append(out, ac)
	}
	return acp.SessionUpdate{AvailableCommandsUpdate: &acp.SessionAvailableCommandsUpdate{AvailableCommands: out}}
}

// toolStarted: s.mu is held.
func (s *session) toolStarted(p *protocol.ToolStarted) {
	s.tools[p.ToolUseID] = &toolState{name: p.ToolName, input: p.Input}
	in := parseInput(p.Input)
	s.update(acp.StartToolCall(acp.ToolCallId(p.ToolUseID), toolTitle(p.ToolName, in, s.t.Workspace),
		acp.WithStartKind(toolKind(p.ToolName)), acp.WithStartStatus(acp.ToolCallStatusInProgress),
		acp.WithStartRawInput(rawInput(p.Input)), acp.WithStartLocations(locations(in, s.t.Workspace))))
}

// toolUpdated: s.mu is held. ACP's content replaces what was shown, so
// the output so far is sent whole (its start, within maxToolOutput).
func (s *session) toolUpdated(p *protocol.ToolUpdated) {
	ts := s.tools[p.ToolUseID]
	if ts == nil || p.OutputDelta == "" {
		return
	}
	if ts.output.Len() < maxToolOutput {
		ts.output.WriteString(p.OutputDelta)
	}
	s.update(acp.UpdateToolCall(acp.ToolCallId(p.ToolUseID), acp.WithUpdateStatus(acp.ToolCallStatusInProgress),
		acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(ts.output.String()))})))
}

// toolFinished: s.mu is held.
func (s *session) toolFinished(p *protocol.ToolFinished) {
	ts := s.tools[p.ToolUseID]
	delete(s.tools, p.ToolUseID)
	var in toolInput
	if ts != nil {
		in = parseInput(ts.input)
	}
	status := acp.ToolCallStatusCompleted
	if p.Status != protocol.ToolOK {
		status = acp.ToolCallStatusFailed
	}
	var content []acp.ToolCallContent
	if p.Status == protocol.ToolOK {
		content = diffContent(p.ToolName, in, p.Diff, s.t.Workspace)
	}
	out := p.Output
	if len(out) > maxToolOutput {
		out = out[:maxToolOutput] + "\n…"
	}
	if out != "" && (content == nil || p.Status != protocol.ToolOK) {
		content = append(content, acp.ToolContent(acp.TextBlock(out)))
	}
	for _, img := range p.Images {
		content = append(content, acp.ToolContent(acp.ImageBlock(img.Data, img.MediaType)))
	}
	opts := []acp.ToolCallUpdateOpt{acp.WithUpdateStatus(status), acp.WithUpdateRawOutput(map[string]any{"status": p.Status, "output": out})}
	if content != nil {
		opts = append(opts, acp.WithUpdateContent(content))
	}
	s.update(acp.UpdateToolCall(acp.ToolCallId(p.ToolUseID), opts...))
	if p.ToolName == "TodoWrite" && p.Status == protocol.ToolOK && len(in.Todos) > 0 {
		// Only a list the tool accepted is the plan: one it refused (two
		// items in progress, …) would show the editor a plan that is not.
		s.update(acp.UpdatePlan(plan(in)...))
	}
}

// Option ids of a permission the editor is asked (ACP's kinds).
const (
	optAllowOnce    = "allow_once"
	optAllowAlways  = "allow_always"
	optRejectOnce   = "reject_once"
	optRejectAlways = "reject_always"
)

// call is the permission rules' view of a request.
func (s *session) call(r *protocol.InteractionRequest) permission.Call {
	in := parseInput(r.ToolInput)
	p := in.FilePath
	if p == "" {
		p = in.NotebookPath
	}
	if p == "" {
		p = in.Path
	}
	return permission.Call{Tool: r.ToolName, Path: p, Command: in.Command, Dir: s.t.Workspace}
}

// answer sends the answer to an interaction; given while the connection
// to the master is down, once it is up again (the master refuses it if
// the question was settled meanwhile).
func (s *session) answer(id, value string) {
	m := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: id, SelectedValue: protocol.Single(value)})
	m.SessionID = s.id
	if err := s.sendOnceUp(m); err != nil {
		s.log.Warn("acp: could not answer the interaction", "interaction", id, "err", err)
	}
}

// sendOnceUp sends m (send waits out a connection that is down); a send
// that fails as the connection drops is made again once it is back.
func (s *session) sendOnceUp(m *protocol.Message) error {
	err := s.ui.send(s.a.ctx, m)
	if err != nil && s.ui.waitUp(s.ctx) == nil {
		err = s.ui.send(s.a.ctx, m)
	}
	return err
}

// ask puts r to the editor (session/request_permission), unless the
// face's rules decide it, and sends its answer. Another UI's answer first
// withdraws the question (resolved).
func (s *session) ask(r *protocol.InteractionRequest) {
	s.mu.Lock()
	if s.settled[r.InteractionID] || s.asks[r.InteractionID] != nil {
		s.mu.Unlock()
		return
	}
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	s.asks[r.InteractionID] = cancel
	s.askTool[r.InteractionID] = r.ToolUseID
	rules := s.rules
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.asks, r.InteractionID)
		s.mu.Unlock()
	}()

	var opts []acp.PermissionOption
	values := map[string]string{} // option id → ferry's value
	switch r.Kind {
	case protocol.InteractionPermission:
		if r.ToolName != "" {
			switch rules.Decide(s.call(r)) {
			case permission.Deny:
				s.answer(r.InteractionID, protocol.Deny)
				return
			case permission.Allow:
				if len(rules.Allow) > 0 {
					s.answer(r.InteractionID, protocol.AllowOnce)
					return
				}
			}
		}
		for _, o := range r.Options {
			switch o.Value {
			case protocol.AllowOnce:
				opts = append(opts, acp.PermissionOption{OptionId: optAllowOnce, Kind: acp.PermissionOptionKindAllowOnce, Name: o.Label})
				values[optAllowOnce] = o.Value
			case protocol.AllowAlways:
				opts = append(opts, acp.PermissionOption{OptionId: optAllowAlways, Kind: acp.PermissionOptionKindAllowAlways, Name: o.Label})
				values[optAllowAlways] = o.Value
			case protocol.Deny:
				opts = append(opts, acp.PermissionOption{OptionId: optRejectOnce, Kind: acp.PermissionOptionKindRejectOnce, Name: o.Label},
					acp.PermissionOption{OptionId: optRejectAlways, Kind: acp.PermissionOptionKindRejectAlways, Name: "Always deny"})
				values[optRejectOnce], values[optRejectAlways] = o.Value, o.Value
			}
		}
	case protocol.InteractionSingleSelect:
		for _, o := range r.Options {
			opts = append(opts, acp.PermissionOption{OptionId: acp.PermissionOptionId(o.Value), Kind: acp.PermissionOptionKindAllowOnce, Name: o.Label})
			values[o.Value] = o.Value
		}
	default:
		// ACP has no free text or multiple choice: another UI answers.
		s.update(acp.UpdateAgentMessageText(fmt.Sprintf("\n\n**ferry asks: %s** — answer it in ferry's web UI.\n", r.Title)))
		return
	}
	if len(opts) == 0 {
		return
	}
	in := parseInput(r.ToolInput)
	id := r.ToolUseID
	if id == "" {
		id = "ask-" + r.InteractionID
	}
	title := r.Title
	if r.ToolName != "" {
		title = toolTitle(r.ToolName, in, s.t.Workspace)
	}
	tc := acp.ToolCallUpdate{ToolCallId: acp.ToolCallId(id), Title: acp.Ptr(title), Status: acp.Ptr(acp.ToolCallStatusPending),
		RawInput: rawInput(r.ToolInput), Locations: locations(in, s.t.Workspace)}
	if r.ToolName != "" {
		tc.Kind = acp.Ptr(toolKind(r.ToolName))
	}
	if c := diffContent(r.ToolName, in, r.Diff, s.t.Workspace); c != nil {
		tc.Content = c
	} else if r.Message != "" {
		tc.Content = []acp.ToolCallContent{acp.ToolContent(acp.TextBlock(r.Message))}
	}
	resp, err := s.a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{SessionId: acp.SessionId(s.id), ToolCall: tc, Options: opts})
	if err != nil {
		if ctx.Err() == nil {
			s.log.Info("acp: the editor did not answer a permission", "err", err)
		}
		return
	}
	sel := resp.Outcome.Selected
	if sel == nil {
		return // cancelled: the turn is being cancelled, or another UI answers
	}
	v, ok := values[string(sel.OptionId)]
	if !ok {
		s.log.Info("acp: the editor chose an option it was not offered", "option", sel.OptionId)
		return
	}
	if sel.OptionId == optRejectAlways {
		c := s.call(r)
		rule := permission.RuleFor(c)
		if rule.IsZero() {
			rule, _ = permission.Parse(c.Tool)
		}
		s.mu.Lock()
		s.rules.Add(permission.Deny, rule)
		s.mu.Unlock()
	}
	s.answer(r.InteractionID, v)
}

// resolved: an interaction was settled (by this face, another UI or a
// timeout): the editor's open question is withdrawn and the call shows
// the outcome. s.mu is held.
func (s *session) resolved(p *protocol.InteractionResolved) {
	s.settled[p.InteractionID] = true
	if c := s.asks[p.InteractionID]; c != nil {
		c()
	}
	for i, r := range s.held {
		if r.InteractionID == p.InteractionID {
			s.held = append(s.held[:i], s.held[i+1:]...)
			break
		}
	}
	tool := s.askTool[p.InteractionID]
	delete(s.askTool, p.InteractionID)
	if tool == "" {
		return
	}
	status := acp.ToolCallStatusFailed
	if p.SelectedValue != nil && len(p.SelectedValue.Values) == 1 && p.SelectedValue.Values[0] != protocol.Deny {
		status = acp.ToolCallStatusInProgress
	}
	s.update(acp.UpdateToolCall(acp.ToolCallId(tool), acp.WithUpdateStatus(status)))
}
