package permission_test

import (
	"strings"
	"testing"

	"mvdan.cc/sh/v3/expand"
	"mvdan.cc/sh/v3/syntax"

	"github.com/ferry-dev/ferry/internal/permission"
)

// dangerousLong are git options that run programs, write files or read
// outside the repository: kept apart from the parser's own tables, so the
// fuzz test checks it against an independent list.
var dangerousLong = []string{
	"--output", "--no-index", "--contents", "--open-files-in-pager", "--upload-pack", "--exec",
	"--ext-diff", "--textconv", "--filters", "--show-signature", "--recurse-submodules",
	"--remerge-diff", "--file", "--ignore-revs-file", "--exclude-from", "--receive-pack",
}

// FuzzReadOnlyGit: the parser never panics, a refusal always says why, and
// a command it accepts carries none of the dangerous options, in full or
// abbreviated, no global option but the harmless ones, no bundle that
// starts with -O, and no argument that is an absolute or home path.
func FuzzReadOnlyGit(f *testing.F) {
	for _, s := range []string{
		"git status", "git log --oneline -n5", "git grep -nO'cmd' pat", "git blame --cont /etc/passwd f",
		"git ls-remote --upload-p='x' .", "git diff --stat HEAD~1 -- f", "git log -S foo -p",
		"git grep -e-n -- x", "git status -uno && git log -1", "git --no-pager show HEAD:f",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, cmd string) {
		ok, why := permission.ReadOnlyGit(cmd)
		if !ok {
			if why == "" {
				t.Fatalf("%q refused without a reason", cmd)
			}
			return
		}
		file, err := syntax.NewParser(syntax.Variant(syntax.LangBash)).Parse(strings.NewReader(cmd), "")
		if err != nil {
			t.Fatalf("%q accepted but does not parse: %v", cmd, err)
		}
		syntax.Walk(file, func(n syntax.Node) bool {
			call, isCall := n.(*syntax.CallExpr)
			if !isCall {
				return true
			}
			args := make([]string, len(call.Args))
			for i, w := range call.Args {
				s, err := expand.Literal(nil, w)
				if err != nil {
					t.Fatalf("%q accepted with a word that does not expand: %v", cmd, err)
				}
				args[i] = s
			}
			checkAccepted(t, cmd, args)
			return false
		})
	})
}

func checkAccepted(t *testing.T, cmd string, args []string) {
	t.Helper()
	if len(args) < 2 || args[0] != "git" {
		t.Fatalf("%q accepted: %q is not a git command", cmd, args)
	}
	i := 1
	for i < len(args) && strings.HasPrefix(args[i], "-") {
		if args[i] != "--no-pager" && args[i] != "-P" && args[i] != "--no-optional-locks" {
			t.Fatalf("%q accepted with the global option %s", cmd, args[i])
		}
		i++
	}
	if i < len(args) && (args[i] == "ls-remote" || args[i] == "fetch" || args[i] == "push" || args[i] == "commit") {
		t.Fatalf("%q accepted git %s", cmd, args[i])
	}
	for _, a := range args[i:] {
		if a == "--" || a == "--end-of-options" {
			break
		}
		if strings.HasPrefix(a, "/") || strings.HasPrefix(a, "~") {
			t.Fatalf("%q accepted the path %s", cmd, a)
		}
		if strings.HasPrefix(a, "-O") {
			t.Fatalf("%q accepted %s", cmd, a)
		}
		name, _, _ := strings.Cut(a, "=")
		if !strings.HasPrefix(name, "--") || len(name) < 4 {
			continue
		}
		for _, d := range dangerousLong {
			if strings.HasPrefix(d, name) {
				t.Fatalf("%q accepted %s (%s)", cmd, a, d)
			}
		}
	}
}
