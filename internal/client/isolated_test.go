package client

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/adapter/echo"
	"github.com/ferry-dev/ferry/internal/forge"
	"github.com/ferry-dev/ferry/internal/forge/forgetest"
	"github.com/ferry-dev/ferry/internal/gittest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// isoContext bounds a test of isolated sessions: each runs many git
// steps, slow on a loaded machine under -race.
func isoContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func builtinOn(srv *fake.Server) envOpt {
	f := fake.Anthropic
	return withAdapters(builtin.New(builtin.Config{
		Getenv:   func(string) string { return "" },
		Provider: provider.Config{Provider: string(f), Model: "test-model", BaseURL: srv.BaseURL(f), APIKey: "k"},
		Rules:    permission.Rules{Allow: []permission.Rule{{Tool: "Write"}, {Tool: "Edit"}, {Tool: "Bash"}}},
	}), echo.New(echo.WithDelay(0)))
}

// openIsolated sends control.session.open with isolation and returns what
// came back up to session.opened or the error.
func openIsolated(ctx context.Context, fc *fakeConn, wsID, sid, title string, iso protocol.Isolation) (*protocol.SessionOpened, *protocol.Error) {
	m := protocol.New(protocol.TypeSessionOpen, &protocol.SessionOpen{WorkspaceID: wsID, Adapter: builtin.ID, Isolation: &iso, Title: title})
	m.SessionID = sid
	fc.send(m)
	msgs := fc.until(ctx, func(x *protocol.Message) bool {
		return x.ParentID == m.MessageID && (x.Type == protocol.TypeSessionOpened || x.Type == protocol.TypeError)
	})
	last := msgs[len(msgs)-1]
	if e, ok := last.Payload.(*protocol.Error); ok {
		return nil, e
	}
	return last.Payload.(*protocol.SessionOpened), nil
}

// TestIsolatedSession: an isolated session through the client with
// ferry's agent on the fake provider. Its worktree is made from the title
// on branch ferry/NAME, .ferry/setup runs with its output streamed, the
// agent's edit lands in the worktree only (the user's checkout byte for
// byte as it was), the status, diff, proposal, test, file history and
// `@` search all see the worktree, and a removal keeps the branch.
func TestIsolatedSession(t *testing.T) {
	t.Parallel()
	ctx := isoContext(t)
	repo := gittest.NewRepo(t, map[string]string{
		"README.md":    "# proj\n",
		".gitignore":   "setup.log\n",
		".ferry/setup": "#!/bin/sh\necho setting up\necho done > setup.log\n",
		".ferry/test":  "#!/bin/sh\necho FAIL one\nexit 3\n",
	})
	before := gittest.Checkout(t, repo)
	srv := fake.New(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	e := m.startOn(t, repo, state, builtinOn(srv))
	fc, caps := m.accept(ctx)
	ws := caps.Workspaces[0]
	if !ws.Git || ws.Branch != "main" {
		t.Fatalf("workspace git %v branch %q", ws.Git, ws.Branch)
	}
	if !slices.Contains(caps.Messages, protocol.TypeWorktreeShip) {
		t.Fatalf("capabilities lack control.worktree.*: %v", caps.Messages)
	}

	opened, e1 := openIsolated(ctx, fc, ws.ID, "s1", "Fix the README!", protocol.Isolation{Group: "g-1"})
	if e1 != nil {
		t.Fatal(e1)
	}
	w := opened.Worktree
	if w == nil || w.Name != "fix-the-readme" || w.Branch != "ferry/fix-the-readme" || w.Base != "main" || w.Group != "g-1" {
		t.Fatalf("session.opened worktree %+v", w)
	}
	var setupOut strings.Builder
	var final *protocol.WorktreeSetup
	for _, x := range fc.until(ctx, isType(protocol.TypeWorktreeState)) {
		if p, ok := x.Payload.(*protocol.WorktreeSetup); ok {
			setupOut.WriteString(p.Output)
			if p.State != protocol.SetupRunning {
				final = p
			}
		}
	}
	if final == nil || final.State != protocol.SetupOK || !strings.Contains(final.Output, "setting up") || final.ExitCode == nil || *final.ExitCode != 0 {
		t.Fatalf("setup: %+v", final)
	}
	wtPath := filepath.Join(state, "worktrees")
	matches, _ := filepath.Glob(filepath.Join(wtPath, "*", "fix-the-readme"))
	if len(matches) != 1 {
		t.Fatalf("worktree folder: %v", matches)
	}
	wt := matches[0]
	if _, err := os.Stat(filepath.Join(wt, "setup.log")); err != nil {
		t.Fatalf("setup did not run in the worktree: %v", err)
	}

	// A turn edits README.md: in the worktree only.
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "README.md"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "README.md", "old_string": "# proj", "new_string": "# proj\n\nIsolated."}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Bash", Input: map[string]any{"command": "pwd > where.txt"}}}},
		fake.Reply{Text: []string{"README edited."}},
	)
	fc.send(prompt("s1", "Add a line to the README\nplease"))
	var st *protocol.Worktree
	for _, x := range fc.until(ctx, isType(protocol.TypeWorktreeState)) {
		if p, ok := x.Payload.(*protocol.WorktreeState); ok {
			st = &p.Worktree
		}
		if p, ok := x.Payload.(*protocol.ToolFinished); ok && p.Status != "ok" {
			t.Fatalf("tool %s failed: %+v", p.ToolName, p)
		}
	}
	if got, _ := os.ReadFile(filepath.Join(wt, "README.md")); string(got) != "# proj\n\nIsolated.\n" {
		t.Fatalf("worktree README %q", got)
	}
	if got, _ := os.ReadFile(filepath.Join(wt, "where.txt")); strings.TrimSpace(string(got)) != wt {
		t.Fatalf("Bash ran in %q, want %q", got, wt)
	}
	if after := gittest.Checkout(t, repo); after != before {
		t.Fatalf("the user's checkout changed:\n%s\n---\n%s", before, after)
	}
	if st.Files != 2 || st.Added != 3 || !st.Uncommitted || !st.Unshipped || st.Setup != protocol.SetupOK {
		t.Fatalf("status after the turn: %+v", st)
	}

	// The Changes view, the branch diff and the proposal.
	list := control("s1", protocol.TypeHistoryList, &protocol.HistoryList{})
	fc.send(list)
	ch := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == list.MessageID })
	if hc, ok := ch[len(ch)-1].Payload.(*protocol.HistoryChanges); !ok || len(hc.Files) != 1 || hc.Files[0].Path != "README.md" {
		t.Fatalf("history: %+v", ch[len(ch)-1].Payload)
	}
	diff := control("s1", protocol.TypeWorktreeDiff, &protocol.WorktreeDiffRequest{})
	fc.send(diff)
	d := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == diff.MessageID })
	wd, ok := d[len(d)-1].Payload.(*protocol.WorktreeDiff)
	if !ok || len(wd.Files) != 2 || wd.Files[0].Path != "README.md" || !strings.Contains(wd.Files[0].Patch, "+Isolated.") || wd.Counts.Files != 2 {
		t.Fatalf("diff: %+v", d[len(d)-1].Payload)
	}
	prop := control("s1", protocol.TypeWorktreePropose, &protocol.WorktreePropose{})
	fc.send(prop)
	pr := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == prop.MessageID })
	if p, ok := pr[len(pr)-1].Payload.(*protocol.WorktreeProposal); !ok || !strings.HasPrefix(p.Message, "Add a line to the README") {
		t.Fatalf("proposal: %+v", pr[len(pr)-1].Payload)
	}

	// `@` search sees the worktree's own files.
	waitFor(ctx, t, "where.txt in the worktree's index", func() bool {
		q := control("s1", protocol.TypeFileSearch, &protocol.FileSearch{QueryID: protocol.NewID(), Query: "where"})
		fc.send(q)
		r := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == q.MessageID })
		fcands, ok := r[len(r)-1].Payload.(*protocol.FileCandidates)
		return ok && len(fcands.Candidates) > 0 && fcands.Candidates[0].Path == "where.txt"
	})

	// .ferry/test fails: stored as tested, the status says so.
	test := control("s1", protocol.TypeWorktreeTest, &protocol.WorktreeTest{})
	fc.send(test)
	tm := fc.until(ctx, isType(protocol.TypeWorktreeState))
	var tested *protocol.WorktreeTested
	for _, x := range tm {
		if p, ok := x.Payload.(*protocol.WorktreeTested); ok {
			tested = p
		}
	}
	st = &tm[len(tm)-1].Payload.(*protocol.WorktreeState).Worktree
	if tested == nil || !tested.Ran || tested.Passed || tested.ExitCode == nil || *tested.ExitCode != 3 || !strings.Contains(tested.Output, "FAIL one") || st.Test != protocol.TestFailed {
		t.Fatalf("tested %+v, status %+v", tested, st)
	}

	// Remove (as the master does before an archive), keeping the branch.
	rm := control("s1", protocol.TypeWorktreeRemove, &protocol.WorktreeRemove{KeepBranch: true})
	fc.send(rm)
	rr := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == rm.MessageID })
	if p, ok := rr[len(rr)-1].Payload.(*protocol.WorktreeRemoved); !ok || !p.BranchKept || p.Branch != "ferry/fix-the-readme" {
		t.Fatalf("removed: %+v", rr[len(rr)-1].Payload)
	}
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("the worktree folder is still there: %v", err)
	}
	if got := gittest.Branches(t, repo); !slices.Equal(got, []string{"ferry/fix-the-readme", "main"}) {
		t.Fatalf("branches %v", got)
	}
	if got := gittest.Worktrees(t, repo); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("worktrees %v", got)
	}
	// The session is gone from the client; a re-open finds no worktree.
	if _, e2 := openIsolated(ctx, fc, ws.ID, "s1", "", protocol.Isolation{Name: "fix-the-readme"}); e2 == nil || e2.Code != protocol.CodeBranchExists {
		t.Fatalf("re-open after removal: %v", e2)
	}
	_ = e
}

// TestIsolatedBadInput: every refusal of an isolated open is coded and
// leaves the repository (refs, status, worktrees, every byte) as it was;
// a worktree folder removed by hand is reported missing, refused for a
// ship, and a re-open after a restart answers worktree_missing.
func TestIsolatedBadInput(t *testing.T) {
	t.Parallel()
	ctx := isoContext(t)
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n"})
	detached := gittest.NewRepo(t, map[string]string{"b.txt": "b\n"})
	gittest.Run(t, detached, "checkout", "-q", "--detach")
	plain := newWorkspace(t)
	gittest.Run(t, repo, "branch", "ferry/taken")
	states := map[string]string{repo: gittest.State(t, repo), detached: gittest.State(t, detached)}
	srv := fake.New(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	cfgOpt := func(c *Config) { c.Workspaces = []string{repo, detached, plain} }
	e := m.startWith(t, repo, state, nil, builtinOn(srv), cfgOpt)
	fc, caps := m.accept(ctx)
	for _, w := range caps.Workspaces {
		if w.Path == plain && w.Git {
			t.Fatal("a plain folder announced as git")
		}
	}
	wsOf := func(dir string) string {
		for _, w := range caps.Workspaces {
			if w.Path == dir {
				return w.ID
			}
		}
		t.Fatalf("no workspace %s", dir)
		return ""
	}
	cases := []struct {
		name, ws string
		iso      protocol.Isolation
		code     string
	}{
		{"not a repository", plain, protocol.Isolation{}, protocol.CodeNotGitRepository},
		{"detached head", detached, protocol.Isolation{}, protocol.CodeDetachedHead},
		{"missing base", repo, protocol.Isolation{Base: "nope"}, protocol.CodeBaseNotFound},
		{"name taken", repo, protocol.Isolation{Name: "taken"}, protocol.CodeBranchExists},
	}
	for i, c := range cases {
		_, err := openIsolated(ctx, fc, wsOf(c.ws), "bad-"+c.name, "t", c.iso)
		if err == nil || err.Code != c.code {
			t.Errorf("case %d %s: got %v, want %s", i, c.name, err, c.code)
		}
	}
	for dir, want := range states {
		if got := gittest.State(t, dir); got != want {
			t.Errorf("%s changed:\n%s\n---\n%s", dir, want, got)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(state, "isolated")); len(entries) != 0 {
		t.Errorf("bindings left behind: %d", len(entries))
	}

	// not_isolated.
	e.open(ctx, fc, "plain", echo.ID)
	q := control("plain", protocol.TypeWorktreeStatus, &protocol.WorktreeStatusRequest{})
	fc.send(q)
	if err := fc.errorFor(ctx, q.MessageID); err.Code != protocol.CodeNotIsolated {
		t.Fatalf("status of a plain session: %v", err)
	}

	// A worktree removed by hand.
	opened, oe := openIsolated(ctx, fc, wsOf(repo), "gone", "gone", protocol.Isolation{})
	if oe != nil {
		t.Fatal(oe)
	}
	fc.until(ctx, isType(protocol.TypeWorktreeState))
	matches, _ := filepath.Glob(filepath.Join(state, "worktrees", "*", opened.Worktree.Name))
	if len(matches) != 1 {
		t.Fatalf("worktree folder: %v", matches)
	}
	if err := os.RemoveAll(matches[0]); err != nil {
		t.Fatal(err)
	}
	q = control("gone", protocol.TypeWorktreeStatus, &protocol.WorktreeStatusRequest{})
	fc.send(q)
	r := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == q.MessageID })
	if p, ok := r[len(r)-1].Payload.(*protocol.WorktreeState); !ok || !p.Worktree.Missing {
		t.Fatalf("status of a removed worktree: %+v", r[len(r)-1].Payload)
	}
	ship := control("gone", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "m", Strategy: "squash", Remote: "origin"})
	fc.send(ship)
	if err := fc.errorFor(ctx, ship.MessageID); err.Code != protocol.CodeWorktreeMissing {
		t.Fatalf("ship of a removed worktree: %v", err)
	}
	pr := prompt("gone", "go on")
	fc.send(pr)
	if err := fc.errorFor(ctx, pr.MessageID); err.Code != protocol.CodeWorktreeMissing {
		t.Fatalf("prompt to a removed worktree: %v", err)
	}
	// After a restart (which prunes) the re-open says so; nothing is remade.
	e.stop()
	e2 := m.startWith(t, repo, state, nil, builtinOn(srv), cfgOpt)
	fc2, _ := m.accept(ctx)
	if _, err := openIsolated(ctx, fc2, wsOf(repo), "gone", "", protocol.Isolation{Name: opened.Worktree.Name}); err == nil || err.Code != protocol.CodeWorktreeMissing {
		t.Fatalf("re-open of a removed worktree: %v", err)
	}
	if _, err := os.Stat(matches[0]); !os.IsNotExist(err) {
		t.Fatal("the worktree was made again")
	}
	if got := gittest.Branches(t, repo); !slices.Contains(got, "ferry/"+opened.Worktree.Name) {
		t.Fatalf("the branch was not kept: %v", got)
	}
	_ = e2
}

// TestIsolatedShip: ships through the client with the real git and a
// local bare remote: a squash into the base (status then has nothing
// unshipped), a conflicting second squash refused with
// session.worktree.conflict and merge_conflict (the base untouched), an
// update from the base left with markers and aborted, a push without a
// merge, and base_dirty when the user's checkout has the file changed.
func TestIsolatedShip(t *testing.T) {
	t.Parallel()
	ctx := isoContext(t)
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "one\n"})
	bare := filepath.Join(t.TempDir(), "origin.git")
	gittest.Run(t, t.TempDir(), "init", "-q", "--bare", bare)
	gittest.Run(t, repo, "remote", "add", "origin", bare)
	srv := fake.New(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	m.startOn(t, repo, state, builtinOn(srv))
	fc, caps := m.accept(ctx)
	ws := caps.Workspaces[0].ID
	open := func(sid string) string {
		t.Helper()
		o, e := openIsolated(ctx, fc, ws, sid, sid, protocol.Isolation{})
		if e != nil {
			t.Fatal(e)
		}
		fc.until(ctx, isType(protocol.TypeWorktreeState))
		matches, _ := filepath.Glob(filepath.Join(state, "worktrees", "*", o.Worktree.Name))
		if len(matches) != 1 {
			t.Fatalf("worktree of %s: %v", sid, matches)
		}
		return matches[0]
	}
	ask := func(sid, typ string, payload any) []*protocol.Message {
		t.Helper()
		q := control(sid, typ, payload)
		fc.send(q)
		return fc.until(ctx, func(x *protocol.Message) bool {
			return x.ParentID == q.MessageID && (x.Type != protocol.TypeWorktreeConflict)
		})
	}
	last := func(ms []*protocol.Message) any { return ms[len(ms)-1].Payload }
	b, c := open("b"), open("c")
	gittest.Write(t, filepath.Join(b, "a.txt"), "one\nfrom b\n", 0o644)
	gittest.Write(t, filepath.Join(c, "a.txt"), "one\nfrom c\n", 0o644)

	shipped, ok := last(ask("b", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "b: a line", Strategy: "squash", Remote: "origin"})).(*protocol.WorktreeShipped)
	if !ok || !shipped.Result.Merged || shipped.Result.Strategy != "squash" || shipped.Result.Commit == "" || shipped.Worktree.Unshipped {
		t.Fatalf("ship b: %+v", shipped)
	}
	if got := gittest.Run(t, repo, "show", "main:a.txt"); got != "one\nfrom b\n" {
		t.Fatalf("main's a.txt %q", got)
	}
	mainHead := gittest.Run(t, repo, "rev-parse", "main")

	q := control("c", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "c: a line", Strategy: "squash", Remote: "origin"})
	fc.send(q)
	ms := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == q.MessageID && x.Type == protocol.TypeError })
	var conflict *protocol.WorktreeConflict
	for _, x := range ms {
		if p, ok := x.Payload.(*protocol.WorktreeConflict); ok && x.ParentID == q.MessageID {
			conflict = p
		}
	}
	if e := last(ms).(*protocol.Error); e.Code != protocol.CodeMergeConflict || conflict == nil || !slices.Equal(conflict.Files, []string{"a.txt"}) {
		t.Fatalf("ship c: %v, conflict %+v", e, conflict)
	}
	if gittest.Run(t, repo, "rev-parse", "main") != mainHead {
		t.Fatal("a refused merge moved main")
	}

	up := control("c", protocol.TypeWorktreeUpdate, &protocol.WorktreeUpdate{})
	fc.send(up)
	ms = fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == up.MessageID })
	if p, ok := last(ms).(*protocol.WorktreeConflict); !ok || p.Code != protocol.CodeMergeConflict {
		t.Fatalf("update c: %+v", last(ms))
	}
	if got, _ := os.ReadFile(filepath.Join(c, "a.txt")); !strings.Contains(string(got), "<<<<<<<") {
		t.Fatalf("no conflict markers: %q", got)
	}
	if _, ok := last(ask("c", protocol.TypeWorktreeAbortUpdate, &protocol.WorktreeAbortUpdate{})).(*protocol.WorktreeState); !ok {
		t.Fatal("abort_update did not answer the status")
	}
	if got, _ := os.ReadFile(filepath.Join(c, "a.txt")); string(got) != "one\nfrom c\n" {
		t.Fatalf("abort left %q", got)
	}

	pushed, ok := last(ask("c", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "c: a line", Strategy: "none", Push: true, Remote: "origin"})).(*protocol.WorktreeShipped)
	if !ok || pushed.Result.Merged || !pushed.Result.Pushed || pushed.Worktree.Unshipped {
		t.Fatalf("push c: %+v", last(ask("c", protocol.TypeWorktreeStatus, &protocol.WorktreeStatusRequest{})))
	}
	if got := gittest.Branches(t, bare); !slices.Contains(got, "ferry/c") {
		t.Fatalf("the remote's branches: %v", got)
	}

	// base_dirty: the user has a.txt changed in the checkout.
	d := open("d")
	gittest.Write(t, filepath.Join(d, "a.txt"), "one\nfrom b\nfrom d\n", 0o644)
	gittest.Write(t, filepath.Join(repo, "a.txt"), "user's own\n", 0o644)
	before := gittest.Checkout(t, repo)
	mainHead = gittest.Run(t, repo, "rev-parse", "main")
	q = control("d", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "d", Strategy: "ff", Remote: "origin"})
	fc.send(q)
	ms = fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == q.MessageID && x.Type == protocol.TypeError })
	if e := last(ms).(*protocol.Error); e.Code != protocol.CodeBaseDirty {
		t.Fatalf("ship d: %v", e)
	}
	// The refused ship committed d's change on its branch (its first
	// step); the user's checkout and main are as they were.
	if after := gittest.Checkout(t, repo); after != before || gittest.Run(t, repo, "rev-parse", "main") != mainHead {
		t.Fatalf("the checkout changed:\n%s\n---\n%s", before, after)
	}
}

// TestIsolatedReopen: after a restart of the client, a re-open of an
// isolated session (the master sends the worktree's name) finds the same
// worktree with its uncommitted change; setup does not run again, and a
// setup the stop cut short is reported failed.
func TestIsolatedReopen(t *testing.T) {
	t.Parallel()
	ctx := isoContext(t)
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "a\n", ".gitignore": "runs\n", ".ferry/setup": "#!/bin/sh\necho x >> runs\n"})
	srv := fake.New(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	e := m.startOn(t, repo, state, builtinOn(srv))
	fc, caps := m.accept(ctx)
	o, oe := openIsolated(ctx, fc, caps.Workspaces[0].ID, "s", "Keep me", protocol.Isolation{})
	if oe != nil {
		t.Fatal(oe)
	}
	fc.until(ctx, isType(protocol.TypeWorktreeState))
	matches, _ := filepath.Glob(filepath.Join(state, "worktrees", "*", o.Worktree.Name))
	if len(matches) != 1 {
		t.Fatalf("worktree: %v", matches)
	}
	gittest.Write(t, filepath.Join(matches[0], "a.txt"), "changed\n", 0o644)
	e.stop()
	// As if the client had stopped during the setup.
	bindings, _ := filepath.Glob(filepath.Join(state, "isolated", "*.json"))
	if len(bindings) != 1 {
		t.Fatalf("bindings: %v", bindings)
	}
	data, err := os.ReadFile(bindings[0])
	if err != nil || !strings.Contains(string(data), `"setup":"ok"`) {
		t.Fatalf("binding %s: %v", data, err)
	}
	gittest.Write(t, bindings[0], strings.Replace(string(data), `"setup":"ok"`, `"setup":"running"`, 1), 0o600)
	m.startOn(t, repo, state, builtinOn(srv))
	fc, _ = m.accept(ctx)
	o2, oe := openIsolated(ctx, fc, caps.Workspaces[0].ID, "s", "Keep me", protocol.Isolation{Name: o.Worktree.Name})
	if oe != nil {
		t.Fatal(oe)
	}
	if w := o2.Worktree; w.Name != o.Worktree.Name || !w.Uncommitted || !w.Unshipped || w.Setup != protocol.SetupFailed {
		t.Fatalf("re-opened worktree %+v", w)
	}
	if runs, _ := os.ReadFile(filepath.Join(matches[0], "runs")); string(runs) != "x\n" {
		t.Fatalf("setup ran %q", runs)
	}
}

// TestIsolatedRefusals: every code a ship, setup or open of the client
// produces has a case, each leaving the user's repository (refs, status,
// worktrees, every byte) and the remote as they were: push_rejected (a
// pre-receive hook), remote_not_found, nothing_to_merge, not_fast_forward,
// forge_auth (a wrong token, against the fake GitHub) and forge_error (a
// remote on no forge), an untracked workspace folder (invalid_value).
// Then a pull request opened with the right token (its URL returned,
// the token never in a message), and a failing .ferry/setup: the
// session opens with setup failed, its output and exit code kept, and
// takes a prompt.
func TestIsolatedRefusals(t *testing.T) {
	t.Parallel()
	ctx := isoContext(t)
	const token = "ghp_rightToken0123456789abcdef"
	gh := forgetest.New(t, token)
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "one\n", "sub/b.txt": "b\n"})
	bare := filepath.Join(t.TempDir(), "origin.git")
	gittest.Run(t, t.TempDir(), "init", "-q", "--bare", bare)
	gittest.Run(t, repo, "remote", "add", "origin", bare)
	gittest.Run(t, repo, "remote", "add", "gh", gh.URL+"/acme/widgets.git")
	gittest.Run(t, repo, "config", "url."+bare+".pushInsteadOf", gh.URL+"/acme/widgets.git")
	gittest.Run(t, repo, "remote", "add", "hooked", filepath.Join(t.TempDir(), "hooked.git"))
	hooked := strings.TrimSpace(gittest.Run(t, repo, "remote", "get-url", "hooked"))
	gittest.Run(t, t.TempDir(), "init", "-q", "--bare", hooked)
	gittest.Write(t, filepath.Join(hooked, "hooks", "pre-receive"), "#!/bin/sh\necho 'ferry branches are not welcome here' >&2\nexit 1\n", 0o755)
	untracked := filepath.Join(repo, "scratch")
	gittest.Write(t, filepath.Join(untracked, "x.txt"), "x\n", 0o644)

	srv := fake.New(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	withForge := func(c *Config) {
		c.Workspaces = []string{repo, untracked}
		c.ForgeToken, c.ForgeTokenSource = "ghp_wrong_token_4242", "$FERRY_FORGE_TOKEN"
		c.Forge = forge.Config{Hosts: map[string]forge.Kind{"127.0.0.1": forge.KindGitHub}}
	}
	e := m.startWith(t, repo, state, nil, builtinOn(srv), withForge)
	fc, caps := m.accept(ctx)
	wsOf := func(dir string) string {
		for _, w := range caps.Workspaces {
			if w.Path == dir {
				return w.ID
			}
		}
		t.Fatalf("no workspace %s", dir)
		return ""
	}
	if _, oe := openIsolated(ctx, fc, wsOf(untracked), "u", "u", protocol.Isolation{}); oe == nil || oe.Code != protocol.CodeInvalidValue {
		t.Fatalf("an untracked workspace folder: %v", oe)
	}
	if got := gittest.Branches(t, repo); !slices.Equal(got, []string{"main"}) {
		t.Fatalf("branches after a refused open: %v", got)
	}
	o, oe := openIsolated(ctx, fc, wsOf(repo), "s", "refusals", protocol.Isolation{})
	if oe != nil {
		t.Fatal(oe)
	}
	fc.until(ctx, isType(protocol.TypeWorktreeState))
	wt := filepath.Join(state, "worktrees")
	matches, _ := filepath.Glob(filepath.Join(wt, "*", o.Worktree.Name))
	if len(matches) != 1 {
		t.Fatalf("worktree: %v", matches)
	}
	wtDir := matches[0]
	shipErr := func(p *protocol.WorktreeShip) *protocol.Error {
		t.Helper()
		q := control("s", protocol.TypeWorktreeShip, p)
		fc.send(q)
		return fc.errorFor(ctx, q.MessageID)
	}
	both := func() string {
		return gittest.State(t, repo) + gittest.State(t, wtDir) + gittest.Run(t, bare, "for-each-ref") + gittest.Run(t, hooked, "for-each-ref")
	}

	before := both()
	if e := shipErr(&protocol.WorktreeShip{Strategy: "squash", Remote: "origin"}); e.Code != protocol.CodeNothingToMerge {
		t.Fatalf("nothing to ship: %v", e)
	}
	if e := shipErr(&protocol.WorktreeShip{Strategy: "none", Push: true, Remote: "nope"}); e.Code != protocol.CodeRemoteNotFound {
		t.Fatalf("unknown remote: %v", e)
	}
	if after := both(); after != before {
		t.Fatalf("a refusal changed the repository:\n%s\n---\n%s", before, after)
	}
	// Committed work on the branch, the base moved on: no fast-forward.
	gittest.Write(t, filepath.Join(wtDir, "c.txt"), "c\n", 0o644)
	gittest.Run(t, wtDir, "add", "-A")
	gittest.Run(t, wtDir, "commit", "-q", "-m", "c")
	gittest.Write(t, filepath.Join(repo, "d.txt"), "d\n", 0o644)
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-q", "-m", "d")
	before = both()
	if e := shipErr(&protocol.WorktreeShip{Strategy: "ff", Remote: "origin"}); e.Code != protocol.CodeNotFastForward {
		t.Fatalf("ff after the base moved: %v", e)
	}
	if e := shipErr(&protocol.WorktreeShip{Strategy: "none", Push: true, Remote: "hooked"}); e.Code != protocol.CodePushRejected || !strings.Contains(e.Message, "not welcome") {
		t.Fatalf("a rejected push: %v", e)
	}
	if e := shipErr(&protocol.WorktreeShip{Strategy: "none", PullRequest: true, Remote: "gh"}); e.Code != protocol.CodeForgeAuth || strings.Contains(e.Message, "ghp_") {
		t.Fatalf("a wrong forge token: %v", e)
	}
	if e := shipErr(&protocol.WorktreeShip{Strategy: "none", PullRequest: true, Remote: "origin"}); e.Code != protocol.CodeForgeError {
		t.Fatalf("a remote on no forge: %v", e)
	}
	if after := both(); after != before {
		t.Fatalf("a refusal changed the repository:\n%s\n---\n%s", before, after)
	}
	if len(gh.Pulls()) != 0 {
		t.Fatal("a refused ship opened a pull request")
	}

	// The right token: the pull request is opened, its URL returned.
	e.stop()
	right := func(c *Config) { withForge(c); c.ForgeToken = token }
	m.startWith(t, repo, state, nil, builtinOn(srv), right)
	fc, _ = m.accept(ctx)
	if _, oe := openIsolated(ctx, fc, wsOf(repo), "s", "", protocol.Isolation{Name: o.Worktree.Name}); oe != nil {
		t.Fatal(oe)
	}
	q := control("s", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "c and more", Strategy: "none", PullRequest: true, Remote: "gh"})
	fc.send(q)
	ms := fc.until(ctx, func(x *protocol.Message) bool { return x.ParentID == q.MessageID })
	sh, ok := ms[len(ms)-1].Payload.(*protocol.WorktreeShipped)
	if !ok || !sh.Result.Pushed || sh.Result.PRURL != gh.PullURL("acme", "widgets", 1) || len(gh.Pulls()) != 1 {
		t.Fatalf("pull request: %+v", ms[len(ms)-1].Payload)
	}

	// A failing setup: the session opens and says so.
	gittest.Write(t, filepath.Join(repo, ".ferry", "setup"), "#!/bin/sh\necho installing\necho broken >&2\nexit 7\n", 0o755)
	gittest.Run(t, repo, "add", "-A")
	gittest.Run(t, repo, "commit", "-q", "-m", "setup")
	if _, oe := openIsolated(ctx, fc, wsOf(repo), "f", "failing setup", protocol.Isolation{}); oe != nil {
		t.Fatal(oe)
	}
	var final *protocol.WorktreeSetup
	var st *protocol.Worktree
	for _, x := range fc.until(ctx, isType(protocol.TypeWorktreeState)) {
		switch p := x.Payload.(type) {
		case *protocol.WorktreeSetup:
			if p.State != protocol.SetupRunning {
				final = p
			}
		case *protocol.WorktreeState:
			st = &p.Worktree
		}
	}
	if final == nil || final.State != protocol.SetupFailed || final.ExitCode == nil || *final.ExitCode != 7 ||
		!strings.Contains(final.Output, "installing") || !strings.Contains(final.Output, "broken") || st.Setup != protocol.SetupFailed {
		t.Fatalf("setup %+v, status %+v", final, st)
	}
	srv.Script(fake.Reply{Text: []string{"I will look at the setup."}})
	fc.send(prompt("f", "why did setup fail?"))
	for _, x := range fc.until(ctx, isType(protocol.TypeTextDone)) {
		if p, ok := x.Payload.(*protocol.TextDone); ok && p.StopReason != protocol.StopEndTurn {
			t.Fatalf("a prompt after a failed setup: %+v", p)
		}
	}
}
