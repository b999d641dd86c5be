package permission

import (
	"errors"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// primary lists the words of the non-derived commands of s, "?" marking a
// word that is not fixed text.
func primary(s script) []string {
	var out []string
	for _, c := range s.cmds {
		if c.derived {
			continue
		}
		var ws []string
		for _, w := range c.words {
			if w.lit {
				ws = append(ws, w.text)
			} else {
				ws = append(ws, "?"+w.text)
			}
		}
		out = append(out, strings.Join(ws, "·"))
	}
	return out
}

func derivedOf(s script) []string {
	var out []string
	for _, c := range s.cmds {
		if !c.derived {
			continue
		}
		var ws []string
		for _, w := range c.words {
			ws = append(ws, w.text)
		}
		out = append(out, strings.Join(ws, "·"))
	}
	return out
}

func TestAnalyze(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		line      string
		cmds      string // primary commands, "|"-separated
		derived   string
		allowable bool
		opaque    bool
	}{
		{"git diff --stat", "git·diff·--stat", "", true, false},
		{`git "di"ff 'a b' c\ d`, "git·diff·a b·c d", "", true, false},
		{"a; b && c || d | e & f\ng", "a|b|c|d|e|f|g", "", true, false},
		{"echo \"$(date) x\"", `echo·?"$(date) x"|date`, "", true, false},
		{"echo `date`", "echo·?$(date)|date", "", true, false},
		{"diff <(ls a) <(ls b)", "diff·?<(ls a)·?<(ls b)|ls·a|ls·b", "", true, false},
		{"ls > /dev/null 2>&1 < in", "ls", "", true, false},
		{"ls > out", "ls", "", false, false},
		{"ls 2> err", "ls", "", false, false},
		{"X=1 ls", "ls", "", false, false},
		{"X=1", "", "", false, false},
		{"$X a", "?$X·a", "", false, true},
		{"ls *.go {a,b} {} x{1..3}", "ls·?*.go·?{a,b}·{}·?x{1..3}", "", true, false},
		{`ls \*.go`, "ls·*.go", "", true, false},
		{"sudo -u bob /usr/bin/rm -f x", "sudo·-u·bob·/usr/bin/rm·-f·x", "/usr/bin/rm·-f·x|rm·-f·x", true, false},
		{"bash -c 'a; b | c'", "bash·-c·a; b | c", "a|b|c", true, false},
		{"eval 'a' b", "eval·a·b", "a·b", true, false},
		{"eval $x", "eval·?$x", "", false, true},
		{"find . -exec grep -l x {} + -ok rm {} ';'", "find·.·-exec·grep·-l·x·{}·+·-ok·rm·{}·;", "grep·-l·x·{}|rm·{}", true, false},
		{"env -S 'rm x'", "env·-S·rm x", "", false, true},
		{"ls 'open", "", "", false, true},
	} {
		s := analyze(c.line)
		if got := strings.Join(primary(s), "|"); got != c.cmds {
			t.Errorf("analyze(%q) commands %q, want %q", c.line, got, c.cmds)
		}
		if got := strings.Join(derivedOf(s), "|"); got != c.derived {
			t.Errorf("analyze(%q) derived %q, want %q", c.line, got, c.derived)
		}
		if s.allowable() != c.allowable || s.opaque != c.opaque {
			t.Errorf("analyze(%q): allowable %v opaque %v, want %v %v", c.line, s.allowable(), s.opaque, c.allowable, c.opaque)
		}
	}
}

func TestNestingIsBounded(t *testing.T) {
	t.Parallel()
	line := "rm x"
	for range maxNesting + 2 {
		q, err := syntax.Quote(line, syntax.LangBash)
		if err != nil {
			t.Fatal(err)
		}
		line = "bash -c " + q
	}
	s := analyze(line)
	if !s.opaque {
		t.Fatalf("nesting past %d levels should be opaque: %+v", maxNesting, s)
	}
	r := Rules{Allow: []Rule{{Tool: "Bash"}}, Deny: []Rule{{Tool: "Bash", Pattern: "rm:*"}}}
	if d := r.Decide(Call{Tool: "Bash", Command: line}); d == Allow {
		t.Fatal("a deeply nested rm was allowed under a deny rule")
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"Read", "Read(src/**)", "Bash(git diff:*)", "Write(/tmp/**)", "Edit(a\\(b)", "Bash(npm test)", "Read(", ")", "Bash(echo \"(\")"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(s)
		if err != nil {
			var pe *Error
			if !errors.As(err, &pe) || pe.Code == "" || pe.Message == "" {
				t.Fatalf("Parse(%q): %v is not a coded *Error", s, err)
			}
			return
		}
		again, err := Parse(r.String())
		if err != nil || again != r {
			t.Fatalf("Parse(%q) = %+v; String %q parses to %+v, %v", s, r, r.String(), again, err)
		}
		// A parsed rule works in every list without panicking.
		rs := Rules{Allow: []Rule{r}, Ask: []Rule{r}, Deny: []Rule{r}, Workspace: "/ws"}
		for _, c := range []Call{{Tool: r.Tool, Path: "src/a.go"}, {Tool: r.Tool, Path: "/tmp/x"}, {Tool: "Bash", Command: "git diff"}} {
			if rs.Decide(c) == 0 {
				t.Fatal("no decision")
			}
		}
	})
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"git diff --stat", "a && b || c | d; e &", "echo $(rm x) `y` <(z)", "cat <<EOF\n$(a)\nEOF", "X=1 y > z 2>&1", "bash -c 'rm -rf /'", "find . -exec rm {} \\;", "sudo env FOO=1 timeout 5 rm", "f() { a; }; f", "for i in 1 2; do echo $i; done", "echo 'open", "$'\\x72m'",
		"printf -v 'a[$(id)]' 1", "read -ra'x[1]' <<< y", "[[ -v a[$(id)] || x -eq 1 ]]", "echo ${a[$(id)]} ${x:1:$n} ${!p} ${x@P}",
		"trap 'id' EXIT; command builtin printf -vq 1", "cat {a[b]}</dev/null", "jobs -x id; mapfile -C id -c1 a", "test \"$a\" \"$b\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		s := analyze(line)
		_, _ = ReadOnlyGit(line)
		for _, r := range RulesFor(Call{Tool: "Bash", Command: line}) {
			if got, err := Parse(r.String()); err != nil || got != r {
				t.Fatalf("RulesFor(%q) gave %q, which does not parse back: %v", line, r, err)
			}
		}
		// Each plain command, quoted back into a line, splits to itself.
		for _, c := range s.cmds {
			if c.derived {
				continue
			}
			parts := make([]string, 0, len(c.words))
			ok := true
			for _, w := range c.words {
				q, err := syntax.Quote(w.text, syntax.LangBash)
				if !w.lit || err != nil || strings.HasPrefix(q, "$'") {
					ok = false
					break
				}
				parts = append(parts, q)
			}
			if !ok {
				continue
			}
			back := analyze(strings.Join(parts, " "))
			got := primary(back)
			want := primary(script{cmds: []simple{c}})
			// Quoting adds nothing an allow rule cannot see (what a
			// command's own words do, such as env X=1, stays).
			if !back.parsed || (back.unvetted && !s.unvetted) || len(got) != 1 || got[0] != want[0] {
				t.Fatalf("command %q of %q quoted as %q splits to %q (parsed %v, unvetted %v)", want, line, strings.Join(parts, " "), got, back.parsed, back.unvetted)
			}
		}
	})
}
