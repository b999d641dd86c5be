package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Snapshots: when an artifact is recorded, the client copies the file's
// content into a content-addressed store (StateDir/snapshots, a
// contentstore.Store: SHA-256 named, fsynced then renamed, each content
// once however many records name it), and a download serves that copy:
// the version the agent made, even after the file changed again. The
// copies are bounded:
//
//   - A file bigger than snapshotLimits.MaxFile is not copied.
//   - Each path of a workspace keeps the snapshots of its PerPath newest
//     contents; older records of the path lose theirs.
//   - The snapshots of one workspace together stay under Total: when a new
//     one pushes them over, the contents registered least recently go
//     first (a content registered again counts as new).
//   - A content is deleted only when no record (of any session or
//     workspace) names it any more.
//
// A record without a snapshot (evicted, too big, or from before snapshots)
// downloads the file as it is then, still confined to its workspace, and
// marked changed_since when it is no longer the registered version.

// Defaults of the snapshot quotas (Config.SnapshotMaxFile,
// SnapshotsPerPath, SnapshotTotal).
const (
	DefaultSnapshotMaxFile  = 32 << 20
	DefaultSnapshotsPerPath = 5
	DefaultSnapshotTotal    = 256 << 20
)

// snapshotLimits are the quotas of the artifact snapshots.
type snapshotLimits struct {
	// MaxFile: a bigger file is not snapshotted.
	MaxFile int64
	// PerPath: the distinct contents kept per path of a workspace.
	PerPath int
	// Total: the bytes of one workspace's snapshots; < 1 takes no
	// snapshots at all.
	Total int64
}

// limitsOf turns a Config's quotas (0: default, < 0: off) into limits.
func limitsOf(cfg Config) snapshotLimits {
	l := snapshotLimits{MaxFile: cfg.SnapshotMaxFile, PerPath: cfg.SnapshotsPerPath, Total: cfg.SnapshotTotal}
	if l.MaxFile == 0 {
		l.MaxFile = DefaultSnapshotMaxFile
	}
	if l.PerPath == 0 {
		l.PerPath = DefaultSnapshotsPerPath
	}
	if l.Total == 0 {
		l.Total = DefaultSnapshotTotal
	}
	if l.MaxFile < 0 || l.PerPath < 0 || l.Total < 0 {
		l = snapshotLimits{}
	}
	// One file alone must fit the workspace's total.
	l.MaxFile = min(l.MaxFile, l.Total)
	return l
}

func (l snapshotLimits) on() bool { return l.Total > 0 && l.PerPath > 0 }

// snapshot copies the content of f (opened, fi its FileInfo) into the
// store, streamed, when the quotas allow; it returns the version recorded
// and the snapshot's hash and size ("" when none was taken). A file
// written while it was copied gets no snapshot, and its newer version is
// the one recorded. Failing to copy is logged, never an error: the
// download falls back to the file on disk. Called with l.mu held.
func (l *artifactLog) snapshot(ctx context.Context, f *os.File, fi os.FileInfo, path string) (fileVersion, string, int64) {
	v := versionOf(fi)
	if !l.limits.on() {
		return v, "", 0
	}
	if fi.Size() > l.limits.MaxFile {
		l.log.Info("artifact not snapshotted: bigger than the per-file cap; a download serves the file as it is then",
			"path", path, "bytes", fi.Size(), "max_bytes", l.limits.MaxFile)
		return v, "", 0
	}
	h, n, err := l.snaps.PutReader(io.LimitReader(f, fi.Size()+1))
	if err != nil {
		l.log.Warn("artifact not snapshotted: copying it failed", "path", path, "err", err)
		return v, "", 0
	}
	after, err := f.Stat()
	if err != nil || n != fi.Size() || !versionOf(after).equal(v) {
		l.log.Warn("artifact not snapshotted: it changed while it was copied", "path", path)
		l.dropUnused(ctx, []string{h})
		if err != nil {
			return v, "", 0
		}
		return versionOf(after), "", 0
	}
	return v, h, n
}

// snapRow is one record that names a snapshot.
type snapRow struct {
	rowid int64
	path  string
	hash  string
	size  int64
}

// evict applies the per-path and the per-workspace quota to the
// workspace root after a snapshot of path was added. Failures are
// logged: a download falls back to the file on disk.
func (l *artifactLog) evict(ctx context.Context, root, path string) {
	if err := l.evictErr(ctx, root, path); err != nil {
		l.log.Error("artifact snapshots: eviction failed", "workspace", root, "err", err)
	}
}

func (l *artifactLog) evictErr(ctx context.Context, root, path string) error {
	rows, err := l.db.QueryContext(ctx, `SELECT rowid, path, snapshot, snap_size FROM artifacts
		WHERE root = ? AND snapshot IS NOT NULL ORDER BY created_at DESC, rowid DESC`, root)
	if err != nil {
		return err
	}
	var all []snapRow // newest first
	for rows.Next() {
		var r snapRow
		if err := rows.Scan(&r.rowid, &r.path, &r.hash, &r.size); err != nil {
			_ = rows.Close()
			return err
		}
		all = append(all, r)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	var evict []snapRow
	// Per path: the PerPath newest contents.
	kept := all[:0:0]
	seen := map[string]bool{}
	for _, r := range all {
		if r.path == path && !seen[r.hash] {
			if len(seen) >= l.limits.PerPath {
				evict = append(evict, r)
				continue
			}
			seen[r.hash] = true
		}
		kept = append(kept, r)
	}
	// Per workspace: whole contents, least recently registered first.
	var order []string // distinct hashes, newest first
	size := map[string]int64{}
	var used int64
	for _, r := range kept {
		if _, ok := size[r.hash]; !ok {
			size[r.hash] = r.size
			order = append(order, r.hash)
			used += r.size
		}
	}
	gone := map[string]bool{}
	for i := len(order) - 1; i > 0 && used > l.limits.Total; i-- { // never the newest
		gone[order[i]] = true
		used -= size[order[i]]
	}
	for _, r := range kept {
		if gone[r.hash] {
			evict = append(evict, r)
		}
	}
	if len(evict) == 0 {
		return nil
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	hashes := map[string]bool{}
	for _, r := range evict {
		if _, err := tx.ExecContext(ctx, `UPDATE artifacts SET snapshot = NULL, snap_size = NULL WHERE rowid = ?`, r.rowid); err != nil {
			_ = tx.Rollback()
			return err
		}
		hashes[r.hash] = true
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	list := make([]string, 0, len(hashes))
	for h := range hashes {
		list = append(list, h)
	}
	l.log.Info("artifact snapshots evicted: over the quota; their downloads serve the files as they are then",
		"workspace", root, "records", len(evict), "contents", len(list), "bytes_kept", used, "max_bytes", l.limits.Total)
	l.dropUnused(ctx, list)
	return nil
}

// dropUnused deletes the contents no record names any more. Called with
// l.mu held (or before the log is shared).
func (l *artifactLog) dropUnused(ctx context.Context, hashes []string) {
	for _, h := range hashes {
		var used bool
		err := l.db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM artifacts WHERE snapshot = ?)`, h).Scan(&used)
		if err == nil && !used {
			err = l.snaps.Remove(h)
		}
		if err != nil {
			l.log.Error("artifact snapshots: delete an unused content", "hash", h, "err", err)
		}
	}
}

// sweep deletes every content of the store no record names.
func (l *artifactLog) sweep(ctx context.Context) error {
	rows, err := l.db.QueryContext(ctx, `SELECT DISTINCT snapshot FROM artifacts WHERE snapshot IS NOT NULL`)
	if err != nil {
		return err
	}
	keep := map[string]bool{}
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			_ = rows.Close()
			return err
		}
		keep[h] = true
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return err
	}
	if _, err := l.snaps.Sweep(func(h string) bool { return keep[h] }); err != nil {
		return fmt.Errorf("client: artifact snapshots: %w", err)
	}
	return nil
}

// Prune drops the records (and the snapshots no other record needs) of
// every session whose newest artifact was recorded before cutoff, except
// the sessions open says are open. It returns the sessions and records
// dropped.
func (l *artifactLog) Prune(ctx context.Context, cutoff time.Time, open func(sessionID string) bool) (sessions, records int, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	rows, err := l.db.QueryContext(ctx, `SELECT session_id FROM artifacts GROUP BY session_id HAVING MAX(created_at) < ?`, cutoff.UnixMicro())
	if err != nil {
		return 0, 0, fmt.Errorf("client: prune artifacts: %w", err)
	}
	var old []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			_ = rows.Close()
			return 0, 0, fmt.Errorf("client: prune artifacts: %w", err)
		}
		if !open(s) {
			old = append(old, s)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return 0, 0, fmt.Errorf("client: prune artifacts: %w", err)
	}
	var hashes []string
	for _, s := range old {
		hs, err := l.snapshotsOf(ctx, s)
		if err != nil {
			return sessions, records, err
		}
		res, err := l.db.ExecContext(ctx, `DELETE FROM artifacts WHERE session_id = ?`, s)
		if err != nil {
			return sessions, records, fmt.Errorf("client: prune artifacts: %w", err)
		}
		n, _ := res.RowsAffected()
		sessions, records = sessions+1, records+int(n)
		hashes = append(hashes, hs...)
	}
	l.dropUnused(ctx, hashes)
	return sessions, records, nil
}

func (l *artifactLog) snapshotsOf(ctx context.Context, sessionID string) ([]string, error) {
	rows, err := l.db.QueryContext(ctx, `SELECT DISTINCT snapshot FROM artifacts WHERE session_id = ? AND snapshot IS NOT NULL`, sessionID)
	if err != nil {
		return nil, fmt.Errorf("client: prune artifacts: %w", err)
	}
	var hs []string
	for rows.Next() {
		var h string
		if err := rows.Scan(&h); err != nil {
			_ = rows.Close()
			return nil, fmt.Errorf("client: prune artifacts: %w", err)
		}
		hs = append(hs, h)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, fmt.Errorf("client: prune artifacts: %w", err)
	}
	return hs, nil
}
