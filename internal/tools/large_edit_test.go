package tools

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// Large files stay editable (DESIGN "Partial reads"): Edit needs a current
// Read of any window; Write needs every line seen, in one Read or in
// windows that together cover the file, still current.

// leLines is a file of n numbered lines.
func leLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

// leSettle moves the file's times into the past, so its stamp is not racily
// clean and the read state trusts it without hashing.
func leSettle(t *testing.T, p string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		t.Fatal(err)
	}
}

func leRead(t *testing.T, env *Env, in map[string]any) string {
	t.Helper()
	res := wtOK(t, Read{}, env, in)
	var b strings.Builder
	for _, bl := range res.Blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

func TestLargeFileEditAfterFirstWindow(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "big.txt", []byte(leLines(3000)))
	leSettle(t, p)
	leRead(t, env, map[string]any{"file_path": "big.txt"}) // lines 1-2000
	wtOK(t, Edit{}, env, editIn("big.txt", "line 1500\n", "LINE 1500\n"))
	// old_string is matched against the real file, beyond the window too.
	wtOK(t, Edit{}, env, editIn("big.txt", "line 2999\n", "LINE 2999\n"))
	got := wtContent(t, p)
	if !strings.Contains(got, "LINE 1500\n") || !strings.Contains(got, "LINE 2999\n") {
		t.Fatal("edits not applied")
	}
}

func TestLargeFileEditAfterMiddleWindow(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "big.txt", []byte(leLines(3000)))
	leSettle(t, p)
	leRead(t, env, map[string]any{"file_path": "big.txt", "offset": 2401, "limit": 200})
	wtOK(t, Edit{}, env, editIn("big.txt", "line 2500\n", "LINE 2500\n"))
	if !strings.Contains(wtContent(t, p), "LINE 2500\n") {
		t.Fatal("edit not applied")
	}
}

func TestLongLineFileEditable(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	long := strings.Repeat("x", 3000)
	p := wtFile(t, dir, "long.txt", []byte("head\n"+long+"\ntail\n"))
	leSettle(t, p)
	out := leRead(t, env, map[string]any{"file_path": "long.txt"})
	if !strings.Contains(out, "line cut here") {
		t.Fatalf("the long line was not cut: %q", out[:200])
	}
	// Write needs every line seen whole: the cut line never was.
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "long.txt", "content": "x\n"}, CodeNotRead)
	if !strings.Contains(msg, "line 2 of long.txt is too long") || !strings.Contains(msg, "Edit") {
		t.Fatalf("message %q", msg)
	}
	wtOK(t, Edit{}, env, editIn("long.txt", "tail\n", "TAIL\n"))
	if wtContent(t, p) != "head\n"+long+"\nTAIL\n" {
		t.Fatal("edit not applied")
	}
}

func TestLargeFileWriteNeedsEveryLine(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "big.txt", []byte(leLines(3000)))
	leSettle(t, p)
	leRead(t, env, map[string]any{"file_path": "big.txt"}) // lines 1-2000
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "big.txt", "content": "new\n"}, CodeNotRead)
	if !strings.Contains(msg, "lines 2001–3000 of big.txt have not been read") || !strings.Contains(msg, "offset 2001, limit 1000") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != leLines(3000) {
		t.Fatal("file changed")
	}
	leRead(t, env, map[string]any{"file_path": "big.txt", "offset": 2001, "limit": 500})
	msg = wtCode(t, Write{}, env, map[string]any{"file_path": "big.txt", "content": "new\n"}, CodeNotRead)
	if !strings.Contains(msg, "lines 2501–3000 of big.txt") || !strings.Contains(msg, "offset 2501, limit 500") {
		t.Fatalf("message %q", msg)
	}
	leRead(t, env, map[string]any{"file_path": "big.txt", "offset": 2501})
	wtOK(t, Write{}, env, map[string]any{"file_path": "big.txt", "content": "new\n"})
	if wtContent(t, p) != "new\n" {
		t.Fatal("write not applied")
	}
}

func TestLargeFileWindowsOfOlderVersionDoNotCount(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "big.txt", []byte(leLines(3000)))
	leSettle(t, p)
	leRead(t, env, map[string]any{"file_path": "big.txt"})
	// The file changes on disk (another process): the window is stale.
	changed := strings.Replace(leLines(3000), "line 2\n", "line two\n", 1)
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	leSettle(t, p)
	wtCode(t, Edit{}, env, editIn("big.txt", "line 1500\n", "LINE 1500\n"), CodeStale)
	// Reading the rest of the new version does not make the old first
	// window count for Write.
	leRead(t, env, map[string]any{"file_path": "big.txt", "offset": 2001})
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "big.txt", "content": "new\n"}, CodeNotRead)
	if !strings.Contains(msg, "lines 1–2000 of big.txt") {
		t.Fatalf("message %q", msg)
	}
	if wtContent(t, p) != changed {
		t.Fatal("file changed")
	}
}

func TestLargeFileEditAfterPartialEditNeedsReadForWrite(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "big.txt", []byte(leLines(3000)))
	leSettle(t, p)
	leRead(t, env, map[string]any{"file_path": "big.txt"})
	wtOK(t, Edit{}, env, editIn("big.txt", "line 10\n", "LINE 10\n"))
	// The Edit does not show the agent the lines it never read.
	wtCode(t, Write{}, env, map[string]any{"file_path": "big.txt", "content": "new\n"}, CodeNotRead)
	wtOK(t, Edit{}, env, editIn("big.txt", "line 11\n", "LINE 11\n"))
	_ = p
}

func TestTokenGatedFileEditableAfterWindow(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	env.Limits.MaxReadTokens = 1000
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "%d %s\n", i+1, strings.Repeat("word ", 20))
	}
	p := wtFile(t, dir, "gated.txt", []byte(b.String()))
	leSettle(t, p)
	wtCode(t, Read{}, env, map[string]any{"file_path": "gated.txt"}, CodeTooLarge)
	leRead(t, env, map[string]any{"file_path": "gated.txt", "offset": 100, "limit": 10})
	wtOK(t, Edit{}, env, editIn("gated.txt", "\n105 word", "\n105 WORD"))
	if !strings.Contains(wtContent(t, p), "\n105 WORD") {
		t.Fatal("edit not applied")
	}
}

// Windows of one version count together even across compaction (which
// resets only the dedup stubs) and with racily clean stamps (small files
// are fingerprinted whole by every window).
func TestWindowsCoverAcrossCompactionAndRacyStamps(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	p := wtFile(t, dir, "f.txt", []byte(leLines(30))) // not settled: racy
	leRead(t, env, map[string]any{"file_path": "f.txt", "limit": 10})
	env.State.ResetDedup()
	leRead(t, env, map[string]any{"file_path": "f.txt", "offset": 21})
	msg := wtCode(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "x\n"}, CodeNotRead)
	if !strings.Contains(msg, "lines 11–20 of f.txt have not been read") || !strings.Contains(msg, "offset 11, limit 10") {
		t.Fatalf("message %q", msg)
	}
	leRead(t, env, map[string]any{"file_path": "f.txt", "offset": 5, "limit": 20})
	// A touch that changes nothing does not make the windows stale.
	wtTouch(t, p, time.Now().Add(-time.Minute))
	wtOK(t, Write{}, env, map[string]any{"file_path": "f.txt", "content": "x\n"})
}

// A window of a large file keeps no fingerprint: a moved stamp is stale.
func TestLargeWindowWithoutHashStaleOnTouch(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	line := strings.Repeat("y", 1000) + "\n"
	p := wtFile(t, dir, "huge.txt", []byte(strings.Repeat(line, 10<<10))) // 10 MB
	leSettle(t, p)
	leRead(t, env, map[string]any{"file_path": "huge.txt", "offset": 9000, "limit": 5})
	wtTouch(t, p, time.Now().Add(-time.Minute))
	wtCode(t, Edit{}, env, editIn("huge.txt", "yyy\n", "zzz\n"), CodeStale)
}
