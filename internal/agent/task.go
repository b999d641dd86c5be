// The Task tool: the model hands a self-contained task to a sub-agent.

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// TaskToolName is the name the model calls sub-agents by.
const TaskToolName = "Task"

// DefaultTaskMaxTurns bounds the model calls of one sub-agent when
// Config.TaskMaxTurns does not say otherwise.
const DefaultTaskMaxTurns = 30

// Bounds of a Task call's input.
const (
	maxTaskDescription = 200      // characters
	maxTaskPrompt      = 64 << 10 // bytes
)

// taskTool is the Task tool. It is read-only itself: what its sub-agent
// may do is decided call by call (subRefusal), under the session's mode
// and rules. Its Run needs the prompt that called it, which
// decideAndInvoke puts in the call's context (withTurn).
type taskTool struct{}

var _ tools.Tool = taskTool{}

func (taskTool) Name() string   { return TaskToolName }
func (taskTool) ReadOnly() bool { return true }

func (taskTool) Description() string {
	return `Hands a self-contained task to a sub-agent with a fresh context of its own, which works with the read and search tools and answers once; you get only its final answer, not its steps.

- Use it for research that would fill your context (finding where something is done across many files, reading a large module, comparing approaches), or for independent questions you can ask side by side: several Task calls in one message run at the same time.
- The sub-agent does not see this conversation: put everything it needs in prompt (what to find or do, where to look, what to report back and in what form).
- It is read-only: Read, Glob, Grep and read-only git commands through Bash. Other calls run only where the user's rules allow them outright, never in plan or review mode. It cannot start sub-agents of its own.
- Its answer is for you, not for the user: say what matters of it in your own answer.`
}

func (taskTool) InputSchema() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{
  "type": "object",
  "properties": {
    "description": {"type": "string", "minLength": 1, "maxLength": %d, "description": "A short (3 to 5 words) description of the task, shown to the user."},
    "prompt": {"type": "string", "minLength": 1, "description": "The task for the sub-agent, self-contained: it sees nothing else of this conversation."}
  },
  "required": ["description", "prompt"],
  "additionalProperties": false
}`, maxTaskDescription))
}

type taskInput struct {
	Description string `json:"description"`
	Prompt      string `json:"prompt"`
}

func (taskTool) Run(ctx context.Context, _ *tools.Env, raw json.RawMessage) (*tools.Result, error) {
	t := turnFrom(ctx)
	if t == nil {
		return nil, errors.New("agent: Task called outside a prompt")
	}
	if t.parent != nil {
		return nil, tools.Errorf(tools.CodeDenied, "A sub-agent cannot start sub-agents of its own. Do this part of the task yourself with your tools.")
	}
	var in taskInput
	if err := tools.DecodeInput(raw, &in); err != nil {
		return nil, err
	}
	in.Description = strings.TrimSpace(in.Description)
	switch {
	case in.Description == "":
		return nil, tools.Errorf(tools.CodeInvalidInput, "invalid input: description is required: a short (3 to 5 words) description of the task")
	case utf8.RuneCountInString(in.Description) > maxTaskDescription:
		return nil, tools.Errorf(tools.CodeInvalidInput, "invalid input: description is longer than %d characters; keep it to a few words and put the task in prompt", maxTaskDescription)
	case strings.TrimSpace(in.Prompt) == "":
		return nil, tools.Errorf(tools.CodeInvalidInput, "invalid input: prompt is required: the whole task for the sub-agent")
	case len(in.Prompt) > maxTaskPrompt:
		return nil, tools.Errorf(tools.CodeInvalidInput, "invalid input: prompt is longer than %d bytes; give the sub-agent a focused task and let it read the files itself", maxTaskPrompt)
	}
	return t.runTask(ctx, tools.ToolUseID(ctx), in)
}

type turnKey struct{}

// withTurn carries the running prompt to the tools that need it (Task).
func withTurn(ctx context.Context, t *turnRun) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

func turnFrom(ctx context.Context) *turnRun {
	t, _ := ctx.Value(turnKey{}).(*turnRun)
	return t
}

// host is the agent that owns the session: the one whose Answer the UI
// calls and whose rules "allow always" extends.
func (a *Agent) host() *Agent {
	if a.parent != nil {
		return a.parent
	}
	return a
}

// isTask reports whether use calls this prompt's Task tool and the rules
// allow it without asking: the calls runTools runs side by side (an answer
// to a question may change the prompt's rules, which the calls beside it
// read).
func (t *turnRun) isTask(use llm.Block) bool {
	if use.ToolName != TaskToolName || t.parent != nil {
		return false
	}
	if _, ok := t.tools[TaskToolName].(taskTool); !ok {
		return false
	}
	return t.rules.Decide(permission.Call{Tool: TaskToolName, ReadOnly: true}) == permission.Allow
}

// runTask runs one sub-agent for the Task call id: a fresh history and
// read state, the prompt's provider, model and rules, the session's mode
// (asked at every call, so a switch reaches it), its own artifact
// collector, and events that name the Task call (parent_tool_use_id).
// Its usage counts in the prompt and the session; its answer is the
// call's result.
func (t *turnRun) runTask(ctx context.Context, id string, in taskInput) (*tools.Result, error) {
	a := t.a
	env := a.env
	env.State = tools.NewReadState() // its own context: it reads before it writes
	sub := &Agent{
		provider: a.provider, fs: a.fs, root: a.root, env: env, tools: a.tools,
		priced: a.priced, maxTurns: a.taskMax, maxTok: a.maxTok, headless: a.headless,
		timeout: a.timeout, stopCause: a.stopCause, editor: a.editor, log: a.log,
		parent: a, // its mode, questions and rules are the session's (host)
	}
	st := &turnRun{a: sub, id: t.id, parent: t, emit: t.subEmit(id), maxTurns: sub.maxTurns,
		rules: cloneRules(&t.rules), model: t.model, effort: t.effort,
		instr: t.instr} // the project's instructions hold for its sub-agents too
	st.tools, st.specs = t.subTools(st.rules)
	names := make([]string, len(st.specs))
	for i, s := range st.specs {
		names[i] = s.Name
	}
	sub.system = subAgentPrompt(a.root, names)
	sctx, col := artifact.Fork(ctx)
	st.col = col
	sub.push(userText(in.Prompt))
	res, err := st.loop(sctx)
	// The sub-agent's files belong to the Task call: they reach the
	// prompt's result and the call's assistant message (their events went
	// out with the sub-agent's own calls).
	for _, f := range col.Artifacts() {
		t.col.Add(f)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("agent: sub-agent: %w", ctx.Err())
		}
		msg := "the sub-agent failed; the log has the details"
		var ae *Error
		if errors.As(err, &ae) && ae.Code != CodeInternal {
			msg = fmt.Sprintf("the sub-agent's model call failed (%s): %s", ae.Code, ae.Message)
		}
		return nil, &tools.Error{Code: tools.CodeInternal, Message: msg + ". Do the task another way or tell the user.", Err: err}
	}
	answer := strings.TrimSpace(res.Final)
	if answer == "" {
		answer = "(The sub-agent gave no answer.)"
	}
	if res.StopReason == StopMaxTurns {
		answer += fmt.Sprintf("\n\n[The sub-agent stopped at its limit of %d turns; its answer may be incomplete.]", st.maxTurns)
	}
	return &tools.Result{Blocks: tools.Text(answer)}, nil
}

// subTools are the tools a sub-agent has: every tool of the prompt but
// Task (a nested call is refused by Task itself), and the ones it is
// offered: read-only tools, Bash (not in plan mode), a write tool only
// in default mode when the rules have an allow rule for it (subRefusal
// decides each call anyway).
func (t *turnRun) subTools(rules permission.Rules) (map[string]tools.Tool, []llm.ToolSpec) {
	mode := t.a.Mode()
	writes := mode == protocol.ModeDefault
	var specs []llm.ToolSpec
	for _, s := range t.specs {
		tool := t.tools[s.Name]
		if s.Name == TaskToolName || tool == nil {
			continue
		}
		if tool.ReadOnly() || s.Name == "Bash" && mode != protocol.ModePlan || writes && allowsTool(rules, s.Name) {
			specs = append(specs, s)
		}
	}
	return t.tools, specs
}

// allowsTool reports whether rules have an allow rule for tool (of any
// pattern): the user's opt-in to let a sub-agent use a write tool.
func allowsTool(rules permission.Rules, tool string) bool {
	for _, r := range rules.Allow {
		if r.Tool == tool {
			return true
		}
	}
	return false
}

// subRefusal is why a sub-agent may not make call ("" : it may, and the
// rules decide as for the main agent). It is read-only — what review mode
// allows: read-only tools and read-only git commands — except for a call
// the session's rules allow outright, and that only in default mode (the
// mode itself is checked before).
func (t *turnRun) subRefusal(call permission.Call) string {
	ok, reason := permission.ModeAllows(protocol.ModeReview, call)
	if ok {
		return ""
	}
	if t.a.Mode() == protocol.ModeDefault {
		if d := t.rules.Decide(call); d == permission.Allow || d == permission.Ask && allowsTool(t.rules, call.Tool) {
			return ""
		}
	}
	return fmt.Sprintf("Refused: a sub-agent is read-only as in review mode (%s), and the user's rules do not allow this %s call. Do not retry it; finish the task read-only and say in your answer what the main agent should change.", reason, call.Tool)
}

// subEmit is the Emit of the sub-agent of Task call id: its tool events
// name the call (parent_tool_use_id); its text is not streamed (the
// prompt's answer is the main agent's: the Task result carries the
// sub-agent's); the rest passes as it is.
func (t *turnRun) subEmit(id string) Emit {
	return func(ctx context.Context, typ string, payload any) error {
		switch p := payload.(type) {
		case *protocol.TextDelta:
			return nil
		case *protocol.ToolStarted:
			p.ParentToolUseID = id
		case *protocol.ToolUpdated:
			p.ParentToolUseID = id
		case *protocol.ToolFinished:
			p.ParentToolUseID = id
		}
		return t.emit(ctx, typ, payload)
	}
}

// subAgentPrompt is the system prompt of a sub-agent with the given tools.
func subAgentPrompt(root string, toolNames []string) string {
	return fmt.Sprintf(`You are a sub-agent of ferry's coding agent. The main agent handed you one task; do it in the user's workspace at %s through your tools (%s), then answer.

- The main agent sees only your final message, not your tool calls: make it self-contained (what you found, with file paths and line numbers; what you changed, if anything). Nobody can answer questions before you finish, so do not ask any.
- Paths are relative to the workspace; you cannot reach outside it.
- You are read-only unless the user's rules allow a write outright; a denied or refused call is final: do not retry it, finish read-only and say what should be changed.
- Read a file before you change it. Bash runs in the workspace with a timeout.`, root, strings.Join(toolNames, ", "))
}

// subModeSection replaces default mode's section for a sub-agent, which is
// read-only there unless the rules allow a call.
const subModeSection = "Mode: default, as a sub-agent. You may read and search, and run read-only git commands through Bash; " +
	"other commands and writes run only where the user's rules allow them, and are refused otherwise."

// parallel runs calls, Task calls all, at the same time and returns their
// results in call order; on cancel every sub-agent stops at once (they
// share ctx) and the error is ctx's. The calls are announced in call
// order first, so the UI lists them as the model asked for them.
func (t *turnRun) parallel(ctx context.Context, uses []llm.Block) ([]llm.Block, error) {
	results := make([]llm.Block, len(uses))
	errs := make([]error, len(uses))
	for i, u := range uses {
		if errs[i] = t.startTool(ctx, u); errs[i] != nil {
			for j, v := range uses {
				results[j] = errorResult(v.ToolUseID, cancelledText)
			}
			return results, errs[i]
		}
	}
	var wg sync.WaitGroup
	for i, u := range uses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = t.runStarted(ctx, u)
		}()
	}
	wg.Wait()
	return results, errors.Join(errs...)
}
