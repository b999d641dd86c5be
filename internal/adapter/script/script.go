// Package script is the adapter of script agents: any command, run once per
// prompt (spec §16.3, third row).
//
// What it guarantees:
//
//   - The prompt's text goes to the command's standard input, each file
//     token written as its workspace-relative path; the absolute paths of
//     the referenced files are appended to the command's arguments, each
//     once, in order of first mention. A reference that leaves the
//     workspace (lexically or through a symlink) is not passed: its token
//     stays in the text as its display path, as is any token fileref cannot
//     convert. Absolute arguments cannot be mistaken for options.
//   - The command runs in the workspace, in a new session (its own process
//     group, no controlling terminal), with ferry's environment minus
//     FERRY_TOKEN, the configured extra variables, and FERRY_SESSION_ID,
//     FERRY_WORKSPACE, FERRY_MODE and FERRY_INPUT_TYPE (text, or
//     piped_stdin: standard input then holds what the user piped, material
//     rather than a request; the script decides what to make of it).
//   - A prompt setting (config_overrides, context_files) is refused before
//     the command starts, with agent.error unsupported naming it
//     (adapter.CheckPrompt): ferry sees none of a script's work, so it can
//     enforce no tool rule, turn bound or schema on it, and a script is not
//     trusted to. output_format is honoured by ferry, which renders the
//     events; a mode switch's config is refused likewise.
//   - Standard output is streamed as agent.text.delta as it arrives, never
//     splitting a UTF-8 sequence across two deltas (bytes that are not
//     UTF-8 become U+FFFD). Standard error is kept, its last MaxStderr
//     bytes, for the log and the failure report.
//   - A line of standard output that starts with ArtifactMarker
//     ("::ferry-artifact path") names a file the script made; it is taken
//     out of the text whether or not artifacts are on. Only a line start
//     that may still become a marker is held back until its newline.
//   - With SessionConfig.Artifacts on, the files a run created or changed
//     are handed over when the command has ended (however it ended, bar a
//     cancel): the workspace's regular files are stamped (size, mtime,
//     ctime, inode) before and after the run, walking with the ignore
//     rules (internal/ignore; .git skipped) within maxSnapshotFiles and
//     snapshotTime. Each new or changed file, and each named file (even
//     when ignored), is registered (artifact.Register: confined to the
//     workspace, a regular file), sent as agent.artifact and listed in
//     Result.Artifacts, once, in path order, before the turn's end. A file
//     refused, or a snapshot cut short, is logged; when the first snapshot
//     is cut short, only named files are handed over (a file it missed
//     would look new). Off, nothing is registered.
//   - Exit status 0 ends the turn with end_turn. Any other end emits one
//     coded agent.error (CodeExitStatus, CodeKilled, CodeStartFailed) with
//     a message safe to show, and the turn ends with stop_reason error.
//   - When the turn's context is cancelled (or the session closed), the
//     whole process group gets SIGTERM, then SIGKILL after KillGrace, and
//     Run returns within about KillGrace. When the command exits by
//     itself, whatever it left running in its group is stopped the same
//     way: no process outlives its turn (bar one that left the group with
//     setsid, which nobody can find).
//   - A script cannot be trusted to respect plan or review mode, so only
//     default is declared and SetMode refuses the others; there are no
//     interactions, and Compact is refused: a script keeps no history.
package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/vfs"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// Prefix starts every script adapter's id: the id is Prefix + Config.Name.
const Prefix = "script:"

// Error codes of the agent.error a failed turn emits.
const (
	// CodeExitStatus: the command exited with a non-zero status.
	CodeExitStatus = protocol.AgentCodeScriptExitStatus
	// CodeKilled: the command was ended by a signal ferry did not send.
	CodeKilled = protocol.AgentCodeScriptKilled
	// CodeStartFailed: the command could not be started.
	CodeStartFailed = protocol.AgentCodeScriptStartFailed
)

// Limits.
const (
	// MaxStderr is how much of the end of standard error is kept.
	MaxStderr = 64 << 10
	// MaxText bounds the turn's final text (Result.Text): agent.text.done
	// must fit in one message. Every byte is still streamed as deltas.
	MaxText = 1 << 20
	// maxReported is how much of the end of standard error goes into the
	// agent.error message (whose limit is 4096 characters).
	maxReported = 2048
	// maxIDLen is the protocol's limit on an adapter id.
	maxIDLen = 128
	// maxNameLen is the protocol's limit on an adapter's display name.
	maxNameLen = 256
)

// truncatedNote ends a final text cut at MaxText.
const truncatedNote = "\n[ferry: the output was longer than 1 MiB; it was streamed whole, this text keeps its start]"

// Config configures a script adapter.
type Config struct {
	// Command is the argv; the prompt's referenced file paths are appended
	// as arguments, the text goes to standard input. A first word with a
	// path separator is made absolute against the current directory at New;
	// a bare name is looked up on PATH.
	Command []string
	// Name makes the adapter id "script:"+Name (default: the base name of
	// Command[0]).
	Name string
	// Env is extra KEY=VALUE on top of ferry's environment.
	Env []string
	// Logger gets what failed, in detail (nil: slog.Default()).
	Logger *slog.Logger
	// HostCommand is the command the user ran ("ferry up"), named when the
	// capability says to fix the command and restart (default "ferry
	// connect").
	HostCommand string
}

// Adapter opens script sessions.
type Adapter struct {
	command []string
	name    string
	env     []string
	log     *slog.Logger
	host    string
}

var _ adapter.Adapter = (*Adapter)(nil)

// New checks cfg and returns the adapter. It fails when Command is empty,
// Name would make an invalid id, or an Env entry is not KEY=VALUE.
func New(cfg Config) (*Adapter, error) {
	if len(cfg.Command) == 0 || cfg.Command[0] == "" {
		return nil, errors.New("script: no command")
	}
	command := slices.Clone(cfg.Command)
	if strings.ContainsRune(command[0], filepath.Separator) && !filepath.IsAbs(command[0]) {
		abs, err := filepath.Abs(command[0])
		if err != nil {
			return nil, fmt.Errorf("script: command %q: %w", command[0], err)
		}
		command[0] = abs
	}
	name := cfg.Name
	if name == "" {
		name = filepath.Base(command[0])
	}
	if err := checkName(name); err != nil {
		return nil, err
	}
	for _, kv := range cfg.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return nil, fmt.Errorf("script: environment entry %q is not KEY=VALUE", kv)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	host := cfg.HostCommand
	if host == "" {
		host = "ferry connect"
	}
	return &Adapter{command: command, name: name, env: slices.Clone(cfg.Env), log: log.With("adapter", Prefix+name), host: host}, nil
}

// checkName refuses a name that cannot be part of an adapter id.
func checkName(name string) error {
	if name == "" || len(Prefix)+len(name) > maxIDLen || !utf8.ValidString(name) {
		return fmt.Errorf("script: name %q: want 1 to %d bytes of UTF-8", name, maxIDLen-len(Prefix))
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.IsSpace(r) {
			return fmt.Errorf("script: name %q: no spaces or control characters", name)
		}
	}
	return nil
}

// ID is the adapter's id: "script:" and its name.
func (a *Adapter) ID() string { return Prefix + a.name }

// Capability declares what a script agent supports: default mode only,
// text and piped input, cancel, file tokens as arguments, no prompt
// settings but output_format (which ferry renders), and plain text: its
// output is a command's, shown line by line, not read as Markdown.
func (a *Adapter) Capability() protocol.AdapterCapability {
	return protocol.AdapterCapability{
		ID:          a.ID(),
		Name:        displayName(a.command),
		Modes:       []string{protocol.ModeDefault},
		InputTypes:  []string{protocol.InputText, protocol.InputPipedStdin},
		Cancel:      true,
		Compact:     false,
		FileTokens:  "arguments",
		Settings:    []string{adapter.SettingOutputFormat},
		Unavailable: a.unavailable(),
		TextFormat:  protocol.TextPlain,
	}
}

// unavailable says why the command cannot run (a script path that does
// not exist or is not executable, a name not on PATH), naming it, so that
// ferry up lists the agent as not available and the UI offers it disabled
// rather than failing the first prompt.
func (a *Adapter) unavailable() string {
	cmd := a.command[0]
	_, err := exec.LookPath(cmd)
	switch {
	case err == nil:
		return ""
	case !strings.ContainsRune(cmd, filepath.Separator):
		return fmt.Sprintf("the script command %q is not found on PATH: install it, or pass --agent script:CMD with its path, and restart %s", cmd, a.host)
	case errors.Is(err, os.ErrNotExist):
		return fmt.Sprintf("the script %s does not exist: create it, or pass --agent script:CMD with its path, and restart %s", cmd, a.host)
	}
	return fmt.Sprintf("the script %s cannot be run (%v): make it executable (chmod +x) and restart %s", cmd, errors.Unwrap(err), a.host)
}

// displayName is "Script: " and the command, cut to the protocol's limit.
func displayName(command []string) string {
	s := "Script: " + strings.Join(command, " ")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > maxNameLen {
		s = cutRunes(s, maxNameLen-len("…")) + "…"
	}
	return s
}

// cutRunes returns the longest prefix of s of at most n bytes that ends on
// a rune boundary.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Open starts a session on the workspace. It fails when the mode is not
// default, the workspace is not a directory, or the command is not found.
func (a *Adapter) Open(_ context.Context, cfg adapter.SessionConfig) (adapter.Session, error) {
	if cfg.Mode != "" && cfg.Mode != protocol.ModeDefault {
		return nil, unsupportedMode()
	}
	ws := cfg.Workspace.Path
	if !filepath.IsAbs(ws) {
		return nil, fmt.Errorf("script: workspace %q is not an absolute path", ws)
	}
	ws = filepath.Clean(ws)
	fi, err := os.Stat(ws)
	if err != nil {
		return nil, fmt.Errorf("script: workspace: %w", err)
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("script: workspace %s is not a directory", ws)
	}
	root, err := filepath.EvalSymlinks(ws)
	if err != nil {
		return nil, fmt.Errorf("script: workspace: %w", err)
	}
	// Found now, so a missing command refuses the session clearly instead
	// of failing every prompt.
	if _, err := exec.LookPath(a.command[0]); err != nil {
		return nil, fmt.Errorf("script: command %q: %w", a.command[0], err)
	}
	return &session{a: a, id: cfg.SessionID, ws: ws, root: root, artifacts: cfg.Artifacts}, nil
}

func unsupportedMode() error {
	return &protocol.Error{Code: protocol.CodeUnsupported, Field: "payload.mode",
		Message: "a script agent cannot be made to respect plan or review mode; only default is offered"}
}

// session is one script session: each Run starts the command afresh.
type session struct {
	a    *Adapter
	id   string
	ws   string // the workspace as configured: the working directory
	root string // ws with symlinks resolved: what confinement checks against
	// artifacts is SessionConfig.Artifacts: hand over what each run wrote.
	artifacts bool

	mu     sync.Mutex
	closed bool
	cancel context.CancelFunc // of the running turn
	done   chan struct{}      // closed when the running turn's Run returns
}

var errClosed = errors.New("script: the session is closed")

// Run runs the command once for the turn (see the package doc).
func (s *session) Run(ctx context.Context, turn adapter.Turn, emit adapter.Emit) (adapter.Result, error) {
	if res, refused, err := adapter.RefusePrompt(ctx, s.a.Capability(), turn, emit, refusals); refused {
		return res, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return adapter.Result{StopReason: protocol.StopError}, errClosed
	}
	if s.done != nil {
		s.mu.Unlock()
		return adapter.Result{StopReason: protocol.StopError}, errors.New("script: a turn is already running")
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	s.cancel, s.done = cancel, done
	s.mu.Unlock()
	defer func() {
		cancel()
		s.mu.Lock()
		s.cancel, s.done = nil, nil
		s.mu.Unlock()
		close(done)
	}()

	text, args := s.prepare(turn.Prompt)
	r := &runner{s: s, turnID: turn.ID, inputType: adapter.InputTypeOf(turn.Request), emit: emit}
	return r.run(runCtx, text, args)
}

// prepare converts the prompt: the text for standard input and the
// absolute paths for the arguments. Tokens whose file leaves the workspace
// become their display path.
func (s *session) prepare(pr fileref.Prompt) (text string, args []string) {
	text, rels := pr.Resolve(func(f protocol.FileReference) (protocol.FileReference, bool) {
		rel, ok := s.confine(f)
		f.Path, f.WorkspaceRelativePath = rel, rel
		return f, ok
	}).ScriptArgs()
	for _, rel := range rels {
		args = append(args, filepath.Join(s.ws, rel))
	}
	return text, args
}

// confine returns ref's path relative to the workspace, or false when it
// leaves the workspace: lexically ("..", an absolute path elsewhere) or
// through a symlink in the part of the path that exists.
func (s *session) confine(ref protocol.FileReference) (string, bool) {
	p := ref.Path
	if p == "" {
		p = ref.WorkspaceRelativePath
	}
	if p == "" || strings.ContainsRune(p, 0) {
		return "", false
	}
	abs := filepath.Clean(p)
	if !filepath.IsAbs(abs) {
		abs = filepath.Join(s.ws, abs)
	}
	rel, ok := within(s.ws, abs)
	if !ok {
		// An absolute path may name the workspace by its resolved form.
		if rel, ok = within(s.root, abs); !ok {
			return "", false
		}
	}
	if _, ok := within(s.root, vfs.ResolveExisting(abs)); !ok {
		return "", false
	}
	return rel, true
}

// within returns abs relative to root when abs is root or below it.
func within(root, abs string) (string, bool) {
	rel, err := filepath.Rel(root, abs)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", false
	}
	return rel, true
}

// refusals say why a script refuses each prompt setting.
var refusals = map[string]string{
	adapter.SettingJSONSchema:   "a script's output is text; ferry cannot make it structured",
	adapter.SettingMaxTurns:     "a script runs once per prompt and ferry cannot count or bound its steps",
	adapter.SettingAllowedTools: "ferry sees none of a script's actions, so it cannot apply tool rules",
	adapter.SettingDeniedTools:  "ferry sees none of a script's actions, so it cannot enforce denied tools",
	adapter.SettingContextFiles: "a script agent takes no attached files",
}

// environ is the command's environment: ferry's minus its token, the
// configured extras, then the FERRY_* variables (the last of a duplicate
// key wins).
func (s *session) environ(inputType string) []string {
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "FERRY_TOKEN=") })
	env = append(env, s.a.env...)
	return append(env,
		"FERRY_SESSION_ID="+s.id,
		"FERRY_WORKSPACE="+s.ws,
		"FERRY_MODE="+protocol.ModeDefault,
		"FERRY_INPUT_TYPE="+inputType,
	)
}

// Answer: a script asks nothing.
func (s *session) Answer(string, *protocol.InteractionResponse) error {
	return adapter.ErrUnknownInteraction
}

// SetMode accepts default only, with no config (see the package doc).
func (s *session) SetMode(mode string, config json.RawMessage) error {
	if mode != protocol.ModeDefault {
		return unsupportedMode()
	}
	return adapter.CheckModeConfig(s.a.Capability(), config)
}

// Compact is refused: a script keeps no history.
func (s *session) Compact(context.Context, *protocol.SessionCompact) (*protocol.CompactionDone, error) {
	return nil, &protocol.Error{Code: protocol.CodeUnsupported, Field: "type", Message: "a script agent keeps no history to compact"}
}

// Close stops a running command (as a cancel does) and waits for its turn
// to end; later Runs fail.
func (s *session) Close() error {
	s.mu.Lock()
	s.closed = true
	cancel, done := s.cancel, s.done
	s.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
	return nil
}
