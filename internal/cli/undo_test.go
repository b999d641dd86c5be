package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/binarytest"
	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/llm/fake"
)

// These tests run `ferry run` in-process on the fake provider, then
// `ferry undo` on what it recorded.

// testStateHome is $XDG_STATE_HOME for the whole test binary, so that no
// ferry run of a test keeps its file history in the real home.
var testStateHome string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "ferry-cli-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testStateHome = d
	_ = os.Setenv("XDG_STATE_HOME", d)
	code := binarytest.Main(m) // one shared build for the binary tests
	_ = os.RemoveAll(d)
	os.Exit(code)
}

// stateOnlyEnv is an environment with nothing but XDG_STATE_HOME.
func stateOnlyEnv(k string) string {
	if k == "XDG_STATE_HOME" {
		return testStateHome
	}
	return ""
}

// ferryUndo runs `ferry undo args...` in-process.
func ferryUndo(t *testing.T, args ...string) runOut {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: stateOnlyEnv}
	code := Run(context.Background(), env, append([]string{"undo"}, args...))
	return runOut{code, stdout.String(), stderr.String()}
}

var undoHint = regexp.MustCompile(`ferry run: (\d+) files? changed; undo with: ferry undo ([0-9a-f-]+)\n`)

// editRun scripts a run that edits a.txt once and creates new.txt with a
// Write and an Edit, and runs it; it returns the session id the run
// prints.
func editRun(t *testing.T, srv *fake.Server, f fake.Format, dir string, args ...string) runOut {
	t.Helper()
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "a.txt"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "a.txt", "old_string": "one", "new_string": "ONE"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "new.txt", "content": "fresh\n"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "new.txt", "old_string": "fresh", "new_string": "fresher"}}}},
		fake.Reply{Text: []string{"Done."}},
	)
	out := ferryRun(t, srv, f, dir, "", append(append([]string{"--allow", "Edit", "--allow", "Write"}, args...), "change the files")...)
	if out.code != ExitOK {
		t.Fatalf("ferry run: exit %d, stderr %s", out.code, out.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "ONE\ntwo\n" {
		t.Fatalf("a.txt after the run: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "new.txt")); got != "fresher\n" {
		t.Fatalf("new.txt after the run: %q", got)
	}
	return out
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func sessionOf(t *testing.T, out runOut) string {
	t.Helper()
	m := undoHint.FindStringSubmatch(out.stderr)
	if m == nil {
		t.Fatalf("no undo hint on stderr: %q", out.stderr)
	}
	if m[1] != "2" {
		t.Fatalf("hint counts %s files: %q", m[1], out.stderr)
	}
	return m[2]
}

// TestUndoRun: a run that edits one file and creates another; ferry run
// says how to undo it, --list shows both, ferry undo puts both back (the
// created one deleted), and a second undo has nothing left to do.
func TestUndoRun(t *testing.T) {
	t.Parallel()
	forEachFormat(t, func(t *testing.T, f fake.Format, srv *fake.Server, dir string) {
		writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\n")
		out := editRun(t, srv, f, dir)
		sid := sessionOf(t, out)
		if out.stdout != "Done.\n" {
			t.Fatalf("stdout %q", out.stdout)
		}

		l := ferryUndo(t, "--list", sid)
		if l.code != ExitOK {
			t.Fatalf("--list: exit %d, stderr %s", l.code, l.stderr)
		}
		lines := strings.Split(strings.TrimSpace(l.stdout), "\n")
		if len(lines) != 3 || strings.Join(strings.Fields(lines[0]), " ") != "PATH EDITS KIND CHANGED SINCE" ||
			strings.Join(strings.Fields(lines[1]), " ") != "a.txt 1 modified no" ||
			strings.Join(strings.Fields(lines[2]), " ") != "new.txt 2 created no" {
			t.Fatalf("--list:\n%s", l.stdout)
		}
		if readFile(t, filepath.Join(dir, "a.txt")) != "ONE\ntwo\n" {
			t.Fatal("--list changed a file")
		}

		u := ferryUndo(t, sid)
		if u.code != ExitOK || u.stdout != "restored a.txt\ndeleted  new.txt (the agent created it)\n" {
			t.Fatalf("undo: exit %d, stdout %q, stderr %s", u.code, u.stdout, u.stderr)
		}
		if got := readFile(t, filepath.Join(dir, "a.txt")); got != "one\ntwo\n" {
			t.Fatalf("a.txt after undo: %q", got)
		}
		if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("new.txt after undo: %v", err)
		}

		again := ferryUndo(t, sid)
		if again.code != ExitError || !strings.Contains(again.stderr, "undone already") {
			t.Fatalf("second undo: exit %d, stderr %q", again.code, again.stderr)
		}
	})
}

// TestUndoRefusedWhenChangedSince: a file changed after the agent's edit
// makes the whole undo refused, naming it, with every file left as it is;
// --list says so; --file undoes the other file alone.
func TestUndoRefusedWhenChangedSince(t *testing.T) {
	t.Parallel()
	srv, dir := fake.New(t), t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\n")
	sid := sessionOf(t, editRun(t, srv, fake.Anthropic, dir))
	writeFile(t, filepath.Join(dir, "a.txt"), "ONE\ntwo\nmine\n") // the user's own edit

	u := ferryUndo(t, sid)
	if u.code != ExitError || !strings.Contains(u.stderr, "a.txt changed since the agent's edit; nothing was restored") || u.stdout != "" {
		t.Fatalf("undo: exit %d, stdout %q, stderr %q", u.code, u.stdout, u.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "ONE\ntwo\nmine\n" {
		t.Fatalf("a.txt after a refused undo: %q", got)
	}
	if got := readFile(t, filepath.Join(dir, "new.txt")); got != "fresher\n" {
		t.Fatalf("new.txt after a refused undo: %q", got)
	}

	l := ferryUndo(t, "--list", sid)
	if l.code != ExitOK || !strings.Contains(l.stdout, "yes (undo refused)") {
		t.Fatalf("--list: exit %d, stdout %q", l.code, l.stdout)
	}

	// Flags after the session id work too.
	one := ferryUndo(t, sid, "--file", "new.txt")
	if one.code != ExitOK || one.stdout != "deleted  new.txt (the agent created it)\n" {
		t.Fatalf("--file: exit %d, stdout %q, stderr %s", one.code, one.stdout, one.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "new.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("new.txt after --file: %v", err)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "ONE\ntwo\nmine\n" {
		t.Fatalf("--file new.txt touched a.txt: %q", got)
	}
	if o := ferryUndo(t, "--file", "other.txt", sid); o.code != ExitError || !strings.Contains(o.stderr, "did not change other.txt") {
		t.Fatalf("--file other.txt: exit %d, stderr %q", o.code, o.stderr)
	}
}

// TestUndoRefusesSwappedFile is issue 31 item 1.6 through ferry undo: the
// agent edited a.txt; a.txt is then a symbolic link to b.txt, which holds
// exactly the agent's version (or another file renamed over a.txt holds
// it). ferry undo (the whole session, or --file a.txt) is refused naming
// a.txt, and nothing changes: b.txt keeps the agent's version, a.txt stays
// a link, new.txt stays. Before the fix the undo wrote the old content
// into b.txt through the link.
func TestUndoRefusesSwappedFile(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, want string
		swap       func(t *testing.T, dir string)
	}{
		{"symlink", "a.txt is now a symbolic link", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "b.txt"), "ONE\ntwo\n")
			if err := os.Remove(filepath.Join(dir, "a.txt")); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("b.txt", filepath.Join(dir, "a.txt")); err != nil {
				t.Fatal(err)
			}
		}},
		{"renamed over", "a.txt was replaced by another file", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "b.txt"), "ONE\ntwo\n")
			if err := os.Rename(filepath.Join(dir, "b.txt"), filepath.Join(dir, "a.txt")); err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "b.txt"), "ONE\ntwo\n")
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			srv, dir := fake.New(t), t.TempDir()
			writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\n")
			sid := sessionOf(t, editRun(t, srv, fake.Anthropic, dir))
			c.swap(t, dir)
			link, _ := os.Readlink(filepath.Join(dir, "a.txt"))
			for _, args := range [][]string{{sid}, {"--file", "a.txt", sid}} {
				u := ferryUndo(t, args...)
				if u.code != ExitError || !strings.Contains(u.stderr, c.want) || !strings.Contains(u.stderr, "nothing was restored") || u.stdout != "" {
					t.Fatalf("undo %v: exit %d, stdout %q, stderr %q", args, u.code, u.stdout, u.stderr)
				}
				for name, want := range map[string]string{"a.txt": "ONE\ntwo\n", "b.txt": "ONE\ntwo\n", "new.txt": "fresher\n"} {
					if got := readFile(t, filepath.Join(dir, name)); got != want {
						t.Fatalf("%s after the refused undo %v: %q, want %q", name, args, got, want)
					}
				}
				if now, _ := os.Readlink(filepath.Join(dir, "a.txt")); now != link {
					t.Fatalf("a.txt links to %q after the refused undo, was %q", now, link)
				}
			}
			if l := ferryUndo(t, "--list", sid); l.code != ExitOK || !strings.Contains(l.stdout, "yes (undo refused)") {
				t.Fatalf("--list: exit %d, stdout %q", l.code, l.stdout)
			}
		})
	}
}

// TestUndoJSONAndNoHistory: json output stays one object (the hint goes
// to stderr) and names the session; --no-history records nothing, and
// ferry undo then says there is no history.
func TestUndoJSONAndNoHistory(t *testing.T) {
	t.Parallel()
	srv, dir := fake.New(t), t.TempDir()
	writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\n")
	out := editRun(t, srv, fake.OpenAI, dir, "--output-format", "json")
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil {
		t.Fatalf("json stdout %q: %v", out.stdout, err)
	}
	if sid := sessionOf(t, out); sid != res.SessionID {
		t.Fatalf("hint names %s, json %s", sid, res.SessionID)
	}

	writeFile(t, filepath.Join(dir, "a.txt"), "one\ntwo\n")
	if err := os.Remove(filepath.Join(dir, "new.txt")); err != nil {
		t.Fatal(err)
	}
	out = editRun(t, srv, fake.OpenAI, dir, "--output-format", "json", "--no-history")
	if strings.Contains(out.stderr, "undo") {
		t.Fatalf("--no-history still hints an undo: %q", out.stderr)
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || res.SessionID == "" {
		t.Fatalf("json stdout %q: %v", out.stdout, err)
	}
	if _, err := os.Stat(filepath.Join(testStateHome, "ferry", "history", res.SessionID)); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("--no-history kept a history: %v", err)
	}
	u := ferryUndo(t, res.SessionID)
	if u.code != ExitError || !strings.Contains(u.stderr, "no file history for session "+res.SessionID) {
		t.Fatalf("undo: exit %d, stderr %q", u.code, u.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "a.txt")); got != "ONE\ntwo\n" {
		t.Fatalf("a.txt: %q", got)
	}
}

// TestUndoUsage: bad session ids (a path escaping history/ included) and
// bad flags are refused with code 2 before anything is read or created.
func TestUndoUsage(t *testing.T) {
	t.Parallel()
	state := t.TempDir()
	outside := filepath.Join(state, "x")
	if err := os.MkdirAll(filepath.Join(outside), 0o700); err != nil {
		t.Fatal(err)
	}
	// A journal where "../x" would lead: it must not be used.
	writeFile(t, filepath.Join(outside, "journal.jsonl"), "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--state", state, "../x"}, "session id is 1 to 64 letters"},
		{[]string{"--state", state, "a/b"}, "session id is 1 to 64 letters"},
		{[]string{"--state", state, ""}, "session id is 1 to 64 letters"},
		{[]string{"--state", state, strings.Repeat("a", 65)}, "session id is 1 to 64 letters"},
		{[]string{"--state", state}, "give one SESSION_ID"},
		{[]string{"--state", state, "a", "b"}, "give one SESSION_ID"},
		{[]string{"--state", state, "--list", "--file", "a.txt", "abc"}, "pick one"},
		{[]string{"--bogus", "abc"}, "flag provided but not defined"},
	} {
		u := ferryUndo(t, tc.args...)
		if u.code != ExitUsage || !strings.Contains(u.stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q (want %q)", tc.args, u.code, u.stderr, tc.want)
		}
	}
	ents, err := os.ReadDir(state)
	if err != nil || len(ents) != 1 || ents[0].Name() != "x" {
		t.Fatalf("the state folder changed: %v %v", ents, err)
	}
	if u := ferryUndo(t, "--state", state, "nosuchsession"); u.code != ExitError || !strings.Contains(u.stderr, "no file history for session nosuchsession") {
		t.Fatalf("unknown session: exit %d, stderr %q", u.code, u.stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "history")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("an unknown session created the history folder: %v", err)
	}
	h := ferryUndo(t, "-h")
	if h.code != ExitOK || !strings.Contains(h.stderr, "Usage: ferry undo") || !strings.Contains(h.stderr, "-list") {
		t.Fatalf("-h: exit %d, stderr %q", h.code, h.stderr)
	}
}

// TestUndoOtherAgentsRecordNothing: the echo agent and a script agent
// (which writes a file itself, unseen by ferry) leave no history and no
// hint; their files stay as they made them.
func TestUndoOtherAgentsRecordNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := runAgent(t, dir, "", "--agent", "echo", "--output-format", "json", "hello")
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitOK {
		t.Fatalf("echo: exit %d, stdout %q: %v", out.code, out.stdout, err)
	}
	if strings.Contains(out.stderr, "undo") {
		t.Fatalf("echo hints an undo: %q", out.stderr)
	}
	if u := ferryUndo(t, res.SessionID); u.code != ExitError || !strings.Contains(u.stderr, "no file history") {
		t.Fatalf("undo echo: exit %d, stderr %q", u.code, u.stderr)
	}

	script := agentScript(t, "echo made > \"$FERRY_WORKSPACE/made.txt\"; echo ok\n")
	out = runAgent(t, dir, "", "--agent", "script:"+script, "--output-format", "json", "make it")
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitOK {
		t.Fatalf("script: exit %d, stdout %q: %v", out.code, out.stdout, err)
	}
	if strings.Contains(out.stderr, "undo") {
		t.Fatalf("script hints an undo: %q", out.stderr)
	}
	if u := ferryUndo(t, res.SessionID); u.code != ExitError || !strings.Contains(u.stderr, "no file history") {
		t.Fatalf("undo script: exit %d, stderr %q", u.code, u.stderr)
	}
	if got := readFile(t, filepath.Join(dir, "made.txt")); got != "made\n" {
		t.Fatalf("made.txt: %q", got)
	}
}

// TestUndoClientSession: with --state, ferry undo reads a UI session's
// journal in a client's state folder (same layout); while a client holds
// that folder's lock it refuses, changing nothing.
func TestUndoClientSession(t *testing.T) {
	t.Parallel()
	state, ws := t.TempDir(), t.TempDir()
	canon, err := filepath.EvalSymlinks(ws)
	if err != nil {
		t.Fatal(err)
	}
	const sid = "ui-session-1"
	hdir, err := filehistory.SessionDir(state, sid)
	if err != nil {
		t.Fatal(err)
	}
	j, err := filehistory.OpenJournal(hdir, sid, canon, 0)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(canon, "notes.md")
	writeFile(t, path, "after\n")
	if err := j.BeginTurn("turn-1"); err != nil {
		t.Fatal(err)
	}
	if err := j.Record(context.Background(), "toolu_1", "Edit", path, []byte("before\n"), true, []byte("after\n")); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// A running client holds the lock.
	lock, err := os.OpenFile(filepath.Join(state, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	u := ferryUndo(t, "--state", state, sid)
	if u.code != ExitError || !strings.Contains(u.stderr, "a ferry client is running with the state folder") {
		t.Fatalf("undo under a client: exit %d, stderr %q", u.code, u.stderr)
	}
	if got := readFile(t, path); got != "after\n" {
		t.Fatalf("notes.md under a client: %q", got)
	}
	_ = lock.Close()

	u = ferryUndo(t, "--state", state, "--workspace", ws, sid)
	if u.code != ExitOK || u.stdout != "restored notes.md\n" {
		t.Fatalf("undo: exit %d, stdout %q, stderr %q", u.code, u.stdout, u.stderr)
	}
	if got := readFile(t, path); got != "before\n" {
		t.Fatalf("notes.md after undo: %q", got)
	}
	if u := ferryUndo(t, "--state", state, "--workspace", t.TempDir(), sid); u.code != ExitError || !strings.Contains(u.stderr, "changed files in "+canon) {
		t.Fatalf("other workspace: exit %d, stderr %q", u.code, u.stderr)
	}
}

// TestRunHistoryQuota: --history-quota bounds the run's history; a change
// larger than it is not kept, and both ferry run and ferry undo say so.
func TestRunHistoryQuota(t *testing.T) {
	t.Parallel()
	srv, dir := fake.New(t), t.TempDir()
	if out := ferryRun(t, srv, fake.Anthropic, dir, "", "--history-quota", "0", "x"); out.code != ExitUsage || !strings.Contains(out.stderr, "--history-quota must be at least 1") {
		t.Fatalf("quota 0: exit %d, stderr %q", out.code, out.stderr)
	}
	big := strings.Repeat("0123456789abcde\n", 96<<10) // 1.5 MiB
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Write", Input: map[string]any{"file_path": "big.txt", "content": big}}}},
		fake.Reply{Text: []string{"Written."}},
	)
	out := ferryRun(t, srv, fake.Anthropic, dir, "", "--allow", "Write", "--history-quota", "1", "--output-format", "json", "write it")
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal([]byte(out.stdout), &res); err != nil || out.code != ExitOK {
		t.Fatalf("exit %d, stdout %q, stderr %q: %v", out.code, out.stdout, out.stderr, err)
	}
	if readFile(t, filepath.Join(dir, "big.txt")) != big {
		t.Fatal("big.txt not written")
	}
	if !strings.Contains(out.stderr, "ferry run: files changed, but --history-quota dropped every change: the run cannot be undone") {
		t.Fatalf("stderr %q", out.stderr)
	}
	u := ferryUndo(t, res.SessionID)
	if u.code != ExitError || !strings.Contains(u.stderr, "--history-quota dropped every change of session") {
		t.Fatalf("undo: exit %d, stderr %q", u.code, u.stderr)
	}
	if readFile(t, filepath.Join(dir, "big.txt")) != big {
		t.Fatal("a refused undo changed big.txt")
	}
}

// TestFerryUndoBinary: ferry run and ferry undo as real processes, the
// session id taken from the hint ferry run prints.
func TestFerryUndoBinary(t *testing.T) {
	t.Parallel()
	bin := binarytest.Build(t)
	srv, dir := fake.New(t), t.TempDir()
	writeFile(t, filepath.Join(dir, "main.go"), "package main\n")
	srv.Script(
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Read", Input: map[string]any{"file_path": "main.go"}}}},
		fake.Reply{ToolCalls: []fake.ToolCall{{Name: "Edit", Input: map[string]any{"file_path": "main.go", "old_string": "main", "new_string": "ferry"}}}},
		fake.Reply{Text: []string{"Renamed."}},
	)
	env := append(os.Environ(), "ANTHROPIC_API_KEY=test-key", "XDG_STATE_HOME="+t.TempDir())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	run := func(args ...string) (string, string, error) {
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	_, stderr, err := run("run", "--provider", "anthropic", "--model", "test-model", "--base-url", srv.BaseURL(fake.Anthropic),
		"--workspace", dir, "--allow", "Edit", "--no-stdin", "rename the package")
	if err != nil {
		t.Fatalf("ferry run: %v: %s", err, stderr)
	}
	m := regexp.MustCompile(`ferry run: 1 file changed; undo with: ferry undo ([0-9a-f-]+)\n`).FindStringSubmatch(stderr)
	if m == nil || readFile(t, filepath.Join(dir, "main.go")) != "package ferry\n" {
		t.Fatalf("stderr %q", stderr)
	}
	stdout, stderr, err := run("undo", m[1])
	if err != nil || stdout != "restored main.go\n" {
		t.Fatalf("ferry undo: %v, stdout %q, stderr %q", err, stdout, stderr)
	}
	if got := readFile(t, filepath.Join(dir, "main.go")); got != "package main\n" {
		t.Fatalf("main.go after undo: %q", got)
	}
	_, stderr, err = run("undo", "../"+m[1])
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitUsage || !strings.Contains(stderr, "session id") {
		t.Fatalf("ferry undo ../id: %v, stderr %q", err, stderr)
	}
}
