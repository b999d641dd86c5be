package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/postgres"
	"github.com/ferry-dev/ferry/internal/store/storetest"
)

const envDSN = "FERRY_TEST_POSTGRES"

// adminDSN is the test database's DSN; without it the tests skip, unless
// FERRY_REQUIRE_POSTGRES=1 (set it in CI so that a missing server fails).
func adminDSN(tb testing.TB) string {
	tb.Helper()
	dsn := os.Getenv(envDSN)
	if dsn == "" {
		if os.Getenv("FERRY_REQUIRE_POSTGRES") == "1" {
			tb.Fatalf("FERRY_REQUIRE_POSTGRES=1 but %s is not set", envDSN)
		}
		tb.Skip("set FERRY_TEST_POSTGRES to a PostgreSQL DSN to run the shared store suite against PostgreSQL; .ci/run installs postgresql and sets it")
	}
	return dsn
}

// withSearchPath returns dsn with search_path set to schema.
func withSearchPath(tb testing.TB, dsn, schema string) string {
	return withParam(tb, dsn, "search_path", schema)
}

// withParam sets a run-time parameter in dsn, for both DSN forms pgx
// accepts (the value needs no quoting).
func withParam(tb testing.TB, dsn, key, value string) string {
	tb.Helper()
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			tb.Fatalf("%s does not parse: %v", envDSN, err)
		}
		q := u.Query()
		q.Set(key, value)
		u.RawQuery = q.Encode()
		return u.String()
	}
	return dsn + " " + key + "=" + value
}

// freshSchema creates an empty schema that is dropped when the test ends
// and returns a DSN whose search_path is that schema.
func freshSchema(tb testing.TB) string {
	tb.Helper()
	dsn, _ := freshSchemaNamed(tb)
	return dsn
}

func freshSchemaNamed(tb testing.TB) (dsn, schema string) {
	tb.Helper()
	admin := adminDSN(tb)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema = "ferry_test_" + hex.EncodeToString(b[:])
	if err := execOn(context.Background(), admin, "CREATE SCHEMA "+schema); err != nil {
		tb.Fatalf("create schema: %v", err)
	}
	tb.Cleanup(func() {
		if err := execOn(context.Background(), admin, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			tb.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return withSearchPath(tb, admin, schema), schema
}

// execOn runs q on its own connection to dsn, within 30 s.
func execOn(ctx context.Context, dsn, q string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, q)
	return err
}

func openAt(tb testing.TB, dsn string) *postgres.Store {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(func() { _ = s.Close() }) // registered after the schema's drop: runs first
	return s
}

func TestSuite(t *testing.T) {
	adminDSN(t)
	storetest.Run(t,
		func(t *testing.T) store.Store { return openAt(t, freshSchema(t)) },
		storetest.WithReopen(func(t *testing.T) storetest.Opener {
			dsn := freshSchema(t)
			return func(t *testing.T) store.Store { return openAt(t, dsn) }
		}),
	)
}

// TestConcurrentOpen starts several stores on one empty schema at once:
// the advisory lock makes the migration run once.
func TestConcurrentOpen(t *testing.T) {
	dsn := freshSchema(t)
	const n = 4
	errs := make(chan error, n)
	for range n {
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			s, err := postgres.Open(ctx, dsn)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent Open: %v", err)
		}
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	// Numbers may have gaps (migrate's package doc): each file once.
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil {
		t.Fatal(err)
	}
	var rows, distinct int
	if err := conn.QueryRow(t.Context(), "SELECT count(*), count(DISTINCT version) FROM schema_migrations").Scan(&rows, &distinct); err != nil {
		t.Fatal(err)
	}
	if rows != len(files) || distinct != len(files) {
		t.Fatalf("schema_migrations has %d rows (%d versions) for %d migration files: a migration ran twice or was skipped", rows, distinct, len(files))
	}
}

// schema is a fresh schema for the migration tests.
func schema(t *testing.T) storetest.Schema {
	dsn := freshSchema(t)
	return storetest.Schema{
		Open: func(ctx context.Context) (store.Store, error) { return postgres.Open(ctx, dsn) },
		Exec: func(t *testing.T, q string) {
			t.Helper()
			if err := execOn(t.Context(), dsn, q); err != nil {
				t.Fatalf("%.40s…: %v", q, err)
			}
		},
		Now:             "now()",
		Bytes:           func(hex string) string { return `'\x` + hex + `'` },
		MigrationsTable: "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)",
	}
}

func TestRefusesNewerSchema(t *testing.T) { storetest.RefusesNewerSchema(t, schema(t)) }

// TestUpgradeKeepsTokens: the token's machine scope (migration 2) comes
// back empty, that is every machine.
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
	// These need no server.
	_, err := postgres.Open(t.Context(), "postgres://user:secret@[::1")
	if err == nil || strings.Contains(err.Error(), "secret") {
		t.Fatalf("Open of a malformed DSN = %v, want an error that does not repeat the password", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err = postgres.Open(ctx, "postgres://nobody@127.0.0.1:1/none?connect_timeout=5")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Open with a cancelled context = %v, want context.Canceled", err)
	}
}

// TestMessageIDRaceInSession makes the race deterministic: another
// transaction has inserted message "x" into session s2 and not committed
// (a writer that skipped the row lock), so an append of "x" to s2 waits
// for it (the insert's key share lock on the session row), then checks
// for duplicates in a fresh snapshot and reports one, not a failure. An
// append of "x" to s1 meanwhile is s1's own event.
func TestMessageIDRaceInSession(t *testing.T) {
	dsn, schema := freshSchemaNamed(t)
	app := "race_" + schema // to find the store's connection in pg_stat_activity
	s := openAt(t, withParam(t, dsn, "application_name", app))
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for _, id := range []string{"s1", "s2"} {
		if err := s.CreateSession(ctx, store.Session{ID: id, MachineID: "m", Epoch: "e"}); err != nil {
			t.Fatal(err)
		}
	}
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.Background())
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, `INSERT INTO events (session_id, seq, message_id, type, data, created_at)
		VALUES ('s2', 1, 'x', 't', '\x7b7d', now())`); err != nil {
		t.Fatal(err)
	}

	type result struct {
		evs []store.Event
		err error
	}
	done := make(chan result, 1)
	go func() {
		evs, err := s.AppendEvents(ctx, "s2", []store.Event{{MessageID: "x", Type: "t", Data: []byte("{}")}})
		done <- result{evs, err}
	}()
	// Wait (bounded by ctx) until the append waits on a lock.
	for {
		var waiting bool
		err := other.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE application_name = $1 AND wait_event_type = 'Lock')`, app).Scan(&waiting)
		if err != nil {
			t.Fatalf("waiting for the append to block: %v", err)
		}
		if waiting {
			break
		}
		select {
		case r := <-done:
			t.Fatalf("the append finished while the other transaction was open: %+v, %v", r.evs, r.err)
		case <-time.After(5 * time.Millisecond):
		}
	}
	if evs, err := s.AppendEvents(ctx, "s1", []store.Event{{MessageID: "x", Type: "t", Data: []byte("{}")}}); err != nil || evs[0].Duplicate || evs[0].Seq != 1 {
		t.Fatalf("x appended to s1 while s2's is pending = %+v, %v; want stored at seq 1", evs, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("append that lost the race: %v", r.err)
	}
	if !r.evs[0].Duplicate || r.evs[0].Seq != 1 {
		t.Fatalf("append that lost the race = %+v, want a duplicate of seq 1", r.evs[0])
	}
	got, err := s.Session(ctx, "s2")
	if err != nil {
		t.Fatal(err)
	}
	if got.LastSeq != 0 {
		t.Fatalf("s2 last seq = %d after a duplicate, want 0 (the other writer did not move it)", got.LastSeq)
	}
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store { return openAt(b, freshSchema(b)) })
}
