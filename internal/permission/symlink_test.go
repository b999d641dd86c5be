package permission_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
)

// linkedWorkspace builds a workspace with symbolic links that lead to
// files the rules protect, and a directory outside it:
//
//	ws/secret.txt             ws/link_to_secret -> secret.txt
//	ws/protected/keep.txt     ws/plink -> protected
//	ws/secrets/inner/         ws/in -> secrets/inner  (in/../key is secrets/key)
//	ws/public/                ws/public/lnk -> ../protected/keep.txt
//	ws/loop1 -> loop2 -> loop1
//	out/secret                ws/outlink -> ../out (absolute)
func linkedWorkspace(t *testing.T) (ws, out string) {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, out = filepath.Join(base, "ws"), filepath.Join(base, "out")
	for _, d := range []string{"protected", "secrets/inner", "public"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"ws/secret.txt", "ws/protected/keep.txt", "ws/secrets/key", "out/secret"} {
		if err := os.WriteFile(filepath.Join(base, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, target := range map[string]string{
		"ws/link_to_secret": "secret.txt",
		"ws/plink":          "protected",
		"ws/in":             "secrets/inner",
		"ws/public/lnk":     "../protected/keep.txt",
		"ws/loop1":          "loop2",
		"ws/loop2":          "loop1",
		"ws/outlink":        out,
	} {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return ws, out
}

// TestRulesSeeThroughSymlinks: a rule matches the path with its links
// resolved as well as the path given (issue 16, item 4).
func TestRulesSeeThroughSymlinks(t *testing.T) {
	t.Parallel()
	ws, out := linkedWorkspace(t)
	r := mustRules(t,
		[]string{"Write(public/**)", "Write(loop1)", "Read(public/**)"},
		nil,
		[]string{"Read(secret.txt)", "Edit(protected/**)", "Read(secrets/**)", "Read(" + out + "/**)"},
	)
	r.Workspace = ws
	runDecide(t, r, []decideCase{
		{"a link to a denied file", read("link_to_secret"), permission.Deny},
		{"a link to a denied file, absolute", read(filepath.Join(ws, "link_to_secret")), permission.Deny},
		{"Grep of a link to a denied file", permission.Call{Tool: "Grep", Path: "link_to_secret", ReadOnly: true}, permission.Deny},
		{"a write through a linked directory", write("plink/keep.txt"), permission.Deny},
		{"an edit through a linked directory", edit("plink/keep.txt"), permission.Deny},
		{"a new file through a linked directory", write("plink/new/file.txt"), permission.Deny},
		{"the linked directory itself", permission.Call{Tool: "Glob", Path: "plink", ReadOnly: true}, permission.Allow},
		{".. after a link is the link target's parent", read("in/../key"), permission.Deny},
		{"a link out of the workspace", read("outlink/secret"), permission.Deny},
		{"a link in an allowed directory to a denied file", write("public/lnk"), permission.Deny},
		{"an allowed file", write("public/new.txt"), permission.Allow},
		{"a link loop is never allowed by a rule", write("loop1"), permission.Ask},
		{"the plain path still denied", read("secret.txt"), permission.Deny},
		{"an unrelated read", read("public/x"), permission.Allow},
	})

	// An allow needs both forms; here no deny rule speaks.
	allowOnly := mustRules(t, []string{"Write(public/**)"}, nil, nil)
	allowOnly.Workspace = ws
	runDecide(t, allowOnly, []decideCase{
		{"allowed name, unallowed target", write("public/lnk"), permission.Ask},
		{"allowed name and target", write("public/ok.txt"), permission.Allow},
	})
}

// TestPatternsSeeThroughSymlinks: the fixed directories a pattern starts
// with are resolved too, so a rule written through a link (a workspace
// under macOS's /tmp, a linked directory) matches the real path.
func TestPatternsSeeThroughSymlinks(t *testing.T) {
	t.Parallel()
	ws, out := linkedWorkspace(t)
	wsLink := filepath.Join(filepath.Dir(ws), "wslink")
	if err := os.Symlink(ws, wsLink); err != nil {
		t.Fatal(err)
	}
	r := mustRules(t,
		[]string{"Write(" + wsLink + "/public/**)", "Edit(src/**)"},
		nil,
		[]string{"Edit(plink/**)", "Read(outlink/**)", "Read(" + wsLink + "/secret.txt)"},
	)
	r.Workspace = wsLink // the workspace as the user named it, through a link
	runDecide(t, r, []decideCase{
		{"the target of a denied linked directory", write("protected/keep.txt"), permission.Deny},
		{"the target, absolute", write(filepath.Join(ws, "protected/keep.txt")), permission.Deny},
		{"a relative pattern through a link out of the workspace", read(filepath.Join(out, "secret")), permission.Deny},
		{"an absolute pattern through a link", read(filepath.Join(ws, "secret.txt")), permission.Deny},
		{"a relative path in a linked workspace", read("link_to_secret"), permission.Deny},
		{"an absolute allow through a link", write(filepath.Join(ws, "public/a.txt")), permission.Allow},
		{"a relative path under that allow", write("public/a.txt"), permission.Allow},
		{"a relative allow, the path through the real workspace", edit(filepath.Join(ws, "src/a.go")), permission.Allow},
		{"a relative allow, the path through the link", edit(filepath.Join(wsLink, "src/a.go")), permission.Allow},
	})
}

// TestBashDeclaredWrites: the files a Bash call declares it writes
// (artifact_paths) meet the Write and Edit rules, links resolved.
func TestBashDeclaredWrites(t *testing.T) {
	t.Parallel()
	ws, _ := linkedWorkspace(t)
	r := mustRules(t, []string{"Bash(make:*)"}, []string{"Write(public/**)"}, []string{"Edit(protected/**)"})
	r.Workspace = ws
	call := func(paths ...string) permission.Call {
		return permission.Call{Tool: "Bash", Command: "make report", Writes: paths}
	}
	runDecide(t, r, []decideCase{
		{"no declared path", call(), permission.Allow},
		{"a declared path no rule names", call("report.pdf"), permission.Allow},
		{"a denied path through a link", call("report.pdf", "plink/keep.txt"), permission.Deny},
		{"a denied path", call("protected/x.pdf"), permission.Deny},
		{"an ask rule", call("public/r.pdf"), permission.Ask},
		{"deny beats ask", call("public/r.pdf", "plink/x"), permission.Deny},
	})
	denied := mustRules(t, nil, nil, []string{"Bash(make:*)"})
	if got := denied.Decide(call("public/r.pdf")); got != permission.Deny {
		t.Fatalf("a denied command with a declared path: %v", got)
	}
}

// TestAllowAlwaysThroughSymlinks: "allow always" on a path through a link
// records the resolved path too, so the call is allowed next time.
func TestAllowAlwaysThroughSymlinks(t *testing.T) {
	t.Parallel()
	ws, _ := linkedWorkspace(t)
	r := &permission.Rules{Workspace: ws}
	for _, c := range []struct {
		call permission.Call
		want []string
	}{
		{write("public/lnk"), []string{"Write(public/lnk)", "Write(protected/keep.txt)"}},
		{write("plink/new.txt"), []string{"Write(plink/new.txt)", "Write(protected/new.txt)"}},
		{write("public/plain.txt"), []string{"Write(public/plain.txt)"}},
		{write("loop1"), nil},
	} {
		var got []string
		for _, rule := range r.RulesFor(c.call) {
			got = append(got, rule.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("RulesFor(%+v) = %q, want %q", c.call, got, c.want)
			continue
		}
		if len(got) == 0 {
			continue
		}
		if r.Decide(c.call) == permission.Allow {
			t.Fatalf("%+v allowed without rules", c.call)
		}
		next := *r
		for _, rule := range r.RulesFor(c.call) {
			next.Add(permission.Allow, rule)
		}
		if d := next.Decide(c.call); d != permission.Allow {
			t.Errorf("after allow always, Decide(%+v) = %v", c.call, d)
		}
	}
}

// TestHides: what Glob and Grep leave out of a directory they search is
// what a deny or ask rule keeps from Read, links resolved.
func TestHides(t *testing.T) {
	t.Parallel()
	ws, _ := linkedWorkspace(t)
	r := mustRules(t, []string{"Read"}, []string{"Read(public/**)"}, []string{"Read(secret.txt)", "Write(protected/**)"})
	r.Workspace = ws
	hidden := r.Hides("Grep")
	if hidden == nil {
		t.Fatal("no filter under Read deny rules")
	}
	for p, want := range map[string]bool{
		"secret.txt":         true,
		"link_to_secret":     true,
		"public":             true,
		"public/lnk":         true,
		"protected/keep.txt": false, // a Write rule keeps nothing from a search
		"plink/keep.txt":     false,
		"secrets/key":        false,
	} {
		if got := hidden(filepath.Join(ws, p)); got != want {
			t.Errorf("hidden(%s) = %v, want %v", p, got, want)
		}
	}
	if r.Hides("Glob") == nil {
		t.Error("Read rules cover Glob")
	}
	if h := mustRules(t, nil, nil, []string{"Write(x)"}).Hides("Grep"); h != nil {
		t.Error("a filter without Read rules")
	}
	var none *permission.Rules
	if none.Hides("Grep") != nil {
		t.Error("a filter from nil rules")
	}
}
