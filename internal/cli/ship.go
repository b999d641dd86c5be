package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/ferry-dev/ferry/internal/lazyregexp"

	"github.com/ferry-dev/ferry/internal/client"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/ship"
	"github.com/ferry-dev/ferry/internal/worktree"
	"github.com/ferry-dev/ferry/protocol"
)

// ForgeTokenVar is the variable a forge (GitHub) token is read from when
// no --forge-token-file is given.
const ForgeTokenVar = "FERRY_FORGE_TOKEN" //nolint:gosec // G101: a variable's name

// forgeHosts is the repeatable --forge-host KIND=HOST flag.
type forgeHosts map[string]forge.Kind

var forgeHostRE = lazyregexp.New(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,251}[A-Za-z0-9])?$`)

func (h *forgeHosts) String() string {
	if h == nil || *h == nil {
		return ""
	}
	var parts []string
	for host, kind := range *h {
		parts = append(parts, string(kind)+"="+host)
	}
	return strings.Join(parts, ",")
}

func (h *forgeHosts) Set(v string) error {
	kind, host, ok := strings.Cut(v, "=")
	if !ok {
		return fmt.Errorf("want KIND=HOST, e.g. github=github.example.com")
	}
	switch k := forge.Kind(strings.ToLower(kind)); k {
	case forge.KindGitHub, forge.KindGitLab, forge.KindGitea, forge.KindBitbucket:
		if !forgeHostRE.MatchString(host) {
			return fmt.Errorf("%q is not a host name (no scheme, port or path), e.g. %s=git.example.com", host, k)
		}
		if *h == nil {
			*h = forgeHosts{}
		}
		(*h)[strings.ToLower(host)] = k
		return nil
	}
	return fmt.Errorf("forge kind %q: use github, gitlab, gitea or bitbucket", kind)
}

// forgeToken is the forge token of --forge-token-file, else of
// $FERRY_FORGE_TOKEN, and a name for it in messages (never its value);
// "" when neither is set.
func forgeToken(env Env, file string) (token, source string, err error) {
	if file != "" {
		tok, err := readSecretFile(env, "--forge-token-file", file, "put a GitHub token that may write pull requests in it")
		return tok, "the token of --forge-token-file", err
	}
	if tok := strings.TrimSpace(env.Getenv(ForgeTokenVar)); tok != "" {
		return tok, "$" + ForgeTokenVar, nil
	}
	return "", "", nil
}

// worktreesRoot is the worktrees' folder of a state folder: STATE/worktrees,
// STATE being ferry run's ($XDG_STATE_HOME/ferry) unless given.
func worktreesRoot(getenv func(string) string, state string) (string, error) {
	if state == "" {
		var err error
		if state, err = filehistory.DefaultStateDir(getenv); err != nil {
			return "", err
		}
	}
	abs, err := filepath.Abs(state)
	if err != nil {
		return "", err
	}
	return filepath.Join(abs, "worktrees"), nil
}

// stateUsageWorktrees is the help of --state for ferry ship and ferry
// worktree.
const stateUsageWorktrees = "the state `DIR` whose worktrees/ holds the worktree (default $XDG_STATE_HOME/ferry, where ferry run keeps them; " +
	"for a session of ferry connect or ferry up, the client's: $XDG_STATE_HOME/ferry/client)"

// findWorktree opens the repository of workspace and its worktree NAME
// under the state folder's worktrees/, with what to do when there is none.
// A worktree whose folder was removed is returned with worktree_missing.
func findWorktree(ctx context.Context, getenv func(string) string, workspace, state, name string) (*worktree.Worktree, error) {
	repo, err := worktree.Open(ctx, workspace)
	if err != nil {
		return nil, err
	}
	root, err := worktreesRoot(getenv, state)
	if err != nil {
		return nil, fmt.Errorf("%w; pass --state", err)
	}
	wt, err := repo.Find(ctx, root, name)
	switch {
	case worktree.HasCode(err, worktree.CodeNotFound):
		return nil, &worktree.Error{Code: worktree.CodeNotFound, Err: err,
			Message: fmt.Sprintf("no worktree %q of %s under %s: ferry worktree list lists them (a session of ferry connect or ferry up keeps its worktrees in the client's state folder: --state)", name, repo.Top, root)}
	case err != nil:
		return nil, err
	case wt.Missing:
		return wt, &worktree.Error{Code: worktree.CodeMissing,
			Message: fmt.Sprintf("the folder %s of worktree %s was removed; its branch %s is kept: ferry worktree remove %s forgets it", wt.Path, name, wt.Branch, name)}
	}
	return wt, nil
}

// shipOutput is ferry ship's json output.
type shipOutput struct {
	Worktree string `json:"worktree"`
	// Session is the isolated session named instead of the worktree.
	Session string `json:"session,omitempty"`
	Branch  string `json:"branch,omitempty"`
	Base    string `json:"base,omitempty"`
	Path    string `json:"worktree_path,omitempty"`
	ship.Result
	Error *shipError `json:"error,omitempty"`
}

type shipError struct {
	Code    string   `json:"code"`
	Message string   `json:"message"`
	Files   []string `json:"files,omitempty"`
}

// runShip is `ferry ship NAME`.
func runShip(ctx context.Context, env Env, args []string) error {
	fs := flag.NewFlagSet("ferry ship", flag.ContinueOnError)
	workspace := fs.String("workspace", ".", "a folder of the repository `DIR` whose worktree to ship")
	state := fs.String("state", "", stateUsageWorktrees)
	strategy := fs.String("strategy", ship.StrategySquash, "how the branch goes into its base: `STRATEGY` squash (one commit), ff (fast-forward), merge (a merge commit) or none (no merge)")
	message := fs.String("message", "", "the commit `MESSAGE` of the worktree's uncommitted changes (required when there are any, unless --propose)")
	propose := fs.Bool("propose", false, "commit the uncommitted changes, if any, with a message ferry proposes (from the prompts of the ferry run that left them, else the files changed)")
	push := fs.Bool("push", false, "push the branch (only it) to the remote")
	remote := fs.String("remote", "", "the `REMOTE` to push to (default origin)")
	pr := fs.Bool("pr", false, "open a pull request of the branch into its base (implies --push): through GitHub's API with a forge token, else print the forge's compare URL")
	tokenFile := fs.String("forge-token-file", "", "with --pr: a `FILE` holding the GitHub token (default $"+ForgeTokenVar+")")
	var hosts forgeHosts
	fs.Var(&hosts, "forge-host", "with --pr: a self-hosted forge, `KIND=HOST` (github for GitHub Enterprise, gitlab, gitea, bitbucket; repeatable)")
	format := fs.String("output-format", formatText, "`FORMAT` of the output: text or json (one object: worktree, session, branch, base, commit, strategy, merged, merge_commit, pushed, remote, pr_url, compare_url, error)")
	if ok, err := parseFlags(fs, env, args,
		"Usage: ferry ship [flags] NAME|SESSION",
		"\nShips the worktree ferry/NAME of the repository of --workspace (made by ferry run",
		"--worktree NAME, or by an isolated session: then --state is its client's), or",
		"the worktree of the isolated session whose id is SESSION (its client's --state,",
		"default $XDG_STATE_HOME/ferry/client; --propose then proposes from its prompts), in",
		"this order, each step only when asked: commit its uncommitted changes",
		"(--message or --propose), merge the branch into its base (--strategy; the",
		"user's checkout of the base follows, and a merge that would touch its",
		"uncommitted changes is refused), push the branch (--push) and open a pull",
		"request (--pr). A forge token comes from --forge-token-file or $"+ForgeTokenVar+"",
		"and is never printed; without one --pr prints the forge's compare URL.",
		"\nA step that fails changes nothing, and stops the steps after it; what the steps",
		"before it did stays and is printed (a pushed branch, a merge). A wrong token or",
		"a remote on no forge is found before the first step.",
		"\nExit codes: 0 shipped, 1 refused or failed (the code says why: merge_conflict,",
		"base_dirty, push_rejected, forge_auth, …), 2 bad usage.",
	); !ok {
		return err
	}
	usageErr := func(format string, a ...any) error {
		return usageErrorf("ferry ship: "+format, a...)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case fs.NArg() != 1:
		return usageErr("give one worktree NAME (ferry worktree list lists them) or an isolated session's id, not %d arguments", fs.NArg())
	case *format != formatText && *format != formatJSON:
		return usageErr("--output-format must be text or json, not %q", *format)
	case set["message"] && *propose:
		return usageErr("--message and --propose: give one")
	case set["message"] && strings.TrimSpace(*message) == "":
		return usageErr("--message is empty: give the commit message, or --propose")
	case set["remote"] && !*push && !*pr:
		return usageErr("--remote only applies with --push or --pr")
	case (set["forge-token-file"] || set["forge-host"]) && !*pr:
		return usageErr("--forge-token-file and --forge-host only apply with --pr")
	}
	name := fs.Arg(0)
	// NAME may be an isolated session's id: its client's record names the
	// repository and the worktree.
	var sess *client.IsolatedSession
	var sessErr error
	sessionID := ""
	if protocol.IsUUID(name) {
		sessionID = strings.ToLower(name)
		st, err := clientStateDir(env, *state)
		if err != nil {
			return usageErr("%w", err)
		}
		found, ok, err := client.ReadIsolated(st, sessionID)
		switch {
		case err != nil:
			sessErr = err
		case !ok:
			sessErr = &worktree.Error{Code: worktree.CodeNotFound, Message: fmt.Sprintf(
				"no isolated session %s in the client's state folder %s: pass the --state of the ferry connect or ferry up that runs it", sessionID, st)}
		default:
			sess = &found
			*workspace, *state, name = found.Repo, st, found.Name
		}
	}
	if sessErr == nil && !worktree.ValidName(name) {
		return usageErr("worktree name %q: use lower case letters, digits and '-', at most %d (e.g. %s)", name, worktree.MaxName, worktree.Sanitize(name))
	}
	if _, _, err := ship.ParseStrategy(*strategy); err != nil || *strategy == "" {
		return usageErr("--strategy must be squash, ff, merge or none, not %q", *strategy)
	}
	if len(*message) > ship.MaxMessage {
		return usageErr("--message is over %d KiB", ship.MaxMessage>>10)
	}
	opts := ship.Options{Message: *message, Strategy: *strategy, Push: *push, Remote: *remote, PullRequest: *pr, Forge: forge.Config{Hosts: hosts}}
	if *pr {
		var err error
		if opts.Token, opts.TokenSource, err = forgeToken(env, *tokenFile); err != nil {
			return usageErr("%w", err)
		}
	}

	out := shipOutput{Worktree: name, Session: sessionID}
	if sessErr != nil {
		out.Worktree = ""
	}
	res, err := func() (ship.Result, error) {
		if sessErr != nil {
			return ship.Result{}, sessErr
		}
		getenv := env.Getenv
		if getenv == nil {
			getenv = func(string) string { return "" }
		}
		wt, err := findWorktree(ctx, getenv, *workspace, *state, name)
		if err != nil {
			return ship.Result{}, err
		}
		out.Branch, out.Base, out.Path = wt.Branch, wt.Base, wt.Path
		if *propose {
			// Only for uncommitted changes: without any, the squash and
			// the pull request are named after the branch's commits.
			c, err := wt.Counts(ctx)
			if err != nil {
				return ship.Result{}, err
			}
			switch {
			case !c.Uncommitted:
			case sess != nil && len(sess.Prompts) > 0:
				// As the UI's Ship proposes: the session's prompts and
				// its agent's last answer.
				opts.Message = ship.ProposeMessage(sess.Prompts, sess.Answer)
			default:
				if opts.Message, err = proposeMessage(ctx, wt); err != nil {
					return ship.Result{}, err
				}
			}
		}
		res, err := ship.Ship(ctx, wt, opts)
		if res.Commit != "" {
			clearProposal(wt)
		}
		var we *worktree.Error
		if errors.As(err, &we) && we.Code == ship.CodeInvalid && opts.Message == "" {
			we.Message += ": pass --message M, or --propose"
		}
		return res, err
	}()
	out.Result = res
	if err != nil {
		out.Error = &shipError{Code: worktree.CodeGitFailed, Message: err.Error()}
		var we *worktree.Error
		if errors.As(err, &we) {
			out.Error = &shipError{Code: we.Code, Message: we.Message, Files: we.Files}
		}
	}
	if *format == formatJSON {
		b, _ := json.Marshal(out)
		_, _ = env.Stdout.Write(append(b, '\n'))
	} else {
		printShipped(env.Stdout, out, *propose)
		if *pr && opts.Token == "" && res.Pushed && res.PRURL == "" && res.CompareURL != "" {
			fmt.Fprintf(env.Stderr, "ferry ship: no forge token (--forge-token-file or $%s): open the pull request at the compare URL\n", ForgeTokenVar)
		}
	}
	if err != nil {
		if *format == formatJSON {
			return exitWith(ExitError)
		}
		return fmt.Errorf("ferry ship: %s: %w", name, err)
	}
	return nil
}

// printShipped says what ferry ship did, one line a step.
func printShipped(w io.Writer, o shipOutput, proposed bool) {
	r := o.Result
	short := func(sha string) string { return sha[:min(len(sha), 12)] }
	if r.Commit != "" {
		how := ""
		if proposed {
			how = " (proposed message)"
		}
		fmt.Fprintf(w, "committed %s on %s%s\n", short(r.Commit), o.Branch, how)
	}
	if r.Merged {
		verb := map[string]string{ship.StrategySquash: "squash-merged", ship.StrategyFF: "fast-forwarded", ship.StrategyMerge: "merged"}[r.Strategy]
		fmt.Fprintf(w, "%s %s into %s: %s is at %s\n", verb, o.Branch, o.Base, o.Base, short(r.MergeCommit))
	}
	if r.Pushed {
		fmt.Fprintf(w, "pushed %s to %s\n", o.Branch, r.Remote)
	}
	switch {
	case r.PRURL != "":
		fmt.Fprintf(w, "pull request: %s\n", r.PRURL)
	case r.CompareURL != "" && r.Pushed:
		fmt.Fprintf(w, "open a pull request: %s\n", r.CompareURL)
	}
}
