//go:build unix

package e2e_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// TestUpStateFilesArePrivate is issue 31 item 1.1: `ferry up` runs as a
// real process under umask 022, with --state a folder the user made with a
// plain mkdir (0755) and $XDG_DATA_HOME, $XDG_STATE_HOME pre-made 0755 as
// well. Ferry's agent (on the fake provider) reads a .env holding a key
// and writes a file, so every store of the client holds session content:
// transcripts, outbox, artifacts and their snapshots, the file history.
// Then, while ferry up still has its databases open (their -wal and -shm
// files exist), again after it stopped, and once more after a `ferry run`
// that wrote a file (its history goes to $XDG_STATE_HOME/ferry), every
// file under those folders must be 0600 and every folder ferry made 0700. Before the fix the
// client's transcripts.db, outbox.db, artifacts.db and their -wal/-shm
// were 0644: the .env's key was readable by every local user.
func TestUpStateFilesArePrivate(t *testing.T) {
	bin := binarytest.Build(t)
	sh, err := os.Stat("/bin/sh")
	if err != nil || !sh.Mode().IsRegular() {
		t.Skipf("needs /bin/sh to set the umask of ferry up (install a POSIX shell): %v", err)
	}
	srv := fake.New(t)
	dir := t.TempDir()
	ws, state, data, stateHome := filepath.Join(dir, "ws"), filepath.Join(dir, "state"), filepath.Join(dir, "data"), filepath.Join(dir, "xdg-state")
	// The user's own folders, as a plain mkdir under umask 022 makes them.
	userDirs := map[string]bool{}
	for _, d := range []string{ws, state, data, stateHome} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil { //nolint:gosec // the world-readable folder is the point of the test
			t.Fatal(err)
		}
		userDirs[d] = true
	}
	const secret = "FERRY_TEST_KEY=sk-live-0123456789abcdef"
	if err := os.WriteFile(filepath.Join(ws, ".env"), []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(),
		"XDG_DATA_HOME="+data, "XDG_STATE_HOME="+stateHome, "HOME="+dir,
		"ANTHROPIC_BASE_URL="+srv.BaseURL(fake.Anthropic), "ANTHROPIC_API_KEY=test-key", "FERRY_PROVIDER=anthropic", "FERRY_MODEL=test-model",
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	// umask 022 for ferry itself, whatever the test process has.
	underUmask := func(args ...string) []string {
		return append([]string{"-c", `umask 022 && exec "$0" "$@"`, bin}, args...)
	}
	p := startProcess(t, "/bin/sh", env, underUmask("up", "--addr", freeAddr(t), "--state", state, "--workspace", ws,
		"--agent", "builtin", "--name", "test-machine")...)
	s := &system{t: t, addr: p.addr, uiToken: strings.TrimSpace(runFerry(t, "/bin/sh", env, underUmask("token", "create", "--kind", "ui")...))}
	u := s.ui()
	sess := u.startAdapterSession("builtin")
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": ".env"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "notes.txt", "content": secret + "\n"}}}},
		fake.Reply{Text: []string{"Copied the key."}},
	)
	u.allowTurn(sess.ID, "copy the key from .env into notes.txt", nil)
	if b, err := os.ReadFile(filepath.Join(ws, "notes.txt")); err != nil || string(b) != secret+"\n" {
		t.Fatalf("notes.txt: %q, %v", b, err)
	}

	// The folders ferry keeps state in must exist, or the walk proves
	// nothing.
	for _, want := range []string{
		filepath.Join(state, "transcripts.db"), filepath.Join(state, "transcripts.db-wal"),
		filepath.Join(state, "outbox.db"), filepath.Join(state, "outbox.db-wal"),
		filepath.Join(state, "artifacts.db"), filepath.Join(state, "history"), filepath.Join(state, "snapshots"),
		filepath.Join(data, "ferry", "ferry.db"), filepath.Join(data, "ferry", "ferry.db-wal"),
	} {
		if _, err := os.Lstat(want); err != nil {
			t.Errorf("after the turn: %v", err)
		}
	}
	walkPrivate(t, "while ferry up runs", userDirs, state, data, stateHome)
	u.close()
	p.stop(t)
	walkPrivate(t, "after ferry up stopped", userDirs, state, data, stateHome)

	// ferry run keeps its file history in $XDG_STATE_HOME/ferry.
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "more.txt", "content": secret + "\n"}}}},
		fake.Reply{Text: []string{"Done."}},
	)
	runFerry(t, "/bin/sh", env, underUmask("run", "--workspace", ws, "--allow", "Write", "--no-stdin", "write more.txt")...)
	if b, err := os.ReadFile(filepath.Join(ws, "more.txt")); err != nil || string(b) != secret+"\n" {
		t.Fatalf("more.txt: %q, %v", b, err)
	}
	if m, _ := filepath.Glob(filepath.Join(stateHome, "ferry", "history", "*", "journal.jsonl")); len(m) != 1 {
		t.Errorf("after ferry run: journals %v, want one", m)
	}
	walkPrivate(t, "after ferry run", userDirs, state, data, stateHome)
}

// walkPrivate fails t for every file under roots that is not 0600, every
// folder that is not 0700 (but the user's own, in userDirs) and anything
// else (a link, a socket): ferry makes nothing else there.
func walkPrivate(t *testing.T, when string, userDirs map[string]bool, roots ...string) {
	t.Helper()
	n := 0
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			n++
			mode := fi.Mode()
			switch {
			case mode.IsDir() && userDirs[path]:
			case mode.IsDir():
				if mode.Perm() != 0o700 {
					t.Errorf("%s: folder %s is %v, want 0700", when, path, mode.Perm())
				}
			case mode.IsRegular():
				if mode.Perm() != 0o600 {
					t.Errorf("%s: file %s is %v, want 0600", when, path, mode.Perm())
				}
			default:
				t.Errorf("%s: %s is a %v, not a file or folder", when, path, mode.Type())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%s: %d files and folders checked", when, n)
}
