package tools

import (
	"context"
	"encoding/json"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Edits are exact: trailing whitespace of new_string is stripped only where
// it would end a line of the result, so an edit that ends mid-line keeps its
// spaces (issue 17, item 3).

func TestEditMidLineKeepsSpace(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.go", []byte("func f() int {\n\treturn x\n}\n"))
	wtMarkRead(t, env, "f.go")
	wtOK(t, Edit{}, env, editIn("f.go", "return ", "yield "))
	if got, want := wtContent(t, p), "func f() int {\n\tyield x\n}\n"; got != want {
		t.Fatalf("content %q, want %q", got, want)
	}
}

func TestEditExactWhitespace(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, path, file, old, new string
		all                        bool
		want                       string
	}{
		{"mid-line tab", "f.txt", "a\tb\n", "a\t", "c\t", false, "c\tb\n"},
		{"line end stripped", "f.txt", "return x\nnext\n", "n x", "n y  \t", false, "return y\nnext\n"},
		{"end of file stripped", "f.txt", "return x", "x", "y  ", false, "return y"},
		{"inner lines stripped, last mid-line kept", "f.txt", "a b c\n", "b", "1  \n2\t\n3 ", false, "a 1\n2\n3  c\n"},
		{"inner lines stripped, last at line end stripped", "f.txt", "a b\nc\n", "b", "1  \n2 ", false, "a 1\n2\nc\n"},
		{"new_string ending in newline", "f.txt", "a\nb\nc\n", "b\n", "x  \n", false, "a\nx\nc\n"},
		{"crlf mid-line", "f.txt", "one\r\nreturn x\r\ntwo\r\n", "return ", "yield ", false, "one\r\nyield x\r\ntwo\r\n"},
		{"crlf line end", "f.txt", "one\r\nreturn x\r\ntwo\r\n", "x", "y \t", false, "one\r\nreturn y\r\ntwo\r\n"},
		{"crlf multi-line", "f.txt", "one\r\nreturn x\r\ntwo\r\n", "return ", "a  \nyield ", false, "one\r\na\r\nyield x\r\ntwo\r\n"},
		{"lone cr line end", "f.txt", "a x\rb\r", "x", "y ", false, "a y\rb\r"},
		{"replace_all mixed contexts", "f.txt", "x y\nx\na x\nx", "x", "z ", true, "z  y\nz\na z\nz"},
		{"replace_all crlf mixed", "f.txt", "x y\r\nx\r\n", "x", "z\t", true, "z\t y\r\nz\r\n"},
		{"replace_all adjacent", "f.txt", "aa\n", "a", "b ", true, "b b\n"},
		{"replace_all adjacent, next starts a line", "f.txt", "aa\n", "a", "\nb ", true, "\nb\nb\n"},
		{"markdown keeps all", "f.md", "return x\ny\n", "x\ny", "z  \nw  ", false, "return z  \nw  \n"},
		{"markdown mid-line", "f.md", "return x\n", "return ", "yield ", false, "yield x\n"},
		{"spaces before existing spaces kept", "f.txt", "foo   \n", "foo", "bar ", false, "bar    \n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, dir := wtEnv(t)
			p := wtFile(t, dir, c.path, []byte(c.file))
			wtMarkRead(t, env, c.path)
			in := editIn(c.path, c.old, c.new)
			if c.all {
				in["replace_all"] = true
			}
			res := wtOK(t, Edit{}, env, in)
			if got := wtContent(t, p); got != c.want {
				t.Fatalf("content %q, want %q", got, c.want)
			}
			wtDecodeDiff(t, res)
		})
	}
}

func TestEditCreateStripsTrailingSpace(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	wtOK(t, Edit{}, env, editIn("new.txt", "", "a  \nb\t"))
	if got := wtContent(t, dir+"/new.txt"); got != "a\nb" {
		t.Fatalf("content %q", got)
	}
	wtOK(t, Edit{}, env, editIn("new.md", "", "a  \nb  "))
	if got := wtContent(t, dir+"/new.md"); got != "a  \nb  " {
		t.Fatalf("content %q", got)
	}
}

// trimLineEnds removes spaces and tabs at the end of every line, keeping
// each line's CR of a CRLF.
func trimLineEnds(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		cr := strings.HasSuffix(l, "\r")
		l = strings.TrimRight(strings.TrimSuffix(l, "\r"), " \t")
		if cr {
			l += "\r"
		}
		lines[i] = l
	}
	return strings.Join(lines, "\n")
}

// editExactRandText is random text of words, spaces and tabs, no newlines.
func editExactRandText(r *rand.Rand, maxTokens int) string {
	words := []string{"a", "b", "x", "return", "yield", "foo", "ab", "ba", "if", "(", ")", "=", ";"}
	var sb strings.Builder
	for range r.Intn(maxTokens + 1) {
		switch r.Intn(4) {
		case 0:
			sb.WriteString(strings.Repeat(" ", 1+r.Intn(3)))
		case 1:
			sb.WriteString("\t")
		default:
			sb.WriteString(words[r.Intn(len(words))])
		}
	}
	return sb.String()
}

// TestEditExactProperty: for random files (LF and CRLF) and random
// single-line edits of a unique substring, Edit's result is strings.Replace
// of old_string by new_string apart from whitespace at line ends; and more
// precisely, exactly that with new_string's trailing whitespace removed if,
// and only if, the match ends a line.
func TestEditExactProperty(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewSource(17))
	cases := 2000
	if testing.Short() {
		cases = 200
	}
	// The cases are drawn first, in one sequence, then run in parallel
	// shards: each Edit waits on the disk (the write is synced), so the
	// shards overlap the waits.
	type exactCase struct{ file, old, repl, plain, want string }
	var all []exactCase
	for try := 0; len(all) < cases && try < 100*cases; try++ {
		nl := "\n"
		if r.Intn(2) == 0 {
			nl = "\r\n"
		}
		lines := make([]string, 1+r.Intn(6))
		for i := range lines {
			lines[i] = editExactRandText(r, 8)
		}
		file := strings.Join(lines, nl)
		if r.Intn(3) > 0 {
			file += nl
		}
		// old_string: a substring of one line, unique in the file (no
		// overlapping match either).
		line := lines[r.Intn(len(lines))]
		if line == "" {
			continue
		}
		a := r.Intn(len(line))
		b := a + 1 + r.Intn(len(line)-a)
		old := line[a:b]
		at := strings.Index(file, old)
		if at < 0 || strings.Contains(file[at+1:], old) {
			continue
		}
		repl := editExactRandText(r, 4)
		if r.Intn(2) == 0 {
			repl += strings.Repeat(" \t"[r.Intn(2):r.Intn(2)+1], 1+r.Intn(3))
		}
		if repl == old {
			continue
		}
		plain := strings.Replace(file, old, repl, 1)
		end := at + len(old)
		endsLine := end == len(file) || file[end] == '\n' || file[end] == '\r'
		want := plain
		if endsLine {
			want = strings.Replace(file, old, strings.TrimRight(repl, " \t"), 1)
		}

		all = append(all, exactCase{file, old, repl, plain, want})
	}
	if len(all) < cases {
		t.Fatalf("only %d cases generated", len(all))
	}
	// Goroutines rather than parallel subtests: -parallel (GOMAXPROCS by
	// default) would bound the overlap by the cores, not by the disk.
	const shards = 8
	var wg sync.WaitGroup
	for shard := range shards {
		env, dir := wtEnv(t)
		wg.Go(func() {
			for i := shard; i < len(all); i += shards {
				if !exactRun(t, env, dir, i, all[i].file, all[i].old, all[i].repl, all[i].plain, all[i].want) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// exactRun runs one case of TestEditExactProperty; it reports false on a
// failure (reported with t.Errorf: it runs on a goroutine of the test).
func exactRun(t *testing.T, env *Env, dir string, i int, file, old, repl, plain, want string) bool {
	p := filepath.Join(dir, "f.txt")
	if err := os.WriteFile(p, []byte(file), 0o644); err != nil {
		t.Errorf("case %d: %v", i, err)
		return false
	}
	info, err := env.FS.Stat("f.txt")
	if err != nil {
		t.Errorf("case %d: %v", i, err)
		return false
	}
	env.State.Record(ReadEntry{Path: info.Path, Stamp: info.Stamp, Hash: HashBytes([]byte(file)), View: "lines 1-2000"})
	raw, err := json.Marshal(editIn("f.txt", old, repl))
	if err != nil {
		t.Errorf("case %d: %v", i, err)
		return false
	}
	_, err = Edit{}.Run(context.Background(), env, raw)
	if want == file {
		if CodeOf(err) != CodeNoChange {
			t.Errorf("case %d: file %q, %q → %q: got %v, want code %d", i, file, old, repl, err, CodeNoChange)
			return false
		}
		return true
	}
	if err != nil {
		t.Errorf("case %d: file %q, %q → %q: %v", i, file, old, repl, err)
		return false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Errorf("case %d: %v", i, err)
		return false
	}
	got := string(b)
	if trimLineEnds(got) != trimLineEnds(plain) {
		t.Errorf("case %d: file %q, %q → %q: got %q, want %q modulo line-end whitespace", i, file, old, repl, got, plain)
		return false
	}
	if got != want {
		t.Errorf("case %d: file %q, %q → %q: got %q, want %q", i, file, old, repl, got, want)
		return false
	}
	return true
}
