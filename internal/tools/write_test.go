package tools

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/textdiff"
	"github.com/ferry-dev/ferry/protocol"
)

func TestWriteNewFileCreatesParents(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	res := wtOK(t, Write{}, env, map[string]any{"file_path": "a/b/c/new.txt", "content": "one\ntwo\n"})
	p := filepath.Join(dir, "a/b/c/new.txt")
	if got := wtContent(t, p); got != "one\ntwo\n" {
		t.Fatalf("content %q", got)
	}
	if !res.Changed || res.Path != p || res.Rel != "a/b/c/new.txt" {
		t.Fatalf("result %+v", res)
	}
	if res.Diff == nil || !res.Diff.IsNewFile || len(res.Diff.Hunks) != 1 || res.Diff.Hunks[0].NewLines != 2 {
		t.Fatalf("diff %+v", res.Diff)
	}
	if !strings.Contains(wtText(res), "Created a/b/c/new.txt (2 lines)") {
		t.Fatalf("text %q", wtText(res))
	}
	// The write counts as a full view: writing again needs no Read.
	wtOK(t, Write{}, env, map[string]any{"file_path": "a/b/c/new.txt", "content": "three\n"})
	if got := wtContent(t, p); got != "three\n" {
		t.Fatalf("content %q", got)
	}
	e, ok := env.State.Lookup(p)
	if !ok || e.Partial || e.Hash != HashBytes([]byte("three\n")) || e.View != "written by Write" {
		t.Fatalf("state %+v", e)
	}
	info, _ := env.FS.Stat(p)
	if e.Stamp != info.Stamp {
		t.Fatal("recorded stamp is not the file's")
	}
}

func TestWriteNeverRead(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("old\n"))
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"}, CodeNotRead)
	if !strings.Contains(msg, "f.txt") || !strings.Contains(msg, "Read") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != "old\n" {
		t.Fatal("file changed")
	}
}

func TestWritePartialRead(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("1\n2\n3\n"))
	e := wtMarkRead(t, env, "f.txt")
	env.State = NewReadState() // only the partial read below
	e.Partial, e.View, e.Lines = true, "lines 2-2", &LineWindow{First: 2, Last: 2, Total: 3}
	env.State.Record(e)
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"}, CodeNotRead)
	if !strings.Contains(msg, "line 1 of f.txt has not been read") || !strings.Contains(msg, "offset 1, limit 1") || !strings.Contains(msg, "Also unread: line 3") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != "1\n2\n3\n" {
		t.Fatal("file changed")
	}
}

func TestWriteStale(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("old\n"))
	wtMarkRead(t, env, "f.txt")
	if err := os.WriteFile(p, []byte("someone else's\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"}, CodeStale)
	if wtContent(t, p) != "someone else's\n" {
		t.Fatal("file changed")
	}
}

func TestWriteTouchedButUnchanged(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("old\n"))
	wtMarkRead(t, env, "f.txt")
	wtTouch(t, p, time.Now().Add(-time.Hour))
	wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"})
	if wtContent(t, p) != "new\n" {
		t.Fatal("not written")
	}
}

func TestWriteChangedWithRestoredMtime(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("aaaa\n"))
	e := wtMarkRead(t, env, "f.txt")
	wtModifyKeepMtime(t, env, p, []byte("bbbb\n"), e)
	wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"}, CodeStale)
	if wtContent(t, p) != "bbbb\n" {
		t.Fatal("file changed")
	}
}

func TestWriteMtimeInFuture(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("aaaa\n"))
	future := time.Now().Add(48 * time.Hour)
	wtTouch(t, p, future)
	e := wtMarkRead(t, env, "f.txt")
	// A later change that keeps the future mtime is still caught.
	wtModifyKeepMtime(t, env, p, []byte("bbbb\n"), e)
	wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "x\n"}, CodeStale)
	// Read again: the write goes through, though "now" is before the mtime.
	wtMarkRead(t, env, "f.txt")
	wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "x\n"})
	if wtContent(t, p) != "x\n" {
		t.Fatal("not written")
	}
}

func TestWriteStoresLF(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	res := wtOK(t, Write{}, env, map[string]any{"file_path": "s.sh", "content": "#!/bin/sh\r\necho hi\r\necho there\rend"})
	if got := wtContent(t, filepath.Join(dir, "s.sh")); got != "#!/bin/sh\necho hi\necho there\nend" {
		t.Fatalf("content %q", got)
	}
	if !strings.Contains(wtText(res), "line endings converted to LF") {
		t.Fatalf("text %q", wtText(res))
	}
	// An existing CRLF file becomes LF too.
	p := wtFile(t, dir, "crlf.txt", []byte("a\r\nb\r\n"))
	wtMarkRead(t, env, "crlf.txt")
	wtOK(t, Write{}, env, map[string]any{"file_path": "crlf.txt", "content": "a\r\nc\r\n"})
	if got := wtContent(t, p); got != "a\nc\n" {
		t.Fatalf("content %q", got)
	}
}

func TestWriteKeepsEncoding(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		old, want  []byte
		content    string
		wantInText string
	}{
		{"utf8 bom", []byte("\xEF\xBB\xBFold\n"), []byte("\xEF\xBB\xBFnéw\n"), "néw\n", "kept UTF-8 with BOM"},
		{"utf16le", []byte("\xFF\xFEo\x00\n\x00"), []byte("\xFF\xFEn\x00\xe9\x00\n\x00"), "né\n", "kept UTF-16LE"},
		{"utf16be", []byte("\xFE\xFF\x00o"), []byte("\xFE\xFF\x00n"), "n", "kept UTF-16BE"},
		{"cp1252 becomes utf8", []byte("caf\xe9\n"), []byte("café\n"), "café\n", "stored as UTF-8"},
		{"plain utf8", []byte("old\n"), []byte("new\n"), "new\n", "Wrote"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			env, dir := wtEnv(t)
			p := wtFile(t, dir, "f.txt", c.old)
			wtMarkRead(t, env, "f.txt")
			res := wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": c.content})
			if got := wtContent(t, p); got != string(c.want) {
				t.Fatalf("content % x, want % x", got, c.want)
			}
			if !strings.Contains(wtText(res), c.wantInText) {
				t.Fatalf("text %q", wtText(res))
			}
		})
	}
}

func TestWriteIdenticalContentIsNoOp(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("same\n"))
	wtMarkRead(t, env, "f.txt")
	before, _ := env.FS.Stat(p)
	h := &wtHistory{}
	env.History = h
	env.Approve = func(context.Context, Approval) error { t.Fatal("asked to approve a no-op"); return nil }
	res := wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "same\r\n"})
	if res.Changed || !strings.Contains(wtText(res), "No changes") {
		t.Fatalf("result %+v %q", res, wtText(res))
	}
	after, _ := env.FS.Stat(p)
	if after.Stamp != before.Stamp || len(h.calls) != 0 {
		t.Fatal("the file was written")
	}
}

func TestWriteApproveDenyLeavesFile(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("old\n"))
	wtMarkRead(t, env, "f.txt")
	denied := Errorf(CodeDenied, "the user said no")
	h := &wtHistory{}
	env.History = h
	var asked Approval
	env.Approve = func(_ context.Context, a Approval) error { asked = a; return denied }
	_, err := wtRun(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"})
	if err != denied { //nolint:errorlint // the very error Approve returned, as is
		t.Fatalf("err %v, want Approve's error as is", err)
	}
	if wtContent(t, p) != "old\n" || len(h.calls) != 0 {
		t.Fatal("file changed or history tracked")
	}
	if asked.Tool != "Write" || asked.Path != p || asked.Rel != "f.txt" || asked.IsNew || asked.Diff == nil || len(asked.Diff.Hunks) != 1 {
		t.Fatalf("approval %+v", asked)
	}
	// A new file: IsNew.
	_, _ = wtRun(t, Write{}, env, map[string]any{"file_path": "n.txt", "content": "x"})
	if !asked.IsNew || !asked.Diff.IsNewFile {
		t.Fatalf("approval %+v", asked)
	}
	if _, err := os.Stat(filepath.Join(dir, "n.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("denied file created")
	}
}

func TestWriteHistoryTrackedBeforeWrite(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("old\n"))
	wtMarkRead(t, env, "f.txt")
	h := &wtHistory{}
	env.History = h
	wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "new\n"})
	wtOK(t, Write{}, env, map[string]any{"file_path": "g.txt", "content": "g\n"})
	if len(h.calls) != 2 {
		t.Fatalf("%d Track calls", len(h.calls))
	}
	c := h.calls[0]
	if c.path != p || string(c.old) != "old\n" || !c.existed || c.onDisk != "old\n" {
		t.Fatalf("track %+v", c)
	}
	c = h.calls[1]
	if c.old != nil || c.existed || c.onDisk != "<none>" {
		t.Fatalf("track of a new file %+v", c)
	}
	// A failing history aborts the write.
	env.History = failingHistory{}
	_, err := wtRun(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "newer\n"})
	if err == nil || CodeOf(err) != CodeInternal || wtContent(t, p) != "new\n" {
		t.Fatalf("err %v, content %q", err, wtContent(t, p))
	}
}

type failingHistory struct{}

func (failingHistory) Track(context.Context, string, []byte, bool) error {
	return errors.New("disk full")
}

func TestWriteInvalidInput(t *testing.T) {
	t.Parallel()
	env, _ := wtEnv(t)
	for _, c := range []struct {
		in   string
		want string
	}{
		{`{"file_path":"a","content":"x","extra":1}`, `unknown field "extra"`},
		{`{"file_path":"a","content":5}`, `"content" must be a string`},
		{`{"file_path":7,"content":"x"}`, `"file_path" must be a string`},
		{`{"file_path":"a"}`, "content is required"},
		{`{"content":"x"}`, "file_path is required"},
		{`{"file_path":"","content":"x"}`, "file_path is required"},
		{`[1]`, "must be a JSON object"},
	} {
		_, err := Write{}.Run(context.Background(), env, []byte(c.in))
		if CodeOf(err) != CodeInvalidInput || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want code 1 with %q", c.in, err, c.want)
		}
	}
}

func TestWriteReadOnlyFile(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "ro.txt", []byte("old\n"))
	if err := os.Chmod(p, 0o444); err != nil {
		t.Fatal(err)
	}
	wtMarkRead(t, env, "ro.txt")
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "ro.txt", "content": "new\n"}, CodePermission)
	if !strings.Contains(msg, "read-only") || !strings.Contains(msg, "does not override") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != "old\n" {
		t.Fatal("file changed")
	}
}

func TestWritePlacesRefused(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "out")); err != nil {
		t.Fatal(err)
	}
	wtFile(t, dir, "plain", []byte("x"))
	for _, c := range []struct {
		path string
		code int
	}{
		{"../escape.txt", CodeOutside},
		{filepath.Join(outside, "abs.txt"), CodeOutside},
		{"out/through-link.txt", CodeOutside},
		{"sub", CodeIsDirectory},
		{".", CodeIsDirectory},
		{"plain/child.txt", CodeNotFound},
		{"/dev/null", CodeNotRegular},
	} {
		wtCode(t, Write{}, env, map[string]any{"file_path": c.path, "content": "x"}, c.code)
		wtCode(t, Edit{}, env, map[string]any{"file_path": c.path, "old_string": "", "new_string": "x"}, c.code)
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Fatal("wrote outside the workspace")
	}
}

// TestWriteSpecialFilesDoNotBlock: a FIFO is refused at once, never opened.
func TestWriteSpecialFilesDoNotBlock(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if err := os.Symlink(fifo, filepath.Join(dir, "to-fifo")); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"fifo", "to-fifo"} {
		for _, call := range []struct {
			tool Tool
			in   map[string]any
		}{
			{Write{}, map[string]any{"file_path": name, "content": "x"}},
			{Edit{}, map[string]any{"file_path": name, "old_string": "a", "new_string": "b"}},
		} {
			done := make(chan int, 1)
			go func() {
				_, err := wtRun(t, call.tool, env, call.in)
				done <- CodeOf(err)
			}()
			select {
			case code := <-done:
				if code != CodeNotRegular {
					t.Fatalf("%s %s: code %d", call.tool.Name(), name, code)
				}
			case <-time.After(100 * time.Millisecond * 10): // generous: only blocking fails
				t.Fatalf("%s %s blocked", call.tool.Name(), name)
			}
		}
	}
}

// TestWriteTwoWritersOneRead: two Writes based on the same Read; the second
// is held at the permission prompt until the first has written. It must get
// code 3, not overwrite content it never saw.
func TestWriteTwoWritersOneRead(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("v0\n"))
	wtMarkRead(t, env, "f.txt")
	asked, release := make(chan struct{}), make(chan struct{})
	slowEnv := *env
	slowEnv.Approve = func(context.Context, Approval) error { close(asked); <-release; return nil }
	errc := make(chan error, 1)
	go func() {
		_, err := wtRun(t, Write{}, &slowEnv, map[string]any{"file_path": "f.txt", "content": "slow\n"})
		errc <- err
	}()
	<-asked // the slow writer passed its pre-check and computed its change
	wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "fast\n"})
	close(release)
	if err := <-errc; CodeOf(err) != CodeStale {
		t.Fatalf("slow writer: %v, want code 3", err)
	}
	if wtContent(t, p) != "fast\n" {
		t.Fatalf("content %q", wtContent(t, p))
	}
}

// TestWriteParallel: eight Writes from one Read. Every one either wins or
// gets code 3; the file holds a winner's content; and every winner wrote
// over the version it was based on (the first one's base is the read).
func TestWriteParallel(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte("v0\n"))
	wtMarkRead(t, env, "f.txt")
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			_, errs[i] = wtRun(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": strings.Repeat("w", i+1) + "\n"})
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch CodeOf(err) {
		case CodeInternal:
			if err != nil {
				t.Fatal(err)
			}
			wins++
		case CodeStale:
		default:
			t.Fatalf("unexpected %v", err)
		}
	}
	got := wtContent(t, p)
	if wins == 0 || len(got) < 2 || errs[len(got)-2] != nil {
		t.Fatalf("%d wins, content %q, errs %v", wins, got, errs)
	}
}

func TestWriteDiffIsValid(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	wtFile(t, dir, "f.go", []byte("package f\n\nfunc A() {}\n"))
	wtMarkRead(t, env, "f.go")
	res := wtOK(t, Write{}, env, map[string]any{"file_path": "f.go", "content": "package f\n\nfunc B() {}\n"})
	want := textdiff.Diff("f.go", "package f\n\nfunc A() {}\n", "package f\n\nfunc B() {}\n", 3)
	if len(res.Diff.Hunks) != 1 || res.Diff.Hunks[0].OldStart != want.Hunks[0].OldStart || res.Diff.Path != "f.go" {
		t.Fatalf("diff %+v", res.Diff)
	}
	wtDecodeDiff(t, res)
}

// wtDecodeDiff sends the result's diff through the protocol decoder.
func wtDecodeDiff(t *testing.T, res *Result) {
	t.Helper()
	if res.Diff == nil {
		t.Fatal("no diff")
	}
	m := protocol.New(protocol.TypeToolFinished, &protocol.ToolFinished{
		TurnID: "t", ToolUseID: "u", ToolName: "Edit", Status: protocol.ToolOK, Output: wtText(res), Diff: res.Diff,
	})
	m.SessionID = "s"
	b, err := protocol.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"diff"`)) {
		t.Fatal("diff not encoded")
	}
	if _, err := protocol.Decode(b); err != nil {
		t.Fatalf("protocol.Decode: %v", err)
	}
}
