package tools

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// TestReadStateSurvivesRestart: the read state exported with a transcript
// and imported into a new session (after a restart) keeps only what is
// still current, re-validated against the files, and keeps each file's
// coverage: a window read still allows Edit but not Write.
func TestReadStateSurvivesRestart(t *testing.T) {
	t.Parallel()
	env, dir := wtEnv(t)
	var big strings.Builder
	for i := 1; i <= 3000; i++ {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	wtFile(t, dir, "big.txt", []byte(big.String()))
	// A window of a large file keeps no hash: its stamp must be settled
	// (older than the racy window) to vouch for it after a restart.
	time.Sleep(racyWindow + 100*time.Millisecond)
	wtFile(t, dir, "a.txt", []byte("alpha\n"))
	b := wtFile(t, dir, "b.txt", []byte("beta\n"))
	wtFile(t, dir, "never.txt", []byte("never read\n"))
	wtOK(t, Read{}, env, map[string]any{"file_path": "a.txt"})
	wtOK(t, Read{}, env, map[string]any{"file_path": "b.txt"})
	wtOK(t, Read{}, env, map[string]any{"file_path": "big.txt", "offset": 2401, "limit": 200})
	doc, err := env.State.Export()
	if err != nil {
		t.Fatal(err)
	}
	// While ferry was down, someone changed b.txt.
	if err := os.WriteFile(b, []byte("beta, changed\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	after := &Env{FS: env.FS, State: NewReadState(), Limits: env.Limits}
	n, err := after.State.Import(after.FS, doc)
	if err != nil || n != 2 {
		t.Fatalf("Import kept %d records (%v), want 2 (a.txt, big.txt)", n, err)
	}
	wtOK(t, Edit{}, after, map[string]any{"file_path": "a.txt", "old_string": "alpha", "new_string": "ALPHA"})
	wtCode(t, Edit{}, after, map[string]any{"file_path": "b.txt", "old_string": "beta", "new_string": "BETA"}, CodeNotRead)
	wtCode(t, Edit{}, after, map[string]any{"file_path": "never.txt", "old_string": "never", "new_string": "NEVER"}, CodeNotRead)
	msg := wtCode(t, Write{}, after, map[string]any{"file_path": "big.txt", "content": "x\n"}, CodeNotRead)
	if !strings.Contains(msg, "have not been read") {
		t.Fatalf("Write after a restored window: %q", msg)
	}
	wtOK(t, Edit{}, after, map[string]any{"file_path": "big.txt", "old_string": "line 2500\n", "new_string": "line 2500 edited\n"})

	if _, err := NewReadState().Import(env.FS, []byte(`{"files":`)); err == nil {
		t.Fatal("Import of a broken document succeeded")
	}
}
