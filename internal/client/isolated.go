package client

// Isolated sessions (issue 34). A control.session.open with isolation
// gives the session a git worktree of its own (internal/worktree) on a new
// branch ferry/NAME under STATE/worktrees, and the session runs in a
// workspace derived from it: its own root, roots and index, so that file
// tools, `@` search, Bash, artifacts, undo and the Changes view all see
// the worktree and nothing of the user's checkout. The derived workspace
// keeps the served workspace's id (the master and the UI know no other)
// and is built once per session open, closed with the session.
//
// Which session owns which worktree is kept in STATE/isolated/ (a
// binding per session), so that a re-open finds the worktree it made, and
// a worktree that is gone (its folder removed by hand, then pruned) is
// reported as worktree_missing instead of being made again silently.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/search"
	"github.com/ferry-dev/ferry/internal/search/index"
	"github.com/ferry-dev/ferry/internal/worktree"
	"github.com/ferry-dev/ferry/protocol"
)

// Bounds of what an isolated session keeps and sends.
const (
	// setupFlush is how often a running .ferry/setup's new output is sent.
	setupFlush = time.Second
	// setupChunk sends the output sooner once this much is new.
	setupChunk = 16 << 10
	// maxDiffPatchBytes bounds the patches of one session.worktree.diff,
	// well under protocol.MaxMessageBytes after JSON escaping.
	maxDiffPatchBytes = 2 << 20
	// keptPrompts and keptText bound what a binding keeps for
	// control.worktree.propose.
	keptPrompts = 20
	keptText    = 4 << 10
)

// SetupTimeout bounds a new worktree's .ferry/setup.
var SetupTimeout = worktree.DefaultSetupTimeout

// binding is what the client keeps of an isolated session, in
// STATE/isolated/<hash of the session id>.json.
type binding struct {
	Session string `json:"session"`
	Repo    string `json:"repo"`
	Name    string `json:"name"`
	Base    string `json:"base"`
	Group   string `json:"group,omitempty"`
	Setup   string `json:"setup"`
	Test    string `json:"test,omitempty"`
	// Shipped is the last successful ship; ShippedHead the branch's
	// commit then: a branch still at it has nothing unshipped.
	Shipped     *protocol.ShipResult `json:"shipped,omitempty"`
	ShippedHead string               `json:"shipped_head,omitempty"`
	// Prompts and Answer make control.worktree.propose's message.
	Prompts []string `json:"prompts,omitempty"`
	Answer  string   `json:"answer,omitempty"`
}

// isolated is an open isolated session's worktree.
type isolated struct {
	wt  *worktree.Worktree
	ws  *workspace // derived: the worktree (or its subfolder of the workspace)
	svc *search.Service

	// fresh is set for a worktree this open created: its setup runs.
	fresh bool

	mu sync.Mutex
	b  binding
}

// worktreesRoot is where the client's worktrees live.
func (c *Client) worktreesRoot() string {
	root := filepath.Join(c.cfg.StateDir, "worktrees")
	if abs, err := filepath.Abs(root); err == nil {
		root = abs // the git layer takes absolute roots only
	}
	return root
}

func (c *Client) bindingPath(sessionID string) string {
	return bindingPathIn(c.cfg.StateDir, sessionID)
}

func bindingPathIn(stateDir, sessionID string) string {
	sum := sha256.Sum256([]byte(sessionID))
	return filepath.Join(stateDir, "isolated", hex.EncodeToString(sum[:16])+".json")
}

func (c *Client) readBinding(sessionID string) (*binding, error) {
	return readBindingIn(c.cfg.StateDir, sessionID)
}

func readBindingIn(stateDir, sessionID string) (*binding, error) {
	data, err := os.ReadFile(bindingPathIn(stateDir, sessionID)) //nolint:gosec // under the client's state folder
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var b binding
	if err := json.Unmarshal(data, &b); err != nil || b.Session != sessionID {
		return nil, fmt.Errorf("client: unreadable worktree binding of session %s", sessionID)
	}
	return &b, nil
}

// IsolatedSession is what a client keeps of one of its isolated sessions,
// for `ferry ship SESSION`: the repository, its worktree's name and base,
// and the prompts and last answer a commit message is proposed from.
type IsolatedSession struct {
	Session string
	Repo    string
	Name    string
	Base    string
	Prompts []string
	Answer  string
}

// ReadIsolated is the isolated session sessionID of the client whose state
// folder is stateDir; ok is false when that client has none of that id.
func ReadIsolated(stateDir, sessionID string) (s IsolatedSession, ok bool, err error) {
	b, err := readBindingIn(stateDir, sessionID)
	if err != nil || b == nil {
		return s, false, err
	}
	return IsolatedSession{Session: b.Session, Repo: b.Repo, Name: b.Name, Base: b.Base, Prompts: b.Prompts, Answer: b.Answer}, true, nil
}

// save writes the binding (atomically: a crash leaves the old or the new).
func (iso *isolated) save(c *Client) error {
	iso.mu.Lock()
	data, err := json.Marshal(iso.b)
	sid := iso.b.Session
	iso.mu.Unlock()
	if err != nil {
		return err
	}
	path := c.bindingPath(sid)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// isolate finds (re-open) or creates (first open) the session's worktree
// and builds its derived workspace. created reports a new worktree, whose
// setup the caller runs. Every refusal is coded and leaves nothing
// behind.
func (s *session) isolate(ctx context.Context, p *protocol.SessionOpen) (iso *isolated, created bool, err error) {
	c := s.c
	repo, err := worktree.Open(ctx, s.ws.Path)
	if err != nil {
		return nil, false, err
	}
	root := c.worktreesRoot()
	b, err := c.readBinding(s.id)
	if err != nil {
		return nil, false, err
	}
	var wt *worktree.Worktree
	if b != nil {
		wt, err = repo.Find(ctx, root, b.Name)
		if err == nil {
			if _, serr := os.Stat(wt.Path); serr != nil {
				err = &worktree.Error{Code: worktree.CodeMissing}
			}
		}
		if err != nil {
			if worktree.HasCode(err, worktree.CodeNotFound) || worktree.HasCode(err, worktree.CodeMissing) {
				return nil, false, &protocol.Error{Code: protocol.CodeWorktreeMissing, Message: fmt.Sprintf(
					"the worktree of branch %s%s is gone (its folder was removed); the branch is kept: check it out by hand, or start a new session", worktree.BranchPrefix, b.Name)}
			}
			return nil, false, err
		}
	} else {
		iso := p.Isolation
		title := p.Title
		if title == "" {
			title = "session"
		}
		wt, err = repo.Create(ctx, worktree.Options{Name: iso.Name, Title: title, Base: iso.Base, Root: root})
		if err != nil {
			return nil, false, err
		}
		created = true
		b = &binding{Session: s.id, Repo: repo.Top, Name: wt.Name, Base: wt.Base, Group: iso.Group, Setup: protocol.SetupNone}
	}
	if b.Setup == protocol.SetupRunning {
		// The client stopped during the setup: it did not finish.
		b.Setup = protocol.SetupFailed
	}
	iso, err = c.deriveWorkspace(ctx, s.ws, repo, wt)
	if err == nil {
		iso.b = *b
		err = iso.save(c)
		if err != nil {
			iso.close()
		}
	}
	if err != nil {
		if created {
			if rerr := wt.Remove(context.WithoutCancel(ctx), false); rerr != nil {
				c.log.Error("remove a worktree made for a session that did not open", "worktree", wt.Path, "err", rerr)
			}
		}
		return nil, false, err
	}
	return iso, created, nil
}

// deriveWorkspace builds the workspace an isolated session of ws runs in:
// the same folder of the worktree as ws is of the repository.
func (c *Client) deriveWorkspace(ctx context.Context, ws *workspace, repo *worktree.Repo, wt *worktree.Worktree) (*isolated, error) {
	rel, err := filepath.Rel(repo.Top, ws.Path)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil, fmt.Errorf("client: workspace %s is not inside its repository %s", ws.Path, repo.Top)
	}
	path := filepath.Join(wt.Path, rel)
	if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
		return nil, &protocol.Error{Code: protocol.CodeInvalidValue, Field: "payload.workspace_id",
			Message: fmt.Sprintf("the workspace's folder %s is not in branch %s (untracked?): commit it first, or serve the repository's top", rel, wt.Branch)}
	}
	if path, err = filepath.EvalSymlinks(path); err != nil {
		return nil, err
	}
	d := &workspace{Workspace: ws.Workspace}
	d.Path = path
	d.roots = []string{path}
	if top, err := filepath.EvalSymlinks(wt.Path); err == nil && top != path {
		d.roots = append(d.roots, top)
	}
	ix, err := index.Open(c.stop, path, index.Options{Warn: c.indexWarn(path)})
	if err != nil {
		return nil, fmt.Errorf("client: index worktree %s: %w", path, err)
	}
	d.ix = ix
	svc := search.NewService([]*search.Workspace{{Name: ws.ID, Root: path, Index: ix}}, func(_ context.Context, root string) (*index.Index, error) {
		return index.Open(c.stop, root, index.Options{Warn: c.indexWarn(root)})
	})
	return &isolated{wt: wt, ws: d, svc: svc}, nil
}

// close releases the derived workspace's index and searches.
func (iso *isolated) close() {
	if iso == nil {
		return
	}
	_ = iso.svc.Close()
	_ = iso.ws.ix.Close()
}

// wireError turns an error of the git layer (or the ship pipeline) into
// the protocol error sent to the master: its code when the protocol knows
// it, its message (what to do) and the files it names. Anything else is
// internal, its details logged.
func (c *Client) wireError(what string, err error) *protocol.Error {
	var pe *protocol.Error
	if errors.As(err, &pe) {
		return pe
	}
	var we *worktree.Error
	if !errors.As(err, &we) {
		c.log.Error(what, "err", err)
		return &protocol.Error{Code: protocol.CodeInternal, Message: what + " failed; the client's log has the details"}
	}
	code := we.Code
	switch code {
	case worktree.CodeNotFound:
		code = protocol.CodeWorktreeMissing
	case worktree.CodeBadName, worktree.CodeBadRoot:
		code = protocol.CodeInvalidValue
	case worktree.CodeGitMissing, worktree.CodeGitTooOld:
		code = protocol.CodeGitFailed
	}
	if _, known := protocol.ErrorCodes[code]; !known {
		if strings.HasPrefix(code, "forge_") {
			code = protocol.CodeForgeError
		} else {
			c.log.Error(what, "err", err)
			return &protocol.Error{Code: protocol.CodeInternal, Message: what + " failed; the client's log has the details"}
		}
	}
	msg := we.Message
	if len(we.Files) > 0 {
		msg += " (" + strings.Join(we.Files, ", ") + ")"
	}
	return &protocol.Error{Code: code, Message: msg}
}

// worktreeInfo is the session's worktree as it is now.
func (s *session) worktreeInfo(ctx context.Context) protocol.Worktree {
	iso := s.iso
	iso.mu.Lock()
	b := iso.b
	iso.mu.Unlock()
	w := protocol.Worktree{Name: iso.wt.Name, Branch: iso.wt.Branch, Base: iso.wt.Base, Group: b.Group,
		Setup: b.Setup, Test: b.Test, Shipped: b.Shipped}
	if w.Setup == "" {
		w.Setup = protocol.SetupNone
	}
	if _, err := os.Stat(iso.wt.Path); err != nil {
		w.Missing = true
		un, err := iso.wt.HasUnshipped(ctx)
		w.Unshipped = un || err != nil
		return w
	}
	counts, err := iso.wt.Counts(ctx)
	if err != nil {
		s.c.log.Warn("worktree counts", "session", s.id, "err", err)
		w.Unshipped = true // cannot tell: keep the worktree's work safe
		return w
	}
	w.Added, w.Removed, w.Files = counts.Added, counts.Deleted, counts.Files
	w.Ahead, w.Behind, w.Uncommitted = counts.Ahead, counts.Behind, counts.Uncommitted
	w.Unshipped = counts.Uncommitted
	if counts.Ahead > 0 && !w.Unshipped {
		// A squash leaves the branch's commits out of the base's
		// history: what was shipped at this head is shipped.
		w.Unshipped = b.ShippedHead == "" || branchHead(ctx, iso.wt) != b.ShippedHead
	}
	return w
}

// branchHead is the newest of the branch's own commits ("" when it has
// none, or they cannot be read): what a ship marks as shipped.
func branchHead(ctx context.Context, wt *worktree.Worktree) string {
	commits, err := wt.Commits(ctx)
	if err != nil || len(commits) == 0 {
		return ""
	}
	return commits[len(commits)-1].Hash
}

// sendStatus emits session.worktree.status (stored), answering parent when
// it is set.
func (s *session) sendStatus(ctx context.Context, parent *protocol.Message) {
	if s.iso == nil {
		return
	}
	st := &protocol.WorktreeState{Worktree: s.worktreeInfo(ctx)}
	var m *protocol.Message
	if parent != nil {
		m = parent.Reply(protocol.TypeWorktreeState, st)
	} else {
		m = protocol.New(protocol.TypeWorktreeState, st)
		m.SessionID = s.id
	}
	if err := s.c.emit(s.c.stop, m); err != nil {
		s.c.log.Error("session.worktree.status", "session", s.id, "err", err)
	}
}

// setupOutput streams a running .ferry/setup's output as
// session.worktree.setup events (state running, each with the output
// since the one before), at most every setupFlush, and keeps the last
// MaxWorktreeOutput bytes for the final event.
type setupOutput struct {
	s       *session
	mu      sync.Mutex
	tail    []byte
	pending []byte
	last    time.Time
}

func (o *setupOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	o.tail = keepTail(append(o.tail, p...), protocol.MaxWorktreeOutput)
	o.pending = keepTail(append(o.pending, p...), protocol.MaxWorktreeOutput)
	soon := len(o.pending) >= setupChunk
	o.mu.Unlock()
	if soon {
		o.flush(0)
	}
	return len(p), nil
}

// flush sends the output not sent yet, if any, once age has passed since
// the last send.
func (o *setupOutput) flush(age time.Duration) {
	o.mu.Lock()
	if len(o.pending) == 0 || time.Since(o.last) < age {
		o.mu.Unlock()
		return
	}
	chunk := o.pending
	o.pending, o.last = nil, time.Now()
	o.mu.Unlock()
	o.s.emitSetup(protocol.SetupRunning, chunk, nil)
}

// keepTail returns b's last n bytes, starting at a whole UTF-8 character.
func keepTail(b []byte, n int) []byte {
	if len(b) <= n {
		return b
	}
	b = b[len(b)-n:]
	for i := 0; i < len(b) && i < 4; i++ {
		if b[i]&0xC0 != 0x80 {
			return b[i:]
		}
	}
	return b
}

func (s *session) emitSetup(state string, output []byte, exit *int) {
	m := protocol.New(protocol.TypeWorktreeSetup, &protocol.WorktreeSetup{State: state, Output: string(bytes.ToValidUTF8(output, []byte("\uFFFD"))), ExitCode: exit})
	m.SessionID = s.id
	if err := s.c.emit(s.c.stop, m); err != nil {
		s.c.log.Error("session.worktree.setup", "session", s.id, "err", err)
	}
}

// runSetup runs a new worktree's .ferry/setup, streaming its output; a
// failure is kept in the binding (setup "failed") and the session stays
// open: the user sees the output and may have the agent fix it.
func (s *session) runSetup(ctx context.Context) {
	iso := s.iso
	if !hasScript(iso.wt.Path, worktree.SetupScript) {
		return
	}
	iso.mu.Lock()
	iso.b.Setup = protocol.SetupRunning
	iso.mu.Unlock()
	if err := iso.save(s.c); err != nil { // a restart then says it was cut short
		s.c.log.Error("save worktree binding", "session", s.id, "err", err)
	}
	s.emitSetup(protocol.SetupRunning, nil, nil)
	out := &setupOutput{s: s, last: time.Now()}
	// A quiet script's last lines still show within setupFlush.
	stop := make(chan struct{})
	ticked := make(chan struct{})
	go func() {
		defer close(ticked)
		tick := time.NewTicker(setupFlush / 4)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				out.flush(setupFlush)
			}
		}
	}()
	_, err := iso.wt.Setup(ctx, out, SetupTimeout)
	close(stop)
	<-ticked
	state, exit := protocol.SetupOK, exitCode(err)
	if err != nil {
		state = protocol.SetupFailed
		s.c.log.Info("worktree setup failed", "session", s.id, "err", err)
		if exit == nil {
			// Not run at all (not executable, …): say why in the output.
			_, _ = out.Write([]byte("\n" + s.c.wireError("setup", err).Message + "\n"))
		}
	}
	iso.mu.Lock()
	iso.b.Setup = state
	iso.mu.Unlock()
	if err := iso.save(s.c); err != nil {
		s.c.log.Error("save worktree binding", "session", s.id, "err", err)
	}
	out.mu.Lock()
	tail := out.tail
	out.mu.Unlock()
	s.emitSetup(state, tail, exit)
}

func hasScript(dir, rel string) bool {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(rel)))
	return err == nil
}

// exitCode is a script's exit status when it ran and exited.
func exitCode(err error) *int {
	if err == nil {
		n := 0
		return &n
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		n := ee.ExitCode()
		return &n
	}
	return nil
}

// rememberPrompt keeps a prompt's text for control.worktree.propose.
func (s *session) rememberPrompt(text string) {
	if s.iso == nil || strings.TrimSpace(text) == "" {
		return
	}
	s.iso.mu.Lock()
	s.iso.b.Prompts = append(s.iso.b.Prompts, cutText(text))
	if n := len(s.iso.b.Prompts); n > keptPrompts {
		s.iso.b.Prompts = s.iso.b.Prompts[n-keptPrompts:]
	}
	s.iso.mu.Unlock()
}

// turnEnded keeps the agent's final answer and reports the worktree.
func (s *session) turnEnded(answer string) {
	if s.iso == nil {
		return
	}
	if strings.TrimSpace(answer) != "" {
		s.iso.mu.Lock()
		s.iso.b.Answer = cutText(answer)
		s.iso.mu.Unlock()
	}
	if err := s.iso.save(s.c); err != nil {
		s.c.log.Error("save worktree binding", "session", s.id, "err", err)
	}
	s.sendStatus(s.c.drain, nil)
}

func cutText(s string) string {
	if len(s) <= keptText {
		return s
	}
	s = s[:keptText]
	for len(s) > 0 && s[len(s)-1]&0xC0 == 0x80 {
		s = s[:len(s)-1]
	}
	if len(s) > 0 && s[len(s)-1] >= 0xC0 {
		s = s[:len(s)-1]
	}
	return s
}

// isolatedRoot reports whether root is a folder of one of the client's
// worktrees (an artifact of an isolated session, possibly not open now).
func (c *Client) isolatedRoot(root string) bool {
	wr, err := filepath.EvalSymlinks(c.worktreesRoot())
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(wr, root)
	if err != nil || rel == "." || strings.HasPrefix(rel, "..") || strings.HasPrefix(rel, ".") {
		return false
	}
	fi, err := os.Stat(root)
	return err == nil && fi.IsDir()
}

// pruneWorktrees makes git and the worktree records consistent again after
// a crash (worktree.Prune) for every workspace in a git repository.
func (c *Client) pruneWorktrees(ctx context.Context) {
	seen := map[string]bool{}
	for _, w := range c.workspaces {
		if !w.Git {
			continue
		}
		repo, err := worktree.Open(ctx, w.Path)
		if err != nil || seen[repo.Top] {
			continue
		}
		seen[repo.Top] = true
		dropped, err := repo.Prune(ctx, c.worktreesRoot())
		if err != nil {
			c.log.Warn("prune worktrees", "repo", repo.Top, "err", err)
		} else if len(dropped) > 0 {
			c.log.Info("pruned worktrees whose folder is gone", "repo", repo.Top, "names", dropped)
		}
	}
}

// gitInfo fills a workspace's git and branch (issue 34: where "isolated"
// can be offered, and the default base).
func gitInfo(ctx context.Context, w *protocol.Workspace) {
	repo, err := worktree.Open(ctx, w.Path)
	if err != nil {
		return
	}
	w.Git = true
	if b, err := repo.CurrentBranch(ctx); err == nil && protocol.CheckBranch("", b) == nil {
		w.Branch = b
	}
}

// dropWorktree undoes an isolation whose session did not open: a worktree
// made for it is removed with its branch and binding (nothing is left
// behind); one found (a re-open) is kept.
func (s *session) dropWorktree() {
	iso := s.iso
	if iso == nil {
		return
	}
	iso.close()
	s.mu.Lock()
	s.iso = nil
	s.mu.Unlock()
	if !iso.fresh {
		return
	}
	if err := iso.wt.Remove(context.WithoutCancel(s.c.stop), false); err != nil {
		s.c.log.Error("remove the worktree of a session that did not open", "session", s.id, "err", err)
	}
	if err := os.Remove(s.c.bindingPath(s.id)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		s.c.log.Error("remove worktree binding", "session", s.id, "err", err)
	}
}

// closeSession closes a session whose worktree was removed: it is
// forgotten on this client (a later open answers worktree_missing).
func (c *Client) closeSession(s *session) {
	if err := s.close(); err != nil {
		c.log.Error("close session", "session", s.id, "err", err)
	}
	s.sess = nil
	c.removeSession(s)
}
