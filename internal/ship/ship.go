// Package ship ships an isolated session's branch: it commits what the
// worktree has uncommitted, merges the branch into its base, pushes the
// branch to a remote and opens a pull request, in that order, each step
// optional. `ferry ship`, `ferry run --worktree` and the client's
// control.worktree.ship / control.worktree.propose share it.
//
// Guarantees:
//
//   - Every error is a *worktree.Error (errors.As) with a stable Code: the
//     worktree package's codes pass through as they are (merge_conflict
//     and base_dirty with their Files, push_rejected, remote_not_found,
//     nothing_to_merge, not_fast_forward, worktree_missing, …); bad
//     Options are invalid_value; a forge failure is forge_auth (the forge
//     refused the token) or forge_error (anything else, the forge's own
//     code in the wrapped *forge.Error), its Message saying what to do.
//   - The token goes to the forge's API only (see package forge): it is in
//     no error, no Result and no log line.
//   - Progress is kept and reported: Ship returns the Result so far along
//     with the error. Each step is all or nothing (the worktree package's
//     guarantee), so a failure leaves the steps before it done and the
//     ones after it not started: a merge_conflict or base_dirty after a
//     commit leaves that commit on the branch (Result.Commit) and the base
//     and the user's checkout as they were; a push_rejected after a merge
//     leaves the base merged (Result.Merged); a forge error after a push
//     leaves the branch pushed (Result.Pushed).
//   - A pull request is checked before the first step: a remote on no
//     forge ferry knows, and a token GitHub refuses (looked up with the
//     branch's open pull request), fail with nothing done. Only a refusal
//     of the pull request itself (a token that may read but not write,
//     a rate limit) comes after the push. A pull request already open for
//     the branch is returned (PRURL), not opened again.
//   - Nothing happens before Options are checked: bad Options, or a
//     missing commit message while the worktree has uncommitted changes,
//     are refused with nothing touched.
package ship

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/runecut"
	"github.com/ferry-dev/ferry/internal/worktree"
)

// Error codes of this package (the worktree package's pass through).
const (
	// CodeInvalid: bad Options (an unknown strategy, a commit message
	// missing or too long). The same string as protocol.CodeInvalidValue.
	CodeInvalid = "invalid_value"
	// CodeForgeAuth: the forge refused the token (wrong, expired, or
	// lacking the permission to open pull requests).
	CodeForgeAuth = "forge_auth"
	// CodeForgeError: any other failure to open the pull request (the
	// remote is on no forge ferry knows, the forge is unreachable or rate
	// limited, …); the wrapped *forge.Error has the forge's own code.
	CodeForgeError = "forge_error"
)

// Strategy names, as the protocol's ShipResult.strategy spells them.
const (
	StrategyNone   = "none"
	StrategyFF     = "ff"
	StrategySquash = "squash"
	StrategyMerge  = "merge"
)

// MaxMessage bounds a commit message (the protocol's limit).
const MaxMessage = 64 << 10

// DefaultRemote is the remote pushed to when Options.Remote is empty.
const DefaultRemote = "origin"

// Options say what Ship does.
type Options struct {
	// Message is the commit message for the worktree's uncommitted
	// changes: required when there are any (ProposeMessage makes one).
	Message string
	// Strategy is how the branch goes into its base: "none" (no merge),
	// "ff" (or "fast-forward"), "squash" or "merge"; "" is squash.
	Strategy string
	// MergeMessage is the squash or merge commit's message; default:
	// Message for squash (without one, the branch's commit's message, or
	// the oldest's subject and the list of all), "Merge branch
	// 'ferry/NAME' into BASE" for merge (then Message as its body).
	MergeMessage string
	// Push pushes the branch (only it) to Remote ("origin" when empty).
	Push   bool
	Remote string
	// PullRequest opens a pull request of the branch into its base on the
	// remote's forge; it implies Push. With a Token and a GitHub remote it
	// is opened through GitHub's API (PRURL); in every case CompareURL is
	// the forge's page to open one by hand.
	PullRequest bool
	// Forge names self-hosted forge hosts (GitHub Enterprise, …).
	Forge forge.Config
	// Token is the GitHub token; "" makes no API call (CompareURL only).
	Token string
	// TokenSource names where Token came from ("$FERRY_FORGE_TOKEN",
	// "--forge-token-file"), for messages; never the token.
	TokenSource string
	// HTTPClient makes the forge's API calls (http.DefaultClient when nil).
	HTTPClient *http.Client
	// Logger gets the forge's one line per request (no header, no token).
	Logger *slog.Logger
	// PRTitle and PRBody default to Message's subject and body (without
	// one, as MergeMessage's squash default).
	PRTitle, PRBody string
}

// Result is what Ship did (the protocol's ShipResult).
type Result struct {
	// Commit is the commit made on the branch of the uncommitted changes
	// ("" when there were none).
	Commit string `json:"commit,omitempty"`
	// Strategy is the strategy used, as the StrategyX names.
	Strategy string `json:"strategy"`
	// Merged reports that the base now has the branch's change, at
	// MergeCommit (the base's new commit).
	Merged      bool   `json:"merged"`
	MergeCommit string `json:"merge_commit,omitempty"`
	// Pushed reports that Remote has the branch.
	Pushed bool   `json:"pushed"`
	Remote string `json:"remote,omitempty"`
	// PRURL is the opened (or already open) pull request's page;
	// CompareURL the forge's page to open one by hand.
	PRURL      string `json:"pr_url,omitempty"`
	CompareURL string `json:"compare_url,omitempty"`
}

// ParseStrategy reads a strategy name into the StrategyX form (and the
// worktree's for a merge): "" is squash.
func ParseStrategy(s string) (string, worktree.Strategy, error) {
	switch s {
	case "", StrategySquash:
		return StrategySquash, worktree.Squash, nil
	case StrategyNone:
		return StrategyNone, 0, nil
	case StrategyFF, "fast-forward":
		return StrategyFF, worktree.FastForward, nil
	case StrategyMerge:
		return StrategyMerge, worktree.MergeCommit, nil
	}
	return "", 0, invalid(fmt.Sprintf("merge strategy %q: use squash, ff, merge or none", s))
}

func invalid(msg string) error {
	return &worktree.Error{Code: CodeInvalid, Message: msg}
}

// Ship commits, merges, pushes and opens a pull request as o says (see
// the package doc for the order and what a failure leaves). It returns
// what was done, also when it fails partway.
func Ship(ctx context.Context, wt *worktree.Worktree, o Options) (Result, error) {
	name, strategy, err := ParseStrategy(o.Strategy)
	if err != nil {
		return Result{}, err
	}
	res := Result{Strategy: name}
	if len(o.Message) > MaxMessage || len(o.MergeMessage) > MaxMessage {
		return res, invalid(fmt.Sprintf("the commit message is over %d KiB: shorten it", MaxMessage>>10))
	}
	if strings.ContainsRune(o.Message, 0) || strings.ContainsRune(o.MergeMessage, 0) {
		return res, invalid("the commit message holds a NUL byte: remove it")
	}
	if o.Remote == "" {
		o.Remote = DefaultRemote
	}
	push := o.Push || o.PullRequest
	counts, err := wt.Counts(ctx)
	if err != nil {
		return res, err
	}
	msg := strings.TrimSpace(o.Message)
	switch {
	case counts.Uncommitted && msg == "":
		return res, invalid(fmt.Sprintf("the worktree %s has uncommitted changes: give a commit message for them", wt.Name))
	case !counts.Uncommitted && counts.Ahead == 0 && (name != StrategyNone || !push):
		// Nothing this ship could bring anywhere.
		return res, &worktree.Error{Code: worktree.CodeNothingToMerge,
			Message: fmt.Sprintf("%s has no change and no commit that %s has not: nothing to ship", wt.Branch, wt.Base)}
	case !counts.Uncommitted && name == StrategyNone && !push:
		return res, &worktree.Error{Code: worktree.CodeNothingToCommit,
			Message: fmt.Sprintf("%s has no uncommitted change, and neither a merge nor a push was asked for: nothing to ship", wt.Branch)}
	}
	// A remote that is not there, a forge ferry does not know and a token
	// the forge refuses fail now, before anything is done.
	var pr *prPlan
	if push {
		remoteURL, err := wt.Repo.RemoteURL(ctx, o.Remote)
		if err != nil {
			return res, err
		}
		if o.PullRequest {
			if pr, err = planPullRequest(ctx, wt, o, remoteURL); err != nil {
				return res, err
			}
			res.CompareURL = pr.compareURL
		}
	}

	if counts.Uncommitted {
		if res.Commit, err = wt.Commit(ctx, o.Message); err != nil {
			return res, err
		}
	}
	if name != StrategyNone {
		msg, err := mergeMessage(ctx, wt, name, o)
		if err != nil {
			return res, err
		}
		if res.MergeCommit, err = wt.Merge(ctx, strategy, msg); err != nil {
			return res, err
		}
		res.Merged = true
	}
	if !push {
		return res, nil
	}
	if err := wt.Push(ctx, o.Remote); err != nil {
		return res, err
	}
	res.Pushed, res.Remote = true, o.Remote
	if pr == nil {
		return res, nil
	}
	res.PRURL, err = pr.open(ctx)
	return res, err
}

// mergeMessage is the squash or merge commit's message (see
// Options.MergeMessage).
func mergeMessage(ctx context.Context, wt *worktree.Worktree, strategy string, o Options) (string, error) {
	if m := strings.TrimSpace(o.MergeMessage); m != "" {
		return o.MergeMessage, nil
	}
	msg := strings.TrimSpace(o.Message)
	switch strategy {
	case StrategySquash:
		if msg != "" {
			return msg + "\n", nil
		}
		subject, body, err := describe(ctx, wt)
		if err != nil {
			return "", err
		}
		if body != "" {
			subject += "\n\n" + body
		}
		return subject + "\n", nil
	case StrategyMerge:
		m := fmt.Sprintf("Merge branch '%s' into %s\n", wt.Branch, wt.Base)
		if msg != "" {
			m += "\n" + msg + "\n"
		}
		return m, nil
	}
	return "", nil
}

// describe is a subject and body for the branch's commits, when no
// message says what they are: one commit's own message, or the oldest
// one's subject with the list of every subject (as git's squash does).
func describe(ctx context.Context, wt *worktree.Worktree) (subject, body string, err error) {
	commits, err := wt.Commits(ctx)
	if err != nil {
		return "", "", err
	}
	switch len(commits) {
	case 0:
		return fmt.Sprintf("Squashed branch '%s' into %s", wt.Branch, wt.Base), "", nil
	case 1:
		return commits[0].Subject, commits[0].Body, nil
	}
	var b strings.Builder
	for _, c := range commits {
		b.WriteString("- " + c.Subject + "\n")
	}
	return commits[0].Subject, runecut.Ellipsis(strings.TrimSpace(b.String()), MaxBody), nil
}

// prPlan is a pull request checked before the ship's first step.
type prPlan struct {
	compareURL string
	gh         *forge.GitHub // nil: no API call (no token, not GitHub)
	pr         forge.PR
	existing   string // the URL of the branch's open pull request
}

// planPullRequest reads the remote's forge and its compare URL and, with a
// token on GitHub, checks the token by looking up the branch's open pull
// request: a wrong one is forge_auth with nothing done yet.
func planPullRequest(ctx context.Context, wt *worktree.Worktree, o Options, remoteURL string) (*prPlan, error) {
	repo, err := o.Forge.ParseRemote(remoteURL)
	if err != nil {
		// The remote URL may hold credentials: it is not quoted.
		return nil, forgeError(fmt.Sprintf("the remote %q is on no forge ferry knows, so ferry cannot open a pull request: drop the pull request, or name a self-hosted forge's host in the forge hosts", o.Remote), err)
	}
	plan := &prPlan{}
	if plan.compareURL, err = repo.CompareURL(wt.Base, wt.Branch); err != nil {
		return nil, forgeError("cannot make the forge's compare page for "+wt.Branch, err)
	}
	if o.Token == "" || repo.Kind != forge.KindGitHub {
		return plan, nil
	}
	title, body := o.PRTitle, o.PRBody
	if strings.TrimSpace(title) == "" {
		subject, rest := splitMessage(o.Message)
		if subject == "" {
			// Nothing to commit: the branch's commits say what it is.
			if subject, rest, err = describe(ctx, wt); err != nil {
				return nil, err
			}
		}
		title = subject
		if strings.TrimSpace(body) == "" {
			body = rest
		}
	}
	plan.gh = &forge.GitHub{BaseURL: repo.APIURL(), Token: o.Token, TokenSource: o.TokenSource, HTTPClient: o.HTTPClient, Logger: o.Logger}
	plan.pr = forge.PR{Owner: repo.Owner, Repo: repo.Name, Title: title, Body: body, Head: wt.Branch, Base: wt.Base}
	open, found, err := plan.gh.FindPullRequest(ctx, plan.pr)
	if err != nil {
		return nil, codedForge(err, "nothing was done")
	}
	if found {
		plan.existing = open.URL
	}
	return plan, nil
}

// open opens the pull request (after the push), or returns the one
// already open, which now shows the pushed commits.
func (p *prPlan) open(ctx context.Context) (string, error) {
	if p.gh == nil {
		return "", nil
	}
	if p.existing != "" {
		return p.existing, nil
	}
	pr, err := p.gh.CreatePullRequest(ctx, p.pr)
	switch {
	case err == nil, errors.Is(err, forge.ErrPullRequestExists) && pr.URL != "":
		return pr.URL, nil
	}
	return "", codedForge(err, "the branch was pushed: open the pull request by hand at the compare URL, or fix what is said and ship again")
}

// codedForge is a forge failure as forge_auth (the token) or forge_error,
// saying what was done so far.
func codedForge(err error, done string) error {
	msg := "the forge's API failed"
	var fe *forge.Error
	if errors.As(err, &fe) {
		msg = fe.Message
	}
	msg += " (" + done + ")"
	if errors.Is(err, forge.ErrAuth) {
		return &worktree.Error{Code: CodeForgeAuth, Message: msg, Err: err}
	}
	return forgeError(msg, err)
}

func forgeError(msg string, err error) error {
	return &worktree.Error{Code: CodeForgeError, Message: msg, Err: err}
}

// splitMessage is a commit message's subject and body.
func splitMessage(m string) (subject, body string) {
	m = strings.TrimSpace(m)
	subject, body, _ = strings.Cut(m, "\n")
	return strings.TrimSpace(subject), strings.TrimSpace(body)
}

// Bounds of ProposeMessage's commit message.
const (
	MaxSubject = 72
	MaxBody    = 4 << 10
)

// ProposeMessage is a commit message for a session's work: the first
// prompt's first line as the subject (cut to MaxSubject bytes with "…"),
// then the agent's final answer as the body (cut to MaxBody), and, when
// there were more prompts, their first lines as a list.
func ProposeMessage(prompts []string, finalAnswer string) string {
	var lines []string
	for _, p := range prompts {
		if l := firstLine(p); l != "" {
			lines = append(lines, l)
		}
	}
	subject := "ferry run"
	if len(lines) > 0 {
		subject = lines[0]
	}
	if len(subject) > MaxSubject {
		subject = runecut.Prefix(subject, MaxSubject-len("…")) + "…"
	}
	var body []string
	if a := strings.TrimSpace(finalAnswer); a != "" {
		body = append(body, a)
	}
	if len(lines) > 1 {
		list := "Prompts:"
		for _, l := range lines {
			list += "\n- " + l
		}
		body = append(body, list)
	}
	msg := subject + "\n"
	if len(body) > 0 {
		msg += "\n" + runecut.Ellipsis(strings.Join(body, "\n\n"), MaxBody) + "\n"
	}
	return msg
}

// firstLine is s's first non-blank line, trimmed.
func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}
