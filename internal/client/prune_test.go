package client

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/filehistory"
	"github.com/ferry-dev/ferry/internal/llm"
	"github.com/ferry-dev/ferry/internal/transcript"
)

// logBuffer collects a client's log for assertions.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func withPruning(total int64, every time.Duration, log *logBuffer) envOpt {
	return func(c *Config) {
		c.HistoryTotal, c.PruneInterval = total, every
		c.Logger = slog.New(slog.NewTextHandler(log, nil))
	}
}

// plantJournal makes a closed journal of session in the state directory
// holding one change of a size-byte file, last written age ago.
func plantJournal(t *testing.T, state, session string, size int, age time.Duration) string {
	t.Helper()
	dir := filepath.Join(state, "history", session)
	j, err := filehistory.OpenJournal(dir, session, "/ws", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Record(context.Background(), "c", "Write", "/ws/f", bytes.Repeat([]byte("b"), size), true, bytes.Repeat([]byte("a"), size)); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	age2(t, dir, age)
	return dir
}

func age2(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	when := time.Now().Add(-age)
	if err := os.Chtimes(filepath.Join(dir, "journal.jsonl"), when, when); err != nil {
		t.Fatal(err)
	}
}

func gone(p string) bool {
	_, err := os.Lstat(p)
	return errors.Is(err, os.ErrNotExist)
}

// pruneGoroutines counts the client's pruning goroutines.
func pruneGoroutines() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	return strings.Count(string(buf), "(*Client).startPruning.func")
}

// TestPruneAgeAtStartAndPeriodically: a client drops, at start, the file
// histories not written for the transcripts' age bound, keeps the recent
// ones, and goes on doing so (and pruning the saved conversations) every
// PruneInterval; after Close its ticker is gone and nothing more is
// deleted.
func TestPruneAgeAtStartAndPeriodically(t *testing.T) {
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	old1 := plantJournal(t, state, "old1", 100, stateMaxAge+24*time.Hour)
	fresh := plantJournal(t, state, "fresh", 100, stateMaxAge-24*time.Hour)
	before := pruneGoroutines()
	var log logBuffer
	e := m.startOn(t, newWorkspace(t), state, withPruning(0, 20*time.Millisecond, &log))
	waitFor(ctx, t, "the old history dropped at start", func() bool { return gone(old1) })
	if pruneGoroutines() != before+1 {
		t.Fatalf("%d pruning goroutines running, want 1", pruneGoroutines()-before)
	}

	// While it runs: a history that turns old, and a saved conversation
	// not saved for longer than the bound.
	old2 := plantJournal(t, state, "old2", 100, stateMaxAge+time.Hour)
	if err := e.c.transcripts.Save(ctx, "s-old", transcript.Transcript{Messages: []llm.Message{{Role: llm.RoleUser, Content: []llm.Block{{Type: llm.BlockText, Text: "hi"}}}}}); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+(&url.URL{Path: filepath.Join(state, "transcripts.db")}).EscapedPath()+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = db.Close() }()
	if _, err := db.ExecContext(ctx, `UPDATE transcripts SET saved_at = ? WHERE session_id = 's-old'`, time.Now().Add(-stateMaxAge-time.Hour).UnixNano()); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "the history that turned old dropped", func() bool { return gone(old2) && strings.Contains(log.String(), "session=old2") })
	waitFor(ctx, t, "the old conversation dropped", func() bool {
		_, err := e.c.transcripts.Load(ctx, "s-old")
		return errors.Is(err, transcript.ErrNotFound)
	})
	if gone(fresh) {
		t.Fatal("a recent history was dropped")
	}
	for _, want := range []string{"file history dropped", "session=old1", "session=old2", "saved conversations dropped"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, log.String())
		}
	}

	e.stop()
	if n := pruneGoroutines(); n != before {
		t.Fatalf("%d pruning goroutines left after Close", n-before)
	}
	old3 := plantJournal(t, state, "old3", 100, stateMaxAge+time.Hour)
	time.Sleep(10 * 20 * time.Millisecond)
	if gone(old3) {
		t.Fatal("a history was dropped after Close")
	}
}

const overCapMsg = `msg="file histories over --history-total`

// TestPruneTotalSkipsOpenSessions: over HistoryTotal, whole histories go
// least recently written first, but never that of a session open in the
// client (here the oldest and largest); when only it is left over the
// bound, the log says so.
func TestPruneTotalSkipsOpenSessions(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	m := newFakeMaster(t)
	m.autoAck.Store(true)
	state := t.TempDir()
	var log logBuffer
	e := m.startOn(t, newWorkspace(t), state, withPruning(330_000, 20*time.Millisecond, &log))
	fc, _ := m.accept(ctx)
	e.open(ctx, fc, "s1", "echo")
	open := filepath.Join(state, "history", "s1")
	waitFor(ctx, t, "the open session's history", func() bool { return !gone(filepath.Join(open, "journal.jsonl")) })
	// The open session holds the oldest and largest history.
	if err := os.WriteFile(filepath.Join(open, "blobs", "planted"), make([]byte, 300_000), 0o600); err != nil {
		t.Fatal(err)
	}
	age2(t, open, 10*24*time.Hour)
	b := plantJournal(t, state, "b", 10_000, 5*24*time.Hour)
	c := plantJournal(t, state, "c", 10_000, 24*time.Hour)

	// 300k + 20k + 20k > 330k: b (older than c) goes; then it fits.
	waitFor(ctx, t, "b dropped", func() bool { return gone(b) })
	time.Sleep(5 * 20 * time.Millisecond)
	if gone(c) || gone(open) {
		t.Fatalf("c gone %v, the open session's history gone %v; want both kept", gone(c), gone(open))
	}
	if strings.Contains(log.String(), overCapMsg) {
		t.Fatalf("the log says the bound is not met while it is:\n%s", log.String())
	}

	// The open session grows past the bound on its own: c goes, the open
	// history stays, and the log says why the bound is not met.
	if err := os.WriteFile(filepath.Join(open, "blobs", "planted2"), make([]byte, 100_000), 0o600); err != nil {
		t.Fatal(err)
	}
	waitFor(ctx, t, "c dropped", func() bool { return gone(c) })
	waitFor(ctx, t, "the log line", func() bool { return strings.Contains(log.String(), overCapMsg) })
	if gone(filepath.Join(open, "blobs", "planted")) || !strings.Contains(log.String(), "open_sessions=1") {
		t.Fatalf("open history gone %v; log:\n%s", gone(open), log.String())
	}
}
