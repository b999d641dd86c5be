package tools_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/ferry-dev/ferry/internal/tokencount"
	"github.com/ferry-dev/ferry/internal/tools"
	"github.com/ferry-dev/ferry/internal/vfs"
)

// rdEnv returns an Env on a fresh workspace, and the workspace.
func rdEnv(t testing.TB) (*tools.Env, string) {
	t.Helper()
	dir := t.TempDir()
	fsys, err := vfs.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsys.Close() })
	return &tools.Env{FS: fsys, State: tools.NewReadState(), Limits: tools.DefaultLimits()}, fsys.Roots()[0]
}

func rdWrite(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// rdRun calls Read with input (a map or a raw JSON string).
func rdRun(t testing.TB, env *tools.Env, input any) (*tools.Result, error) {
	t.Helper()
	var raw []byte
	switch in := input.(type) {
	case string:
		raw = []byte(in)
	default:
		var err error
		if raw, err = json.Marshal(in); err != nil {
			t.Fatal(err)
		}
	}
	return tools.Read{}.Run(context.Background(), env, raw)
}

// rdOK runs Read and fails the test on an error.
func rdOK(t testing.TB, env *tools.Env, input any) *tools.Result {
	t.Helper()
	res, err := rdRun(t, env, input)
	if err != nil {
		t.Fatalf("Read(%v): %v", input, err)
	}
	return res
}

// rdText joins the text blocks of res.
func rdText(res *tools.Result) string {
	var b strings.Builder
	for _, bl := range res.Blocks {
		if bl.Type == "text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String()
}

// rdCode checks that err is an *tools.Error with code want and returns its
// message.
func rdCode(t testing.TB, err error, want int) string {
	t.Helper()
	var te *tools.Error
	if !errors.As(err, &te) {
		t.Fatalf("err = %v, want a *tools.Error with code %d", err, want)
	}
	if te.Code != want {
		t.Fatalf("code %d (%s), want %d", te.Code, te.Message, want)
	}
	return te.Message
}

func rdEntry(t testing.TB, env *tools.Env, res *tools.Result) tools.ReadEntry {
	t.Helper()
	e, ok := env.State.Lookup(res.Path)
	if !ok {
		t.Fatalf("no read state recorded for %s", res.Path)
	}
	return e
}

func TestReadToolBasics(t *testing.T) {
	t.Parallel()
	r := tools.Read{}
	if r.Name() != "Read" || !r.ReadOnly() {
		t.Fatalf("Name %q ReadOnly %v", r.Name(), r.ReadOnly())
	}
	if !strings.Contains(r.Description(), "offset") || !strings.Contains(r.Description(), "pages") {
		t.Fatal("description does not document the parameters")
	}
	var schema map[string]any
	if err := json.Unmarshal(r.InputSchema(), &schema); err != nil {
		t.Fatalf("schema: %v", err)
	}
	props := schema["properties"].(map[string]any)
	for _, k := range []string{"file_path", "offset", "limit", "pages"} {
		if props[k] == nil {
			t.Errorf("schema lacks %s", k)
		}
	}
}

func TestReadNumberedLines(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	content := []byte("package main\n\nfunc main() {}\n")
	rdWrite(t, dir, "main.go", content)
	res := rdOK(t, env, map[string]any{"file_path": "main.go"})
	want := "     1\tpackage main\n     2\t\n     3\tfunc main() {}\n"
	if got := rdText(res); got != want {
		t.Fatalf("got %q\nwant %q", got, want)
	}
	if res.Rel != "main.go" || res.Path != filepath.Join(dir, "main.go") {
		t.Errorf("Path %q Rel %q", res.Path, res.Rel)
	}
	e := rdEntry(t, env, res)
	if e.Partial || e.Hash != sha256.Sum256(content) || e.View != "lines 1-2000" {
		t.Fatalf("entry %+v", e)
	}
	// An absolute path reads the same file.
	res = rdOK(t, env, map[string]any{"file_path": filepath.Join(dir, "main.go"), "offset": 2})
	if !strings.HasPrefix(rdText(res), "     2\t\n     3\tfunc") {
		t.Fatalf("absolute path with offset: %q", rdText(res))
	}
}

func TestReadLineNumbersWiden(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "big.txt", []byte(strings.Repeat("x\n", 1_000_001)))
	res := rdOK(t, env, map[string]any{"file_path": "big.txt", "offset": 999_999, "limit": 3})
	want := "999999\tx\n1000000\tx\n1000001\tx\n"
	if got := rdText(res); got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestReadOffsetLimit(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	var b strings.Builder
	for i := 1; i <= 10; i++ {
		b.WriteString("line " + string(rune('a'+i-1)) + "\n")
	}
	rdWrite(t, dir, "ten.txt", []byte(b.String()))

	res := rdOK(t, env, map[string]any{"file_path": "ten.txt", "offset": 3, "limit": 2})
	got := rdText(res)
	if !strings.HasPrefix(got, "     3\tline c\n     4\tline d\n") {
		t.Fatalf("got %q", got)
	}
	if !strings.Contains(got, "6 more lines, 5-10. Use offset=5") {
		t.Fatalf("no continuation note: %q", got)
	}
	if e := rdEntry(t, env, res); !e.Partial || e.View != "lines 3-4" {
		t.Fatalf("entry %+v", e)
	}

	// offset 0 is the start, like 1.
	res = rdOK(t, env, map[string]any{"file_path": "ten.txt", "offset": 0, "limit": 1})
	if !strings.HasPrefix(rdText(res), "     1\tline a\n") {
		t.Fatalf("offset 0: %q", rdText(res))
	}
	// The last lines: nothing more follows.
	res = rdOK(t, env, map[string]any{"file_path": "ten.txt", "offset": 9})
	if got := rdText(res); got != "     9\tline i\n    10\tline j\n" {
		t.Fatalf("tail: %q", got)
	}
}

func TestReadDefaultWindow(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.DefaultReadLines = 5
	rdWrite(t, dir, "eight.txt", []byte("1\n2\n3\n4\n5\n6\n7\n8\n"))
	rdWrite(t, dir, "five.txt", []byte("1\n2\n3\n4\n5\n"))

	res := rdOK(t, env, map[string]any{"file_path": "eight.txt"})
	got := rdText(res)
	if !strings.Contains(got, "     5\t5\n") || strings.Contains(got, "\t6\n") || !strings.Contains(got, "3 more lines, 6-8. Use offset=6") {
		t.Fatalf("got %q", got)
	}
	if e := rdEntry(t, env, res); !e.Partial {
		t.Fatal("a window that stopped before the end is not partial")
	}
	res = rdOK(t, env, map[string]any{"file_path": "five.txt"})
	if got := rdText(res); strings.Contains(got, "more lines") {
		t.Fatalf("five of five lines: %q", got)
	}
	if e := rdEntry(t, env, res); e.Partial {
		t.Fatal("a window that holds the whole file is partial")
	}
}

func TestReadMoreLinesUncounted(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	// Past 8 MiB after the window, the rest is sized, not counted.
	line := strings.Repeat("y", 99) + "\n"
	rdWrite(t, dir, "huge.txt", []byte(strings.Repeat(line, 100_000))) // 10 MB
	res := rdOK(t, env, map[string]any{"file_path": "huge.txt", "limit": 2})
	got := rdText(res)
	if !strings.Contains(got, "more lines follow: 9.5 MB of the file not shown yet. Use offset=3") {
		t.Fatalf("got %q", got[strings.Index(got, "\n\n"):])
	}
}

func TestReadPartialFlags(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxLineRunes = 10
	rdWrite(t, dir, "f.txt", []byte("one\ntwo\nthree\n"))
	rdWrite(t, dir, "long.txt", []byte("short\n"+strings.Repeat("z", 11)+"\n"))
	for _, c := range []struct {
		input   map[string]any
		partial bool
	}{
		{map[string]any{"file_path": "f.txt"}, false},
		{map[string]any{"file_path": "f.txt", "offset": 1}, false},
		{map[string]any{"file_path": "f.txt", "limit": 3}, false},
		{map[string]any{"file_path": "f.txt", "limit": 100}, false},
		{map[string]any{"file_path": "f.txt", "offset": 2}, true},
		{map[string]any{"file_path": "f.txt", "limit": 2}, true},
		{map[string]any{"file_path": "long.txt"}, true}, // a cut line
	} {
		res := rdOK(t, env, c.input)
		if e := rdEntry(t, env, res); e.Partial != c.partial {
			t.Errorf("%v: Partial %v, want %v", c.input, e.Partial, c.partial)
		}
	}
}

func TestReadLongLineCut(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxLineRunes = 10
	line := strings.Repeat("é", 8) + "日本" + strings.Repeat("x", 15) // 25 runes
	rdWrite(t, dir, "long.txt", []byte("ok\n"+line+"\r\nafter\n"))
	got := rdText(rdOK(t, env, map[string]any{"file_path": "long.txt"}))
	want := "     1\tok\n     2\t" + strings.Repeat("é", 8) + "日本 … [line cut here: 15 more characters not shown]\n     3\tafter\n"
	if !strings.HasPrefix(got, want) {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if !strings.Contains(got, "1 line(s) longer than 10 characters were cut") {
		t.Fatalf("no note: %q", got)
	}
}

// A 20 MB line keeps only MaxLineRunes runes (the memory side is in the
// benchmarks).
func TestReadHugeSingleLine(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "one.txt", []byte(strings.Repeat("ab", 10<<20)))
	res := rdOK(t, env, map[string]any{"file_path": "one.txt"})
	got := rdText(res)
	if len(got) > 2200 || !strings.Contains(got, "[line cut here: 20969520 more characters not shown]") {
		t.Fatalf("got %d bytes: %q…", len(got), got[:100])
	}
}

func TestReadLineEndings(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	for name, c := range map[string]struct{ content, want string }{
		"crlf.txt":      {"a\r\nb\r\n", "     1\ta\n     2\tb\n"},
		"mixed.txt":     {"a\r\nb\nc\r\n", "     1\ta\n     2\tb\n     3\tc\n"},
		"nofinal.txt":   {"x\ny", "     1\tx\n     2\ty\n"},
		"crlfnofin.txt": {"x\r\ny", "     1\tx\n     2\ty\n"},
		"blank.txt":     {"\n\n", "     1\t\n     2\t\n"},
		"cr-inside.txt": {"a\rb\n", "     1\ta\rb\n"},
	} {
		rdWrite(t, dir, name, []byte(c.content))
		if got := rdText(rdOK(t, env, map[string]any{"file_path": name})); got != c.want {
			t.Errorf("%s: got %q, want %q", name, got, c.want)
		}
	}
}

func TestReadUTF8BOM(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	content := []byte("\xEF\xBB\xBFhello\r\nwörld\r\n")
	rdWrite(t, dir, "bom.txt", content)
	res := rdOK(t, env, map[string]any{"file_path": "bom.txt"})
	got := rdText(res)
	if !strings.HasPrefix(got, "     1\thello\n     2\twörld\n") || !strings.Contains(got, "UTF-8 with a byte order mark") {
		t.Fatalf("got %q", got)
	}
	if e := rdEntry(t, env, res); e.Partial || e.Hash != sha256.Sum256(content) {
		t.Fatalf("entry %+v", e)
	}
}

func rdUTF16(s string, bigEndian bool) []byte {
	units := utf16.Encode([]rune(s))
	out := []byte{0xFF, 0xFE}
	if bigEndian {
		out = []byte{0xFE, 0xFF}
	}
	for _, u := range units {
		if bigEndian {
			out = append(out, byte(u>>8), byte(u))
		} else {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}

func TestReadUTF16(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	text := "héllo\r\nwörld 🎉\nend"
	rdWrite(t, dir, "le.txt", rdUTF16(text, false))
	rdWrite(t, dir, "be.txt", rdUTF16(text, true))
	for name, enc := range map[string]string{"le.txt": "UTF-16LE", "be.txt": "UTF-16BE"} {
		res := rdOK(t, env, map[string]any{"file_path": name})
		got := rdText(res)
		if !strings.HasPrefix(got, "     1\théllo\n     2\twörld 🎉\n     3\tend\n") || !strings.Contains(got, enc) {
			t.Errorf("%s: got %q", name, got)
		}
		if e := rdEntry(t, env, res); e.Partial || e.Hash != sha256.Sum256(rdUTF16(text, name == "be.txt")) {
			t.Errorf("%s: entry %+v", name, e)
		}
	}
}

func TestReadInvalidUTF8(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "cp1252.txt", []byte("ok\ncaf\xe9 \x93quoted\x94\n"))
	rdWrite(t, dir, "sjis.txt", []byte("\x93\xfa\x96\x7b\x8c\xea\n")) // 日本語 in Shift-JIS
	res := rdOK(t, env, map[string]any{"file_path": "cp1252.txt"})
	got := rdText(res)
	if !strings.Contains(got, "     2\tcaf\uFFFD \uFFFDquoted\uFFFD\n") || !strings.Contains(got, "not valid UTF-8 (first at line 2)") {
		t.Fatalf("got %q", got)
	}
	// Shown, not partial: Edit decides whether it can edit such a file.
	if e := rdEntry(t, env, res); e.Partial {
		t.Fatal("invalid UTF-8 made the read partial")
	}
	got = rdText(rdOK(t, env, map[string]any{"file_path": "sjis.txt"}))
	if !strings.Contains(got, "\uFFFD") || !strings.Contains(got, "Shift-JIS") {
		t.Fatalf("got %q", got)
	}
}

func TestReadBinary(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "prog", []byte("\x7fELF\x02\x01\x01\x00\x00\x00rest"))
	_, err := rdRun(t, env, map[string]any{"file_path": "prog"})
	if msg := rdCode(t, err, tools.CodeEncoding); !strings.Contains(msg, "binary") {
		t.Fatalf("message %q", msg)
	}
}

// Kind is decided by content: a text file named .png is text.
func TestReadTextNamedLikeImage(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "notes.png", []byte("just text\n"))
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "notes.png"})); got != "     1\tjust text\n" {
		t.Fatalf("got %q", got)
	}
}

func TestReadEmpty(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "empty.txt", nil)
	rdWrite(t, dir, "bomonly.txt", []byte("\xEF\xBB\xBF"))
	for _, name := range []string{"empty.txt", "bomonly.txt", vfs.DevNull} {
		res := rdOK(t, env, map[string]any{"file_path": name})
		if got := rdText(res); !strings.Contains(got, "is empty") {
			t.Errorf("%s: %q", name, got)
		}
		if name == "empty.txt" {
			if e := rdEntry(t, env, res); e.Partial || e.Hash != sha256.Sum256(nil) {
				t.Errorf("entry %+v", e)
			}
		}
	}
}

func TestReadOffsetPastEnd(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "three.txt", []byte("a\nb\nc\n"))
	res := rdOK(t, env, map[string]any{"file_path": "three.txt", "offset": 10})
	if got := rdText(res); !strings.Contains(got, "has 3 lines; offset 10 is past its end") {
		t.Fatalf("got %q", got)
	}
	if _, ok := env.State.Lookup(res.Path); ok {
		t.Fatal("a read that showed nothing was recorded")
	}
}

func TestReadInvalidInput(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "a.txt", []byte("a\n"))
	for _, c := range []struct {
		input string
		want  string
	}{
		{`{"file_path":"a.txt","bogus":1}`, `"bogus"`},
		{`{"file_path":"a.txt","offset":"3"}`, `"offset"`},
		{`{"file_path":"a.txt","limit":2.5}`, `"limit"`},
		{`{"file_path":7}`, `"file_path"`},
		{`{"file_path":"a.txt","pages":3}`, `"pages"`},
		{`{}`, `"file_path" is required`},
		{`{"file_path":"a.txt","offset":-1}`, `"offset"`},
		{`{"file_path":"a.txt","limit":0}`, `"limit"`},
		{`{"file_path":"a.txt","pages":"1"}`, `"pages" applies only to PDF`},
		{`[1]`, `JSON object`},
	} {
		_, err := rdRun(t, env, c.input)
		if msg := rdCode(t, err, tools.CodeInvalidInput); !strings.Contains(msg, c.want) {
			t.Errorf("%s: message %q lacks %q", c.input, msg, c.want)
		}
	}
}

func TestReadDirectory(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"sub", ".", dir} {
		_, err := rdRun(t, env, map[string]any{"file_path": name})
		if msg := rdCode(t, err, tools.CodeIsDirectory); !strings.Contains(msg, "Glob") {
			t.Errorf("%s: %q", name, msg)
		}
	}
}

func TestReadNotFound(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "main.go", []byte("x\n"))
	rdWrite(t, dir, "conf/config.yaml", []byte("x\n"))
	for _, c := range []struct{ name, suggest string }{
		{"mian.go", "Did you mean main.go?"},
		{"Main.go", "Did you mean main.go?"},
		{"main.rs", "Did you mean main.go?"},
		{"conf/config.yml", "Did you mean conf/config.yaml?"},
		{"completely-different.txt", "Use Glob"},
		{"nodir/x.txt", "Use Glob"},
	} {
		_, err := rdRun(t, env, map[string]any{"file_path": c.name})
		msg := rdCode(t, err, tools.CodeNotFound)
		if !strings.Contains(msg, c.suggest) || !strings.Contains(msg, "does not exist") {
			t.Errorf("%s: %q", c.name, msg)
		}
	}
	// A path through a file is not found too.
	_, err := rdRun(t, env, map[string]any{"file_path": "main.go/x"})
	rdCode(t, err, tools.CodeNotFound)
}

func TestReadOutside(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	outside := t.TempDir()
	rdWrite(t, outside, "secret.txt", []byte("s\n"))
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"../secret.txt", filepath.Join(outside, "secret.txt"), "link.txt", "/etc/passwd"} {
		_, err := rdRun(t, env, map[string]any{"file_path": name})
		if msg := rdCode(t, err, tools.CodeOutside); !strings.Contains(msg, "outside the workspace") {
			t.Errorf("%s: %q", name, msg)
		}
	}
	// An allowed extra root is readable.
	fsys, err := vfs.NewLocal(dir, outside)
	if err != nil {
		t.Fatal(err)
	}
	defer fsys.Close()
	env2 := &tools.Env{FS: fsys, State: tools.NewReadState()}
	if got := rdText(rdOK(t, env2, map[string]any{"file_path": filepath.Join(outside, "secret.txt")})); got != "     1\ts\n" {
		t.Fatalf("extra root: %q", got)
	}
}

// Every special path is refused at once, without blocking: each Run must
// answer within 100 ms (the hard timeout only keeps a hang from stalling
// the whole test run).
func TestReadSpecialPaths(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero-link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(fifo, filepath.Join(dir, "fifo-link")); err != nil {
		t.Fatal(err)
	}
	// A pipe with no writer as stdin: a blocking read of it would hang.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()

	for _, c := range []struct {
		name string
		code int
	}{
		{"fifo", tools.CodeNotRegular},
		{"fifo-link", tools.CodeNotRegular},
		{"sock", tools.CodeNotRegular},
		{"zero-link", tools.CodeNotRegular},
		{"/dev/zero", tools.CodeNotRegular},
		{"/dev/random", tools.CodeNotRegular},
		{"/dev/urandom", tools.CodeNotRegular},
		{"/dev/stdin", tools.CodeNotRegular},
		{"/dev/tty", tools.CodeNotRegular},
		{"/proc/self/fd/0", tools.CodeNotRegular},
		{"/proc/self/fd/" + rdItoa(int(r.Fd())), tools.CodeNotRegular},
		{vfs.DevNull, 0},
	} {
		t.Run(strings.ReplaceAll(c.name, "/", "_"), func(t *testing.T) {
			type answer struct {
				res *tools.Result
				err error
				d   time.Duration
			}
			done := make(chan answer, 1)
			go func() {
				start := time.Now()
				res, err := rdRun(t, env, map[string]any{"file_path": c.name})
				done <- answer{res, err, time.Since(start)}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("Read(%s) blocked", c.name)
			}
			if a.d > 100*time.Millisecond {
				t.Errorf("Read(%s) took %v", c.name, a.d)
			}
			if c.code == 0 {
				if a.err != nil || !strings.Contains(rdText(a.res), "empty") {
					t.Fatalf("Read(%s) = %v, %v", c.name, a.res, a.err)
				}
				return
			}
			rdCode(t, a.err, c.code)
		})
	}
}

func rdItoa(n int) string { return strconv.Itoa(n) }

func TestReadDedup(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	p := rdWrite(t, dir, "d.txt", []byte("alpha\nbeta\n"))
	// A file changed within a second of a Read has a stamp that cannot
	// vouch for its content (tools.Racy); let it age so the stamp decides.
	time.Sleep(1100 * time.Millisecond)
	first := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt"}))
	if !strings.Contains(first, "alpha") {
		t.Fatalf("first read %q", first)
	}
	stub := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt"}))
	if strings.Contains(stub, "alpha") || !strings.Contains(stub, "unchanged") || len(stub) > 160 {
		t.Fatalf("second read is not a short stub: %q (%d bytes)", stub, len(stub))
	}
	// Another view of the same file is content again, and so is the first
	// view after that (the state remembers the last view).
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt", "offset": 2})); !strings.Contains(got, "beta") {
		t.Fatalf("other view %q", got)
	}
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt", "offset": 2})); !strings.Contains(got, "unchanged") {
		t.Fatalf("same other view %q", got)
	}
	// After compaction the content is returned again.
	rdOK(t, env, map[string]any{"file_path": "d.txt"})
	env.State.ResetDedup()
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt"})); !strings.Contains(got, "alpha") {
		t.Fatalf("after ResetDedup: %q", got)
	}
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt"})); !strings.Contains(got, "unchanged") {
		t.Fatalf("after ResetDedup and a read: %q", got)
	}
	// A change, even one that restores the size and mtime, is content again.
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("gamma\nbeta\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, fi.ModTime(), fi.ModTime()); err != nil {
		t.Fatal(err)
	}
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt"})); !strings.Contains(got, "gamma") {
		t.Fatalf("after a change: %q", got)
	}
	// Forget drops everything.
	env.State.Forget()
	if got := rdText(rdOK(t, env, map[string]any{"file_path": "d.txt"})); !strings.Contains(got, "gamma") {
		t.Fatalf("after Forget: %q", got)
	}
}

// A failed read leaves no state behind.
func TestReadRefusalRecordsNothing(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxReadTokens = 10
	p := rdWrite(t, dir, "big.txt", []byte(strings.Repeat("word ", 100)+"\n"))
	_, err := rdRun(t, env, map[string]any{"file_path": "big.txt"})
	rdCode(t, err, tools.CodeTooLarge)
	if _, ok := env.State.Lookup(p); ok {
		t.Fatal("a refused read was recorded")
	}
}

// rdFakeCounter is a TokenCounter that answers n (or err) and remembers what
// it was asked.
type rdFakeCounter struct {
	mu    sync.Mutex
	n     int
	err   error
	texts []string
}

func (f *rdFakeCounter) CountTokens(_ context.Context, text string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.texts = append(f.texts, text)
	return f.n, f.err
}

func TestReadGateStage1PassesSmallOutput(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	counter := &rdFakeCounter{n: 1 << 30}
	env.Tokens = counter
	env.Limits.MaxReadTokens = 100
	// 7 + 93 = 100 bytes of output: at most 100 tokens whatever the tokenizer.
	rdWrite(t, dir, "small.txt", []byte(strings.Repeat("q", 92)+"\n"))
	res := rdOK(t, env, map[string]any{"file_path": "small.txt"})
	if len(rdText(res)) != 100 {
		t.Fatalf("output is %d bytes, the test wants exactly the limit", len(rdText(res)))
	}
	if len(counter.texts) != 0 {
		t.Fatalf("stage 1 output was counted %d times", len(counter.texts))
	}
}

func TestReadGateStage2UsesEnvTokens(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	counter := &rdFakeCounter{n: 50}
	env.Tokens = counter
	env.Limits.MaxReadTokens = 100
	rdWrite(t, dir, "mid.txt", []byte(strings.Repeat("some words here\n", 10))) // 230 bytes out
	res := rdOK(t, env, map[string]any{"file_path": "mid.txt"})
	if len(counter.texts) != 1 || counter.texts[0] != rdText(res) {
		t.Fatalf("counter asked %d times; want once, with the output", len(counter.texts))
	}
	counter.n = 500
	env.State.ResetDedup()
	_, err := rdRun(t, env, map[string]any{"file_path": "mid.txt"})
	msg := rdCode(t, err, tools.CodeTooLarge)
	for _, want := range []string{"(500 tokens)", "maximum allowed tokens (100)", "offset=1 limit=1 ", "then continue with offset=2", "Grep"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
}

func TestReadGateStage2FallsBackToBPE(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxReadTokens = 20
	rdWrite(t, dir, "fits.txt", []byte("hello hello hello hello hello hello\n")) // 43 bytes out
	rdWrite(t, dir, "over.txt", []byte(strings.Repeat("hello world\n", 5)))

	// No counter: BPE. And a failing counter: BPE as well.
	for _, counter := range []tools.TokenCounter{nil, &rdFakeCounter{err: errors.New("provider down")}} {
		env.Tokens = counter
		env.State.Forget()
		res := rdOK(t, env, map[string]any{"file_path": "fits.txt"})
		if n := rdBPE(t, rdText(res)); n > 20 {
			t.Fatalf("fixture: fits.txt is %d tokens", n)
		}
		_, err := rdRun(t, env, map[string]any{"file_path": "over.txt"})
		msg := rdCode(t, err, tools.CodeTooLarge)
		var want strings.Builder
		for i := 1; i <= 5; i++ {
			want.WriteString("     " + rdItoa(i) + "\thello world\n")
		}
		if n := rdBPE(t, want.String()); !strings.Contains(msg, "("+rdItoa(n)+" tokens)") {
			t.Fatalf("message %q does not give the BPE count %d", msg, n)
		}
	}
}

func rdBPE(t testing.TB, text string) int {
	t.Helper()
	n, err := tokencount.NewBPE().CountTokens(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The range the refusal suggests does fit.
func TestReadGateSuggestionFits(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits.MaxReadTokens = 1000
	var b strings.Builder
	for i := range 400 {
		b.WriteString("value_" + rdItoa(i) + " = compute(alpha, beta, gamma) + offset\n")
	}
	rdWrite(t, dir, "code.py", []byte(b.String()))
	_, err := rdRun(t, env, map[string]any{"file_path": "code.py", "offset": 11})
	msg := rdCode(t, err, tools.CodeTooLarge)
	var offset, limit int
	i := strings.Index(msg, "offset=11 limit=")
	if i < 0 {
		t.Fatalf("no suggestion from offset 11: %q", msg)
	}
	if _, err := fmt.Sscanf(msg[i:], "offset=%d limit=%d", &offset, &limit); err != nil {
		t.Fatal(err)
	}
	if limit < 10 {
		t.Fatalf("suggested limit %d is needlessly small: %q", limit, msg)
	}
	res := rdOK(t, env, map[string]any{"file_path": "code.py", "offset": offset, "limit": limit})
	if n := rdBPE(t, rdText(res)); n > 1000 {
		t.Fatalf("suggested range is %d tokens", n)
	}
}

// Output far past the limit is refused on its size, without holding or
// counting it.
func TestReadGateCapRefusesOnSize(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	counter := &rdFakeCounter{n: 1}
	env.Tokens = counter
	env.Limits.MaxReadTokens = 10 // collection stops past 320 bytes
	rdWrite(t, dir, "many.txt", []byte(strings.Repeat("0123456789abcdefghi\n", 1000)))
	_, err := rdRun(t, env, map[string]any{"file_path": "many.txt"})
	msg := rdCode(t, err, tools.CodeTooLarge)
	if !strings.Contains(msg, "estimated from the size") || !strings.Contains(msg, "offset=1 limit=") {
		t.Fatalf("message %q", msg)
	}
	if len(counter.texts) != 0 {
		t.Fatal("capped output was sent to the counter")
	}
}

func TestReadCancelled(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "big.txt", []byte(strings.Repeat("line\n", 100_000)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := tools.Read{}.Run(ctx, env, json.RawMessage(`{"file_path":"big.txt","offset":90000}`))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
}

func TestReadZeroLimitsUseDefaults(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	env.Limits = tools.Limits{}
	rdWrite(t, dir, "x.txt", []byte(strings.Repeat("x\n", 2500)))
	got := rdText(rdOK(t, env, map[string]any{"file_path": "x.txt"}))
	if !strings.Contains(got, "  2000\tx\n") || strings.Contains(got, "2001\tx") {
		t.Fatalf("zero Limits did not read 2000 lines")
	}
}

func TestReadParallel(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	for i := range 8 {
		rdWrite(t, dir, "f"+rdItoa(i)+".txt", []byte(strings.Repeat("line "+rdItoa(i)+"\n", 3000)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() {
			res, err := rdRun(t, env, map[string]any{"file_path": "f" + rdItoa(i) + ".txt"})
			if err == nil && !strings.Contains(rdText(res), "line "+rdItoa(i)) {
				err = errors.New("wrong content")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

// Huge offset and limit values neither overflow nor fail.
func TestReadHugeOffsetLimit(t *testing.T) {
	t.Parallel()
	env, dir := rdEnv(t)
	rdWrite(t, dir, "s.txt", []byte("a\nb\n"))
	res := rdOK(t, env, `{"file_path":"s.txt","offset":2,"limit":9223372036854775807}`)
	if got := rdText(res); got != "     2\tb\n" {
		t.Fatalf("got %q", got)
	}
	res = rdOK(t, env, `{"file_path":"s.txt","offset":9223372036854775807}`)
	if got := rdText(res); !strings.Contains(got, "past its end") {
		t.Fatalf("got %q", got)
	}
}
