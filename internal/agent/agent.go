// Package agent is ferry's own agent runtime: one Agent is one session, a
// conversation with a model provider (llm.Provider) that calls ferry's
// tools (Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep, Bash,
// WebFetch, TodoWrite, and Task, which runs sub-agents) in a workspace.
//
// What it guarantees:
//
//   - One prompt (Run) is a loop of model call → tool calls → results until
//     the model ends its turn, the prompt's max_turns is reached, or ctx is
//     cancelled. Everything in between is streamed as agent.* events
//     through the Emit it is given: text deltas (channel thinking for
//     reasoning), tool calls with their input, results, error codes and
//     diffs, Bash output as it comes, usage (and cost when known) after
//     every model call, coded agent.error events.
//   - Modes are enforced here, at every tool call, whatever the model asks:
//     plan allows read-only tools only, review read-only tools plus
//     read-only git commands (permission.ModeAllows). SetMode is safe while
//     a turn runs and takes effect at the next tool call.
//   - Permission rules decide each call (deny → ask → allow); asking sends
//     agent.interaction.request (with the diff for Write, Edit, MultiEdit
//     and NotebookEdit, asked after the change is computed and before it
//     is written) and waits for Answer; a timeout (Answer nil) denies.
//   - Cancel (ctx) stops the stream and the running tool at once, and Run
//     returns promptly; the conversation stays valid for the next prompt
//     (every tool call gets a result, a cancelled one "cancelled by the
//     user").
//   - Tool calls run through tools.Invoke, the one invocation point, which
//     puts the tool-use id into the tool's context.
//   - A tool's own model call (tools.Env.AskModel: WebFetch's question
//     about a page) goes to the turn's model without tools or history; its
//     usage and cost count in the prompt and the session like a turn's,
//     with an agent.usage event. WebFetch is asked per domain
//     (permission.Call.Domain). TodoWrite's list is kept for the session
//     (TodoList) and rebuilt by Restore from the history.
//   - Input types: text; continuation ("continue" when there is no new
//     text); piped_stdin (framed as material, FramePipedStdin); slash
//     commands /compact [instruction], /cost, /clear, /mode <m>, /help,
//     which never call the model except /compact's summary: a slash
//     command carrying config_overrides (bar output_format) or attached
//     files is refused with code unsupported naming the field, never run
//     without them. Referenced files travel as a list after the text
//     (fileref's FileList form).
//   - Project instructions (instructions.go): the user's AGENTS.md
//     (Config.UserInstructions) and the AGENTS.md, else CLAUDE.md, of each
//     folder from the repository root down to the workspace are in the
//     system prompt, outermost first under their paths, MaxInstructionBytes
//     in all (a cut file says where); the workspace's is read through the
//     workspace FS, a parent's must resolve inside the repository. They
//     are read again at each turn start (Refresh), and Instructions names
//     them (agent.instructions).
//   - Custom commands (commands.go): the Markdown files of .ferry/commands
//     and Config.UserCommands are slash commands ($ARGUMENTS, $1..$9) that
//     run as text prompts; ferry's own names win, invalid names are
//     skipped, a file over MaxCommandBytes is refused with bad_request.
//     Commands lists them after ferry's own; they are rescanned with the
//     instructions.
//   - Attached files (Turn.Attachments) follow the text in the prompt's
//     user message: images as image blocks (prepared as Read prepares
//     them, PrepareAttachments), PDFs as document blocks, text as a text
//     block naming the file (AttachedText), after a line saying which
//     files are to be edited and which are reference (AttachedIntents,
//     from context_files[].intent); an image that cannot be
//     prepared refuses the turn with bad_request before the model call.
//   - A tool result's images go into agent.tool.finished's images too,
//     where protocol.AppendToolImage lets the event carry them.
//   - A prompt's config_overrides apply to that prompt only: max_turns
//     (stop_reason max_turns, every unrun call answered so a continuation
//     is valid), allowed_tools / denied_tools (parsed by permission.Parse),
//     json_schema (the final answer must validate; one retry with the
//     validator's message, then a coded error).
//   - Compact summarises the older history with the model, keeps the
//     latest whole turns verbatim, aims at the requested size ratio,
//     resets Read's dedup state and hands the dropped messages to
//     Config.OnCompact. The artifacts of the summarised messages move to
//     the summary message, so compaction never loses one.
//   - Artifacts (Config.Artifacts): Write, Edit, MultiEdit, NotebookEdit
//     and Bash are the internal/artifact decorators (the `artifact` and
//     `artifact_paths` parameters appear in their schemas only then). Each
//     prompt has its own artifact.Collector in the context its tools see;
//     the artifacts one model call's tool calls registered go on that
//     call's assistant message (llm.Message.Artifacts, persisted with the history, never
//     sent to the model), one agent.artifact event per file follows the
//     agent.tool.finished of the call that made it, and Result.Artifacts
//     has all of the prompt's on every exit path: end_turn, max_turns,
//     refusal, error, cancelled and slash commands. A Task sub-agent's
//     files are registered in its own collector (artifact.Fork), sent
//     with its calls' events and then added to the prompt's, under the
//     Task call.
//   - Sub-agents (Task, task.go): a fresh history and read state, the
//     prompt's model and rules and the session's mode; read-only as in
//     review mode unless the rules allow a call (default mode only); asks
//     reach the user as the session's interaction requests naming the
//     sub-agent's call; no nested Task; at most Config.TaskMaxTurns model
//     calls. Consecutive Task calls of one model message run at the same
//     time, results in call order, and a cancel stops them all. Their
//     tool events carry parent_tool_use_id (the Task call), their text is
//     not streamed, their usage counts in the prompt's and the session's
//     (agent.usage), and the main agent gets only each final answer.
//   - Failures reach peers as coded errors (*Error, agent.error) with safe
//     messages; internal text goes to the log only.
//   - What an editor lends the session (Config.Editor, ferry acp) is
//     asked at every tool call and turn start, never kept: Read, Write
//     and Edit then read and write text through the editor's buffers
//     after ferry's own path checks (internal/vfs/overlay; a refused path
//     never reaches the editor), Bash runs in its terminal with the same
//     result text, and the tools of its MCP servers are offered for the
//     turn, under the same modes and rules (mcp__SERVER__TOOL).
//   - MCP servers (mcp.go): the user's mcp.json, the workspace's
//     .mcp.json and the editor's (which win a name clash, then the
//     workspace's) are read at each turn start. The workspace's file
//     starts nothing before the user approved its content (asked with an
//     agent.interaction.request; headless, it is left out and reported
//     unless Config.MCP.Trust). The servers are connected once per list
//     (again when it changes), within Config.MCPConnectTimeout; a server
//     or file that fails, hangs or crashes (also mid-turn) is reported
//     once (agent.error mcp_server_failed) and the turn goes on; Close
//     stops them.
//   - Diagnostics after edits (Config.Diagnostics, internal/lsp): a call
//     that changed a file gets the language server's errors in that file
//     appended to its result, within a bounded wait (a slow or crashed
//     server only leaves them out); the file is read through the same
//     FS the tool wrote it through (the editor's buffers when lent).
//     The sessions of one workspace share its servers (lsp.Acquire);
//     the last one's Close stops them.
//   - Restarts: Config.OnStep gets a Snapshot (history, turn-open flag,
//     read state) each time a step ends, before the next one starts;
//     Restore continues from one, repaired so the provider accepts it
//     (every tool call answered, roles alternating, a cut turn closed with
//     RestartedNote) and with only the reads of unchanged files kept. A
//     turn cancelled because ferry stops (ErrStopping) says so in
//     the history instead of "cancelled by the user".
package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/artifact"
	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/lsp"
	"github.com/ferry-dev/ferry/internal/mcpconfig"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// DefaultMaxTurns bounds the model calls of one prompt when neither the
// config nor the prompt's config_overrides says otherwise.
const DefaultMaxTurns = 100

// Config is what an Agent starts with. Provider and Workspace are required.
type Config struct {
	// Provider is the model the agent talks to.
	Provider llm.Provider
	// Workspace is the directory the tools work in (confined to it).
	Workspace string
	// Tools the model may call; nil means tools.AllTools() and the Task
	// tool (sub-agents, task.go).
	Tools []tools.Tool
	// TaskMaxTurns bounds the model calls of one Task sub-agent
	// (DefaultTaskMaxTurns when 0).
	TaskMaxTurns int
	// Mode to start in: default, plan or review ("" is default).
	Mode string
	// Rules are the session's permission rules; nil means none (read-only
	// tools allowed, the others asked). "Allow always" adds to them.
	Rules *permission.Rules
	// SystemPrompt replaces the default system prompt (DefaultSystemPrompt).
	SystemPrompt string
	// MaxTurns bounds the model calls of a prompt (DefaultMaxTurns when 0);
	// a prompt's config_overrides.max_turns replaces it for that prompt.
	MaxTurns int
	// MaxTokens bounds each model answer (0: the provider's default).
	MaxTokens int
	// Limits of the tools (zero value: tools.DefaultLimits()).
	Limits tools.Limits
	// History keeps what writes replace (nil: none).
	History tools.FileHistory
	// Headless means nobody can be asked: a call the rules would ask about
	// is denied (ferry run; --allow rules let calls through).
	Headless bool
	// InteractionTimeout is how long a permission request waits for an
	// answer before it counts as denied, also sent as timeout_ms so the
	// master can time it out; 0 waits until answered or cancelled.
	InteractionTimeout time.Duration
	// OnCompact is called with the messages a compaction removed from the
	// history, before they are dropped. Their artifacts are kept anyway: they
	// move to the summary message that replaces them.
	OnCompact func(dropped []llm.Message)
	// OnStep, when set, gets the conversation each time a step ends (the
	// prompt added, a model answer, a batch of tool results, a turn's end,
	// a compaction, /clear), so it can be kept across restarts (Restore).
	// It runs synchronously on the turn's goroutine: a step is kept before
	// the next one starts.
	OnStep func(Snapshot)
	// Artifacts turns on file artifacts (internal/artifact): Write, Edit,
	// MultiEdit, NotebookEdit and Bash become their decorators, whose schemas have the `artifact`
	// and `artifact_paths` parameters, and the files they register reach
	// the user as agent.artifact events and Result.Artifacts. Off, the
	// tools are the plain ones and the parameters are absent.
	Artifacts bool
	// StopCause is a context cause that, like ErrStopping, means a
	// prompt is cancelled because ferry is stopping (the builtin adapter
	// sets the adapter seam's; nil: only ErrStopping).
	StopCause error
	// Editor returns what the editor attached to the session lends it now
	// (ferry acp: editorlink.Registry.Get of the session); nil lends
	// nothing. It is asked at each tool call and turn start, never kept:
	// Read, Write and Edit then take text from the editor's buffers
	// (internal/vfs/overlay), Bash runs in its terminal, and its MCP
	// servers' tools are offered (editor.go).
	Editor func() editorlink.Lent
	// UserInstructions is the user's own instruction file
	// ($XDG_CONFIG_HOME/ferry/AGENTS.md; "": none), put in the system
	// prompt before the project's AGENTS.md files (instructions.go).
	UserInstructions string
	// UserCommands is the user's folder of custom slash commands
	// ($XDG_CONFIG_HOME/ferry/commands; "": none); the workspace's
	// .ferry/commands wins on a name clash (commands.go).
	UserCommands string
	// OnInstructions, when set, gets the instruction files in the system
	// prompt whenever their set changes after New (Refresh);
	// Instructions has the list at any time.
	OnInstructions func([]protocol.InstructionFile)
	// OnCommands, when set, gets the session's slash commands (Commands)
	// whenever the custom ones change after New (Refresh).
	OnCommands func([]protocol.AgentCommand)
	// Diagnostics turns on language server diagnostics after edits
	// (internal/lsp; the user's lsp.json, lsp.LoadConfig): a Write or Edit
	// (any tool whose result changed a file) gets the server's errors in
	// the file it changed appended to its result, after a bounded wait.
	// The servers start at the first edit of their language, are shared
	// with the other sessions of the workspace, and stop with the last
	// one's Close. Nil: none.
	Diagnostics *lsp.Config
	// MCP are the configuration files of the session's MCP servers (the
	// user's and the workspace's .mcp.json, with the user's approvals);
	// nil: none, only an editor's (mcp.go). They are read at each turn
	// start; the workspace's file is used once approved (asked with an
	// agent.interaction.request; when Headless, left out and reported).
	MCP *mcpconfig.Sources
	// MCPConnectTimeout bounds connecting one MCP server
	// (mcpclient.DefaultConnectTimeout when 0).
	MCPConnectTimeout time.Duration
	// Logger gets internal errors (nil: slog.Default()).
	Logger *slog.Logger
}

// Agent is one session of ferry's agent. Run is called for one prompt at a
// time; Answer, SetMode, Mode, Usage and History may be called at any time.
type Agent struct {
	provider  llm.Provider
	fs        *vfs.Local
	root      string // the canonical workspace path
	env       tools.Env
	tools     map[string]tools.Tool
	specs     []llm.ToolSpec
	system    string // the system prompt before the mode's section
	priced    bool   // the model has a known price
	maxTurns  int
	maxTok    int
	headless  bool
	timeout   time.Duration
	onCompact func([]llm.Message)
	onStep    func(Snapshot)
	stopCause error // Config.StopCause
	editor    func() editorlink.Lent
	lsp       *lsp.Manager // nil: no diagnostics after edits
	unlsp     func()       // releases lsp (shared by the workspace's sessions)
	log       *slog.Logger

	mcpSources        *mcpconfig.Sources // Config.MCP
	mcpConnectTimeout time.Duration
	mcp               mcpState // the session's MCP servers (mcp.go)

	// parent is the session's agent when this one is a sub-agent of its
	// Task tool (task.go): the mode, pending questions and rules are its.
	parent  *Agent
	taskMax int // Config.TaskMaxTurns
	// Instructions and custom commands (instructions.go, commands.go):
	// where they are looked for, and the callbacks of Refresh, which
	// refreshMu keeps to one at a time.
	instrSources   []instructionSource
	instrRepo      string
	userCommands   string
	onInstructions func([]protocol.InstructionFile)
	onCommands     func([]protocol.AgentCommand)
	refreshMu      sync.Mutex

	mu        sync.Mutex
	mode      string
	model     string // the session's own model ("" : the provider's)
	effort    string // the session's thinking effort ("" : none asked)
	rules     *permission.Rules
	history   []llm.Message
	marks     []TurnMark // where each turn began in history (rewind.go)
	usage     llm.Usage
	cost      float64
	costKnown bool
	calls     int // model calls of the session
	busy      bool
	turnOpen  bool // a prompt runs (Snapshot.TurnOpen)
	pending   map[string]chan *protocol.InteractionResponse
	instr     instructions // the instructions in the system prompt
	cmds      commandSet   // the custom commands
}

// New opens an Agent on cfg.Workspace.
func New(cfg Config) (*Agent, error) {
	if cfg.Provider == nil {
		return nil, fmt.Errorf("agent: %w", llm.ErrNotConfigured)
	}
	mode := cfg.Mode
	if mode == "" {
		mode = protocol.ModeDefault
	}
	if !validMode(mode) {
		return nil, fmt.Errorf("agent: unknown mode %q", mode)
	}
	fsys, err := vfs.NewLocal(cfg.Workspace)
	if err != nil {
		return nil, fmt.Errorf("agent: open workspace: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	ts := cfg.Tools
	withTask := ts == nil
	if ts == nil {
		ts = tools.AllTools()
	}
	if cfg.Artifacts {
		ts = artifact.Decorate(ts, artifact.Config{Logger: log})
	}
	if withTask {
		ts = append(slices.Clone(ts), taskTool{})
	}
	limits := cfg.Limits
	if limits == (tools.Limits{}) {
		limits = tools.DefaultLimits()
	}
	rules := cfg.Rules
	if rules == nil {
		rules = &permission.Rules{}
	}
	if rules.Workspace == "" {
		// Absolute paths inside the workspace then match relative rules.
		rules.Workspace = fsys.Roots()[0]
	}
	a := &Agent{
		provider:  cfg.Provider,
		fs:        fsys,
		root:      fsys.Roots()[0],
		tools:     make(map[string]tools.Tool, len(ts)),
		system:    cfg.SystemPrompt,
		maxTurns:  cfg.MaxTurns,
		maxTok:    cfg.MaxTokens,
		headless:  cfg.Headless,
		timeout:   cfg.InteractionTimeout,
		onCompact: cfg.OnCompact,
		onStep:    cfg.OnStep,
		stopCause: cfg.StopCause,
		editor:    cfg.Editor,
		log:       log,
		mode:      mode,
		rules:     rules,
		pending:   map[string]chan *protocol.InteractionResponse{},

		userCommands:      cfg.UserCommands,
		mcpSources:        withWorkspace(cfg.MCP, fsys.Roots()[0]),
		mcpConnectTimeout: cfg.MCPConnectTimeout,
		mcp:               newMCPState(),
	}
	a.instrSources, a.instrRepo = instructionSources(a.root, cfg.UserInstructions)
	if a.maxTurns <= 0 {
		a.maxTurns = DefaultMaxTurns
	}
	if a.taskMax = cfg.TaskMaxTurns; a.taskMax <= 0 {
		a.taskMax = DefaultTaskMaxTurns
	}
	for _, t := range ts {
		a.tools[t.Name()] = t
		a.specs = append(a.specs, llm.ToolSpec{Name: t.Name(), Description: t.Description(), InputSchema: t.InputSchema()})
	}
	if a.system == "" {
		a.system = DefaultSystemPrompt(a.root, a.ToolNames())
	}
	a.Refresh() // no callbacks yet: the caller asks Instructions and Commands
	a.onInstructions, a.onCommands = cfg.OnInstructions, cfg.OnCommands
	_, a.priced = llm.PriceOf(cfg.Provider.Model())
	a.env = tools.Env{
		FS:      fsys,
		State:   tools.NewReadState(),
		Limits:  limits,
		Tokens:  &providerCounter{p: cfg.Provider},
		History: cfg.History,
		Todos:   &tools.TodoList{},
	}
	if cfg.Diagnostics != nil {
		a.lsp, a.unlsp = lsp.Acquire(a.root, *cfg.Diagnostics, log)
		a.env.Diagnostics = a.diagnostics(fsys)
	}
	return a, nil
}

// withWorkspace is a copy of src on the session's canonical workspace,
// which approvals are keyed by (nil stays nil).
func withWorkspace(src *mcpconfig.Sources, root string) *mcpconfig.Sources {
	if src == nil {
		return nil
	}
	c := *src
	c.Workspace = root
	return &c
}

func validMode(m string) bool {
	return m == protocol.ModeDefault || m == protocol.ModePlan || m == protocol.ModeReview
}

// Provider is the model the agent talks to.
func (a *Agent) Provider() llm.Provider { return a.provider }

// Workspace is the canonical path of the workspace.
func (a *Agent) Workspace() string { return a.root }

// ToolNames lists the tools the model may call, in the order it sees them.
func (a *Agent) ToolNames() []string {
	names := make([]string, len(a.specs))
	for i, s := range a.specs {
		names[i] = s.Name
	}
	return names
}

// Mode is the mode in force (a sub-agent's is its session's).
func (a *Agent) Mode() string {
	if a.parent != nil {
		return a.parent.Mode()
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.mode
}

// SetMode switches the mode; it takes effect at the next tool call, also
// in a turn that is running.
func (a *Agent) SetMode(mode string) error {
	if !validMode(mode) {
		return &Error{Code: CodeBadRequest, Message: fmt.Sprintf("unknown mode %q: use default, plan or review", mode)}
	}
	a.mu.Lock()
	a.mode = mode
	a.mu.Unlock()
	return nil
}

// SetModel sets the model and thinking effort of the session's next turns
// ("" : the provider's configured model, no effort asked). The caller
// checks them against the provider's model list (a turn that runs keeps
// what it started with).
func (a *Agent) SetModel(model, effort string) {
	a.mu.Lock()
	a.model, a.effort = model, effort
	a.mu.Unlock()
}

// Model is the model in force and the thinking effort asked ("" : none).
func (a *Agent) Model() (model, effort string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.model != "" {
		return a.model, a.effort
	}
	return a.provider.Model(), a.effort
}

// Rules returns a copy of the session's permission rules.
func (a *Agent) Rules() permission.Rules {
	a.mu.Lock()
	defer a.mu.Unlock()
	return cloneRules(a.rules)
}

// Usage is what the session's model calls consumed so far, and their cost
// in US dollars when the provider's prices are known (ok false otherwise).
func (a *Agent) Usage() (u llm.Usage, costUSD float64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.usage, a.cost, a.costKnown
}

// History returns a copy of the conversation.
func (a *Agent) History() []llm.Message {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.history)
}

// Clear empties the conversation and forgets what was read (the /clear
// command). It fails with ErrBusy while a turn or a compaction runs.
func (a *Agent) Clear() error {
	if !a.begin() {
		return ErrBusy
	}
	defer a.end()
	a.clear()
	return nil
}

func (a *Agent) clear() {
	a.mu.Lock()
	a.history = nil
	a.marks = nil
	a.mu.Unlock()
	a.env.State.Forget()
	a.checkpoint()
}

// Answer delivers the user's answer to a permission request of the running
// turn; resp nil means it timed out (a denial).
func (a *Agent) Answer(interactionID string, resp *protocol.InteractionResponse) error {
	a.mu.Lock()
	ch, ok := a.pending[interactionID]
	delete(a.pending, interactionID)
	a.mu.Unlock()
	if !ok {
		return ErrUnknownInteraction
	}
	ch <- resp // buffered: each channel gets one answer
	return nil
}

// Close releases the workspace and stops the editor's MCP servers it
// connected and the language servers it started. A running turn should be cancelled first.
func (a *Agent) Close() error {
	a.closeMCP()
	if a.unlsp != nil {
		a.unlsp()
	}
	if err := a.fs.Close(); err != nil {
		return fmt.Errorf("agent: close: %w", err)
	}
	return nil
}

// begin marks the agent busy; false when it already is.
func (a *Agent) begin() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.busy {
		return false
	}
	a.busy = true
	return true
}

func (a *Agent) end() {
	a.mu.Lock()
	a.busy = false
	a.mu.Unlock()
}

// appendMessage adds m to the history, keeping roles alternating: a
// message of the same role as the last one is merged into it (a prompt
// after a cancelled turn, a summary before the kept turns), which both
// providers' APIs require.
func appendMessage(h []llm.Message, m llm.Message) []llm.Message {
	if len(m.Content) == 0 {
		return h
	}
	if n := len(h); n > 0 && h[n-1].Role == m.Role {
		last := h[n-1]
		last.Content = append(slices.Clone(last.Content), m.Content...)
		if len(m.Artifacts) > 0 {
			last.Artifacts = slices.Concat(last.Artifacts, m.Artifacts)
		}
		if m.Role == llm.RoleUser {
			last.Content = toolResultsFirst(last.Content)
		}
		h[n-1] = last
		return h
	}
	return append(h, m)
}

// toolResultsFirst moves tool_result blocks before the other blocks of a
// user message: the Messages API wants them first.
func toolResultsFirst(bs []llm.Block) []llm.Block {
	out := make([]llm.Block, 0, len(bs))
	for _, b := range bs {
		if b.Type == llm.BlockToolResult {
			out = append(out, b)
		}
	}
	for _, b := range bs {
		if b.Type != llm.BlockToolResult {
			out = append(out, b)
		}
	}
	return out
}

func (a *Agent) push(m llm.Message) {
	a.pushAt(m)
}

// pushAt pushes m and returns the index of the message it landed in (-1
// when it was empty and dropped).
func (a *Agent) pushAt(m llm.Message) int {
	a.mu.Lock()
	a.history = appendMessage(a.history, m)
	at := len(a.history) - 1
	a.mu.Unlock()
	if len(m.Content) == 0 {
		return -1
	}
	a.checkpoint()
	return at
}

// attach adds artifacts to the history's message at i, an assistant
// message pushAt returned. The slice is copied, never appended to in
// place: History's snapshots share the old one.
func (a *Agent) attach(i int, arts []llm.Artifact) {
	if i < 0 || len(arts) == 0 {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if i >= len(a.history) || a.history[i].Role != llm.RoleAssistant {
		return // the history was rewritten meanwhile: nothing to attach to
	}
	a.history[i].Artifacts = slices.Concat(a.history[i].Artifacts, arts)
}

func (a *Agent) addUsage(model string, u llm.Usage) (cost float64, known bool) {
	c, ok := a.costOf(model, u)
	a.mu.Lock()
	defer a.mu.Unlock()
	a.usage = a.usage.Add(u)
	a.calls++
	if ok {
		a.cost += c
		a.costKnown = true
	}
	return c, ok
}

// costOf is the cost of u in US dollars, when the model's price is known
// (llm's list prices); otherwise the cost is left out, never guessed.
func (a *Agent) costOf(model string, u llm.Usage) (float64, bool) {
	if model == a.provider.Model() && !a.priced {
		return 0, false // skip the price table's search on every call
	}
	return llm.Cost(model, u)
}

// permCall describes a tool call to the permission rules.
func (a *Agent) permCall(t tools.Tool, input map[string]any) permission.Call {
	c := permission.Call{Tool: t.Name(), ReadOnly: t.ReadOnly()}
	if s, ok := input["command"].(string); ok && t.Name() == "Bash" {
		c.Command, c.Dir = s, a.root // Bash runs in the workspace root
	}
	if t.Name() == "Bash" {
		// The files Bash declares it writes meet the Write and Edit rules.
		paths, _ := input[artifact.PathsParam].([]any)
		for _, v := range paths[:min(len(paths), artifact.MaxDeclaredPaths)] {
			if s, ok := v.(string); ok && s != "" {
				c.Writes = append(c.Writes, a.relPath(s))
			}
		}
	}
	if t.Name() == "WebFetch" {
		// Rules and "allow always" are per domain; a URL WebFetch would
		// refuse has none, and the tool says what is wrong with it.
		if s, ok := input["url"].(string); ok {
			if u, err := tools.WebFetchURL(s); err == nil {
				c.Domain = permission.NormalizeDomain(u.Hostname())
			}
		}
		return c
	}
	p, _ := input["file_path"].(string)
	if p == "" {
		p, _ = input["notebook_path"].(string) // NotebookEdit
	}
	if p == "" {
		p, _ = input["path"].(string)
	}
	c.Path = a.relPath(p)
	return c
}

// TodoList is the session's todo list as TodoWrite last saved it.
func (a *Agent) TodoList() []tools.Todo { return a.env.Todos.Items() }

// relPath makes p workspace-relative when it is inside the workspace, and
// leaves it absolute when outside.
func (a *Agent) relPath(p string) string {
	if p == "" {
		return ""
	}
	if hasDotDot(p) {
		// After a symbolic link ".." leads to the target's parent, not
		// where the text says: the rules resolve the path as given.
		return filepath.ToSlash(p)
	}
	if !filepath.IsAbs(p) {
		return filepath.ToSlash(filepath.Clean(p))
	}
	clean := filepath.Clean(p)
	if rel, ok := within(clean, a.root); ok {
		return rel
	}
	// The workspace may be reached through a symbolic link (macOS /tmp).
	if real, err := filepath.EvalSymlinks(filepath.Dir(clean)); err == nil {
		if rel, ok := within(filepath.Join(real, filepath.Base(clean)), a.root); ok {
			return rel
		}
	}
	return clean
}

func hasDotDot(p string) bool {
	for _, seg := range strings.Split(filepath.ToSlash(p), "/") {
		if seg == ".." {
			return true
		}
	}
	return false
}

func within(p, root string) (string, bool) {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return filepath.ToSlash(rel), true
}

func cloneRules(r *permission.Rules) permission.Rules {
	if r == nil {
		return permission.Rules{}
	}
	return permission.Rules{Allow: slices.Clone(r.Allow), Ask: slices.Clone(r.Ask), Deny: slices.Clone(r.Deny), Workspace: r.Workspace}
}

// providerCounter counts tokens with the provider's API for Read's gate;
// after the provider says it has none, it fails at once, so the gate falls
// back to the local tokenizer without a round trip.
type providerCounter struct {
	p    llm.Provider
	mu   sync.Mutex
	none bool
}

var _ tools.TokenCounter = (*providerCounter)(nil)

func (c *providerCounter) CountTokens(ctx context.Context, text string) (int, error) {
	c.mu.Lock()
	none := c.none
	c.mu.Unlock()
	if none {
		return 0, llm.ErrNoTokenCount
	}
	n, err := c.p.CountTokens(ctx, llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: text}}}}})
	if errors.Is(err, llm.ErrNoTokenCount) {
		c.mu.Lock()
		c.none = true
		c.mu.Unlock()
	}
	if err != nil {
		return 0, fmt.Errorf("agent: count tokens: %w", err)
	}
	return n, nil
}
