package sqlite

import (
	"context"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/sqlbody"
)

// SetWALBound sets walBound and checkpointEvery for a test (not a parallel
// one) and returns what restores them.
func SetWALBound(n int64, every time.Duration) (restore func()) {
	oldBound, oldEvery := walBound, checkpointEvery
	walBound, checkpointEvery = n, every
	return func() { walBound, checkpointEvery = oldBound, oldEvery }
}

// SearchPlan is SQLite's plan for FindSessions' search query, one line a
// step.
func SearchPlan(ctx context.Context, s *Store) ([]string, error) {
	q, textArgs := sqlbody.SearchQuery(dialect, `archived = ?`, "needle")
	args := append([]any{false, store.MaxSearchSessions, "needle"}, textArgs...)
	rows, err := s.r.QueryContext(ctx, `EXPLAIN QUERY PLAN `+q, append(args, 20)...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			return nil, err
		}
		plan = append(plan, detail)
	}
	return plan, rows.Err()
}

// JournalSizeLimit is the writer connection's journal_size_limit, and
// walBound.
func JournalSizeLimit(ctx context.Context, s *Store) (limit, bound int64, err error) {
	err = s.w.QueryRowContext(ctx, `PRAGMA journal_size_limit`).Scan(&limit)
	return limit, walBound, err
}

// SetMaxCachedIDs sets the dedup cache's bound for a test (not a parallel
// one) and returns what restores it.
func SetMaxCachedIDs(n int) (restore func()) {
	old := maxCachedIDs
	maxCachedIDs = n
	return func() { maxCachedIDs = old }
}

// CachedIDs is how many message IDs the store's dedup cache holds, and for
// how many sessions.
func CachedIDs(s *Store) (ids, sessions int) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	return s.ids.total, len(s.ids.sessions)
}
