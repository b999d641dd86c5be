package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// cancelledText is the tool result of a call the user's cancel stopped or
// kept from running.
const cancelledText = "Cancelled by the user before this call finished."

// maxEventOutput caps the output an agent.tool.finished event carries (the
// model gets the whole result; the transcript does not need more).
const maxEventOutput = 64 << 10

// approvingTools ask for permission through tools.Env.Approve, with the
// computed diff, instead of before the call.
var approvingTools = map[string]bool{"Write": true, "Edit": true, "MultiEdit": true, "NotebookEdit": true}

// runTools runs the calls in order and returns one tool_result per call;
// consecutive Task calls run at the same time (parallel), their results
// kept in call order. On cancel it returns ctx's error with a result for
// every call (the remaining ones "cancelled").
func (t *turnRun) runTools(ctx context.Context, uses []llm.Block) ([]llm.Block, error) {
	results := make([]llm.Block, 0, len(uses))
	for i := 0; i < len(uses); {
		if ctx.Err() != nil {
			for _, rest := range uses[i:] {
				results = append(results, errorResult(rest.ToolUseID, cancelledText))
			}
			return results, fmt.Errorf("agent: tool calls: %w", ctx.Err())
		}
		j := i + 1
		for t.isTask(uses[i]) && j < len(uses) && t.isTask(uses[j]) {
			j++
		}
		var err error
		if j-i > 1 {
			var rs []llm.Block
			rs, err = t.parallel(ctx, uses[i:j])
			results = append(results, rs...)
		} else {
			var r llm.Block
			r, err = t.runTool(ctx, uses[i])
			results = append(results, r)
		}
		if err != nil {
			for _, rest := range uses[j:] {
				results = append(results, errorResult(rest.ToolUseID, cancelledText))
			}
			return results, err
		}
		i = j
	}
	return results, nil
}

// finish is what one call ended with.
type finish struct {
	status string
	output string // for the event
	code   int
	diff   *protocol.FileDiff
	blocks []llm.Block // the tool_result content
	isErr  bool
	images []protocol.ToolImage // the result's images the event can carry
}

// runTool runs one call: mode, rules, asking, the call itself, events. It
// returns ctx's error only when the call was cancelled.
func (t *turnRun) runTool(ctx context.Context, use llm.Block) (llm.Block, error) {
	if err := t.startTool(ctx, use); err != nil {
		return errorResult(use.ToolUseID, cancelledText), err
	}
	return t.runStarted(ctx, use)
}

// startTool tells the UI the call starts (agent.tool.started).
func (t *turnRun) startTool(ctx context.Context, use llm.Block) error {
	if err := t.emit(ctx, protocol.TypeToolStarted, &protocol.ToolStarted{TurnID: t.id, ToolUseID: use.ToolUseID, ToolName: use.ToolName, Input: objectInput(use.Input)}); err != nil {
		return fmt.Errorf("agent: emit tool.started: %w", err)
	}
	return nil
}

// runStarted is runTool after startTool.
func (t *turnRun) runStarted(ctx context.Context, use llm.Block) (llm.Block, error) {
	input := objectInput(use.Input)
	mark := t.col.Len()
	f, err := t.decideAndInvoke(ctx, use, input, use.Input)
	if err != nil {
		f = finish{status: protocol.ToolCancelled, output: "cancelled by the user", isErr: true,
			blocks: []llm.Block{{Type: llm.BlockText, Text: cancelledText}}}
	}
	ev := &protocol.ToolFinished{TurnID: t.id, ToolUseID: use.ToolUseID, ToolName: use.ToolName, Status: f.status,
		Output: capOutput(f.output), Diff: f.diff, Images: f.images}
	if f.status == protocol.ToolError {
		ev.ErrorCode = f.code
	}
	ectx := ctx
	if err != nil {
		// Tell the UI the call ended even though the turn is being
		// cancelled, but do not hold the cancel up.
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 200*time.Millisecond)
		defer cancel()
	}
	if eerr := t.emit(ectx, protocol.TypeToolFinished, ev); eerr != nil && err == nil {
		err = fmt.Errorf("agent: emit tool.finished: %w", eerr)
	}
	t.emitArtifacts(ctx, use.ToolUseID, t.col.SliceFrom(mark))
	return llm.Block{Type: llm.BlockToolResult, ToolUseID: use.ToolUseID, Content: f.blocks, IsError: f.isErr}, err
}

// decideAndInvoke runs the call; input is raw as an object (for events and
// rules), raw as the model sent it (for the tool, which names what is wrong
// with it).
func (t *turnRun) decideAndInvoke(ctx context.Context, use llm.Block, input, raw json.RawMessage) (finish, error) {
	tool, ok := t.tools[use.ToolName]
	if !ok {
		names := make([]string, len(t.specs))
		for i, s := range t.specs {
			names[i] = s.Name
		}
		return failed(tools.Errorf(tools.CodeInvalidInput, "There is no tool named %q. Use one of: %s.", use.ToolName, strings.Join(names, ", "))), nil
	}
	var fields map[string]any
	_ = json.Unmarshal(input, &fields) // objectInput made it an object
	call := t.a.permCall(tool, fields)

	// refusal is what the mode says of call now ("" : it allows it); it
	// is asked again after the user answers, who may have switched the
	// mode while the prompt was open.
	refusal := func() string {
		mode := t.a.Mode()
		if ok, reason := permission.ModeAllows(mode, call); !ok {
			return fmt.Sprintf("Refused: the session is in %s mode (%s). Do not retry this call; continue within the mode's limits or tell the user what you would do.", mode, reason)
		}
		if t.parent != nil {
			return t.subRefusal(call)
		}
		return ""
	}
	if msg := refusal(); msg != "" {
		return denied(msg), nil
	}
	env := t.a.env // a copy: Approve and Progress belong to this call
	if tool.Name() == "Glob" || tool.Name() == "Grep" {
		// A search of a directory must not read what the rules keep
		// from Read: `Read(secret.txt)` also hides it from `Grep .`.
		env.Hidden = t.rules.Hides(tool.Name())
	}
	env.AskModel = t.askModel
	env.Progress = func(delta string) {
		if delta == "" {
			return
		}
		if err := t.emit(ctx, protocol.TypeToolUpdated, &protocol.ToolUpdated{TurnID: t.id, ToolUseID: use.ToolUseID, OutputDelta: delta}); err != nil && ctx.Err() == nil {
			t.a.log.Warn("agent.tool.updated not sent", "turn", t.id, "err", err)
		}
	}
	switch t.rules.Decide(call) {
	case permission.Deny:
		return denied("Denied by the user's permission rules. Do not retry this call; find another way or tell the user what you need."), nil
	case permission.Ask:
		if t.a.headless {
			return denied("Denied: this call needs the user's permission and nobody can be asked in this headless run (ferry run --allow grants it). Do not retry it; find another way or tell the user what you need."), nil
		}
		if approvingTools[tool.Name()] {
			env.Approve = func(actx context.Context, ap tools.Approval) error {
				ok, note, err := t.ask(actx, use, input, call, ap.Diff)
				if err != nil {
					return err
				}
				if !ok {
					return tools.Errorf(tools.CodeDenied, "%s", deniedByUser("change", note))
				}
				if msg := refusal(); msg != "" {
					return tools.Errorf(tools.CodeDenied, "%s", msg)
				}
				return nil
			}
		} else {
			ok, note, err := t.ask(ctx, use, input, call, nil)
			if err != nil {
				return finish{}, err
			}
			if !ok {
				return denied(deniedByUser("call", note)), nil
			}
			if msg := refusal(); msg != "" {
				return denied(msg), nil
			}
		}
	}
	t.a.lend(ctx, &env, tool.Name())
	res, err := tools.Invoke(withTurn(ctx, t), &env, tool, use.ToolUseID, raw)
	if ctx.Err() != nil {
		return finish{}, fmt.Errorf("agent: %s: %w", tool.Name(), ctx.Err())
	}
	if err != nil {
		if tools.CodeOf(err) == tools.CodeInternal {
			t.a.log.Error("tool failed", "tool", tool.Name(), "tool_use_id", use.ToolUseID, "err", err)
		}
		if tools.CodeOf(err) == tools.CodeDenied {
			f := failed(err)
			f.status = protocol.ToolDenied
			return f, nil
		}
		return failed(err), nil
	}
	return succeeded(res), nil
}

// emitArtifacts sends one agent.artifact per file the call registered:
// those since its mark that carry its tool-use id (calls running beside it
// have their own). The user should hear of a file the call made even when
// the turn is being cancelled, so a cancelled ctx gets a short grace; a
// failure to send is logged, never a reason to fail the call.
func (t *turnRun) emitArtifacts(ctx context.Context, toolUseID string, fs []artifact.File) {
	for _, f := range fs {
		if f.ToolUseID() != toolUseID {
			continue
		}
		ev := &protocol.Artifact{TurnID: t.id, ArtifactID: newArtifactID(), Path: f.Path(), FileName: f.FileName(),
			Size: f.Size(), MimeType: f.MimeType(), ToolUseID: f.ToolUseID()}
		ectx, cancel := ctx, context.CancelFunc(func() {})
		if ctx.Err() != nil {
			ectx, cancel = context.WithTimeout(context.WithoutCancel(ctx), 200*time.Millisecond)
		}
		if err := t.emit(ectx, protocol.TypeArtifact, ev); err != nil {
			t.a.log.Warn("agent.artifact not sent", "turn", t.id, "path", f.Path(), "err", err)
		}
		cancel()
	}
}

// newArtifactID names an artifact within its session: "art_" and 130 random
// bits, so ids from any number of turns and clients never collide.
func newArtifactID() string { return "art_" + rand.Text() }

func denied(text string) finish {
	msg := tools.AgentMessage(tools.Errorf(tools.CodeDenied, "%s", text))
	return finish{status: protocol.ToolDenied, output: msg, code: tools.CodeDenied, isErr: true,
		blocks: []llm.Block{{Type: llm.BlockText, Text: msg}}}
}

func failed(err error) finish {
	msg := tools.AgentMessage(err)
	return finish{status: protocol.ToolError, output: msg, code: tools.CodeOf(err), isErr: true,
		blocks: []llm.Block{{Type: llm.BlockText, Text: msg}}}
}

func succeeded(res *tools.Result) finish {
	f := finish{status: protocol.ToolOK, diff: res.Diff}
	var out strings.Builder
	for _, b := range res.Blocks {
		f.blocks = append(f.blocks, llm.Block{Type: b.Type, Text: b.Text, MediaType: b.MediaType, Data: b.Data})
		if b.Type == "text" {
			out.WriteString(b.Text)
		} else {
			if b.Type == llm.BlockImage {
				// One too large for the event is left out; the output
				// below still says there was an image.
				f.images, _ = protocol.AppendToolImage(f.images, b.MediaType, b.Data)
			}
			fmt.Fprintf(&out, "[%s %s]", b.Type, b.MediaType)
		}
	}
	if len(f.blocks) == 0 {
		f.blocks = []llm.Block{{Type: llm.BlockText, Text: "(no output)"}}
	}
	f.output = out.String()
	return f
}

// deniedByUser is what the model reads of the user's denial of a call or
// change, with the note the user gave ("" : none).
func deniedByUser(what, note string) string {
	if note = strings.TrimSpace(note); note == "" {
		return "The user denied this " + what + ". Do not retry it; ask the user what they want instead."
	}
	return "The user denied this " + what + " and said: " + strconv.Quote(note) + ". Do not retry it; do what the user said instead."
}

// ask sends a permission request for the call and waits for the answer, a
// timeout (denied) or cancel (ctx's error). note is the user's note with a
// denial.
func (t *turnRun) ask(ctx context.Context, use llm.Block, input json.RawMessage, call permission.Call, diff *protocol.FileDiff) (ok bool, note string, err error) {
	always := t.rules.RulesFor(call) // through a link: the target's rule too
	r, err := t.interact(ctx, &protocol.InteractionRequest{
		InteractionID: protocol.NewID(),
		TurnID:        t.id,
		Kind:          protocol.InteractionPermission,
		Title:         permissionTitle(call),
		Message:       permissionMessage(call),
		Options:       permissionOptions(always),
		DefaultValue:  protocol.Deny, // what a timeout does: it never grants
		ToolUseID:     use.ToolUseID,
		ToolName:      use.ToolName,
		ToolInput:     input,
		Diff:          diff,
	})
	if err != nil || r == nil {
		return false, "", err
	}
	vals := r.SelectedValue.Values
	switch {
	case slices.Contains(vals, protocol.AllowAlways) && len(always) > 0:
		h := t.a.host() // a sub-agent's "always" is the session's
		h.mu.Lock()
		for _, rule := range always {
			t.rules.Add(permission.Allow, rule)
			h.rules.Add(permission.Allow, rule)
		}
		h.mu.Unlock()
		return true, "", nil
	case slices.Contains(vals, protocol.AllowOnce):
		return true, "", nil
	}
	return false, r.Note, nil
}

// interact sends req (its timeout_ms the session's) and waits for the
// answer: nil when it timed out or came empty, ctx's error on cancel.
func (t *turnRun) interact(ctx context.Context, req *protocol.InteractionRequest) (*protocol.InteractionResponse, error) {
	id := req.InteractionID
	ch := make(chan *protocol.InteractionResponse, 1)
	// A sub-agent asks through the session's agent: Answer finds it there.
	h := t.a.host()
	h.mu.Lock()
	h.pending[id] = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		delete(h.pending, id)
		h.mu.Unlock()
	}()
	req.TimeoutMS = int(t.a.timeout / time.Millisecond)
	if err := t.emit(ctx, protocol.TypeInteractionRequest, req); err != nil {
		return nil, fmt.Errorf("agent: emit interaction.request: %w", err)
	}
	var timeout <-chan time.Time
	if t.a.timeout > 0 {
		timer := time.NewTimer(t.a.timeout)
		defer timer.Stop()
		timeout = timer.C
	}
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("agent: waiting for an answer: %w", ctx.Err())
	case <-timeout:
		return nil, nil
	case r := <-ch:
		return r, nil
	}
}

func permissionTitle(c permission.Call) string {
	switch {
	case c.Domain != "":
		return fmt.Sprintf("Allow %s to fetch from %s?", c.Tool, shorten(c.Domain, 200))
	case c.Command != "":
		return "Allow Bash to run " + shorten(c.Command, 200) + "?"
	case c.Path != "":
		return fmt.Sprintf("Allow %s on %s?", c.Tool, shorten(c.Path, 200))
	}
	return fmt.Sprintf("Allow %s?", c.Tool)
}

func permissionMessage(c permission.Call) string {
	if c.Command != "" {
		return "The agent wants to run:\n\n```sh\n" + capString(c.Command, 8<<10) + "\n```"
	}
	if c.Path != "" {
		return fmt.Sprintf("The agent wants to use %s on `%s`.", c.Tool, c.Path)
	}
	if c.Domain != "" {
		return fmt.Sprintf("The agent wants to fetch a page from `%s` (the call's input has the URL and its question).", c.Domain)
	}
	return fmt.Sprintf("The agent wants to use %s.", c.Tool)
}

// permissionOptions are the answers a permission request offers: "allow
// always" only when rules can express the call (RulesFor), naming them.
func permissionOptions(always []permission.Rule) []protocol.Option {
	opts := []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow once"}}
	if len(always) > 0 {
		names := make([]string, len(always))
		for i, r := range always {
			names[i] = r.String()
		}
		opts = append(opts, protocol.Option{Value: protocol.AllowAlways, Label: "Allow always",
			Description: shorten("Allow "+strings.Join(names, ", ")+" without asking for the rest of this session", 1000)})
	}
	return append(opts, protocol.Option{Value: protocol.Deny, Label: "Deny"})
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// maxEventInput bounds the tool input an event carries; longer string
// fields (a Write's content) are cut, so the event stays well under the
// protocol's message size and still holds a JSON object.
const (
	maxEventInput = 256 << 10
	maxInputField = 16 << 10
)

// objectInput returns the call's input as events carry it: a JSON object
// ({} when the model sent something else; the tool then reports what is
// wrong), its long string fields cut when the whole is too big to travel.
func objectInput(in json.RawMessage) json.RawMessage {
	trimmed := bytes.TrimSpace(in)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return json.RawMessage("{}")
	}
	if len(trimmed) <= maxEventInput {
		return trimmed
	}
	var fields map[string]any
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return json.RawMessage("{}")
	}
	for k, v := range fields {
		switch x := v.(type) {
		case string:
			if len(x) > maxInputField {
				fields[k] = capString(x, maxInputField)
			}
		case map[string]any, []any:
			if b, err := json.Marshal(x); err == nil && len(b) > maxInputField {
				fields[k] = fmt.Sprintf("(%d bytes of JSON, left out)", len(b))
			}
		}
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return json.RawMessage("{}")
	}
	return out
}

func capOutput(s string) string { return capString(s, maxEventOutput) }

// capString cuts s to about n bytes at a character boundary, saying how
// much was left out.
func capString(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("\n… (%d more bytes)", len(s)-cut)
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }
