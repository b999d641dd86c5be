package permission_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
	"github.com/ferry-dev/ferry/internal/tools"
)

func TestParse(t *testing.T) {
	t.Parallel()
	ok := []struct {
		in   string
		want permission.Rule
	}{
		{"Read", permission.Rule{Tool: "Read"}},
		{"  Edit ", permission.Rule{Tool: "Edit"}},
		{"Bash", permission.Rule{Tool: "Bash"}},
		{"Read(src/**)", permission.Rule{Tool: "Read", Pattern: "src/**"}},
		{"Read(./src//a.go)", permission.Rule{Tool: "Read", Pattern: "src/a.go"}},
		{"Read(src/)", permission.Rule{Tool: "Read", Pattern: "src/**"}},
		{"Read( src/*.go )", permission.Rule{Tool: "Read", Pattern: "src/*.go"}},
		{"Write(/tmp/**)", permission.Rule{Tool: "Write", Pattern: "/tmp/**"}},
		{"Glob(**/*.{ts,tsx})", permission.Rule{Tool: "Glob", Pattern: "**/*.{ts,tsx}"}},
		{"Edit(app/(group)/page.tsx)", permission.Rule{Tool: "Edit", Pattern: "app/(group)/page.tsx"}},
		{`Edit(a\(b)`, permission.Rule{Tool: "Edit", Pattern: `a\(b`}},
		{"Bash(git diff:*)", permission.Rule{Tool: "Bash", Pattern: "git diff:*"}},
		{"Bash( npm test )", permission.Rule{Tool: "Bash", Pattern: "npm test"}},
		{`Bash(git "diff":*)`, permission.Rule{Tool: "Bash", Pattern: `git "diff":*`}},
		{`Bash(echo "(hi)")`, permission.Rule{Tool: "Bash", Pattern: `echo "(hi)"`}},
		{"Bash(echo {a,b})", permission.Rule{Tool: "Bash", Pattern: "echo {a,b}"}},
		{"Bash(ls *.go)", permission.Rule{Tool: "Bash", Pattern: "ls *.go"}},
	}
	for _, c := range ok {
		got, err := permission.Parse(c.in)
		if err != nil || got != c.want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
			continue
		}
		again, err := permission.Parse(got.String())
		if err != nil || again != got {
			t.Errorf("Parse(%q).String() = %q does not parse back: %+v, %v", c.in, got.String(), again, err)
		}
	}

	bad := []struct {
		in   string
		code permission.ErrorCode
		says string
	}{
		{"", permission.CodeEmptyTool, "no tool name"},
		{"(src/**)", permission.CodeEmptyTool, "no tool name"},
		{"Bahs(ls)", permission.CodeUnknownTool, "Read, Write, Edit, MultiEdit, NotebookEdit, Glob, Grep, Bash"},
		{"read(src/**)", permission.CodeUnknownTool, `did you mean "Read"`},
		{"WebSearch", permission.CodeUnknownTool, "unknown tool"},
		{"Read(src", permission.CodeUnbalanced, `end with ")"`},
		{"Read(a))", permission.CodeUnbalanced, "never opened"},
		{"Read((a)", permission.CodeUnbalanced, "open"},
		{"Read(a)b", permission.CodeUnbalanced, `end with ")"`},
		{"Read)", permission.CodeUnbalanced, "without"},
		{"Read()", permission.CodeEmptyPattern, "write Read alone"},
		{"Read(  )", permission.CodeEmptyPattern, "write Read alone"},
		{"Bash()", permission.CodeEmptyPattern, "write Bash alone"},
		{"Read(../x)", permission.CodeBadPattern, `".."`},
		{"Write(/tmp/../etc/**)", permission.CodeBadPattern, `".."`},
		{"Read(~/.ssh/**)", permission.CodeBadPattern, `"~"`},
		{"Read(a[)", permission.CodeBadPattern, "not a valid glob"},
		{"Bash(:*)", permission.CodeBadCommand, "write Bash alone"},
		{"Bash(*)", permission.CodeBadCommand, "write Bash alone"},
		{"Bash(git diff && rm:*)", permission.CodeBadCommand, "one plain command"},
		{"Bash(git diff; rm)", permission.CodeBadCommand, "more than one command"},
		{"Bash(npm run *)", permission.CodeBadCommand, "Bash(npm run:*)"},
		{"Bash(X=1 make)", permission.CodeBadCommand, "assignments"},
		{"Bash(ls > out)", permission.CodeBadCommand, "redirections"},
		{"Bash(echo $(date))", permission.CodeBadCommand, "$(…)"},
		{"Bash(echo 'open)", permission.CodeBadCommand, "not valid shell syntax"},
	}
	for _, c := range bad {
		_, err := permission.Parse(c.in)
		var pe *permission.Error
		if !errors.As(err, &pe) || pe.Code != c.code {
			t.Errorf("Parse(%q) = %v; want code %s", c.in, err, c.code)
			continue
		}
		if !errors.Is(err, &permission.Error{Code: c.code}) {
			t.Errorf("Parse(%q): errors.Is does not match its code", c.in)
		}
		if !strings.Contains(err.Error(), c.says) || !strings.Contains(err.Error(), c.in) {
			t.Errorf("Parse(%q): message %q should quote the rule and say %q", c.in, err, c.says)
		}
	}
}

type decideCase struct {
	name string
	call permission.Call
	want permission.Decision
}

func runDecide(t *testing.T, r *permission.Rules, cases []decideCase) {
	t.Helper()
	for _, c := range cases {
		if got := r.Decide(c.call); got != c.want {
			t.Errorf("%s: Decide(%+v) = %v, want %v", c.name, c.call, got, c.want)
		}
	}
}

func mustRules(t *testing.T, allow, ask, deny []string) *permission.Rules {
	t.Helper()
	parse := func(ss []string) []permission.Rule {
		var out []permission.Rule
		for _, s := range ss {
			r, err := permission.Parse(s)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}
	return &permission.Rules{Allow: parse(allow), Ask: parse(ask), Deny: parse(deny)}
}

func read(p string) permission.Call {
	return permission.Call{Tool: "Read", Path: p, ReadOnly: true}
}

func write(p string) permission.Call { return permission.Call{Tool: "Write", Path: p} }

func edit(p string) permission.Call { return permission.Call{Tool: "Edit", Path: p} }

func TestDecidePaths(t *testing.T) {
	t.Parallel()
	r := mustRules(t,
		[]string{"Read(src/**)", "Write(src/**)", "Write(/tmp/**)", "Edit(docs/*.md)", "Edit(secrets/**)"},
		[]string{"Write(src/generated/**)"},
		[]string{"Read(.env)", "Edit(secrets/**)"},
	)
	runDecide(t, r, []decideCase{
		{"allowed read", read("src/a.go"), permission.Allow},
		{"read-only tools are allowed by default", read("README.md"), permission.Allow},
		{"deny beats the default", read(".env"), permission.Deny},
		{"Read rules cover Grep", permission.Call{Tool: "Grep", Path: ".env", ReadOnly: true}, permission.Deny},
		{"Read rules cover Glob", permission.Call{Tool: "Glob", Path: "./.env", ReadOnly: true}, permission.Deny},
		{"Glob of the workspace", permission.Call{Tool: "Glob", ReadOnly: true}, permission.Allow},
		{"allowed write", write("src/a.go"), permission.Allow},
		{"ask beats allow", write("src/generated/x.go"), permission.Ask},
		{"Write rules cover Edit", edit("src/a.go"), permission.Allow},
		{"no rule: writes ask", write("main.go"), permission.Ask},
		{"absolute rule", write("/tmp/out/x.txt"), permission.Allow},
		{"absolute rule covers the directory", write("/tmp"), permission.Allow},
		{"cleaned before matching", write("/tmp/../etc/passwd"), permission.Ask},
		{"no prefix confusion", write("/tmpfoo/x"), permission.Ask},
		{"relative escape never matches a relative rule", write("src/../../x/src/a.go"), permission.Ask},
		{"dot-dot path", write("../ws/src/a.go"), permission.Ask},
		{"absolute outside never matches a relative rule", write("/etc/src/a.go"), permission.Ask},
		{"single star is one level", edit("docs/sub/a.md"), permission.Ask},
		{"one level", edit("docs/a.md"), permission.Allow},
		{"Edit rules cover Write", write("docs/a.md"), permission.Allow},
		{"deny beats allow", edit("secrets/key"), permission.Deny},
		{"deny on Edit covers Write", write("secrets/key"), permission.Deny},
		{"deny on Edit covers Write, cleaned", write("./secrets//key"), permission.Deny},
	})

	var none *permission.Rules
	runDecide(t, none, []decideCase{
		{"nil rules: read", read("a"), permission.Allow},
		{"nil rules: write", write("a"), permission.Ask},
		{"nil rules: bash", permission.Call{Tool: "Bash", Command: "ls"}, permission.Ask},
	})

	all := mustRules(t, []string{"Read"}, nil, []string{"Write"})
	runDecide(t, all, []decideCase{
		{"tool-only deny", write("/tmp/x"), permission.Deny},
		{"tool-only deny covers Edit", edit("a"), permission.Deny},
		{"tool-only allow", read("/etc/hosts"), permission.Allow},
	})
}

func TestDecideWorkspace(t *testing.T) {
	t.Parallel()
	r := mustRules(t, []string{"Write(src/**)", "Edit(/ws/docs/**)"}, nil, []string{"Write(/ws/secret/**)"})
	r.Workspace = "/ws"
	runDecide(t, r, []decideCase{
		{"absolute inside matches a relative rule", write("/ws/src/a.go"), permission.Allow},
		{"relative matches an absolute rule", edit("docs/a.md"), permission.Allow},
		{"relative matches an absolute deny", write("secret/k"), permission.Deny},
		{"escape via dot-dot", write("/ws/src/../../etc/x"), permission.Ask},
		{"sibling with the same prefix", write("/wsx/src/a.go"), permission.Ask},
	})
}

// A rule built without Parse that Parse would reject never allows, and as a
// deny or ask rule it applies to every call of its tool.
func TestBrokenRulesFailClosed(t *testing.T) {
	t.Parallel()
	r := &permission.Rules{
		Allow: []permission.Rule{{Tool: "Write", Pattern: "a["}, {Tool: "Bash", Pattern: "ls; rm"}},
		Deny:  []permission.Rule{{Tool: "Read", Pattern: "../x"}, {Tool: "Bash", Pattern: "rm &&"}},
	}
	runDecide(t, r, []decideCase{
		{"broken allow", write("a["), permission.Ask},
		{"broken deny", read("anything"), permission.Deny},
		{"broken bash deny", permission.Call{Tool: "Bash", Command: "ls"}, permission.Deny},
	})
}

func bash(cmd string) permission.Call { return permission.Call{Tool: "Bash", Command: cmd} }

func TestDecideBash(t *testing.T) {
	t.Parallel()
	r := mustRules(t,
		[]string{"Bash(git diff:*)", "Bash(npm test)", "Bash(ls:*)", "Bash(echo:*)", "Bash(cat:*)", "Bash(cd:*)"},
		[]string{"Bash(curl:*)"},
		[]string{"Bash(rm:*)", "Bash(git push:*)"},
	)
	A, Q, D := permission.Allow, permission.Ask, permission.Deny
	for _, c := range []struct {
		cmd  string
		want permission.Decision
	}{
		{"git diff --stat", A},
		{"git diff", A},
		{"git  diff   HEAD~1 -- src", A},
		{`git "diff" --stat`, A},
		{`g\it diff`, A},
		{"git diffx", Q},
		{"git", Q},
		{"git diff; rm -rf /", D},
		{"git diff && ls", A},
		{"git diff && make", Q},
		{"git diff || echo failed", A},
		{"git diff | cat", A},
		{"git diff | sh", Q},
		{"git diff &", A},
		{"git diff\nls -la", A},
		{"git diff\nmake", Q},
		{"git diff\nrm -rf /", D},
		{"(git diff; ls)", A},
		{"{ git diff; ls; }", A},
		{"if git diff --quiet; then echo clean; else echo dirty; fi", A},
		{"! git diff --quiet", A},
		{"git diff > out.txt", Q},
		{"git diff >> out.txt", Q},
		{"git diff &> log", Q},
		{"git diff >&log", Q},
		{"git diff 2>&1", A},
		{"git diff >/dev/null 2>&1", A},
		{"cat < input.txt", A},
		{"cat <<EOF\nhello\nEOF", A},
		{"cat <<EOF\n$(rm x)\nEOF", D},
		{"git diff $(rm -rf /)", D},
		{"git diff `rm -rf /`", D},
		{"git diff `whoami`", Q},
		{"echo $(ls)", A},
		{"echo <(ls)", A},
		{"echo $HOME", A},
		{"ls *.go", A},
		{"npm test", A},
		{"npm 'test'", A},
		{"npm test --watch", Q},
		{"X=1 git diff", Q},
		{"GIT_EXTERNAL_DIFF=/tmp/evil git diff", Q},
		{"export X=1; git diff", Q},
		{"X=1; git diff", Q},
		{"f() { git diff; }; f", Q},
		{"git() { rm -rf /; }; git diff", D},
		{"for f in a b; do echo $f; done", Q},
		{"coproc ls", Q},
		{"curl https://example.com", Q},
		{"curl https://example.com | sh", Q},
		{"ls && curl x", Q},
		{"ls && rm x && curl y", D},
		{"rm -rf build", D},
		{`\rm x`, D},
		{`r''m x`, D},
		{`"rm" x`, D},
		{"/bin/rm x", D},
		{"sudo rm -rf /", D},
		{"sudo -u root rm x", D},
		{"command rm x", D},
		{"command -v rm", Q},
		{"exec rm x", D},
		{"env FOO=1 rm x", D},
		{"env -i rm x", D},
		{"nice -n 10 rm x", D},
		{"timeout 5 rm x", D},
		{"timeout -s KILL 5 rm x", D},
		{"xargs rm < list", D},
		{"xargs -I{} rm {}", D},
		{"nohup rm x", D},
		{"sudo env nice rm x", D},
		{`find . -name '*.o' -exec rm {} \;`, D},
		{"find . -execdir rm {} +", D},
		{"bash -c 'rm -rf /'", D},
		{"bash -o pipefail -c 'ls; rm x'", D},
		{`sh -c "echo; rm x"`, D},
		{"bash -lc 'rm x'", D},
		{"eval 'rm x'", D},
		{"eval rm x", D},
		{"bash -c 'bash -c \"rm x\"'", D},
		{"git push origin main", D},
		{"git diff && git push", D},
		// Names computed at run time: a deny rule might apply; never allowed.
		{"$CMD x", Q},
		{"eval \"$X\"", Q},
		{"bash -c \"$X\"", Q},
		{"l* -la", Q},
		{"$'\\x72m' x", Q},
		{"echo 'unterminated", Q},
	} {
		if got := r.Decide(bash(c.cmd)); got != c.want {
			t.Errorf("Decide(%q) = %v, want %v", c.cmd, got, c.want)
		}
	}

	// A rule allowing every command still yields to deny rules, and to doubt.
	everything := mustRules(t, []string{"Bash"}, nil, []string{"Bash(rm:*)"})
	runDecide(t, everything, []decideCase{
		{"all allowed", bash("make && ./run > log"), A},
		{"deny still wins", bash("make && rm x"), D},
		{"opaque asks", bash("$CMD x"), Q},
		{"unparsable asks", bash("echo 'open"), Q},
	})
	trusting := mustRules(t, []string{"Bash"}, nil, nil)
	runDecide(t, trusting, []decideCase{
		{"no deny rules: opaque is allowed by Bash", bash("$CMD x"), A},
	})
	denyAll := mustRules(t, []string{"Bash(ls:*)"}, nil, []string{"Bash"})
	runDecide(t, denyAll, []decideCase{{"Bash in deny", bash("ls"), D}})
}

func TestRuleFor(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		call permission.Call
		want []string
	}{
		{bash("git diff --stat"), []string{"Bash(git diff:*)"}},
		{bash("git --no-pager log"), []string{"Bash(git:*)"}},
		{bash("ls -la"), []string{"Bash(ls:*)"}},
		{bash("go test ./..."), []string{"Bash(go test:*)"}},
		{bash("npm run build"), []string{"Bash(npm run:*)"}},
		{bash("./scripts/check.sh --fast"), []string{"Bash(./scripts/check.sh:*)"}},
		{bash("'my tool' x"), []string{"Bash('my tool':*)"}},
		{bash("cd sub && make && cd .. && make"), []string{"Bash(cd:*)", "Bash(make:*)"}},
		// A runner and what it runs: both are needed next time.
		{bash("timeout 5 make"), []string{"Bash(timeout:*)", "Bash(make:*)"}},
		{bash("find . -name '*.go' -exec grep -l x {} +"), []string{"Bash(find:*)", "Bash(grep:*)"}},
		{bash("bash -c 'go test ./...'"), []string{"Bash(bash:*)", "Bash(go test:*)"}},
		{bash("printf -v 'a[$(id)]' 1"), nil},
		{bash("git diff > x"), nil},
		{bash("X=1 make"), nil},
		{bash("$X"), nil},
		{bash("echo 'open"), nil},
		{bash("'weird(name' arg"), nil},
		{write("src/a.go"), []string{"Write(src/a.go)"}},
		{edit("/tmp/x y.txt"), []string{"Edit(/tmp/x y.txt)"}},
		{write("src/[id]/page.tsx"), []string{`Write(src/\[id\]/page.tsx)`}},
		{write("app/(group)/p.tsx"), []string{`Write(app/\(group\)/p.tsx)`}},
		{write("./src//b.go"), []string{"Write(src/b.go)"}},
		{write("../x"), nil},
		{permission.Call{Tool: "WebFetch"}, nil},
	} {
		var got []string
		for _, r := range permission.RulesFor(c.call) {
			got = append(got, r.String())
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("RulesFor(%+v) = %q, want %q", c.call, got, c.want)
			continue
		}
		single := permission.RuleFor(c.call)
		if len(c.want) == 1 && single.String() != c.want[0] || len(c.want) != 1 && !single.IsZero() {
			t.Errorf("RuleFor(%+v) = %q", c.call, single)
		}
		if len(c.want) == 0 {
			continue
		}
		// The promise of "allow always": the same call is allowed next time.
		var r permission.Rules
		if r.Decide(c.call) == permission.Allow {
			t.Fatalf("%+v is allowed without rules; the test proves nothing", c.call)
		}
		for _, rule := range permission.RulesFor(c.call) {
			r.Add(permission.Allow, rule)
		}
		if got := r.Decide(c.call); got != permission.Allow {
			t.Errorf("after adding %q, Decide(%+v) = %v", c.want, c.call, got)
		}
	}

	// An exact-path rule matches that path only.
	var r permission.Rules
	r.Add(permission.Allow, permission.RuleFor(write("src/[id]/page.tsx")))
	if r.Decide(write("src/i/page.tsx")) != permission.Ask {
		t.Error("an escaped exact path matched another file")
	}
}

func TestAdd(t *testing.T) {
	t.Parallel()
	var r permission.Rules
	rule := permission.Rule{Tool: "Bash", Pattern: "ls:*"}
	r.Add(permission.Allow, rule)
	r.Add(permission.Allow, rule)
	r.Add(permission.Allow, permission.Rule{})
	r.Add(permission.Decision(0), rule)
	r.Add(permission.Decision(42), rule)
	r.Add(permission.Deny, permission.Rule{Tool: "Bash", Pattern: "rm:*"})
	r.Add(permission.Ask, permission.Rule{Tool: "Write"})
	if len(r.Allow) != 1 || len(r.Deny) != 1 || len(r.Ask) != 1 {
		t.Fatalf("Add: %+v", r)
	}
	if r.Decide(bash("rm x")) != permission.Deny || r.Decide(bash("ls")) != permission.Allow || r.Decide(write("a")) != permission.Ask {
		t.Fatalf("added rules not in force: %+v", r)
	}
	if permission.Allow.String() != "allow" || permission.Ask.String() != "ask" || permission.Deny.String() != "deny" || permission.Decision(0).String() != "Decision(0)" {
		t.Fatal("Decision.String")
	}
}

// TestKnownToolsMatchAgentTools keeps Parse's tool list in step with the
// agent's tools.
func TestKnownToolsMatchAgentTools(t *testing.T) {
	t.Parallel()
	var names []string
	for _, tool := range tools.AllTools() {
		names = append(names, tool.Name())
		if _, err := permission.Parse(tool.Name()); err != nil {
			t.Errorf("tool %s cannot be named in a rule: %v", tool.Name(), err)
		}
	}
	known := permission.KnownTools()
	slices.Sort(names)
	slices.Sort(known)
	if !slices.Equal(names, known) {
		t.Fatalf("KnownTools %v, agent tools %v", known, names)
	}
}

// TestWriteToolRulesCoverEachOther: a rule on any tool that changes files
// (Write, Edit, MultiEdit, NotebookEdit) decides the others' calls too, so
// `Edit(secrets/**)` in deny cannot be sidestepped with MultiEdit or
// NotebookEdit, nor `MultiEdit(x)` with Write; reading tools stay apart.
func TestWriteToolRulesCoverEachOther(t *testing.T) {
	t.Parallel()
	writers := []string{"Write", "Edit", "MultiEdit", "NotebookEdit"}
	for _, rule := range writers {
		rs := mustRules(t, []string{rule + "(docs/**)"}, nil, []string{rule + "(secrets/**)"})
		for _, tool := range writers {
			if d := rs.Decide(permission.Call{Tool: tool, Path: "secrets/a.ipynb"}); d != permission.Deny {
				t.Errorf("deny %s(secrets/**): %s of secrets/a.ipynb is %s", rule, tool, d)
			}
			if d := rs.Decide(permission.Call{Tool: tool, Path: "docs/a.md"}); d != permission.Allow {
				t.Errorf("allow %s(docs/**): %s of docs/a.md is %s", rule, tool, d)
			}
			if d := rs.Decide(permission.Call{Tool: tool, Path: "src/a.go"}); d != permission.Ask {
				t.Errorf("%s of src/a.go with no rule is %s, want ask", tool, d)
			}
		}
		if d := rs.Decide(permission.Call{Tool: "Read", Path: "secrets/a.ipynb", ReadOnly: true}); d != permission.Allow {
			t.Errorf("deny %s(secrets/**) decided a Read: %s", rule, d)
		}
	}
	if got := permission.RulesFor(permission.Call{Tool: "NotebookEdit", Path: "n.ipynb"}); len(got) != 1 || got[0].String() != "NotebookEdit(n.ipynb)" {
		t.Fatalf("RulesFor NotebookEdit = %v", got)
	}
}
