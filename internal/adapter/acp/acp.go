// Package acp is the adapter of agents that speak the Agent Client Protocol
// (ACP: JSON-RPC 2.0 over the agent's stdio), such as
// `gemini --experimental-acp`, `opencode acp` or `claude-code-acp`.
//
// A session is one agent process, started in the workspace in a process
// group of its own, with one ACP session (initialize, then session/new with
// the workspace as cwd and no MCP servers). ferry is the ACP client: it
// advertises fs.readTextFile and fs.writeTextFile and serves them itself.
//
// Guarantees:
//
//   - A prompt is one session/prompt: the text, with each file token written
//     as its path (an unconvertible token as its display path), and one
//     resource_link block (file:///abs/path) per referenced file. The text
//     is framed by the input type (framing.Prompt): piped input as
//     material, an empty continuation as a request to go on; slash
//     commands go as typed.
//   - session/update notifications become agent.* events in the order they
//     arrive: agent_message_chunk → agent.text.delta, agent_thought_chunk →
//     agent.text.delta on the thinking channel, tool_call / tool_call_update
//     → agent.tool.started, agent.tool.updated (title changes) and
//     agent.tool.finished (a call announced pending without its input, as
//     opencode does, starts once an update brings the input, or when it
//     runs, is asked about or ends without one, so the event carries the
//     real input), plan → a "Plan" tool call whose output is the
//     checklist, current_mode_update → agent.mode.changed; the prompt's
//     usage → agent.usage.
//   - An update belongs to the turn whose session/prompt is outstanding
//     when ferry reads it. ACP sends every update of a turn before the
//     prompt's response, and updates carry no turn id, so one that arrives
//     after the response (or between turns) is logged and dropped, never
//     given to the next turn.
//   - session/request_permission becomes an agent.interaction.request of
//     kind permission whose options are the agent's; the answer goes back as
//     the chosen optionId (a timeout picks the agent's reject option). In
//     plan and review mode a permission request for a writing or executing
//     tool is rejected without asking: ferry does not trust the agent to
//     keep to a mode.
//   - A prompt's config_overrides: denied_tools and allowed_tools are
//     permission rules ferry applies itself to that prompt's calls (see
//     permission.Rules; paths as given and with links resolved): an fs
//     request a deny rule covers (Read for reads, Write or Edit for
//     writes) is refused with code 15, a permission request a deny rule
//     covers is rejected and one allow rules cover allowed once, neither
//     asked. A call a deny rule covers that completes anyway (the agent
//     ran it with its own tools, unasked) ends the turn: session/cancel,
//     agent.error, stop reason error; so does a writing or executing call
//     that completes in a mode that refuses it. json_schema and max_turns
//     fail the prompt with one agent.error code unsupported naming the key
//     (output_format is rendered by ferry); a rule that does not parse
//     with bad_request naming it.
//   - Attached files (context_files) go as the agent's promptCapabilities
//     allow (attach.go): images as image blocks, text and PDFs as embedded
//     resources, text inline without embeddedContext. A file the agent
//     cannot take is refused before the turn starts (CheckAttachments, the
//     adapter.AttachmentChecker): unsupported on payload.context_files[i],
//     naming the agent and the capability it lacks. A mode switch's config and a compaction's
//     target_token_ratio are refused with unsupported too.
//   - Capabilities never over-claim: the adapter declares what every agent
//     offers (default mode, no compaction, text attachments); each session
//     reports, once initialize and session/new answered and again when its
//     commands change (SessionConfig.Capabilities), the modes its agent
//     has (ACP modes, else the values of a config option of category mode,
//     switched with session/set_config_option), compaction when it lists a
//     compact command, and the attachment kinds its promptCapabilities
//     take. Every mode reported switches; compaction reported runs.
//   - Cancel sends session/cancel, answers every open permission request
//     with outcome cancelled, and returns within cancelWait (plus
//     detachWait when the agent has not answered: the turn's open calls
//     are finished cancelled first). Nothing of the turn is emitted after
//     Run returned. The agent then has killAfter to answer the prompt; if
//     it does not, its process group is killed and the session reports
//     that the agent stopped.
//   - fs/read_text_file and fs/write_text_file are confined to the
//     workspace (vfs) and keep the file tools' contract: a write of an
//     existing file needs a full earlier read of it in this session and is
//     refused if the file changed since; writes are refused in plan and
//     review mode. Errors are coded JSON-RPC errors whose messages hold no
//     internal path or error text.
//   - With SessionConfig.Artifacts the files the agent writes are handed
//     over (agent.artifact, Result.Artifacts): each fs/write_text_file once
//     it succeeded (tool_use id: the toolCallId of the request's _meta, else
//     the running edit call it belongs to, else none) and each location of
//     an edit call that completes; a file once per tool call, never one
//     outside the workspace, nothing for a failed call or with the switch
//     off. A refused registration is logged and fails nothing.
//   - The codec survives a hostile agent: a malformed line is logged and
//     skipped, a line up to 128 MiB is parsed (a 64 MiB tool result is
//     fine), a longer one is skipped without being buffered, and a crash
//     mid-turn ends the turn with agent.error and stop reason error.
//     Close leaves no process of the agent's group behind.
package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
)

// IDPrefix starts every ACP adapter's id: "acp:" + Config.Name.
const IDPrefix = "acp:"

// Default timings.
const (
	// defaultOpenTimeout bounds initialize and session/new together.
	defaultOpenTimeout = 2 * time.Minute
	// defaultCancelWait is how long Run waits for the agent to answer a
	// cancelled prompt before it returns anyway.
	defaultCancelWait = 250 * time.Millisecond
	// defaultKillAfter is how long a cancelled prompt may stay unanswered
	// before the agent's process group is killed.
	defaultKillAfter = 10 * time.Second
	// setModeTimeout bounds session/set_mode.
	setModeTimeout = 30 * time.Second
	// compactTimeout bounds a /compact prompt.
	compactTimeout = 10 * time.Minute
)

// Config configures the adapter.
type Config struct {
	// Command is the argv of the ACP agent, e.g. {"gemini", "--experimental-acp"}.
	Command []string
	// Name makes the adapter id "acp:"+Name (default: base name of Command[0]).
	Name string
	// Env is extra KEY=VALUE on top of os.Environ().
	Env []string
	// Logger gets internal errors and the agent's stderr (nil: slog.Default()).
	Logger *slog.Logger
	// HostCommand is the command the user ran to start this client
	// ("ferry up", "ferry connect"; "" is ferry connect), named by the
	// capability's unavailable text.
	HostCommand string
}

// Adapter opens ACP sessions: one agent process each.
type Adapter struct {
	cfg Config
	log *slog.Logger

	// Tunables, fixed by New; tests shorten them.
	maxLine     int
	openTimeout time.Duration
	cancelWait  time.Duration
	killAfter   time.Duration
}

var _ adapter.Adapter = (*Adapter)(nil)

// New returns the adapter of cfg.Command; it fails when Command is empty.
func New(cfg Config) (*Adapter, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("acp: no agent command configured")
	}
	cfg.Command = append([]string(nil), cfg.Command...)
	if cfg.Name == "" {
		cfg.Name = filepath.Base(cfg.Command[0])
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Adapter{
		cfg:         cfg,
		log:         cfg.Logger.With("adapter", IDPrefix+cfg.Name),
		maxLine:     defaultMaxLine,
		openTimeout: defaultOpenTimeout,
		cancelWait:  defaultCancelWait,
		killAfter:   defaultKillAfter,
	}, nil
}

// ID is the adapter's id: "acp:" + Config.Name.
func (a *Adapter) ID() string { return IDPrefix + a.cfg.Name }

// Capability declares what every ACP session offers, before any agent has
// said what it has: default mode only, no compaction, text attachments
// only (the one kind every agent takes, inline). A session reports what its
// agent really offers once initialize and session/new have answered
// (SessionConfig.Capabilities, session.capability): the modes it has
// (switched on the agent with session/set_mode and enforced on ferry's
// side), compaction when it lists a compact command, the attachment kinds
// its prompt capabilities take.
func (a *Adapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{
		ID:           a.ID(),
		Name:         "ACP agent (" + a.cfg.Name + ")",
		Modes:        []string{protocol.ModeDefault},
		InputTypes:   []string{protocol.InputText, protocol.InputSlashCommand, protocol.InputContinuation, protocol.InputPipedStdin},
		Interactions: []string{protocol.InteractionPermission},
		Cancel:       true,
		FileTokens:   "file_list",
		Settings:     []string{adapter.SettingOutputFormat, adapter.SettingAllowedTools, adapter.SettingDeniedTools, adapter.SettingContextFiles},
		Attachments:  []string{protocol.AttachText},
		// DenyNote stays false: ACP's permission outcome carries an option
		// id only, no text for the agent.
		Unavailable: a.unavailable(),
	}
}

// unavailable says why no session can start ("" : one can): the agent's
// command is not found. The path stays in the log, the name is shown.
func (a *Adapter) unavailable() string {
	if _, err := exec.LookPath(a.cfg.Command[0]); err != nil {
		host := a.cfg.HostCommand
		if host == "" {
			host = "ferry connect"
		}
		return fmt.Sprintf("the ACP agent command %q is not found: install it, or pass --agent acp:CMD with its path, and restart %s", filepath.Base(a.cfg.Command[0]), host)
	}
	return ""
}

// Open starts the agent in the workspace and opens an ACP session on it.
// Failures are coded protocol errors with a message safe to show.
func (a *Adapter) Open(ctx context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	fsys, err := vfs.NewLocal(cfg.Workspace.Path)
	if err != nil {
		return nil, fmt.Errorf("acp: open workspace: %w", err)
	}
	ws := fsys.Roots()[0]
	log := a.log.With("session", cfg.SessionID)
	c, err := startConn(a.cfg.Command, ws, a.cfg.Env, a.maxLine, log)
	if err != nil {
		_ = fsys.Close()
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) || errors.Is(err, os.ErrPermission) {
			log.Warn("acp: cannot start the agent", "err", err)
			return nil, &protocol.Error{Code: protocol.CodeNotFound, Field: "payload.adapter",
				Message: fmt.Sprintf("the ACP agent command %q cannot be run on this machine: is it installed?", filepath.Base(a.cfg.Command[0]))}
		}
		return nil, err
	}
	s := newSession(a, c, fsys, ws, log)
	s.artifacts = cfg.Artifacts
	s.onCommands = cfg.Commands
	s.onTitle = cfg.Title
	s.onCaps = cfg.Capabilities
	if cfg.History != nil {
		s.env.History = cfg.History // fs/write_text_file is recorded for undo
	}
	octx, cancel := context.WithTimeout(ctx, a.openTimeout)
	defer cancel()
	if err := s.handshake(octx, cfg.Mode); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// initializeRequest is ferry's initialize: protocol version 1 and the
// client capabilities ferry serves, the file system (through the
// workspace's vfs); no terminal.
func initializeRequest(version string) acpsdk.InitializeRequest {
	return acpsdk.InitializeRequest{
		ProtocolVersion: acpsdk.ProtocolVersionNumber,
		ClientCapabilities: acpsdk.ClientCapabilities{
			Fs: acpsdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
		},
		ClientInfo: &acpsdk.Implementation{Name: "ferry", Version: version},
	}
}

// newToolsEnv is the tools environment the fs methods run in: the
// session's vfs and read state.
func newToolsEnv(fsys vfs.FS) *tools.Env {
	return &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits()}
}
