// Package builtin is the adapter of ferry's own agent (internal/agent): one
// agent.Agent per session, on the model provider the configuration or the
// environment names (provider.FromEnv).
//
// Open fails with a plain message naming what to set, and the command to
// restart (Config.HostCommand), when no provider is configured; the
// capability then says the same in its unavailable field, so the UI offers
// the agent disabled instead of failing at Start.
//
// Models: the adapter lists the provider's models (cached ModelsTTL) and a
// session takes a model and thinking effort for its next turns, checked
// against that list (adapter.ModelLister, adapter.ModelSetter). A denial's
// note reaches the model in the denied call's tool result (deny_note). A turn's coded failures (provider errors, a bad rule, an
// invalid structured answer) are reported by the agent as agent.error and
// end the turn with stop_reason error; Run returns an error only for a
// cancelled turn or a failure it could not report.
//
// Prompt settings: the agent honours every config_overrides key (its
// max_turns, allowed and denied rules, json_schema; output_format is
// rendered by ferry), a compaction's target_token_ratio and attached
// context_files: the turn's first user message carries each attachment as
// the provider's own image or document block, or as a text block naming
// the file (agent.Turn.Attachments). A mode switch's config is refused
// with code unsupported naming it (adapter.CheckModeConfig).
//
// With Config.Artifacts (on for sessions driven from the UI, off by default
// for ferry run) the files the agent's Write, Edit and Bash calls hand to
// the user are sent as agent.artifact events while the turn runs and listed
// in the turn's adapter.Result.Artifacts (docs/artifacts.md).
//
// With Config.Editor (ferry acp) a session's agent uses what the editor
// attached to it lends: its files' text, its terminals and its MCP
// servers (agent.Config.Editor, docs/tools.md "Lent by an editor").
//
// Instruction files and custom commands come from the workspace and the
// user's $XDG_CONFIG_HOME/ferry (AGENTS.md, commands/): an open session
// reports them through SessionConfig.Instructions and Commands when it
// opens and whenever they change (its agent looks at every turn start and
// every watchEvery), until Close.
// With Config.MCPFiles a session's agent also uses the MCP servers of the
// user's mcp.json and, once the user approved it, of the workspace's
// .mcp.json (docs/agent.md "MCP servers").
//
// With SessionConfig.Transcripts (the client's transcripts.db) every step
// of a session's conversation is saved as it ends, and Open continues a
// session that has a saved transcript, after any restart (docs/agent.md,
// "What survives a restart"). A transcript that cannot be used is logged
// and the session starts fresh.
package builtin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/lsp"
	"github.com/ferry-dev/ferry/internal/mcpconfig"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/protocol"
)

// ID is the adapter's id in session.capabilities.
const ID = "builtin"

// Config configures the adapter; the zero value reads the provider from
// the process environment.
type Config struct {
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// Provider selects and configures the model provider; empty fields
	// come from the environment (provider.FromEnv).
	Provider provider.Config
	// NewProvider replaces provider.FromEnv (tests, embedders).
	NewProvider func() (llm.Provider, error)
	// Titles has each session ask the model, once, after its first turn
	// that ends with an answer, for a short title (SessionConfig.Title):
	// one request of a few tokens, without tools. ferry up and ferry
	// connect turn it on (internal/cli/live.go); off in the zero Config,
	// for ferry run, whose sessions have no list to be named in.
	Titles bool
	// Rules every session starts with (each session gets its own copy;
	// "allow always" adds to that copy only).
	Rules permission.Rules
	// Tools of each session (nil: tools.AllTools() and the agent's Task).
	Tools []tools.Tool
	// MaxTurns per prompt (0: agent.DefaultMaxTurns).
	MaxTurns int
	// Headless denies what the rules would ask about (nobody to ask).
	Headless bool
	// InteractionTimeout of permission requests (0: wait for an answer).
	InteractionTimeout time.Duration
	// History keeps what writes replace (nil: none).
	History tools.FileHistory
	// Artifacts turns on file artifacts for every session (agent.Config's
	// Artifacts): on for sessions driven from the UI, off by default for
	// ferry run (--artifacts).
	Artifacts bool
	// Logger gets internal errors (nil: slog.Default()).
	Logger *slog.Logger
	// HostCommand is the command the user ran to start this client
	// ("ferry up", "ferry connect"; "" is ferry connect): messages that say
	// what to set name it, so the user restarts the right thing.
	HostCommand string
	// Editor holds what an editor attached to a session lends its agent
	// (ferry acp: files, terminals, MCP servers); nil: nothing is lent.
	Editor *editorlink.Registry
	// Diagnostics turns on language server diagnostics after edits for
	// every session (agent.Config's Diagnostics; the user's lsp.json,
	// lsp.LoadConfig). Nil: none.
	Diagnostics *lsp.Config
	// MCPFiles gives each session the MCP servers of the user's
	// $XDG_CONFIG_HOME/ferry/mcp.json and of the workspace's .mcp.json
	// once the user approved it (mcpconfig; paths from Getenv). ferry up,
	// connect and run turn it on.
	MCPFiles bool
	// TrustMCP approves the workspace's .mcp.json for every session
	// without asking or recording it (ferry run --trust-mcp).
	TrustMCP bool
}

// Adapter opens sessions of ferry's agent.
type Adapter struct {
	cfg    Config
	models *modelCache
}

var _ adapter.Adapter = (*Adapter)(nil)

// New returns the adapter.
func New(cfg Config) *Adapter {
	if cfg.Getenv == nil {
		cfg.Getenv = os.Getenv
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HostCommand == "" {
		cfg.HostCommand = "ferry connect"
	}
	return &Adapter{cfg: cfg, models: &modelCache{now: time.Now}}
}

// notConfigured is the error of a session that cannot start: no model
// provider. It says what to set for the command the user ran.
func (a *Adapter) notConfigured() *protocol.Error {
	return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.adapter", Message: "ferry's agent has no model provider: " + a.setupHint()}
}

// setupHint says how to give ferry's agent a model provider.
func (a *Adapter) setupHint() string {
	return "set ANTHROPIC_API_KEY, or OPENAI_API_KEY / OPENAI_BASE_URL (any OpenAI-compatible server), and restart " + a.cfg.HostCommand
}

// Capability declares what ferry's agent supports.
func (a *Adapter) Capability() protocol.AdapterCapability {
	ts := a.cfg.Tools
	if ts == nil {
		ts = tools.AllTools()
	}
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = t.Name()
	}
	if a.cfg.Tools == nil {
		names = append(names, agent.TaskToolName) // the agent adds it (sub-agents)
	}
	return protocol.AdapterCapability{
		ID:           ID,
		Name:         "ferry agent",
		Modes:        []string{protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview},
		InputTypes:   []string{protocol.InputText, protocol.InputSlashCommand, protocol.InputContinuation, protocol.InputPipedStdin},
		Tools:        names,
		Interactions: []string{protocol.InteractionPermission},
		Cancel:       true,
		Compact:      true,
		FileTokens:   "file_list",
		Settings: []string{adapter.SettingOutputFormat, adapter.SettingJSONSchema, adapter.SettingMaxTurns,
			adapter.SettingAllowedTools, adapter.SettingDeniedTools, adapter.SettingContextFiles, adapter.SettingTargetTokenRatio},
		// The agent's history is ferry's: a rewind takes it back too.
		RewindConversation: true,
		DenyNote:           true, // the denied call's tool result quotes it
		Models:             true,
		Unavailable:        a.unavailable(),
	}
}

// unavailable says why no session can start ("" : one can).
func (a *Adapter) unavailable() string {
	if _, err := a.Provider(); errors.Is(err, llm.ErrNotConfigured) {
		return "no model provider: " + a.setupHint()
	}
	return ""
}

// Provider returns the configured model provider.
func (a *Adapter) Provider() (llm.Provider, error) {
	var (
		p   llm.Provider
		err error
	)
	if a.cfg.NewProvider != nil {
		p, err = a.cfg.NewProvider()
	} else {
		p, err = provider.FromEnv(a.cfg.Getenv, a.cfg.Provider)
	}
	if err != nil {
		return nil, fmt.Errorf("builtin: model provider: %w", err)
	}
	return p, nil
}

// NewAgent builds the agent of one session (Open uses it; so does
// ferry run, which drives the agent without a client). Its error wraps
// llm.ErrNotConfigured when no provider is configured.
func (a *Adapter) NewAgent(cfg adapter.SessionConfig) (*Agent, error) {
	p, err := a.Provider()
	if err != nil {
		return nil, err
	}
	rules := permission.Rules{
		Allow: append([]permission.Rule(nil), a.cfg.Rules.Allow...),
		Ask:   append([]permission.Rule(nil), a.cfg.Rules.Ask...),
		Deny:  append([]permission.Rule(nil), a.cfg.Rules.Deny...),
		// The agent sets Workspace to the session's workspace.
	}
	hist := a.cfg.History
	if cfg.History != nil {
		hist = cfg.History // the session's own journal (undo, rewind)
	}
	var mcp *mcpconfig.Sources
	if a.cfg.MCPFiles {
		// The agent keys approvals by its canonical workspace path.
		if mcp, err = mcpconfig.DefaultSources("", a.cfg.Getenv); err != nil {
			return nil, fmt.Errorf("builtin: %w", err)
		}
		mcp.Trust = a.cfg.TrustMCP
	}
	ag, err := agent.New(agent.Config{
		Provider:           p,
		Workspace:          cfg.Workspace.Path,
		Tools:              a.cfg.Tools,
		Mode:               cfg.Mode,
		Rules:              &rules,
		MaxTurns:           a.cfg.MaxTurns,
		Headless:           a.cfg.Headless,
		InteractionTimeout: a.cfg.InteractionTimeout,
		History:            hist,
		Artifacts:          a.cfg.Artifacts,
		OnStep:             keeper(cfg, a.cfg.Logger),
		StopCause:          adapter.ErrStopping, // the client's cause when ferry stops
		Editor:             lender(a.cfg.Editor, cfg.SessionID),
		UserInstructions:   userFile(a.cfg.Getenv, "AGENTS.md"),
		UserCommands:       userFile(a.cfg.Getenv, "commands"),
		OnInstructions:     cfg.Instructions,
		OnCommands:         cfg.Commands,
		Diagnostics:        a.cfg.Diagnostics,
		MCP:                mcp,
		Logger:             a.cfg.Logger.With("session", cfg.SessionID),
	})
	if err != nil {
		return nil, fmt.Errorf("builtin: %w", err)
	}
	return &Agent{ag}, nil
}

// userFile is name in the user's ferry folder, $XDG_CONFIG_HOME/ferry
// (default ~/.config/ferry); "" when neither variable gives an absolute
// path.
func userFile(getenv func(string) string, name string) string {
	dir := getenv("XDG_CONFIG_HOME")
	if !filepath.IsAbs(dir) {
		home := getenv("HOME")
		if !filepath.IsAbs(home) {
			return ""
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "ferry", name)
}

// lender is what the editor of session id lends, asked anew each time;
// nil when no registry is configured.
func lender(reg *editorlink.Registry, id string) func() editorlink.Lent {
	if reg == nil {
		return nil
	}
	return func() editorlink.Lent {
		l, _ := reg.Get(id)
		return l
	}
}

// Agent is ferry's agent driven through the adapter seam's Turn and Emit
// (ferry run drives it so, without a client): package agent has its own
// and does not import the seam.
type Agent struct{ *agent.Agent }

// Run runs one prompt (agent.Agent.Run).
func (g *Agent) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (agent.Result, error) {
	return g.Agent.Run(ctx, agent.Turn(turn), agent.Emit(emit))
}

// Open starts a session: an agent on the workspace with the configured
// provider. With no provider configured its error wraps
// llm.ErrNotConfigured and says what to set.
func (a *Adapter) Open(ctx context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	ag, err := a.NewAgent(cfg)
	if errors.Is(err, llm.ErrNotConfigured) {
		// The UI shows this: it says what to set, for the command the
		// user ran.
		return nil, a.notConfigured()
	}
	if err != nil {
		return nil, err
	}
	restore(ctx, ag.Agent, cfg, a.cfg.Logger)
	s := &Session{agent: ag, adapter: a, log: a.cfg.Logger, caps: a.Capability()}
	s.closed, s.close = context.WithCancel(context.Background())
	if a.cfg.Titles {
		s.onTitle = cfg.Title
	}
	if cfg.Commands != nil {
		cfg.Commands(ag.Commands())
	}
	if cfg.Instructions != nil {
		cfg.Instructions(ag.Instructions())
	}
	s.watched = make(chan struct{})
	go s.watch()
	return s, nil
}

// watchEvery is how often an open session looks at its instruction files
// and command folders (a turn start looks too): a few stats and reads of
// small files, so the UI's / menu and the session's info follow an edit.
const watchEvery = 3 * time.Second

// watch refreshes the agent's instructions and custom commands until
// Close (agent.Agent.Refresh reports what changed).
func (s *Session) watch() {
	defer close(s.watched)
	t := time.NewTicker(watchEvery)
	defer t.Stop()
	for {
		select {
		case <-s.closed.Done():
			return
		case <-t.C:
			s.agent.Refresh()
		}
	}
}

// Session is one open session of ferry's agent.
type Session struct {
	agent   *Agent
	adapter *Adapter
	log     *slog.Logger
	caps    protocol.AdapterCapability
	// onTitle gets the title the model makes after the first turn that
	// ends with an answer (SessionConfig.Title; nil: no title is made).
	onTitle func(string)
	titled  atomic.Bool
	// closed ends with Close: it ends a title call still running, and
	// watch, which closes watched when it has returned.
	closed  context.Context
	close   context.CancelFunc
	watched chan struct{}
}

var _ adapter.Session = (*Session)(nil)

// Agent is the session's agent.
func (s *Session) Agent() *agent.Agent { return s.agent.Agent }

// Run runs one prompt. A coded failure was already reported as agent.error
// by the agent: the turn ends with stop_reason error and no second error.
func (s *Session) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	if res, refused, err := adapter.RefusePrompt(ctx, s.caps, turn, emit, refusals); refused {
		return res, err
	}
	res, err := s.agent.Run(ctx, turn, emit)
	out := adapter.Result{Text: res.Text, StopReason: res.StopReason, Structured: res.Structured, Artifacts: res.Artifacts}
	if err == nil {
		if s.onTitle != nil && res.Text != "" && out.StopReason == protocol.StopEndTurn && s.titled.CompareAndSwap(false, true) {
			// Beside the session's next turns: not cancelled with this one.
			go s.makeTitle(context.WithoutCancel(ctx), turn.Prompt.Literal(), res.Text)
		}
		return out, nil
	}
	if ctx.Err() != nil {
		out.StopReason = agent.StopCancelled
		return out, err
	}
	var ae *agent.Error
	if errors.As(err, &ae) && ae.Code != agent.CodeBusy {
		s.log.Info("turn ended with an error", "turn", turn.ID, "code", ae.Code, "err", err)
		out.StopReason = agent.StopError
		return out, nil
	}
	return out, err
}

// Bounds of the title call: one short request, once per session.
const (
	titleTimeout   = 30 * time.Second
	titleMaxTokens = 40
	titleMaxInput  = 4 << 10 // bytes of the prompt and of the answer sent
)

// makeTitle asks the model, once, for a short title of the session's first
// exchange and hands it to onTitle: one bounded request (titleTimeout,
// titleMaxTokens, no tools, no thinking) beside the session's turns, ended
// by Close. A failure only costs the title (the master keeps the one from
// the prompt) and is logged with the provider's safe message.
func (s *Session) makeTitle(ctx context.Context, prompt, answer string) {
	p, err := s.adapter.Provider()
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, titleTimeout)
	defer cancel()
	defer context.AfterFunc(s.closed, cancel)()
	text := "The person wrote:\n" + runecut.Ellipsis(prompt, titleMaxInput) + "\n\nThe agent answered:\n" + runecut.Ellipsis(answer, titleMaxInput)
	res, err := p.Stream(ctx, llm.Request{System: llm.TitleSystem, MaxTokens: titleMaxTokens,
		Messages: []llm.Message{{Role: "user", Content: []llm.Block{{Type: "text", Text: text}}}}}, func(llm.Event) error { return nil })
	if err != nil {
		s.log.Info("no title from the model", "err", err)
		return
	}
	var b strings.Builder
	for _, bl := range res.Message.Content {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	if t := strings.Trim(strings.TrimSpace(b.String()), "\"'“”‘’`*#.!"); t != "" && s.closed.Err() == nil {
		s.onTitle(t)
	}
}

// Answer delivers an interaction's answer (nil: it timed out).
func (s *Session) Answer(interactionID string, resp *protocol.InteractionResponse) error {
	err := s.agent.Answer(interactionID, resp)
	if errors.Is(err, agent.ErrUnknownInteraction) {
		// The seam's sentinel, which the client checks for.
		return adapter.ErrUnknownInteraction
	}
	return err
}

// refusals say why ferry's agent refuses a prompt setting: it honours every
// one, so only a mode switch's config is refused (CheckModeConfig).
var refusals = map[string]string{}

// SetMode switches the mode from the next tool call on. A config is
// refused: ferry's modes have no settings.
func (s *Session) SetMode(mode string, config json.RawMessage) error {
	if err := adapter.CheckModeConfig(s.caps, config); err != nil {
		return err
	}
	if err := s.agent.SetMode(mode); err != nil {
		return &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.mode", Message: "ferry's agent has no such mode"}
	}
	return nil
}

// Compact summarises the session's history.
func (s *Session) Compact(ctx context.Context, req *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	done, err := s.agent.Compact(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("builtin: compact: %w", err)
	}
	return done, nil
}

// RewindConversation takes the agent's conversation back to before turnID
// (adapter.ConversationRewinder).
func (s *Session) RewindConversation(turnID string) error {
	if err := s.agent.RewindTo(turnID); err != nil {
		return fmt.Errorf("builtin: rewind: %w", err)
	}
	return nil
}

// Close ends the session and a title call still running.
func (s *Session) Close() error {
	s.close()
	<-s.watched // no refresh reads the workspace once it is closed
	if err := s.agent.Close(); err != nil {
		return fmt.Errorf("builtin: close: %w", err)
	}
	return nil
}
