package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"

	"github.com/ferry-dev/ferry/internal/acpagent"
	"github.com/ferry-dev/ferry/internal/adapter/agentspec"
	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/editorlink"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/version"
	"github.com/ferry-dev/ferry/protocol"
)

// runACP is `ferry acp`: ferry's agent as an ACP agent on stdio, for
// editors (Zed, JetBrains, Neovim) and headless ACP clients.
func runACP(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry acp", flag.ContinueOnError)
	masterURL := fs.String("master", "", "drive sessions on the ferry master at `URL` instead of this machine (needs a ui token)")
	tokenFile := fs.String("token-file", "", "with --master: read the ui token from `FILE` (default $FERRY_TOKEN)")
	machine := fs.String("machine", "", "with --master: the `NAME` (or id) of the machine sessions run on (default the one serving the workspace)")
	workspace := fs.String("workspace", "", "with --master: the workspace `DIR` on that machine (default the editor's cwd)")
	agentFlag := fs.String("agent", "", "the agent `SPEC` sessions run: builtin (default), claude-code, acp:CMD, … (with --master: an agent id the machine offers)")
	mode := fs.String("mode", protocol.ModeDefault, "`MODE` of new sessions: default, plan or review")
	var allow, deny stringList
	fs.Var(&allow, "allow", "permission `RULE` allowed without asking, e.g. 'Edit', 'Bash(go test:*)' (repeatable)")
	fs.Var(&deny, "deny", "permission `RULE` always refused (repeatable; wins over --allow)")
	prov := fs.String("provider", "", "ferry's agent's model provider `NAME`: anthropic, openai or ollama (default from the environment, as ferry run)")
	model := fs.String("model", "", "the `MODEL` of new sessions (default: FERRY_MODEL, else the provider's default)")
	baseURL := fs.String("base-url", "", "ferry's agent's provider `URL` (an OpenAI-compatible server: Ollama, vLLM, …)")
	stateDir := fs.String("state", "", "keep each workspace's ferry (database, client state) under `DIR` (default $XDG_STATE_HOME/ferry/acp)")
	logFile := fs.String("log-file", "", "write the log to `FILE` (default standard error; standard output carries only JSON-RPC)")
	verbose := fs.Bool("verbose", false, "log every connection and message")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry acp [--agent SPEC] [--allow RULE]... [--deny RULE]... [--mode MODE] [--model MODEL]",
		"       ferry acp --master URL --token-file FILE [--machine NAME] [--workspace DIR] [--agent ID]",
		"\nRuns ferry as an ACP agent (the Agent Client Protocol of Zed, JetBrains IDEs,",
		"Neovim's CodeCompanion, acpx) on standard input and output: the editor starts",
		"it and drives ferry's agent. Standard output carries only JSON-RPC; the log",
		"goes to standard error (or --log-file).",
		"\nLocally, each workspace (the editor's cwd) gets its own ferry: a master on",
		"127.0.0.1 and a client, started on demand, kept under --state, so sessions",
		"survive a restart (session/load). The editor's files (its unsaved buffers),",
		"terminals and MCP servers are used by ferry's agent when it offers them.",
		"\nWith --master, sessions live on that master and run on any machine",
		"connected to it, with any agent it offers; the web UI and a phone see and",
		"drive the same sessions. The editor's files, terminals and MCP servers are",
		"not lent then. See docs/acp.md.",
	); !ok {
		return err
	}
	usageErr := func(format string, a ...any) error { return usageErrorf("ferry acp: "+format, a...) }
	if fs.NArg() > 0 {
		return usageErr("takes no arguments, not %q", fs.Arg(0))
	}
	switch *mode {
	case protocol.ModeDefault, protocol.ModePlan, protocol.ModeReview:
	default:
		return usageErr("--mode must be default, plan or review, not %q", *mode)
	}
	rules, err := parseRuleFlags(allow, deny)
	if err != nil {
		return usageErr("%w", err)
	}
	logEnv := env
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600) //nolint:gosec // the user names the file
		if err != nil {
			return usageErr("--log-file: %w", err)
		}
		defer func() { _ = f.Close() }()
		logEnv.Stderr = f
	}
	log := newLogger(logEnv, *verbose)
	cfg := acpagent.Config{Mode: *mode, Version: version.String(), Logger: log}
	if *masterURL != "" {
		var local []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "provider", "base-url", "state":
				local = append(local, "--"+f.Name)
			}
		})
		if len(local) > 0 {
			return usageErr("%s apply to ferry's agent here, not with --master (the machine's own settings apply there)", strings.Join(local, ", "))
		}
		secret, err := connectToken(env, "", *tokenFile)
		switch {
		case err != nil:
			return usageErr("%w", err)
		case secret == "":
			return usageErr("--master needs a ui token in --token-file or $FERRY_TOKEN: create one with 'ferry token create --kind ui' on the master")
		}
		warnPlainMaster(logEnv, *masterURL)
		cfg.Backend = &acpRemote{target: acpagent.Target{URL: strings.TrimRight(*masterURL, "/"), Token: secret,
			Machine: *machine, Workspace: *workspace, Adapter: *agentFlag}}
		// The session runs elsewhere: its agent cannot apply these rules,
		// so the face answers what they decide.
		cfg.Rules, cfg.Model = rules, *model
		return acpagent.Serve(ctx, cfg, env.Stdin, env.Stdout)
	}
	for _, f := range []struct{ name, value string }{{"--token-file", *tokenFile}, {"--machine", *machine}, {"--workspace", *workspace}} {
		if f.value != "" {
			return usageErr("%s applies with --master only (locally the workspace is the editor's cwd)", f.name)
		}
	}
	spec := agentspec.Spec{Kind: agentspec.Builtin}
	if *agentFlag != "" {
		var err error
		if spec, err = agentspec.Parse(*agentFlag); err != nil {
			return usageErr("--%w", err)
		}
	}
	root := *stateDir
	if root == "" {
		dir, err := clientStateDir(env, "")
		if err != nil {
			return fmt.Errorf("ferry acp: %w", err)
		}
		root = filepath.Join(filepath.Dir(dir), "acp")
	}
	reg := editorlink.NewRegistry()
	cfg.Registry = reg
	b := &acpLocal{env: env, logEnv: logEnv, log: log, root: root, agent: *agentFlag, spec: spec, verbose: *verbose,
		tune: func(c *builtin.Config) {
			c.Rules = rules
			c.Provider = provider.Config{Provider: *prov, Model: *model, BaseURL: *baseURL}
			c.Editor = reg
			c.HostCommand = "ferry acp"
		}, running: map[string]*acpWorkspace{}}
	b.ctx, b.stop = context.WithCancel(context.WithoutCancel(ctx))
	defer b.close()
	cfg.Backend = b
	return acpagent.Serve(ctx, cfg, env.Stdin, env.Stdout)
}

// acpRemote is ferry acp --master: every session on that master.
type acpRemote struct{ target acpagent.Target }

func (r *acpRemote) Open(_ context.Context, cwd string) (acpagent.Target, error) {
	t := r.target
	if t.Workspace == "" {
		t.Workspace = cwd
	}
	return t, nil
}

// acpLocal is local ferry acp: a master and a client per workspace,
// started on demand.
type acpLocal struct {
	env, logEnv Env
	log         *slog.Logger
	root        string
	agent       string // the --agent value ("": builtin)
	spec        agentspec.Spec
	verbose     bool
	tune        func(*builtin.Config)

	ctx  context.Context // the process's
	stop context.CancelFunc

	mu      sync.Mutex
	running map[string]*acpWorkspace
}

// acpWorkspace is the ferry of one workspace.
type acpWorkspace struct {
	target acpagent.Target
	sys    *upSystem
	uiTok  string // the id of its ui token, revoked at the end
	lock   *os.File
	done   chan struct{}
}

// acpDrain bounds how long a workspace's master drains at the end.
const acpDrain = 2 * time.Second

// stateFor is the state directory of a workspace: its base name and a
// hash of its path, so that two checkouts named alike do not share one.
func (b *acpLocal) stateFor(ws string) string {
	sum := sha256.Sum256([]byte(ws))
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r < ' ' || r == 0x7f {
			return '_'
		}
		return r
	}, filepath.Base(ws))
	return filepath.Join(b.root, name+"-"+hex.EncodeToString(sum[:6]))
}

func (b *acpLocal) Open(ctx context.Context, cwd string) (acpagent.Target, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if w := b.running[cwd]; w != nil {
		select {
		case <-w.done:
			delete(b.running, cwd) // it stopped: start it again
		default:
			return w.target, nil
		}
	}
	if fi, err := os.Stat(cwd); err != nil || !fi.IsDir() {
		return acpagent.Target{}, &acp.RequestError{Code: -32602, Message: fmt.Sprintf("Invalid params: cwd %s is not a directory", cwd)}
	}
	w, err := b.start(ctx, cwd)
	if err != nil {
		return acpagent.Target{}, err
	}
	b.running[cwd] = w
	return w.target, nil
}

// start starts the ferry of workspace ws. b.mu is held.
func (b *acpLocal) start(ctx context.Context, ws string) (_ *acpWorkspace, err error) {
	dir := b.stateFor(ws)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state directory: %w", err)
	}
	lock, err := lockACPState(dir)
	if err != nil {
		return nil, err
	}
	w := &acpWorkspace{lock: lock, done: make(chan struct{})}
	defer func() {
		if err != nil {
			_ = lock.Close()
		}
	}()
	mfs := flag.NewFlagSet("acp", flag.ContinueOnError)
	var mf masterFlags
	mf.register(mfs)
	var cf clientFlags
	cf.register(mfs, "")
	if err := mfs.Parse(nil); err != nil {
		return nil, err
	}
	// On loopback, on a port of its own; nothing it prints may reach
	// standard output, which is the editor's JSON-RPC.
	mf.addr, mf.db, mf.verbose, mf.drainTimeout = "127.0.0.1:0", filepath.Join(dir, "ferry.db"), b.verbose, acpDrain
	cf.workspaces, cf.stateDir = stringList{ws}, filepath.Join(dir, "client")
	cf.agents = stringList{b.spec.ID()}
	cf.tune = []func(*builtin.Config){b.tune}
	quiet := b.logEnv
	quiet.Stdout = b.logEnv.Stderr
	// It lives as long as the process, not as the request that started it.
	sys, err := startUp(b.ctx, quiet, &mf, &cf, "ferry acp", b.log)
	if err != nil {
		return nil, fmt.Errorf("start ferry for %s: %w", ws, err)
	}
	secret, tok, err := auth.Issue(b.ctx, sys.lm.st, store.TokenUI, "ferry acp", 0)
	if err != nil {
		sys.Close()
		return nil, fmt.Errorf("issue the editor's token: %w", err)
	}
	w.sys, w.uiTok = sys, tok.ID
	adapterID := ""
	if b.agent != "" {
		adapterID = b.spec.ID()
	}
	w.target = acpagent.Target{URL: sys.lm.base, Token: secret, HTTPClient: sys.lm.reach.localClient(),
		Machine: sys.c.Machine().ID, Workspace: ws, Adapter: adapterID, Lend: true}
	go func() {
		defer close(w.done)
		if err := sys.run(b.ctx); err != nil {
			b.log.Error("acp: the workspace's ferry stopped", "workspace", ws, "err", err)
		}
	}()
	return w, nil
}

// close stops every workspace's ferry.
func (b *acpLocal) close() {
	b.stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for ws, w := range b.running {
		<-w.done
		_ = w.sys.lm.st.RevokeToken(context.Background(), w.uiTok)
		w.sys.Close()
		_ = w.lock.Close()
		delete(b.running, ws)
	}
}

// lockACPState takes the lock of a workspace's state directory and writes
// this process's id in it; held by another ferry acp, it is an error
// naming that process.
func lockACPState(dir string) (*os.File, error) {
	p := filepath.Join(dir, "acp.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // our own state directory
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if err := flockNB(f); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 64))
		_ = f.Close()
		if errors.Is(err, errLocked) {
			who := "another ferry acp"
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
				who = fmt.Sprintf("another ferry acp (pid %d)", pid)
			}
			return nil, &acp.RequestError{Code: -32000, Message: fmt.Sprintf(
				"this workspace's ferry (%s) is in use by %s: close that editor's ferry session, or point this one at another --state", dir, who)}
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return f, nil
}
