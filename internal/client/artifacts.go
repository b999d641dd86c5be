package client

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ferry-dev/ferry/internal/contentstore"
	"github.com/ferry-dev/ferry/internal/sqlitefile"
	"github.com/ferry-dev/ferry/protocol"
)

// errUnknownArtifact is returned by artifactLog.Lookup for an artifact the
// session never registered.
var errUnknownArtifact = errors.New("client: no such artifact in this session")

// errArtifactIDTaken is returned by artifactLog.Record for an artifact_id
// the session already has for another file.
var errArtifactIDTaken = errors.New("client: the session already has this artifact_id for another file")

// artifactLog records, in the state directory, every artifact the client's
// sessions handed to the user: (session, artifact_id) → the workspace, the
// path and the identity of the file there (device and inode, size and
// modification time). A download names only the session and the
// artifact_id, and reads exactly the file recorded here, so a download can
// never reach a file no agent registered — nor another file put in its
// place later, such as a hard link to a file outside the workspace. The
// record outlives restarts of the client.
//
// Each record also names the snapshot of the file's content taken when it
// was recorded (snapshots.go), kept in a content-addressed store beside
// the log, so a download serves the version the agent made even after the
// file changed. mu serialises what changes snapshots (record, evict,
// prune): a content is removed only when no record names it, and a record
// is never inserted naming a content an eviction is removing.
type artifactLog struct {
	db          *sql.DB
	put, lookup *sql.Stmt
	snaps       *contentstore.Store
	limits      snapshotLimits
	log         *slog.Logger

	mu sync.Mutex
}

// artifactRecord is one recorded artifact.
type artifactRecord struct {
	// Root is the workspace's absolute path when it was recorded.
	Root string
	// Path is workspace-relative and '/'-separated.
	Path string
	// ID is the file as registered; zero in records written before
	// identities were kept (those are served only while the file has a
	// single link).
	ID fileVersion
	// Snapshot is the hash of the content snapshotted when it was recorded
	// ("" when none was taken, or it was evicted); SnapSize its size.
	Snapshot string
	SnapSize int64
}

// fileVersion identifies the registered version of a file: its identity
// on the file system (device and inode where there are such), its size and
// its modification time. A file renamed over the path, a hard link swapped
// in, or a write since all give another version.
type fileVersion struct {
	Ident []byte
	Size  int64
	MTime int64 // UnixNano
}

func (v fileVersion) known() bool { return v.MTime != 0 || v.Size != 0 || len(v.Ident) != 0 }

func versionOf(fi os.FileInfo) fileVersion {
	return fileVersion{Ident: fileIdentity(fi), Size: fi.Size(), MTime: fi.ModTime().UnixNano()}
}

func (v fileVersion) equal(w fileVersion) bool {
	return bytes.Equal(v.Ident, w.Ident) && v.Size == w.Size && v.MTime == w.MTime
}

// openArtifactLog opens the log at path and its snapshots in snapDir.
func openArtifactLog(path, snapDir string, limits snapshotLimits, log *slog.Logger) (*artifactLog, error) {
	db, err := sqlitefile.Open(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(5000)"}})
	if err != nil {
		return nil, fmt.Errorf("client: open artifact log %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	snaps, err := contentstore.Open(snapDir)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("client: open artifact snapshots: %w", err)
	}
	l := &artifactLog{db: db, snaps: snaps, limits: limits, log: log}
	_, err = db.Exec(`CREATE TABLE IF NOT EXISTS artifacts (
		session_id  TEXT NOT NULL,
		artifact_id TEXT NOT NULL,
		root        TEXT NOT NULL,
		path        TEXT NOT NULL,
		created_at  INTEGER NOT NULL,
		PRIMARY KEY (session_id, artifact_id)
	)`)
	if err == nil {
		err = addVersionColumns(db)
	}
	if err == nil {
		l.put, err = db.Prepare(`INSERT INTO artifacts (session_id, artifact_id, root, path, created_at, ident, size, mtime, snapshot, snap_size)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (session_id, artifact_id) DO NOTHING`)
	}
	if err == nil {
		l.lookup, err = db.Prepare(`SELECT root, path, ident, size, mtime, snapshot, snap_size FROM artifacts WHERE session_id = ? AND artifact_id = ?`)
	}
	if err == nil {
		// A crash between storing a snapshot and recording it (or in the
		// middle of an eviction) leaves a content nobody names.
		err = l.sweep(context.Background())
	}
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("client: open artifact log %s: %w", path, err)
	}
	return l, nil
}

// addVersionColumns upgrades a log written before file versions (or
// snapshots) were recorded: its rows get NULLs, which Lookup reads as an
// unknown version and no snapshot.
func addVersionColumns(db *sql.DB) (err error) {
	rows, err := db.Query(`SELECT name FROM pragma_table_info('artifacts')`)
	if err != nil {
		return err
	}
	have := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			_ = rows.Close()
			return err
		}
		have[name] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	defer func() {
		if err == nil {
			_, err = db.Exec(`CREATE INDEX IF NOT EXISTS artifacts_snapshot ON artifacts (snapshot) WHERE snapshot IS NOT NULL`)
		}
	}()
	for _, col := range []string{"ident BLOB", "size INTEGER", "mtime INTEGER", "snapshot TEXT", "snap_size INTEGER"} {
		name, _, _ := strings.Cut(col, " ")
		if have[name] {
			continue
		}
		if _, err := db.Exec(`ALTER TABLE artifacts ADD COLUMN ` + col); err != nil {
			return err
		}
	}
	return nil
}

// Record stores an artifact before its event is sent. f is the file,
// opened and checked, and fi its FileInfo: the version recorded, and the
// content snapshotted when the quotas allow (snapshots.go). Recording the
// same artifact again changes nothing; another file under a recorded
// artifact_id is errArtifactIDTaken. A snapshot may push the workspace's
// snapshots over their quota: the oldest are evicted then.
func (l *artifactLog) Record(ctx context.Context, sessionID, artifactID string, rec artifactRecord, f *os.File, fi os.FileInfo) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	old, err := l.Lookup(ctx, sessionID, artifactID)
	switch {
	case err == nil:
		if old.Root != rec.Root || old.Path != rec.Path {
			return errArtifactIDTaken
		}
		return nil
	case !errors.Is(err, errUnknownArtifact):
		return err
	}
	// Under l.mu: an eviction cannot remove the content between its Put
	// and the row that names it.
	rec.ID, rec.Snapshot, rec.SnapSize = l.snapshot(ctx, f, fi, rec.Path)
	var snap any
	if rec.Snapshot != "" {
		snap = rec.Snapshot
	}
	res, err := l.put.ExecContext(ctx, sessionID, artifactID, rec.Root, rec.Path, time.Now().UnixMicro(),
		rec.ID.Ident, rec.ID.Size, rec.ID.MTime, snap, rec.SnapSize)
	if err == nil {
		var n int64
		if n, err = res.RowsAffected(); err == nil && n != 1 {
			err = fmt.Errorf("%d rows inserted", n)
		}
	}
	if err != nil {
		if rec.Snapshot != "" {
			l.dropUnused(ctx, []string{rec.Snapshot})
		}
		return fmt.Errorf("client: record artifact: %w", err)
	}
	if rec.Snapshot != "" {
		l.evict(ctx, rec.Root, rec.Path)
	}
	return nil
}

// Lookup returns a recorded artifact (errUnknownArtifact when there is none).
func (l *artifactLog) Lookup(ctx context.Context, sessionID, artifactID string) (artifactRecord, error) {
	var rec artifactRecord
	var size, mtime, snapSize sql.NullInt64
	var snap sql.NullString
	err := l.lookup.QueryRowContext(ctx, sessionID, artifactID).Scan(&rec.Root, &rec.Path, &rec.ID.Ident, &size, &mtime, &snap, &snapSize)
	rec.ID.Size, rec.ID.MTime = size.Int64, mtime.Int64
	rec.Snapshot, rec.SnapSize = snap.String, snapSize.Int64
	if errors.Is(err, sql.ErrNoRows) {
		return rec, errUnknownArtifact
	}
	if err != nil {
		return rec, fmt.Errorf("client: look up artifact: %w", err)
	}
	return rec, nil
}

func (l *artifactLog) Close() error {
	if err := l.db.Close(); err != nil {
		return fmt.Errorf("client: close artifact log: %w", err)
	}
	return nil
}

// newArtifactID names an artifact: "art_" and 16 random bytes.
func newArtifactID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return "art_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// recordArtifact records an agent.artifact a session's adapter emits, before
// it is sent: the path must name a regular file inside the session's
// workspace (the decoder already refused absolute paths and ".."
// components; this holds whatever it lets through), with no other hard
// link — an agent could otherwise hand over any file it can link
// (ln /etc/shadow out.txt). The version recorded is the file's now: a
// download serves that version or nothing.
func (s *session) recordArtifact(ctx context.Context, a *protocol.Artifact) error {
	abs := filepath.Join(s.ws.Path, filepath.FromSlash(a.Path))
	if rel, err := filepath.Rel(s.ws.Path, abs); err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("client: artifact path %q is not inside the workspace", a.Path)
	}
	f, fi, err := openInWorkspace(s.ws.Path, a.Path)
	if err != nil {
		return fmt.Errorf("client: artifact %q not registered: %w", a.Path, err)
	}
	defer func() { _ = f.Close() }()
	if n := linkCount(fi); n > 1 {
		return fmt.Errorf("client: artifact %q not registered: %w (it has %d names, which may lie outside the workspace)", a.Path, errHardLinked, n)
	}
	return s.c.arts.Record(ctx, s.id, a.ArtifactID, artifactRecord{Root: s.ws.Path, Path: a.Path}, f, fi)
}
