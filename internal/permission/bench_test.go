package permission_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/permission"
)

// The rules are checked on every tool call of the agent loop, so their cost
// is part of the loop's per-iteration overhead.

func benchRules(b *testing.B) *permission.Rules {
	b.Helper()
	r := &permission.Rules{}
	for _, s := range []string{"Read(src/**)", "Write(/tmp/**)", "Edit(docs/*.md)", "Bash(git diff:*)", "Bash(go test:*)", "Bash(ls:*)"} {
		rule, err := permission.Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		r.Add(permission.Allow, rule)
	}
	for _, s := range []string{"Read(.env)", "Bash(rm:*)", "Bash(git push:*)"} {
		rule, err := permission.Parse(s)
		if err != nil {
			b.Fatal(err)
		}
		r.Add(permission.Deny, rule)
	}
	return r
}

func BenchmarkDecidePath(b *testing.B) {
	r := benchRules(b)
	c := permission.Call{Tool: "Edit", Path: "docs/guide.md"}
	b.ReportAllocs()
	for b.Loop() {
		if r.Decide(c) != permission.Allow {
			b.Fatal("not allowed")
		}
	}
}

func BenchmarkDecideBash(b *testing.B) {
	r := benchRules(b)
	c := permission.Call{Tool: "Bash", Command: "git diff --stat HEAD~3 -- src && go test ./internal/... 2>&1 | ls"}
	b.ReportAllocs()
	for b.Loop() {
		if r.Decide(c) != permission.Allow {
			b.Fatal("not allowed")
		}
	}
}

func BenchmarkReadOnlyGit(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := permission.ReadOnlyGit("git log --oneline -20 && git diff --stat"); !ok {
			b.Fatal("refused")
		}
	}
}

// BenchmarkDecidePathLinks is BenchmarkDecidePath on a real workspace,
// where every decision resolves the path's links and the patterns' fixed
// directories (Lstat only).
func BenchmarkDecidePathLinks(b *testing.B) {
	r := benchRules(b)
	r.Workspace = b.TempDir()
	c := permission.Call{Tool: "Edit", Path: "docs/guide.md"}
	b.ReportAllocs()
	for b.Loop() {
		if r.Decide(c) != permission.Allow {
			b.Fatal("not allowed")
		}
	}
}
