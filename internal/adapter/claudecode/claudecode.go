package claudecode

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// ID is the adapter's id in session.capabilities.
const ID = "claude-code"

// Timing of a session's process. Variables, not constants, so that the
// package's tests can shorten them.
var (
	// startTimeout bounds Claude Code's start: the initialize handshake
	// (it may start MCP servers first).
	startTimeout = 90 * time.Second
	// cancelWait is how long Run waits after an interrupt for the turn to
	// end before it returns (the turn then settles in the background).
	cancelWait = 200 * time.Millisecond
	// cancelGrace is how long an interrupted turn may take to end before
	// its process is killed (the next turn then resumes the conversation
	// in a new process).
	cancelGrace = 5 * time.Second
	// stopGrace is how long a process may take to exit after its stdin is
	// closed, before it is killed.
	stopGrace = 3 * time.Second
)

// Config configures the adapter.
type Config struct {
	// Command is the claude executable (default "claude", looked up on
	// PATH at Open).
	Command string
	// Args are extra arguments appended to every run.
	Args []string
	// Env is extra KEY=VALUE on top of os.Environ().
	Env []string
	// StateDir is where ferry session id → Claude session id persists, so
	// a session resumes across ferry restarts ("" = in memory only).
	StateDir string
	// Logger gets internal errors and the CLI's stderr (nil: slog.Default()).
	Logger *slog.Logger
	// HostCommand is the command the user ran to start this client
	// ("ferry up", "ferry connect"; "" is ferry connect), named by the
	// message that says how to install Claude Code.
	HostCommand string
}

// Adapter opens Claude Code sessions.
type Adapter struct {
	cfg     Config
	store   *store
	maxLine int // stream line bound (defaultMaxLine; tests lower it)
}

var _ adapter.Adapter = (*Adapter)(nil)

// New returns the adapter.
func New(cfg Config) *Adapter {
	if cfg.Command == "" {
		cfg.Command = "claude"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HostCommand == "" {
		cfg.HostCommand = "ferry connect"
	}
	return &Adapter{cfg: cfg, store: newStore(cfg.StateDir), maxLine: defaultMaxLine}
}

// tools are Claude Code's built-in tools, as its init message lists them.
var tools = []string{
	"Agent", "AskUserQuestion", "Bash", "Edit", "EnterPlanMode", "ExitPlanMode", "Glob", "Grep",
	"NotebookEdit", "Read", "Skill", "TaskCreate", "TaskGet", "TaskList", "TaskOutput", "TaskStop",
	"TaskUpdate", "WebFetch", "WebSearch", "Write",
}

// Capability declares what the adapter supports.
func (a *Adapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{
		ID:   ID,
		Name: "Claude Code",
		// review runs as Claude Code's plan mode plus ferry's own check of
		// every tool call (read-only git commands allowed).
		Modes:        []string{protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview},
		InputTypes:   []string{protocol.InputText, protocol.InputSlashCommand, protocol.InputContinuation, protocol.InputPipedStdin},
		Tools:        tools,
		Interactions: []string{protocol.InteractionPermission, protocol.InteractionSingleSelect, protocol.InteractionMultiSelect, protocol.InteractionTextInput},
		Cancel:       true,
		Compact:      true,
		FileTokens:   "mention",
		Settings: []string{adapter.SettingOutputFormat, adapter.SettingJSONSchema, adapter.SettingMaxTurns,
			adapter.SettingAllowedTools, adapter.SettingDeniedTools, adapter.SettingContextFiles},
		// A denial's message is the tool result the CLI's model reads.
		DenyNote:    true,
		Unavailable: a.unavailable(),
	}
}

// unavailable says why no session can start ("" : one can): the command
// is not found.
func (a *Adapter) unavailable() string {
	if _, err := exec.LookPath(a.cfg.Command); err != nil {
		return a.notInstalled()
	}
	return ""
}

// notInstalled says how to make Claude Code available, for the command
// the user ran.
func (a *Adapter) notInstalled() string {
	// The configured path stays in the log: the UI is told what to do.
	return "Claude Code is not installed: npm install -g @anthropic-ai/claude-code (or pass --agent claude-code:PATH) and restart " + a.cfg.HostCommand
}

// Open starts a session on the workspace. The CLI itself starts with the
// first prompt (whose per-prompt flags it needs); Open only checks that it
// can be found, so a missing install is refused at once and clearly.
func (a *Adapter) Open(_ context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	bin, err := exec.LookPath(a.cfg.Command)
	if err != nil {
		a.cfg.Logger.Error("claude code not found", "command", a.cfg.Command, "err", err)
		return nil, &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.adapter", Message: a.notInstalled()}
	}
	mode := cfg.Mode
	if mode == "" {
		mode = protocol.ModeDefault
	}
	if !knownMode(mode) {
		return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.mode", Message: "Claude Code has no such mode"}
	}
	fsys, err := vfs.NewLocal(cfg.Workspace.Path)
	if err != nil {
		return nil, fmt.Errorf("claudecode: open session: %w", err)
	}
	log := a.cfg.Logger.With("adapter", ID, "session", cfg.SessionID)
	s := &session{
		a: a, id: cfg.SessionID, ws: cfg.Workspace.Path, fs: fsys, bin: bin, log: log,
		mode: mode, pending: map[string]*ask{}, byRequest: map[string]*ask{}, denied: map[string]bool{},
		history: cfg.History, before: map[string]snapshot{}, artifacts: cfg.Artifacts,
		onCommands: cfg.Commands,
		onTitle:    cfg.Title,
	}
	rec, ok, err := a.store.load(cfg.SessionID)
	switch {
	case err != nil:
		log.Warn("cannot read the session's Claude Code state; starting a new conversation", "err", err)
	case ok && rec.Workspace == cfg.Workspace.Path:
		s.claudeID = rec.ClaudeSessionID
		// The conversation had its first turn, and its title, before.
		s.titled = true
	}
	return s, nil
}

func knownMode(m string) bool {
	return m == protocol.ModeDefault || m == protocol.ModePlan || m == protocol.ModeReview
}

// cliMode is the --permission-mode of a ferry mode: plan for plan and
// review, whose limits ferry enforces on top.
func cliMode(m string) string {
	if m == protocol.ModeDefault {
		return "default"
	}
	return "plan"
}

// environ is the CLI's environment.
func (a *Adapter) environ() []string {
	return append(os.Environ(), a.cfg.Env...)
}
