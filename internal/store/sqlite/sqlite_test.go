package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the driver, for opening the file behind the store's back

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/sqlite"
	"github.com/ferry-dev/ferry/internal/store/storetest"
)

func openAt(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestSuite(t *testing.T) {
	storetest.Run(t,
		func(t *testing.T) store.Store { return openAt(t, filepath.Join(t.TempDir(), "ferry.db")) },
		storetest.WithReopen(func(t *testing.T) storetest.Opener {
			path := filepath.Join(t.TempDir(), "ferry.db")
			return func(t *testing.T) store.Store { return openAt(t, path) }
		}),
	)
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new", "data")
	path := filepath.Join(dir, "ferry.db")
	s := openAt(t, path)
	// Write something so that the WAL holds data.
	if err := s.CreateSession(t.Context(), store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("stat %s: %v", p, err)
		}
		if mode := fi.Mode().Perm(); mode != 0o600 {
			t.Errorf("%s has mode %v, want 0600", filepath.Base(p), mode)
		}
	}
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Stat(d)
		if err != nil {
			t.Fatal(err)
		}
		if mode := fi.Mode().Perm(); mode != 0o700 {
			t.Errorf("created directory %s has mode %v, want 0700", d, mode)
		}
	}
}

// TestPragmas checks the settings the package documents (WAL,
// synchronous=NORMAL, foreign keys, busy timeout), read back from a
// writer connection's point of view through a second handle on the file.
func TestPragmas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ferry.db")
	openAt(t, path)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(t.Context(), "PRAGMA journal_mode").Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal (persistent in the file)", mode)
	}
	var versions []int
	rows, err := db.QueryContext(t.Context(), "SELECT version FROM schema_migrations ORDER BY version")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		versions = append(versions, v)
	}
	if len(versions) == 0 || versions[0] != 1 {
		t.Fatalf("schema_migrations = %v, want 1, 2, …", versions)
	}
}

// schema is a fresh file for the migration tests.
func schema(t *testing.T) storetest.Schema {
	path := filepath.Join(t.TempDir(), "ferry.db")
	return storetest.Schema{
		Open: func(ctx context.Context) (store.Store, error) { return sqlite.Open(ctx, path) },
		Exec: func(t *testing.T, q string) {
			t.Helper()
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(t.Context(), q); err != nil {
				t.Fatalf("%.40s…: %v", q, err)
			}
		},
		Now:             "0",
		Bytes:           func(hex string) string { return "x'" + hex + "'" },
		MigrationsTable: "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT",
		ForeignKeys:     "PRAGMA foreign_keys = ON; ",
	}
}

func TestRefusesNewerSchema(t *testing.T) { storetest.RefusesNewerSchema(t, schema(t)) }

// TestUpgradeKeepsTokens: the token's machine scope (migration 2) comes
// back empty, that is every machine, and the token still authenticates.
func TestUpgradeKeepsTokens(t *testing.T) { storetest.UpgradeKeepsTokens(t, schema(t)) }

// TestUpgradeKeepsSnapshots: a session's snapshot moves out of its row
// (migration 9) and reads back the same.
func TestUpgradeKeepsSnapshots(t *testing.T) { storetest.UpgradeKeepsSnapshots(t, schema(t)) }

// TestUpgradeKeepsEvents: message IDs become per session (migration 15)
// with every stored event kept.
func TestUpgradeKeepsEvents(t *testing.T) { storetest.UpgradeKeepsEvents(t, schema(t)) }

// TestUploadsGoWithTheirSession: deleting a session deletes its uploads.
func TestUploadsGoWithTheirSession(t *testing.T) { storetest.UploadsGoWithTheirSession(t, schema(t)) }

func TestOpenErrors(t *testing.T) {
	if _, err := sqlite.Open(t.Context(), ""); err == nil {
		t.Fatal("Open with an empty path succeeded")
	}
	// A directory where the file should be.
	dir := t.TempDir()
	if _, err := sqlite.Open(t.Context(), dir); err == nil {
		t.Fatal("Open of a directory succeeded")
	}
	// Not a database.
	junk := filepath.Join(dir, "junk.db")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not sqlite ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlite.Open(t.Context(), junk); err == nil {
		t.Fatal("Open of a file that is not a database succeeded")
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := sqlite.Open(ctx, filepath.Join(dir, "x.db")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestOddPath checks that characters that mean something in a URI stay
// part of the file name.
func TestOddPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a b?c#d%20e.db")
	s := openAt(t, path)
	if err := s.CreateSession(t.Context(), store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the database is not at the path given: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "a b?c#d%20e.db") {
			t.Fatalf("stray file %q beside the database", e.Name())
		}
	}
}

// The crash test: a child process appends events and reports each append
// that returned; the parent kills it with SIGKILL mid-stream and checks
// that every reported event is in the file (WAL + synchronous=NORMAL
// survives a process crash).

const crashEnv = "FERRY_SQLITE_CRASH_CHILD"

func TestCrashChild(t *testing.T) {
	path := os.Getenv(crashEnv)
	if path == "" {
		t.Skip("helper process for TestSurvivesProcessKill")
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	if err := s.CreateSession(ctx, store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	for i := 0; ; i++ {
		data, _ := json.Marshal(map[string]any{"type": "agent.text.delta", "n": i, "pad": strings.Repeat("x", 1000)})
		evs, err := s.AppendEvents(ctx, "s", []store.Event{{MessageID: fmt.Sprint("m", i), Type: "agent.text.delta", Data: data}})
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println("acked", evs[0].Seq)
	}
}

func TestSurvivesProcessKill(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	path := filepath.Join(t.TempDir(), "ferry.db")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const killAfter = 300
	var acked uint64
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		if seq, ok := strings.CutPrefix(line, "acked "); ok {
			n, err := strconv.ParseUint(seq, 10, 64)
			if err != nil {
				t.Fatalf("child said %q", line)
			}
			acked = n
			if acked >= killAfter {
				break
			}
		} else if strings.HasPrefix(line, "error") {
			t.Fatalf("child: %s", line)
		}
	}
	if acked < killAfter {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("child stopped after %d acks: %v", acked, sc.Err())
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred cleanup runs
		t.Fatal(err)
	}
	_ = cmd.Wait()

	// The -wal file must still be there (the kill left it unmerged) for the
	// test to mean anything.
	if _, err := os.Stat(path + "-wal"); errors.Is(err, fs.ErrNotExist) {
		t.Fatal("no -wal file after the kill: the child did not run in WAL mode")
	}
	s := openAt(t, path)
	ss, err := s.Session(ctx, "s")
	if err != nil {
		t.Fatal(err)
	}
	if ss.LastSeq < acked {
		t.Fatalf("after a kill the session's last seq is %d, but %d appends had returned", ss.LastSeq, acked)
	}
	evs, err := s.Events(ctx, "s", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(evs)) != ss.LastSeq || evs[len(evs)-1].Seq != ss.LastSeq {
		t.Fatalf("%d events with last seq %d after the kill, want 1..%d", len(evs), evs[len(evs)-1].Seq, ss.LastSeq)
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		s, err := sqlite.Open(b.Context(), filepath.Join(b.TempDir(), "bench.db"))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// TestCheckpointsInBackground: the writer never checkpoints
// (wal_autocheckpoint=0), so the database file itself only grows when the
// background checkpointer copies the WAL into it.
func TestCheckpointsInBackground(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ferry.db")
	s := openAt(t, path)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if err := s.CreateSession(ctx, store.Session{ID: "s", MachineID: "m", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	const n, size = 1000, 1024
	pad := strings.Repeat("x", size)
	for i := range n / 10 {
		evs := make([]store.Event, 10)
		for j := range evs {
			evs[j] = store.Event{MessageID: fmt.Sprint(i, "-", j), Type: "t", Data: []byte(pad)}
		}
		if _, err := s.AppendEvents(ctx, "s", evs); err != nil {
			t.Fatal(err)
		}
	}
	for {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() >= n*size {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the database file is still %d bytes after %d KB of events: no checkpoint ran", fi.Size(), n)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestWALBoundedUnderSustainedWrites: appends without a pause never let a
// background checkpoint complete, so SQLite never started the WAL over and
// it grew by every page written (about 24 KB an event here) until the
// writes paused. Past the bound (1 MB here, checked every 50 ms) the
// checkpointer completes it on the writer's connection and the WAL starts
// over, so after a second of appends it holds about one interval's pages
// (a few MB), where it had grown past 100 MB.
func TestWALBoundedUnderSustainedWrites(t *testing.T) {
	// Restored after the store is closed (cleanups run last first).
	t.Cleanup(sqlite.SetWALBound(1<<20, 50*time.Millisecond))
	path := filepath.Join(t.TempDir(), "ferry.db")
	s := openAt(t, path)
	ctx := t.Context()
	if err := s.CreateSession(ctx, store.Session{ID: "s1", MachineID: "m1", Epoch: "e"}); err != nil {
		t.Fatal(err)
	}
	data := []byte(`{"type":"agent.text.delta","payload":{"delta":"` + strings.Repeat("x", 1000) + `"}}`)
	n := 0
	for end := time.Now().Add(time.Second); time.Now().Before(end); n++ {
		ev := store.Event{MessageID: fmt.Sprintf("m-%d", n), Type: "agent.text.delta", Data: data}
		if _, err := s.AppendEvents(ctx, "s1", []store.Event{ev}); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path + "-wal")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > 32<<20 {
		t.Fatalf("the WAL is %d MB after %d appends without a pause; want at most 32 MB", fi.Size()>>20, n)
	}
	t.Logf("%d appends, WAL %d MB", n, fi.Size()>>20)
	// Nothing was lost on the way.
	if got, err := s.Events(ctx, "s1", 0, n+1); err != nil || len(got) != n {
		t.Fatalf("%d events stored (%v), want %d", len(got), err, n)
	}
}

// TestSearchUsesPartialIndex: a search reads a session's prompts and
// answers through events_searched, the index that holds only those types
// (so the stream of deltas maintains none), not by scanning its events.
func TestSearchUsesPartialIndex(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "ferry.db"))
	plan, err := sqlite.SearchPlan(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	joined := strings.Join(plan, "\n")
	if !strings.Contains(joined, "USING INDEX events_searched") {
		t.Fatalf("the search does not use events_searched:\n%s", joined)
	}
}

// TestWALKeepsItsBlocks: when the WAL starts over past its bound, SQLite
// truncates the file to journal_size_limit. Truncating a 1 GiB WAL to
// 64 MB freed the rest, which held every write 300-450 ms (ext4 with
// discard); with the limit at the bound, what was written between the
// bound's check and the reset was freed, 55 ms more. The limit leaves room
// for that: twice the bound.
func TestWALKeepsItsBlocks(t *testing.T) {
	s := openAt(t, filepath.Join(t.TempDir(), "ferry.db"))
	limit, bound, err := sqlite.JournalSizeLimit(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	if limit != 2*bound {
		t.Fatalf("journal_size_limit = %d, want twice the WAL bound %d", limit, bound)
	}
}
