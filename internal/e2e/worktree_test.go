package e2e_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/adapter/builtin"
	"github.com/ferry-dev/ferry/internal/cli"
	"github.com/ferry-dev/ferry/internal/gittest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
	"github.com/ferry-dev/ferry/internal/llm/provider"
	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/protocol"
)

// worktreeSystem is a master and a client on repo whose built-in agent
// answers with variantModel and may edit; it returns the client's state
// folder, where the worktrees go.
func worktreeSystem(t *testing.T, repo string) (*system, string) {
	t.Helper()
	s := newSystem(t, 10000)
	s.workspace = repo
	srv := variantModel(t)
	state, secret := t.TempDir(), ""
	s.startClientIn(state, &secret, builtin.New(builtin.Config{Getenv: func(string) string { return "" },
		Provider: provider.Config{Provider: "anthropic", Model: "test-model", BaseURL: srv.URL(), APIKey: "k"},
		Rules:    permission.Rules{Allow: []permission.Rule{{Tool: "Edit"}}}}))
	return s, state
}

// variantModel answers ferry's agent in each session by the variant its
// prompt names ("variant X"): Read a.txt, Edit a.txt to "one X", then a
// final answer; titles get a title.
func variantModel(t *testing.T) *fake.Server {
	srv := fake.New(t)
	srv.Route(func(r fake.Request) (fake.Reply, bool) {
		if r.IsTitle() || len(r.ToolNames()) == 0 {
			return fake.Reply{Text: []string{"A title"}}, true
		}
		msgs := r.Messages()
		b, _ := json.Marshal(msgs[0])
		variant := ""
		for _, v := range []string{"A", "B", "C"} {
			if strings.Contains(string(b), "variant "+v) {
				variant = v
			}
		}
		switch len(msgs) {
		case 1:
			return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "a.txt"}}}}, true
		case 3:
			return fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "one " + variant}}}}, true
		}
		return fake.Reply{Text: []string{"Edited a.txt for variant " + variant + "."}}, true
	})
	return srv
}

// TestIsolatedSessionsEndToEnd is issue 34's Must show: three isolated
// sessions on one repository run at the same time (ferry's agent on the
// scripted model, a real client, master, SQLite and WebSockets), each
// editing the same file differently; the user's checkout stays byte for
// byte as it was; one is squash-merged into the base, one pushed to a
// local bare remote, one discarded (ui.session.delete discard, after a
// refusal without it); `git worktree list` and the branches are as
// expected afterwards.
func TestIsolatedSessionsEndToEnd(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "one\n", "README.md": "# repo\n"})
	bare := filepath.Join(t.TempDir(), "origin.git")
	gittest.Run(t, t.TempDir(), "init", "-q", "--bare", bare)
	gittest.Run(t, repo, "remote", "add", "origin", bare)
	before := gittest.Checkout(t, repo)

	s, state := worktreeSystem(t, repo)
	u := s.ui()
	m := u.machine()
	if ws := m.Workspaces[0]; !ws.Git || ws.Branch != "main" {
		t.Fatalf("workspace %+v: want git on main", ws)
	}

	// Three isolated sessions of one best-of-N group.
	variants := []string{"A", "B", "C"}
	starts := map[string]string{} // start message id → variant
	for _, v := range variants {
		req := protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID,
			Adapter: builtin.ID, Title: "Variant " + v, Isolation: &protocol.Isolation{Group: "3f0c2a6e-0000-4000-8000-000000000034"}})
		starts[req.MessageID] = v
		u.send(req)
	}
	sessions := map[string]protocol.SessionInfo{} // variant → session
	for len(sessions) < 3 {
		r := u.next(nil, protocol.TypeSessionAnswer, protocol.TypeError)
		if e, ok := r.Payload.(*protocol.Error); ok {
			t.Fatalf("start: %+v", e)
		}
		info := r.Payload.(*protocol.SessionAnswer).Session
		v := starts[r.ParentID]
		if w := info.Worktree; w == nil || w.Name != "variant-"+strings.ToLower(v) || w.Base != "main" || w.Group == "" {
			t.Fatalf("variant %s: worktree %+v", v, info.Worktree)
		}
		sessions[v] = info
	}
	bySession := map[string]string{}
	for v, info := range sessions {
		u.subscribe(info.ID, 0, "")
		bySession[info.ID] = v
	}

	// All three prompted at once; every turn ends.
	for _, v := range variants {
		u.prompt(sessions[v].ID, text("Edit a.txt as variant "+v))
	}
	done := map[string]bool{}
	timeout := time.After(wait)
	for len(done) < 3 {
		select {
		case msg := <-u.in:
			switch p := msg.Payload.(type) {
			case *protocol.TextDone:
				if p.StopReason != protocol.StopEndTurn {
					t.Fatalf("variant %s ended with %s", bySession[msg.SessionID], p.StopReason)
				}
				done[msg.SessionID] = true
			case *protocol.ToolFinished:
				if p.Status != "ok" {
					t.Fatalf("variant %s: %s %s", bySession[msg.SessionID], p.ToolName, p.Status)
				}
			}
		case <-timeout:
			t.Fatalf("turns ended: %d of 3", len(done))
		}
	}
	if after := gittest.Checkout(t, repo); after != before {
		t.Fatalf("the user's checkout changed while the agents worked:\n%s\n---\n%s", before, after)
	}
	ask := func(v, typ string, payload any) *protocol.Message {
		t.Helper()
		q := protocol.New(typ, payload)
		q.SessionID = sessions[v].ID
		return u.request(q)
	}
	for _, v := range variants {
		r := ask(v, protocol.TypeWorktreeDiff, &protocol.WorktreeDiffRequest{})
		d, ok := r.Payload.(*protocol.WorktreeDiff)
		if !ok || len(d.Files) != 1 || d.Files[0].Path != "a.txt" || !strings.Contains(d.Files[0].Patch, "+one "+v) ||
			!d.Counts.Uncommitted || !d.Counts.Unshipped {
			t.Fatalf("variant %s diff: %s %+v", v, r.Type, r.Payload)
		}
	}

	// A: squash-merged into main.
	r := ask("A", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "a.txt: variant A", Strategy: "squash", Remote: "origin"})
	sh, ok := r.Payload.(*protocol.WorktreeShipped)
	if !ok || !sh.Result.Merged || sh.Result.Strategy != "squash" || sh.Worktree.Unshipped {
		t.Fatalf("ship A: %s %+v", r.Type, r.Payload)
	}
	if got := gittest.Run(t, repo, "log", "-1", "--format=%s%n%P", "main"); strings.Count(strings.TrimSpace(got), " ") != 2 || !strings.HasPrefix(got, "a.txt: variant A\n") {
		t.Fatalf("main's head: %q (want one parent: a squash)", got)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one A\n" || gittest.Run(t, repo, "status", "--porcelain") != "" {
		t.Fatalf("the user's checkout after the merge: a.txt %q, status %q", b, gittest.Run(t, repo, "status", "--porcelain"))
	}

	// B: pushed to the bare remote, not merged.
	mainHead := gittest.Run(t, repo, "rev-parse", "main")
	r = ask("B", protocol.TypeWorktreeShip, &protocol.WorktreeShip{Message: "a.txt: variant B", Strategy: "none", Push: true, Remote: "origin"})
	if sh, ok := r.Payload.(*protocol.WorktreeShipped); !ok || sh.Result.Merged || !sh.Result.Pushed || sh.Worktree.Unshipped {
		t.Fatalf("ship B: %s %+v", r.Type, r.Payload)
	}
	if got := gittest.Run(t, bare, "show", "ferry/variant-b:a.txt"); got != "one B\n" {
		t.Fatalf("the remote's ferry/variant-b a.txt %q", got)
	}
	if gittest.Run(t, repo, "rev-parse", "main") != mainHead {
		t.Fatal("a push without a merge moved main")
	}

	// C: deleting it is refused while unshipped, then discarded.
	beforeC := gittest.State(t, repo)
	del := protocol.New(protocol.TypeSessionDelete, &protocol.SessionDelete{})
	del.SessionID = sessions["C"].ID
	if e, ok := u.request(del).Payload.(*protocol.Error); !ok || e.Code != protocol.CodeUnshippedChanges {
		t.Fatalf("delete C without discard: %+v", e)
	}
	if after := gittest.State(t, repo); after != beforeC {
		t.Fatalf("a refused delete changed the repository:\n%s\n---\n%s", beforeC, after)
	}
	del = protocol.New(protocol.TypeSessionDelete, &protocol.SessionDelete{Discard: true, DeleteBranch: true})
	del.SessionID = sessions["C"].ID
	if ch, ok := u.request(del).Payload.(*protocol.SessionChanged); !ok || ch.Change != protocol.ChangeDeleted {
		t.Fatalf("delete C: %+v", ch)
	}

	if got, want := gittest.Worktrees(t, repo), []string{"main", "ferry/variant-a", "ferry/variant-b"}; !sameSet(got, want) {
		t.Fatalf("git worktree list: %v, want %v", got, want)
	}
	if got, want := gittest.Branches(t, repo), []string{"ferry/variant-a", "ferry/variant-b", "main"}; !slices.Equal(got, want) {
		t.Fatalf("branches: %v, want %v", got, want)
	}
	if matches, _ := filepath.Glob(filepath.Join(state, "worktrees", "*", "variant-c")); len(matches) != 0 {
		t.Fatalf("C's worktree folder is left: %v", matches)
	}
	// The session list has A and B, each with its worktree.
	r = u.request(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{}))
	var names []string
	for _, si := range r.Payload.(*protocol.Sessions).Sessions {
		if si.Worktree != nil {
			names = append(names, fmt.Sprintf("%s unshipped=%v", si.Worktree.Name, si.Worktree.Unshipped))
		}
	}
	slices.Sort(names)
	if want := []string{"variant-a unshipped=false", "variant-b unshipped=false"}; !slices.Equal(names, want) {
		t.Fatalf("listed worktrees %v, want %v", names, want)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestShipSessionHeadless: `ferry ship SESSION` ships an isolated session
// of a running client by the session's id, with the message the UI's Ship
// proposes (the session's prompt and answer), while the client holds the
// session open; an id no client has is refused, the repository untouched.
func TestShipSessionHeadless(t *testing.T) {
	t.Parallel()
	repo := gittest.NewRepo(t, map[string]string{"a.txt": "one\n"})
	s, state := worktreeSystem(t, repo)
	u := s.ui()
	m := u.machine()
	r := u.request(protocol.New(protocol.TypeSessionStart, &protocol.SessionStart{MachineID: m.ID, WorkspaceID: m.Workspaces[0].ID,
		Adapter: builtin.ID, Title: "Variant A", Isolation: &protocol.Isolation{}}))
	ans, ok := r.Payload.(*protocol.SessionAnswer)
	if !ok || ans.Session.Worktree == nil {
		t.Fatalf("start: %s %+v", r.Type, r.Payload)
	}
	id := ans.Session.ID
	u.subscribe(id, 0, "")
	u.prompt(id, text("Edit a.txt as variant A"))
	timeout := time.After(wait)
	for done := false; !done; {
		select {
		case msg := <-u.in:
			if p, ok := msg.Payload.(*protocol.TextDone); ok && msg.SessionID == id {
				if p.StopReason != protocol.StopEndTurn {
					t.Fatalf("the turn ended with %s", p.StopReason)
				}
				done = true
			}
		case <-timeout:
			t.Fatal("the turn did not end")
		}
	}

	shipCmd := func(args ...string) (int, string, string) {
		var stdout, stderr strings.Builder
		code := cli.Run(t.Context(), cli.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr,
			Getenv: func(string) string { return "" }}, append([]string{"ship"}, args...))
		return code, stdout.String(), stderr.String()
	}

	// An id that is no session of this client: refused, nothing changed.
	before := gittest.State(t, repo)
	code, stdout, _ := shipCmd("--state", state, "--propose", "--output-format", "json", "0d6c1f9e-0000-4000-8000-000000000034")
	var out struct {
		Session string `json:"session"`
		Merged  bool   `json:"merged"`
		Commit  string `json:"commit"`
		Error   *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 1 || out.Error == nil ||
		out.Error.Code != "worktree_not_found" || !strings.Contains(out.Error.Message, state) {
		t.Fatalf("ship of an unknown session: exit %d, %q (%v)", code, stdout, err)
	}
	if after := gittest.State(t, repo); after != before {
		t.Fatalf("a refused ship changed the repository:\n%s\n---\n%s", before, after)
	}

	// The session's id: committed with the proposed message, squash-merged
	// into main, and the user's (clean) checkout follows.
	code, stdout, stderr := shipCmd("--state", state, "--propose", "--output-format", "json", strings.ToUpper(id))
	out.Error = nil
	if err := json.Unmarshal([]byte(stdout), &out); err != nil || code != 0 || out.Error != nil || !out.Merged ||
		out.Commit == "" || out.Session != id {
		t.Fatalf("ship %s: exit %d, %q, stderr %q (%v)", id, code, stdout, stderr, err)
	}
	if got := gittest.Run(t, repo, "log", "-1", "--format=%s", "main"); strings.TrimSpace(got) != "Edit a.txt as variant A" {
		t.Fatalf("main's head subject %q, want the session's prompt", got)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, "a.txt")); string(b) != "one A\n" {
		t.Fatalf("the checkout's a.txt after the ship: %q", b)
	}
}
