package tools

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/vfs"
)

func editIn(path, old, new string) map[string]any {
	return map[string]any{"file_path": path, "old_string": old, "new_string": new}
}

func TestEditReplacesOnce(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	var sb strings.Builder
	for i := 1; i <= 20; i++ {
		fmt.Fprintf(&sb, "line %d\n", i)
	}
	p := wtFile(t, dir, "f.txt", []byte(sb.String()))
	wtMarkRead(t, env, "f.txt")
	res := wtOK(t, Edit{}, env, editIn("f.txt", "line 10\n", "ten\nTEN\n"))
	want := strings.Replace(sb.String(), "line 10\n", "ten\nTEN\n", 1)
	if got := wtContent(t, p); got != want {
		t.Fatalf("content %q", got)
	}
	text := wtText(res)
	for _, s := range []string{"Edited f.txt: replaced 1 occurrence.", "     6\tline 6", "    10\tten", "    11\tTEN", "    12\tline 11", "    15\tline 14"} {
		if !strings.Contains(text, s) {
			t.Fatalf("text lacks %q:\n%s", s, text)
		}
	}
	if strings.Contains(text, "line 5\n") || strings.Contains(text, "line 15") {
		t.Fatalf("snippet too wide:\n%s", text)
	}
	if !res.Changed || res.Rel != "f.txt" || len(res.Diff.Hunks) != 1 || res.Diff.Hunks[0].OldStart != 7 {
		t.Fatalf("result %+v", res.Diff)
	}
	wtDecodeDiff(t, res)
	// The edit recorded a full view: a second edit needs no Read.
	wtOK(t, Edit{}, env, editIn("f.txt", "TEN", "10"))
	e, _ := env.State.Lookup(p)
	info, _ := env.FS.Stat(p)
	if e.Partial || e.Stamp != info.Stamp || e.Hash != HashBytes([]byte(wtContent(t, p))) || e.View != "written by Edit" {
		t.Fatalf("state %+v", e)
	}
}

func TestEditContract(t *testing.T) {
	t.Parallel()
	t.Run("never read", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeNotRead)
		if wtContent(t, p) != "abc\n" {
			t.Fatal("changed")
		}
	})
	t.Run("partial read", func(t *testing.T) {
		// Any current window permits Edit (large_edit_test.go has more).
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		e := wtMarkRead(t, env, "f.txt")
		env.State = NewReadState()
		e.Partial = true
		env.State.Record(e)
		wtOK(t, Edit{}, env, editIn("f.txt", "b", "x"))
		if wtContent(t, p) != "axc\n" {
			t.Fatal("not edited")
		}
	})
	t.Run("changed since read", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		if err := os.WriteFile(p, []byte("abcd\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeStale)
		if wtContent(t, p) != "abcd\n" {
			t.Fatal("changed")
		}
	})
	t.Run("touched without change", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		wtTouch(t, p, time.Now().Add(time.Minute))
		wtOK(t, Edit{}, env, editIn("f.txt", "b", "x"))
		if wtContent(t, p) != "axc\n" {
			t.Fatal("not edited")
		}
	})
	t.Run("changed with restored mtime", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		e := wtMarkRead(t, env, "f.txt")
		wtModifyKeepMtime(t, env, p, []byte("abd\n"), e)
		wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeStale)
		if wtContent(t, p) != "abd\n" {
			t.Fatal("changed")
		}
	})
	t.Run("mtime in the future", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtTouch(t, p, time.Now().Add(365*24*time.Hour))
		e := wtMarkRead(t, env, "f.txt")
		// A change that keeps the future mtime is caught…
		wtModifyKeepMtime(t, env, p, []byte("abd\n"), e)
		wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeStale)
		// …and after a new Read the edit goes through, though now < mtime.
		wtMarkRead(t, env, "f.txt")
		wtOK(t, Edit{}, env, editIn("f.txt", "b", "x"))
		if wtContent(t, p) != "axd\n" {
			t.Fatal("not edited")
		}
	})
	t.Run("deleted since read", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		os.Remove(p)
		wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeNotFound)
	})
}

func TestEditNoChange(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	wtFile(t, dir, "f.txt", []byte("abc\n"))
	wtMarkRead(t, env, "f.txt")
	wtCode(t, Edit{}, env, editIn("f.txt", "b", "b"), CodeNoChange)
	// Equal once line endings are normalised.
	wtCode(t, Edit{}, env, editIn("f.txt", "a\r\nb", "a\nb"), CodeNoChange)
}

func TestEditEmptyOldString(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	// Creates a missing file (and its folders), no Read needed.
	res := wtOK(t, Edit{}, env, editIn("new/dir/f.txt", "", "hello\nworld\n"))
	if got := wtContent(t, filepath.Join(dir, "new/dir/f.txt")); got != "hello\nworld\n" {
		t.Fatalf("content %q", got)
	}
	if !res.Diff.IsNewFile || !strings.Contains(wtText(res), "Created new/dir/f.txt (2 lines)") {
		t.Fatalf("result %+v %q", res.Diff, wtText(res))
	}
	// An existing empty file needs the Read, then is filled.
	p := wtFile(t, dir, "empty.txt", nil)
	wtCode(t, Edit{}, env, editIn("empty.txt", "", "x\n"), CodeNotRead)
	wtMarkRead(t, env, "empty.txt")
	wtOK(t, Edit{}, env, editIn("empty.txt", "", "x\n"))
	if wtContent(t, p) != "x\n" {
		t.Fatal("not filled")
	}
	// A file with content: code 16, even whitespace.
	for _, content := range []string{"x\n", "\n", "  "} {
		q := wtFile(t, dir, "full.txt", []byte(content))
		wtMarkRead(t, env, "full.txt")
		msg := wtCode(t, Edit{}, env, editIn("full.txt", "", "y"), CodeExists)
		if !strings.Contains(msg, "Write") || wtContent(t, q) != content {
			t.Fatalf("message %q", msg)
		}
	}
	// A BOM-only file is empty text: it is filled and keeps its BOM.
	b := wtFile(t, dir, "bom.txt", []byte("\xEF\xBB\xBF"))
	wtMarkRead(t, env, "bom.txt")
	wtOK(t, Edit{}, env, editIn("bom.txt", "", "z\n"))
	if wtContent(t, b) != "\xEF\xBB\xBFz\n" {
		t.Fatalf("content %q", wtContent(t, b))
	}
	// A non-empty old_string on a missing file.
	wtCode(t, Edit{}, env, editIn("missing.txt", "a", "b"), CodeNotFound)
}

func TestEditAmbiguous(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.go", []byte("x := 1\ny := 2\nx := 1\nz := 3\nx := 1\n"))
	wtMarkRead(t, env, "f.go")
	msg := wtCode(t, Edit{}, env, editIn("f.go", "x := 1", "x := 9"), CodeAmbiguous)
	if !strings.Contains(msg, "3 times") || !strings.Contains(msg, "lines 1, 3, 5") || !strings.Contains(msg, "replace_all") {
		t.Fatalf("message %q", msg)
	}
	in := editIn("f.go", "x := 1", "x := 9")
	in["replace_all"] = true
	res := wtOK(t, Edit{}, env, in)
	if got := wtContent(t, p); got != "x := 9\ny := 2\nx := 9\nz := 3\nx := 9\n" {
		t.Fatalf("content %q", got)
	}
	if !strings.Contains(wtText(res), "replaced 3 occurrences") || len(res.Diff.Hunks) != 1 {
		t.Fatalf("result %q %+v", wtText(res), res.Diff)
	}
	// Overlapping matches are ambiguous too.
	wtFile(t, dir, "o.txt", []byte("aaa\n"))
	wtMarkRead(t, env, "o.txt")
	msg = wtCode(t, Edit{}, env, editIn("o.txt", "aa", "b"), CodeAmbiguous)
	if !strings.Contains(msg, "overlapping") {
		t.Fatalf("message %q", msg)
	}
}

func TestEditNearIdenticalBlocks(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	src := "func a() {\n\tif x {\n\t\treturn 1\n\t}\n}\n\nfunc b() {\n\tif x {\n\t\treturn 2\n\t}\n}\n"
	p := wtFile(t, dir, "f.go", []byte(src))
	wtMarkRead(t, env, "f.go")
	// The exact block is chosen, never the near one.
	wtOK(t, Edit{}, env, editIn("f.go", "\tif x {\n\t\treturn 2\n\t}", "\tif y {\n\t\treturn 2\n\t}"))
	want := strings.Replace(src, "\tif x {\n\t\treturn 2", "\tif y {\n\t\treturn 2", 1)
	if got := wtContent(t, p); got != want {
		t.Fatalf("content %q", got)
	}
	// Text common to both blocks is ambiguous.
	wtFile(t, dir, "g.go", []byte(src))
	wtMarkRead(t, env, "g.go")
	wtCode(t, Edit{}, env, editIn("g.go", "\tif x {\n\t\treturn", "\tif z {\n\t\treturn"), CodeAmbiguous)
	// Something neither block has exactly is no match, not a guess; the
	// message points at the nearest block.
	msg := wtCode(t, Edit{}, env, editIn("g.go", "\tif x {\n\t\treturn 3\n\t}", "nope"), CodeNoMatch)
	if !strings.Contains(msg, "at line 2") && !strings.Contains(msg, "at line 8") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, filepath.Join(dir, "g.go")) != src {
		t.Fatal("changed")
	}
}

func TestEditNoMatchSaysWhere(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	var sb strings.Builder
	for i := range 500 {
		fmt.Fprintf(&sb, "\tvalue%d := compute(%d)\n", i, i)
	}
	wtFile(t, dir, "f.go", []byte(sb.String()))
	wtMarkRead(t, env, "f.go")
	// Indented with spaces instead of a tab.
	msg := wtCode(t, Edit{}, env, editIn("f.go", "    value321 := compute(321)", "x"), CodeNoMatch)
	if !strings.Contains(msg, "at line 322") || !strings.Contains(msg, "whitespace or indentation") || !strings.Contains(msg, "value321") {
		t.Fatalf("message %q", msg)
	}
	// A changed line: still found by its words.
	msg = wtCode(t, Edit{}, env, editIn("f.go", "\tvalue400 := computed(400)", "x"), CodeNoMatch)
	if !strings.Contains(msg, "at line 401") || !strings.Contains(msg, "Read the file again") {
		t.Fatalf("message %q", msg)
	}
	// Nothing alike at all.
	msg = wtCode(t, Edit{}, env, editIn("f.go", "zz", "x"), CodeNoMatch)
	if !strings.Contains(msg, "No part of the file resembles it") {
		t.Fatalf("message %q", msg)
	}
}

func TestEditLiteralReplacement(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("price = X\n"))
	wtMarkRead(t, env, "f.txt")
	lit := `$& $1 $$ ${1} \n \\ \t $0`
	wtOK(t, Edit{}, env, editIn("f.txt", "X", lit))
	if got := wtContent(t, p); got != "price = "+lit+"\n" {
		t.Fatalf("content %q", got)
	}
	// And $-text in old_string is matched literally.
	wtOK(t, Edit{}, env, editIn("f.txt", `$& $1`, "ok"))
	if got := wtContent(t, p); !strings.HasPrefix(got, "price = ok $$") {
		t.Fatalf("content %q", got)
	}
}

func TestEditTrailingWhitespace(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	for _, c := range []struct {
		name string
		want string
	}{
		{"f.go", "a\nx\ny\nc\n"},
		{"f.md", "a\nx  \ny\t\nc\n"},
		{"f.MDX", "a\nx  \ny\t\nc\n"},
		{"f.markdown.txt", "a\nx\ny\nc\n"},
	} {
		p := wtFile(t, dir, c.name, []byte("a\nb\nc\n"))
		wtMarkRead(t, env, c.name)
		wtOK(t, Edit{}, env, editIn(c.name, "b", "x  \ny\t"))
		if got := wtContent(t, p); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestEditCurlyQuotes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, old, new, want, note string
	}{
		{"spec example", "say “Hello, world” now\n", `"Hello, world"`, `"Hi, world"`, "say “Hi, world” now\n", "curly quotes"},
		{"apostrophes and singles", "it’s ‘fine’\n", `it's 'fine'`, `it's 'great', isn't it`, "it’s ‘great’, isn’t it\n", "curly quotes"},
		{"file straight, agent curly", `msg := "hi"` + "\n", `msg := “hi”`, `msg := “hello”`, `msg := "hello"` + "\n", "curly quotes"},
		{"opening after bracket", "(“a”)\n", `("a")`, `("b" "c")`, "(“b” “c”)\n", "curly quotes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, dir := wtEnv(t)
			p := wtFile(t, dir, "f.txt", []byte(c.file))
			wtMarkRead(t, env, "f.txt")
			res := wtOK(t, Edit{}, env, editIn("f.txt", c.old, c.new))
			if got := wtContent(t, p); got != c.want {
				t.Fatalf("content %q, want %q", got, c.want)
			}
			if !strings.Contains(wtText(res), c.note) {
				t.Fatalf("text %q", wtText(res))
			}
		})
	}
}

func TestEditExactMatchNeverAddsCurlyQuotes(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	// Curly quotes elsewhere in the file; the edited code matches exactly.
	src := "// “Docs” say so\nx := \"a\"\n"
	p := wtFile(t, dir, "f.go", []byte(src))
	wtMarkRead(t, env, "f.go")
	res := wtOK(t, Edit{}, env, editIn("f.go", `x := "a"`, `x := "b" + 'c'`))
	if got := wtContent(t, p); got != "// “Docs” say so\nx := \"b\" + 'c'\n" {
		t.Fatalf("content %q", got)
	}
	if strings.Contains(wtText(res), "curly") {
		t.Fatalf("text %q", wtText(res))
	}
}

func TestEditCurlyQuoteAmbiguity(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	// Two spans that differ only in their quotes' style match after
	// normalisation: two matches, code 9, nothing written.
	src := "say “hi”\nsay ”hi“\n"
	p := wtFile(t, dir, "f.txt", []byte(src))
	wtMarkRead(t, env, "f.txt")
	msg := wtCode(t, Edit{}, env, editIn("f.txt", `say "hi"`, `say "yo"`), CodeAmbiguous)
	if !strings.Contains(msg, "2 times") || !strings.Contains(msg, "lines 1, 2") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != src {
		t.Fatal("changed")
	}
	in := editIn("f.txt", `say "hi"`, `say "yo"`)
	in["replace_all"] = true
	wtOK(t, Edit{}, env, in)
	if got := wtContent(t, p); got != "say “yo”\nsay “yo”\n" {
		t.Fatalf("content %q", got)
	}
}

func TestEditDesanitize(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	src := "<function_results>\n<name>x</name>\n</function_results>\n\nHuman: hi\n"
	p := wtFile(t, dir, "f.txt", []byte(src))
	wtMarkRead(t, env, "f.txt")
	res := wtOK(t, Edit{}, env, editIn("f.txt", "<fnr>\n<n>x</n>", "<fnr>\n<n>y</n>"))
	if got := wtContent(t, p); got != "<function_results>\n<name>y</name>\n</function_results>\n\nHuman: hi\n" {
		t.Fatalf("content %q", got)
	}
	if !strings.Contains(wtText(res), "sanitised") {
		t.Fatalf("text %q", wtText(res))
	}
	wtOK(t, Edit{}, env, editIn("f.txt", "\n\nH: hi", "\n\nH: hello"))
	if got := wtContent(t, p); !strings.HasSuffix(got, "\n\nHuman: hello\n") {
		t.Fatalf("content %q", got)
	}
	// An exact match wins over the table: a file that really has "<n>".
	q := wtFile(t, dir, "g.txt", []byte("<n> and <name>\n"))
	wtMarkRead(t, env, "g.txt")
	wtOK(t, Edit{}, env, editIn("g.txt", "<n>", "<m>"))
	if got := wtContent(t, q); got != "<m> and <name>\n" {
		t.Fatalf("content %q", got)
	}
}

func TestEditLineEndings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, file, old, new, want string
	}{
		{"crlf", "one\r\ntwo\r\nthree\r\n", "two\nthree", "2\n3\n3.5", "one\r\n2\r\n3\r\n3.5\r\n"},
		{"crlf in old_string", "one\r\ntwo\r\n", "one\r\ntwo", "uno\r\ndos", "uno\r\ndos\r\n"},
		{"mixed keeps each line", "a\nb\r\nc\nd\r\n", "c", "c1\nc2", "a\nb\r\nc1\nc2\nd\r\n"},
		{"mixed crlf line", "a\nb\r\nc\nd\r\n", "b", "b1\nb2", "a\nb1\r\nb2\r\nc\nd\r\n"},
		{"no final newline", "a\nb", "b", "b\nc", "a\nb\nc"},
		{"no final newline crlf", "a\r\nb", "b", "b\nc", "a\r\nb\r\nc"},
		{"lone cr", "a\rb\rc", "b", "x\ny", "a\rx\ry\rc"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, dir := wtEnv(t)
			p := wtFile(t, dir, "f.txt", []byte(c.file))
			wtMarkRead(t, env, "f.txt")
			res := wtOK(t, Edit{}, env, editIn("f.txt", c.old, c.new))
			if got := wtContent(t, p); got != c.want {
				t.Fatalf("content %q, want %q", got, c.want)
			}
			wtDecodeDiff(t, res)
			for _, h := range res.Diff.Hunks {
				for _, l := range h.Lines {
					if strings.ContainsRune(l.Text, '\r') {
						t.Fatalf("CR in diff line %q", l.Text)
					}
				}
			}
		})
	}
}

// sjis encodes 日本語 and 表 in Shift-JIS: 表's second byte is a backslash.
const (
	sjisNihongo = "\x93\xfa\x96\x7b\x8c\xea"
	sjisHyou    = "\x95\x5c"
)

func TestEditEncodings(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		file      []byte
		old, new  string
		want      []byte
		wantCode  int
		wantInMsg string
	}{
		{name: "utf8 bom", file: []byte("\xEF\xBB\xBFa\r\nb\r\n"), old: "b", new: "é\nè", want: []byte("\xEF\xBB\xBFa\r\né\r\nè\r\n")},
		{name: "utf16le", file: []byte("\xFF\xFEa\x00\r\x00\n\x00b\x00"), old: "b", new: "✓\nc", want: []byte("\xFF\xFEa\x00\r\x00\n\x00\x13\x27\r\x00\n\x00c\x00")},
		{name: "utf16be", file: []byte("\xFE\xFF\x00a\x00\n\x00b"), old: "a", new: "ü", want: []byte("\xFE\xFF\x00\xfc\x00\n\x00b")},
		{name: "cp1252 ascii edit", file: []byte("caf\xe9 = 1\r\nna\xefve = 2\r\n"), old: "= 2", new: "= 3\n# end", want: []byte("caf\xe9 = 1\r\nna\xefve = 3\r\n# end\r\n")},
		{name: "cp1252 non-ascii new", file: []byte("caf\xe9 = 1\n"), old: "= 1", new: "= é", wantCode: CodeEncoding, wantInMsg: "not UTF-8"},
		{name: "cp1252 non-ascii old", file: []byte("caf\xe9 = 1\n"), old: "café", new: "cafe", wantCode: CodeEncoding, wantInMsg: "ASCII"},
		{name: "shift-jis ascii edit", file: []byte("title = \"" + sjisNihongo + "\"\nsize = 10\n"), old: "size = 10", new: "size = 12", want: []byte("title = \"" + sjisNihongo + "\"\nsize = 12\n")},
		{name: "shift-jis split char", file: []byte("s = \"" + sjisHyou + "n\"\n"), old: "\\n", new: "\\t", wantCode: CodeEncoding, wantInMsg: "double-byte"},
		{name: "nul bytes", file: []byte("a\x00b\n"), old: "a", new: "c", wantCode: CodeEncoding, wantInMsg: "NUL"},
		{name: "broken utf16", file: []byte("\xFF\xFE\x00\xDCa\x00"), old: "a", new: "c", wantCode: CodeEncoding, wantInMsg: "not valid UTF-16"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, dir := wtEnv(t)
			p := wtFile(t, dir, "f.txt", c.file)
			wtMarkRead(t, env, "f.txt")
			if c.wantCode != 0 {
				msg := wtCode(t, Edit{}, env, editIn("f.txt", c.old, c.new), c.wantCode)
				if !strings.Contains(msg, c.wantInMsg) {
					t.Fatalf("message %q", msg)
				}
				if wtContent(t, p) != string(c.file) {
					t.Fatal("changed")
				}
				return
			}
			res := wtOK(t, Edit{}, env, editIn("f.txt", c.old, c.new))
			if got := wtContent(t, p); got != string(c.want) {
				t.Fatalf("content % x\nwant    % x", got, c.want)
			}
			wtDecodeDiff(t, res)
		})
	}
}

// TestEditScriptThroughSymlink: a 0755 script edited through a symlink keeps
// its mode, and the link stays a link.
func TestEditScriptThroughSymlink(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	target := wtFile(t, dir, "bin/real.sh", []byte("#!/bin/sh\necho one\n"))
	if err := os.Chmod(target, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "run.sh")
	if err := os.Symlink("bin/real.sh", link); err != nil {
		t.Fatal(err)
	}
	wtMarkRead(t, env, "run.sh")
	res := wtOK(t, Edit{}, env, editIn("run.sh", "echo one", "echo two"))
	fi, err := os.Lstat(link)
	if err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v %v", fi.Mode(), err)
	}
	fi, err = os.Stat(target)
	if err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("mode %v %v", fi.Mode(), err)
	}
	if wtContent(t, target) != "#!/bin/sh\necho two\n" || res.Path != target {
		t.Fatalf("content %q, path %s", wtContent(t, target), res.Path)
	}
	// The recorded view is the target's: a second edit through either name works.
	wtOK(t, Edit{}, env, editIn("bin/real.sh", "two", "three"))
	wtOK(t, Edit{}, env, editIn("run.sh", "three", "four"))
}

func TestEditReadOnlyFile(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "ro.txt", []byte("abc\n"))
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	wtMarkRead(t, env, "ro.txt")
	msg := wtCode(t, Edit{}, env, editIn("ro.txt", "b", "x"), CodePermission)
	if !strings.Contains(msg, "read-only") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != "abc\n" {
		t.Fatal("changed")
	}
}

func TestEditApproveAndHistory(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("abc\n"))
	wtMarkRead(t, env, "f.txt")
	h := &wtHistory{}
	env.History = h
	env.Approve = func(_ context.Context, a Approval) error {
		if a.Tool != "Edit" || a.Diff == nil || len(a.Diff.Hunks) != 1 || a.IsNew {
			t.Errorf("approval %+v", a)
		}
		return Errorf(CodeDenied, "no")
	}
	wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeDenied)
	if wtContent(t, p) != "abc\n" || len(h.calls) != 0 {
		t.Fatal("changed or tracked")
	}
	env.Approve = nil
	wtOK(t, Edit{}, env, editIn("f.txt", "b", "x"))
	if len(h.calls) != 1 || string(h.calls[0].old) != "abc\n" || h.calls[0].onDisk != "abc\n" {
		t.Fatalf("history %+v", h.calls)
	}
}

func TestEditInvalidInput(t *testing.T) {
	t.Parallel()
	env, _ := wtEnv(t)
	for _, c := range []struct{ in, want string }{
		{`{"file_path":"a","old_string":"x","new_string":"y","replace_all":"yes"}`, `"replace_all" must be a boolean`},
		{`{"file_path":"a","old_string":"x","new_string":"y","regex":true}`, `unknown field "regex"`},
		{`{"file_path":"a","new_string":"y"}`, "old_string is required"},
		{`{"file_path":"a","old_string":"y"}`, "new_string is required"},
		{`{"old_string":"x","new_string":"y"}`, "file_path is required"},
		{`{"file_path":"a","old_string":1,"new_string":"y"}`, `"old_string" must be a string`},
	} {
		_, err := Edit{}.Run(context.Background(), env, []byte(c.in))
		if CodeOf(err) != CodeInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want code 1 with %q", c.in, err, c.want)
		}
	}
}

// TestEditTwoEditsOneRead: an Edit computed from an old version loses to
// the one that wrote first, even though that one recorded its new version
// in the shared state meanwhile.
func TestEditTwoEditsOneRead(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("a\nb\n"))
	wtMarkRead(t, env, "f.txt")
	asked, release := make(chan struct{}), make(chan struct{})
	slowEnv := *env
	slowEnv.Approve = func(context.Context, Approval) error { close(asked); <-release; return nil }
	errc := make(chan error, 1)
	go func() {
		_, err := wtRun(t, Edit{}, &slowEnv, editIn("f.txt", "a", "A"))
		errc <- err
	}()
	<-asked
	wtOK(t, Edit{}, env, editIn("f.txt", "b", "B"))
	close(release)
	if err := <-errc; CodeOf(err) != CodeStale {
		t.Fatalf("slow edit: %v, want code 3", err)
	}
	if got := wtContent(t, p); got != "a\nB\n" {
		t.Fatalf("content %q", got)
	}
}

// TestEditEightParallel: eight Edits of one file, each changing its own
// line, from one read. Each is applied or gets code 3; the file holds
// exactly the applied ones: no edit is lost silently.
func TestEditEightParallel(t *testing.T) {
	t.Parallel()
	for round := range 20 {
		env, dir := wtEnv(t)
		var sb strings.Builder
		for i := range 8 {
			fmt.Fprintf(&sb, "line %d\n", i)
		}
		p := wtFile(t, dir, "f.txt", []byte(sb.String()))
		wtMarkRead(t, env, "f.txt")
		errs := make([]error, 8)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i := range 8 {
			wg.Go(func() {
				<-start
				_, errs[i] = wtRun(t, Edit{}, env, editIn("f.txt", fmt.Sprintf("line %d\n", i), fmt.Sprintf("EDITED %d\n", i)))
			})
		}
		close(start)
		wg.Wait()
		got := wtContent(t, p)
		applied := 0
		for i, err := range errs {
			edited := strings.Contains(got, fmt.Sprintf("EDITED %d\n", i))
			switch {
			case err == nil && edited:
				applied++
			case CodeOf(err) == CodeStale && !edited && strings.Contains(got, fmt.Sprintf("line %d\n", i)):
			default:
				t.Fatalf("round %d edit %d: err %v, in file %v:\n%s", round, i, err, edited, got)
			}
		}
		if applied == 0 {
			t.Fatalf("round %d: nothing applied", round)
		}
	}
}

func TestEditSpecialCases(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	if err := os.Mkdir(filepath.Join(dir, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	wtCode(t, Edit{}, env, editIn("d", "a", "b"), CodeIsDirectory)
	wtCode(t, Edit{}, env, editIn("../x", "a", "b"), CodeOutside)
}

// TestEditReplaceAllOnLongLine: many matches on one long line of a CRLF
// file. Every per-match scan is bounded by the distance to the next match;
// a per-match scan of the line would make this take hours.
func TestEditReplaceAllOnLongLine(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	const n = 200000
	long := strings.Repeat("ab ", n)
	p := wtFile(t, dir, "min.js", []byte("first\r\n"+long+"\r\nlast"))
	wtMarkRead(t, env, "min.js")
	in := editIn("min.js", "ab", "x\ny")
	in["replace_all"] = true
	res := wtOK(t, Edit{}, env, in)
	got := wtContent(t, p)
	if want := "first\r\n" + strings.Repeat("x\r\ny ", n) + "\r\nlast"; got != want {
		t.Fatalf("content differs (len %d, want %d)", len(got), len(want))
	}
	if !strings.Contains(wtText(res), fmt.Sprintf("replaced %d occurrences", n)) {
		t.Fatalf("text %q", wtText(res)[:200])
	}
	wtDecodeDiff(t, res)
	if !res.Diff.Truncated {
		t.Fatal("a diff of 400,000 lines is not capped")
	}
}

// TestFinalCheckUnderLock: what happens between the pre-check and the write
// (here: while the permission prompt is open) is caught by the final check.
func TestFinalCheckUnderLock(t *testing.T) {
	t.Parallel()
	t.Run("created meanwhile", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := filepath.Join(dir, "new.txt")
		env.Approve = func(context.Context, Approval) error { return os.WriteFile(p, []byte("theirs\n"), 0o644) }
		wtCode(t, Write{}, env, map[string]any{"file_path": "new.txt", "content": "mine\n"}, CodeStale)
		if wtContent(t, p) != "theirs\n" {
			t.Fatal("overwritten")
		}
	})
	t.Run("deleted meanwhile", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		env.Approve = func(context.Context, Approval) error { return os.Remove(p) }
		msg := wtCode(t, Edit{}, env, editIn("f.txt", "b", "x"), CodeStale)
		if !strings.Contains(msg, "deleted") {
			t.Fatalf("message %q", msg)
		}
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Fatal("recreated")
		}
	})
	t.Run("touched meanwhile", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		env.Approve = func(context.Context, Approval) error { return os.Chtimes(p, time.Now(), time.Now().Add(time.Hour)) }
		wtOK(t, Edit{}, env, editIn("f.txt", "b", "x"))
		if wtContent(t, p) != "axc\n" {
			t.Fatal("not edited")
		}
	})
	t.Run("changed meanwhile", func(t *testing.T) {
		env, dir := wtEnv(t)
		p := wtFile(t, dir, "f.txt", []byte("abc\n"))
		wtMarkRead(t, env, "f.txt")
		env.Approve = func(context.Context, Approval) error { return os.WriteFile(p, []byte("abcd\n"), 0o644) }
		wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "x\n"}, CodeStale)
		if wtContent(t, p) != "abcd\n" {
			t.Fatal("overwritten")
		}
	})
}

// TestEditExtraRoot: files in an allowed extra root are named absolutely.
func TestEditExtraRoot(t *testing.T) {
	t.Parallel()
	ws, extra := t.TempDir(), t.TempDir()
	fsys, err := vfs.NewLocal(ws, extra)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	env := &Env{FS: fsys, State: NewReadState()}
	p := wtFile(t, fsys.Roots()[1], "notes.txt", []byte("abc\n"))
	wtMarkRead(t, env, p)
	res := wtOK(t, Edit{}, env, editIn(p, "b", "x"))
	if !strings.Contains(wtText(res), "Edited "+p+":") || res.Rel != "notes.txt" || wtContent(t, p) != "axc\n" {
		t.Fatalf("result %q %+v", wtText(res), res)
	}
}
