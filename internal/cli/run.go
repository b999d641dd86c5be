package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/internal/adapter"
	"github.com/ferry-dev/ferry/internal/adapter/agentspec"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/agent"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/lsp"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/redact"
	"github.com/ferry-dev/ferry/internal/worktree"
	"github.com/ferry-dev/ferry/protocol"
	"github.com/ferry-dev/ferry/protocol/fileref"
)

// maxStdinBytes bounds the piped standard input ferry run reads.
const maxStdinBytes = 10 << 20

// Output formats of ferry run.
const (
	formatText       = "text"
	formatJSON       = "json"
	formatStreamJSON = "stream-json"
)

// runRun is `ferry run`: ferry's agent on one prompt, headless (no master,
// nobody to ask).
func runRun(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry run", flag.ContinueOnError)
	workspace := fs.String("workspace", ".", "the workspace `DIR` the agent works in")
	format := fs.String("output-format", formatText, "`FORMAT` of the output: text (the answer), json (one result object) or stream-json (one event per line, then the result)")
	mode := fs.String("mode", protocol.ModeDefault, "`MODE`: default, plan (read and search only) or review (read-only plus read-only git)")
	maxTurns := fs.Int("max-turns", 0, "stop after `N` model calls (default 100)")
	var allow, deny stringList
	fs.Var(&allow, "allow", "permission `RULE` allowed without asking, e.g. 'Edit', 'Write(src/**)', 'Bash(go test:*)' (repeatable)")
	fs.Var(&deny, "deny", "permission `RULE` always refused (repeatable; wins over --allow)")
	prov := fs.String("provider", "", "model provider `NAME`: anthropic, openai or ollama (default: FERRY_PROVIDER, else inferred from the model and the ANTHROPIC_* / OPENAI_* variables)")
	model := fs.String("model", "", "the `MODEL` to call (default: FERRY_MODEL, else the provider's default)")
	baseURL := fs.String("base-url", "", "the provider's `URL` (default: ANTHROPIC_BASE_URL or OPENAI_BASE_URL; an OpenAI-compatible server: Ollama, vLLM, LM Studio, …)")
	schemaFile := fs.String("json-schema", "", "a JSON Schema `FILE`: the answer must be JSON valid against it (one retry on a mismatch)")
	noStdin := fs.Bool("no-stdin", false, "do not read piped standard input")
	verbose := fs.Bool("verbose", false, "log the agent's internals to standard error")
	artifacts := fs.Bool("artifacts", false, "hand the files the agent makes to the user (ferry's agent: Write and Edit get an \"artifact\" parameter, Bash \"artifact_paths\"; "+
		"other agents: the files they write); the output lists them (json: \"artifacts\", stream-json: agent.artifact events, text: standard error)")
	agentFlag := fs.String("agent", agentspec.Builtin, "the agent `SPEC` to run: builtin, echo, claude-code, acp:CMD or script:CMD (see docs/adapters.md)")
	trustMCP := fs.Bool("trust-mcp", false, "start the MCP servers of the workspace's .mcp.json without the approval a UI session asks for (this run only; nothing is recorded)")
	noHistory := fs.Bool("no-history", false, "keep no file history of the run (then ferry undo cannot undo it)")
	historyMiB := fs.Int64("history-quota", filehistory.DefaultQuota>>20, historyQuotaUsage)
	wtName := fs.String("worktree", "", "run in the git worktree of branch ferry/`NAME` (made from --base if missing, reused if it exists), "+
		"outside the user's checkout, and commit the turn's changes on that branch")
	wtBase := fs.String("base", "", "with --worktree: the `BRANCH` a new worktree starts from (default: the workspace's current branch)")
	noCommit := fs.Bool("no-commit", false, "with --worktree: leave the turn's changes uncommitted in the worktree")
	setupTimeout := fs.Duration("setup-timeout", worktree.DefaultSetupTimeout, "with --worktree: how long a new worktree's .ferry/setup may run")
	if ok, err := parseFlags(fs, env, args,
		`Usage: ferry run [flags] "prompt"`,
		"\nRuns ferry's agent (or the one --agent names) on one prompt in the workspace,",
		"headless: no master, no browser. Piped standard input is read as the prompt's",
		"material (with no prompt, as the prompt). Flags may go before or after the",
		"prompt; -- ends them (ferry run -- \"--verbose means what?\" keeps it as text).",
		"\nWith --agent other than builtin, the agent's questions (permission requests)",
		"are denied, since nobody can answer, and noted on standard error; --allow",
		"and --deny go to agents that honour them (claude-code, acp:…) as the prompt's",
		"allowed_tools and denied_tools; --provider, --model and --base-url are ferry's",
		"agent's own.",
		"\nPermissions: read-only tools run freely; anything else the rules would ask",
		"about is denied, since nobody can be asked. Grant what the task needs with",
		"--allow (e.g. --allow Edit --allow 'Bash(go test:*)'); denied calls are",
		"listed on standard error.",
		"\nMCP servers: those of $XDG_CONFIG_HOME/ferry/mcp.json are used; those of the",
		"workspace's .mcp.json only once approved in a UI session, or with --trust-mcp",
		"for this run (a repository must not start programs by itself). MCP tools ask",
		"like other tools: grant them with --allow mcp__SERVER or mcp__SERVER__TOOL.",
		"A server that fails is noted on standard error and the run goes on.",
		"\nThe model provider comes from the flags and the environment: ANTHROPIC_API_KEY",
		"(Anthropic), or OPENAI_API_KEY and/or OPENAI_BASE_URL (OpenAI or compatible).",
		"\nEvery file change of the run is kept in its file history",
		"($XDG_STATE_HOME/ferry/history/SESSION_ID); when the run changed files, a",
		"line on standard error says how to undo them: ferry undo SESSION_ID.",
		"\nWith --worktree NAME the turn runs in a git worktree of its own on branch",
		"ferry/NAME, under $XDG_STATE_HOME/ferry/worktrees (see docs/worktrees.md):",
		"the user's checkout is never touched. A new worktree runs the workspace's",
		".ferry/setup first. When the turn changed files they are committed on",
		"ferry/NAME (the prompt's first line, then the answer); --no-commit leaves them.",
		"The json result then also has worktree, branch, base, worktree_path and",
		"commit; ferry ship NAME merges, pushes or opens a pull request of the branch.",
		"\nExit codes: 0 done, 1 the agent or its provider failed (or stopped at",
		"--max-turns), 2 bad usage.",
	); !ok {
		return err
	}
	usageErr := func(format string, a ...any) error {
		return usageErrorf("ferry run: "+format, a...)
	}
	switch *format {
	case formatText, formatJSON, formatStreamJSON:
	default:
		return usageErr("--output-format must be text, json or stream-json, not %q", *format)
	}
	spec, err := agentspec.Parse(*agentFlag)
	if err != nil {
		return usageErr("--%w", err)
	}
	if spec.Kind != agentspec.Builtin {
		var own []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "provider", "model", "base-url", "trust-mcp":
				own = append(own, "--"+f.Name)
			}
		})
		if len(own) > 0 {
			return usageErr("%s only apply to --agent builtin, not %s", strings.Join(own, ", "), spec.ID())
		}
	}
	switch *mode {
	case protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview:
	default:
		return usageErr("--mode must be default, plan or review, not %q", *mode)
	}
	if *historyMiB < 1 {
		return usageErr("--history-quota must be at least 1 (MiB), not %d", *historyMiB)
	}
	if *wtName == "" {
		var only []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "base", "no-commit", "setup-timeout":
				only = append(only, "--"+f.Name)
			}
		})
		if len(only) > 0 {
			return usageErr("%s only apply with --worktree NAME", strings.Join(only, ", "))
		}
	} else if !worktree.ValidName(*wtName) {
		return usageErr("--worktree %q: use lower case letters, digits and '-', at most %d (e.g. %s)", *wtName, worktree.MaxName, worktree.Sanitize(*wtName))
	}
	if *maxTurns < 0 || *maxTurns > 10000 {
		return usageErr("--max-turns must be between 1 and 10000")
	}
	rules, err := parseRuleFlags(allow, deny)
	if err != nil {
		return usageErr("%w", err)
	}
	var schema json.RawMessage
	if *schemaFile != "" {
		b, err := os.ReadFile(*schemaFile)
		if err != nil {
			return usageErr("--json-schema: %w", err)
		}
		if !json.Valid(b) {
			return usageErr("--json-schema: %s is not valid JSON", *schemaFile)
		}
		schema = b
	}
	root, err := filepath.Abs(*workspace)
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(root); err == nil && !fi.IsDir() {
			err = errors.New("not a directory")
		}
	}
	if err != nil {
		return usageErr("--workspace %s: %w", *workspace, err)
	}

	prompt := strings.Join(fs.Args(), " ")
	var stdin string
	if !*noStdin {
		if stdin, err = pipedStdin(env.Stdin); err != nil {
			return fmt.Errorf("ferry run: %w", err)
		}
	}
	if strings.TrimSpace(prompt) == "" && strings.TrimSpace(stdin) == "" {
		return usageErr(`give a prompt ("ferry run \"fix the failing test\"") or pipe one on standard input`)
	}

	getenv := env.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	var iso *runIsolation
	if *wtName != "" {
		if iso, err = openRunWorktree(ctx, env, getenv, root, *wtName, *wtBase, *setupTimeout); err != nil {
			return err
		}
		iso.noCommit, iso.prompt = *noCommit, firstNonEmpty(prompt, stdin)
		root = iso.root
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(redact.NewHandler(slog.NewTextHandler(env.Stderr, &slog.HandlerOptions{Level: level})))
	sessionID := protocol.NewID()
	ws := protocol.Workspace{ID: "run", Name: filepath.Base(root), Path: root}
	turn := runTurn(prompt, stdin)
	o := &protocol.ConfigOverrides{OutputFormat: *format, JSONSchema: schema}
	if *maxTurns > 0 {
		o.MaxTurns = maxTurns
	}
	if spec.Kind != agentspec.Builtin {
		// Other agents get the rules as the prompt's own; ferry's agent
		// takes them as its Config's Rules below.
		o.AllowedTools, o.DeniedTools = allow, deny
	}
	turn.Request.ConfigOverrides = o
	out := &runOutput{env: env, format: *format, sessionID: sessionID, turnID: turn.ID, started: map[string]string{}, artifacts: *artifacts}
	if iso != nil {
		out.commit = func(final string, failed bool) (*runWorktreeResult, error) {
			return iso.commit(ctx, env, final, failed)
		}
	}

	var hist *runHistory
	if !*noHistory {
		if hist, err = openRunHistory(getenv, sessionID, root, *historyMiB<<20); err != nil {
			return fmt.Errorf("ferry run: %w (--no-history runs without one)", err)
		}
		// Deferred first, so it runs last: after the agent is closed and
		// the output written.
		defer hist.finish(env.Stderr)
		if err := hist.j.BeginTurn(turn.ID); err != nil {
			return fmt.Errorf("ferry run: %w (--no-history runs without one)", err)
		}
	}
	scfg := adapter.SessionConfig{SessionID: sessionID, Workspace: ws, Mode: *mode, History: hist.history(), Artifacts: *artifacts}

	if spec.Kind != agentspec.Builtin {
		return runAdapter(ctx, env, spec, logger, scfg, turn, out)
	}
	diag, err := lsp.LoadConfig(getenv)
	if err != nil {
		return fmt.Errorf("ferry run: %w", err)
	}
	ad := builtin.New(builtin.Config{
		Getenv:      getenv,
		Provider:    provider.Config{Provider: *prov, Model: *model, BaseURL: *baseURL},
		Rules:       rules,
		Headless:    true,
		Artifacts:   *artifacts,
		Logger:      logger,
		Diagnostics: &diag,
		MCPFiles:    true,
		TrustMCP:    *trustMCP,
	})
	ag, err := ad.NewAgent(scfg)
	if errors.Is(err, llm.ErrNotConfigured) {
		// Plainly what to set, without the packages' prefixes.
		msg := err.Error()
		if i := strings.Index(msg, llm.ErrNotConfigured.Error()); i >= 0 {
			msg = strings.TrimPrefix(msg[i:], "llm: ")
		}
		return fmt.Errorf("ferry run: %s", msg)
	}
	if err != nil {
		return fmt.Errorf("ferry run: %w", err)
	}
	defer func() { _ = ag.Close() }()

	out.event(protocol.TypeTurnStarted, &protocol.TurnStarted{TurnID: turn.ID, InputType: turn.Request.InputType, Mode: *mode, Adapter: builtin.ID})
	res, runErr := ag.Run(ctx, turn, out.emit)
	return out.finish(res, runErr)
}

// runAdapter is ferry run with an adapter other than builtin: it opens a
// session, runs the one turn through the adapter's Session and writes the
// output as for ferry's agent. Nobody can answer the agent's questions:
// each is denied (and noted).
func runAdapter(ctx context.Context, env Env, spec agentspec.Spec, log *slog.Logger, cfg adapter.SessionConfig, turn adapter.Turn, out *runOutput) error {
	ad, err := spec.Build(agentspec.Options{Getenv: env.Getenv, Logger: log, HostCommand: "ferry run"})
	if err != nil {
		return usageErrorf("ferry run: --%w", err)
	}
	caps := ad.Capability()
	if caps.Unavailable != "" {
		// Nothing is started: the capability says why and what to do.
		return fmt.Errorf("ferry run: cannot start %s: %s", caps.ID, caps.Unavailable)
	}
	badMode := func(caps protocol.AdapterCapability) error {
		return usageErrorf("ferry run: --mode %s: the agent %s cannot enforce it (it offers %s)", cfg.Mode, caps.ID, strings.Join(caps.Modes, ", "))
	}
	for _, r := range []struct {
		flag, setting string
		set           bool
	}{{"--allow", adapter.SettingAllowedTools, len(turn.Request.ConfigOverrides.AllowedTools) > 0},
		{"--deny", adapter.SettingDeniedTools, len(turn.Request.ConfigOverrides.DeniedTools) > 0}} {
		if r.set && !slices.Contains(caps.Settings, r.setting) {
			return usageErrorf("ferry run: %s: the agent %s cannot honour permission rules (claude-code and acp:… agents can)", r.flag, caps.ID)
		}
	}
	if !slices.Contains(caps.InputTypes, turn.Request.InputType) {
		// The text is the same; only the agent's reading of it differs
		// (e.g. a slash command is plain text to a script).
		turn.Request.InputType = protocol.InputText
	}
	// The session's agent may offer more or less than its adapter can
	// promise (an ACP agent's modes): what it says holds for the mode.
	var (
		mu       sync.Mutex
		reported *protocol.AdapterCapability
	)
	cfg.Capabilities = func(c protocol.AdapterCapability) {
		mu.Lock()
		reported = &c
		mu.Unlock()
	}
	sess, err := ad.Open(ctx, cfg)
	if err != nil {
		if !slices.Contains(caps.Modes, cfg.Mode) {
			return badMode(caps)
		}
		return fmt.Errorf("ferry run: cannot start %s: %w", caps.ID, err)
	}
	defer func() { _ = sess.Close() }()
	mu.Lock()
	if reported != nil {
		caps.Modes = reported.Modes
	}
	mu.Unlock()
	if !slices.Contains(caps.Modes, cfg.Mode) {
		return badMode(caps)
	}
	out.answer = sess.Answer
	defer out.answers.Wait() // before Close: the denials go to an open session

	out.event(protocol.TypeTurnStarted, &protocol.TurnStarted{TurnID: turn.ID, InputType: turn.Request.InputType, Mode: cfg.Mode, Adapter: caps.ID})
	res, runErr := sess.Run(ctx, turn, out.emit)
	ar := agent.Result{Text: res.Text, Final: res.Text, StopReason: res.StopReason, Structured: res.Structured, Artifacts: res.Artifacts}
	out.adapterTotals(&ar)
	switch {
	case ctx.Err() != nil || res.StopReason == agent.StopCancelled:
		ar.StopReason = agent.StopCancelled
		if runErr == nil {
			runErr = context.Canceled
		}
	case runErr != nil:
		log.Error("the agent failed", "agent", caps.ID, "err", runErr)
		ar.StopReason = agent.StopError
	case ar.StopReason == "":
		ar.StopReason = agent.StopEndTurn
	}
	return out.finish(ar, runErr)
}

// runTurn makes the turn of ferry run's prompt and piped input: the prompt
// alone (a slash command when it starts with "/"), the input alone as
// piped_stdin, or the prompt followed by the input as its material.
func runTurn(prompt, stdin string) adapter.Turn {
	inputType, text := protocol.InputText, prompt
	switch {
	case strings.TrimSpace(stdin) == "":
		if strings.HasPrefix(strings.TrimSpace(prompt), "/") {
			inputType, text = protocol.InputSlashCommand, strings.TrimSpace(prompt)
		}
	case strings.TrimSpace(prompt) == "":
		inputType, text = protocol.InputPipedStdin, stdin
	default:
		text = prompt + "\n\n" + agent.FramePipedStdin(stdin)
	}
	// The text is the user's own: escape it, so a "<@file:…>" in it stays
	// text (only the UI's picker makes file tokens).
	req := &protocol.PromptRequest{PromptText: fileref.Escape(text), InputType: inputType}
	return adapter.Turn{ID: protocol.NewID(), Request: req, Prompt: fileref.Parse(req.PromptText, nil)}
}

// pipedStdin reads standard input when it is not a terminal.
func pipedStdin(r io.Reader) (string, error) {
	if r == nil {
		return "", nil
	}
	if f, ok := r.(*os.File); ok {
		fi, err := f.Stat()
		if err != nil {
			return "", fmt.Errorf("standard input: stat: %w", err)
		}
		if fi.Mode()&os.ModeCharDevice != 0 {
			return "", nil // a terminal (or /dev/null): nothing piped
		}
	}
	b, err := io.ReadAll(io.LimitReader(r, maxStdinBytes+1))
	if err != nil {
		return "", fmt.Errorf("standard input: read: %w", err)
	}
	if len(b) > maxStdinBytes {
		return "", fmt.Errorf("standard input: more than %d MiB; pass a file path in the prompt instead", maxStdinBytes>>20)
	}
	// Binary input would reach the model as U+FFFD: refuse it before
	// anything is sent.
	why := ""
	if i := bytes.IndexByte(b, 0); i >= 0 {
		why = fmt.Sprintf("a NUL byte at byte %d", i)
	} else if !utf8.Valid(b) {
		why = fmt.Sprintf("invalid UTF-8 at byte %d", invalidUTF8At(b))
	}
	if why != "" {
		return "", fmt.Errorf("standard input is not text (%s): pipe text, or name the file in the prompt for the agent to read; --no-stdin ignores standard input", why)
	}
	return string(b), nil
}

// invalidUTF8At is the offset of b's first byte that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// runOutput writes ferry run's output in its format.
type runOutput struct {
	env       Env
	format    string
	sessionID string
	turnID    string
	artifacts bool // --artifacts: list the turn's artifacts

	// answer, when set, is the session's Answer: questions are denied
	// through it (ferry's own agent asks none when headless).
	answer  func(interactionID string, resp *protocol.InteractionResponse) error
	answers sync.WaitGroup // the denials under way

	mu         sync.Mutex
	started    map[string]string // tool_use_id → a short description of the call
	denied     int
	deniedAsks int
	lastError  *protocol.AgentError // the turn's last agent.error
	usage      *protocol.Usage      // the turn's last agent.usage (they are cumulative)
	usages     int
	final      string // the turn's final answer, once finished

	// commit, with --worktree, commits the turn's changes (failed: it
	// does not) before the result that names the commit is written.
	commit func(final string, failed bool) (*runWorktreeResult, error)
}

// emit is the agent's Emit: stream-json lines, stderr notes in text mode.
// Tools may report progress from their own goroutines: it is serialised.
func (o *runOutput) emit(_ context.Context, typ string, payload any) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch p := payload.(type) {
	case *protocol.ToolStarted:
		o.started[p.ToolUseID] = callSummary(p.ToolName, p.Input)
	case *protocol.ToolFinished:
		if p.Status == protocol.ToolDenied {
			o.denied++
			if o.format == formatText {
				fmt.Fprintf(o.env.Stderr, "ferry run: denied %s: %s\n", o.started[p.ToolUseID], firstLine(p.Output))
			}
		}
	case *protocol.InteractionRequest:
		o.eventLocked(typ, payload) // the question, then its denial
		o.deny(p)
		return nil
	case *protocol.AgentError:
		if p.Code == protocol.AgentCodeMCPServerFailed {
			// Not the run's failure: the turn goes on without the server.
			fmt.Fprintf(o.env.Stderr, "ferry run: %s\n", p.Message)
			break
		}
		e := *p
		o.lastError = &e
	case *protocol.Usage:
		u := *p
		o.usage = &u
		o.usages++
		shown := u
		shown.CostUSD = roundCost(u.CostUSD)
		payload = &shown
	}
	o.eventLocked(typ, payload)
	return nil
}

// deny answers a question nobody can answer: "deny" where the question
// offers it, else no answer (a timeout, which adapters treat as a denial).
// The answer goes from its own goroutine: the adapter may be holding its
// own lock while it emits.
func (o *runOutput) deny(p *protocol.InteractionRequest) {
	o.deniedAsks++
	what := p.Title
	if p.ToolName != "" {
		what = callSummary(p.ToolName, p.ToolInput)
	}
	if o.format == formatText {
		fmt.Fprintf(o.env.Stderr, "ferry run: denied %s: nobody can answer in ferry run\n", firstLine(what))
	}
	if o.answer == nil {
		return
	}
	var resp *protocol.InteractionResponse
	if slices.ContainsFunc(p.Options, func(op protocol.Option) bool { return op.Value == protocol.Deny }) {
		resp = &protocol.InteractionResponse{InteractionID: p.InteractionID, SelectedValue: protocol.Single(protocol.Deny)}
	}
	answer, id := o.answer, p.InteractionID
	o.answers.Add(1)
	go func() {
		defer o.answers.Done()
		// ErrUnknownInteraction: the turn already moved on.
		_ = answer(id, resp)
	}()
}

// adapterTotals fills what an adapter reports only as events: usage and
// cost from the last agent.usage, and the number of agent.usage events as
// the model calls.
func (o *runOutput) adapterTotals(res *agent.Result) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.usage != nil {
		res.Usage = llm.Usage{InputTokens: o.usage.InputTokens, OutputTokens: o.usage.OutputTokens,
			CacheReadTokens: o.usage.CacheReadTokens, CacheCreationTokens: o.usage.CacheCreationTokens}
		if o.usage.CostUSD > 0 {
			res.CostUSD, res.HasCost = o.usage.CostUSD, true
		}
	}
	res.NumTurns = o.usages
}

func (o *runOutput) event(typ string, payload any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.eventLocked(typ, payload)
}

func (o *runOutput) eventLocked(typ string, payload any) {
	if o.format != formatStreamJSON {
		return
	}
	o.writeLine(map[string]any{"type": typ, "session_id": o.sessionID, "payload": payload})
}

func (o *runOutput) writeLine(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(map[string]string{"type": "error", "message": "unencodable event"})
	}
	b = append(b, '\n')
	_, _ = o.env.Stdout.Write(b)
}

// roundCost rounds a cost in dollars to a millionth (prices are per
// million tokens), so it prints as 0.000315, not 0.00031499999999999996.
func roundCost(usd float64) float64 { return math.Round(usd*1e6) / 1e6 }

// runResult is the json output, and the last line of stream-json.
type runResult struct {
	Type       string          `json:"type"`
	Result     string          `json:"result"`
	IsError    bool            `json:"is_error"`
	StopReason string          `json:"stop_reason"`
	Usage      runUsage        `json:"usage"`
	CostUSD    *float64        `json:"cost_usd"`
	NumTurns   int             `json:"num_turns"`
	SessionID  string          `json:"session_id"`
	Structured json.RawMessage `json:"structured,omitempty"`
	Error      *runError       `json:"error,omitempty"`
	Denied     int             `json:"denied_tool_calls,omitempty"`
	DeniedAsks int             `json:"denied_interactions,omitempty"`
	// Artifacts are the files the agent handed to the user (--artifacts
	// only; then always present, [] when none), on every stop reason.
	Artifacts []llm.Artifact `json:"artifacts,omitzero"`
	// With --worktree: worktree, branch, base, worktree_path and commit.
	*runWorktreeResult
}

type runUsage struct {
	InputTokens         int64 `json:"input_tokens"`
	OutputTokens        int64 `json:"output_tokens"`
	CacheReadTokens     int64 `json:"cache_read_tokens"`
	CacheCreationTokens int64 `json:"cache_creation_tokens"`
}

type runError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// finish writes the end of the output; a failed run returns an error that
// only sets exit code 1 (the output said why).
func (o *runOutput) finish(res agent.Result, runErr error) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.final = res.Final
	r := runResult{
		Type: "result", Result: res.Final, StopReason: res.StopReason, NumTurns: res.NumTurns, SessionID: o.sessionID,
		Structured: res.Structured, Denied: o.denied, DeniedAsks: o.deniedAsks,
		Usage: runUsage{res.Usage.InputTokens, res.Usage.OutputTokens, res.Usage.CacheReadTokens, res.Usage.CacheCreationTokens},
	}
	if res.HasCost {
		c := roundCost(res.CostUSD)
		r.CostUSD = &c
	}
	if o.artifacts {
		r.Artifacts = make([]llm.Artifact, 0, len(res.Artifacts))
		for _, f := range res.Artifacts {
			r.Artifacts = append(r.Artifacts, f.ToMessage())
		}
	}
	var msg string
	switch {
	case runErr != nil && res.StopReason == agent.StopCancelled:
		r.Error = &runError{Code: "cancelled", Message: "interrupted"}
		msg = "interrupted"
	case runErr != nil:
		var ae *agent.Error
		if errors.As(runErr, &ae) {
			r.Error = &runError{Code: ae.Code, Message: ae.Message}
		} else {
			r.Error = &runError{Code: agent.CodeInternal, Message: "the agent failed"}
		}
		msg = r.Error.Message + " [" + r.Error.Code + "]"
		if strings.HasPrefix(r.Error.Code, "provider_") {
			msg = "the model provider failed: " + msg
		}
	case res.StopReason == agent.StopError:
		// An adapter that reported its failure as agent.error.
		r.Error = &runError{Code: agent.CodeInternal, Message: "the agent failed"}
		if o.lastError != nil {
			r.Error = &runError{Code: o.lastError.Code, Message: o.lastError.Message}
		}
		msg = r.Error.Message + " [" + r.Error.Code + "]"
	case res.StopReason == agent.StopMaxTurns:
		r.Error = &runError{Code: "max_turns", Message: fmt.Sprintf("stopped after %d model calls (--max-turns); the task may be unfinished", res.NumTurns)}
		msg = r.Error.Message
	case res.StopReason == agent.StopRefusal:
		r.Error = &runError{Code: "refusal", Message: "the model refused the request"}
		msg = r.Error.Message
	}
	r.IsError = r.Error != nil
	if o.commit != nil {
		wr, err := o.commit(res.Final, r.IsError)
		r.runWorktreeResult = wr
		if err != nil && r.Error == nil {
			r.Error = &runError{Code: worktree.CodeGitFailed, Message: err.Error()}
			var we *worktree.Error
			if errors.As(err, &we) {
				r.Error = &runError{Code: we.Code, Message: "commit on " + wr.Branch + ": " + we.Message}
			}
			r.IsError, msg = true, err.Error()
		}
	}

	switch o.format {
	case formatJSON:
		o.writeLine(r)
	case formatStreamJSON:
		done := &protocol.TextDone{TurnID: o.turnID, IsCancelled: res.StopReason == agent.StopCancelled, Text: res.Text, StopReason: res.StopReason, Result: res.Structured}
		o.writeLine(map[string]any{"type": protocol.TypeTextDone, "session_id": o.sessionID, "payload": done})
		o.writeLine(r)
	default:
		answer := res.Final
		if len(res.Structured) > 0 {
			answer = string(res.Structured)
		}
		if answer != "" && runErr == nil {
			fmt.Fprintln(o.env.Stdout, strings.TrimRight(answer, "\n"))
		}
	}
	if o.format == formatText {
		for _, a := range r.Artifacts {
			fmt.Fprintf(o.env.Stderr, "ferry run: artifact %s (%d bytes%s)\n", a.Path(), a.Size(), prefixed(", ", a.MimeType()))
		}
	}
	// The message is the text of the result (json carries it in the
	// object): it is written here, in its place before the undo note that
	// runRun's deferred history prints, and the error only sets the code.
	if msg != "" {
		fmt.Fprintf(o.env.Stderr, "ferry run: %s\n", msg)
	}
	if r.IsError {
		return exitWith(ExitError)
	}
	return nil
}

// callSummary names a call for a denial note: the tool and its path or
// command.
func callSummary(tool string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	for _, k := range []string{"command", "file_path", "path", "pattern", "url"} {
		if s, ok := in[k].(string); ok && s != "" {
			return fmt.Sprintf("%s(%s)", tool, firstLine(s))
		}
	}
	return tool
}

// prefixed is p+s, or "" when s is.
func prefixed(p, s string) string {
	if s == "" {
		return ""
	}
	return p + s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// parseRuleFlags parses the --allow and --deny flags of ferry run and
// ferry acp; the error names the flag and the rule.
func parseRuleFlags(allow, deny []string) (permission.Rules, error) {
	var rules permission.Rules
	for _, s := range allow {
		r, err := permission.Parse(s)
		if err != nil {
			return rules, fmt.Errorf("--allow %q: %w", s, err)
		}
		rules.Allow = append(rules.Allow, r)
	}
	for _, s := range deny {
		r, err := permission.Parse(s)
		if err != nil {
			return rules, fmt.Errorf("--deny %q: %w", s, err)
		}
		rules.Deny = append(rules.Deny, r)
	}
	return rules, nil
}
