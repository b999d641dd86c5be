package sqlite

import (
	"context"
	"database/sql"
	"hash/maphash"
)

// maxCachedIDs (a variable for the tests) bounds how many message IDs the dedup cache holds across
// sessions (about 35 bytes each): past it, the least recently appended
// sessions are forgotten and read again on their next append. The
// default retention keeps 10,000 events a session, so 26 busy sessions fit.
var maxCachedIDs = 1 << 18

// idCache is how a session's duplicates are found without an index on
// message_id (dropped by migration 0015): each message ID is a random
// UUID, so its index entry landed on a random page, and every event
// appended and every event trimmed wrote one more page to the WAL. At
// 5,000 events/s that index was a fifth of the master's CPU and half the
// bytes it wrote (bench/README.md, issue 31).
//
// The cache maps a keyed 64-bit hash of each retained message ID of a
// session to its seq. A hit is confirmed against the row at that seq (the
// (session_id, seq) index), so a collision can only make an event be
// stored instead of reported as a duplicate, never the reverse; the seed
// is random per process, so no one can aim for one.
//
// It is used only under Store.writeMu, held across each append's and
// trim's transaction and the cache update after it: the writes of events
// and the cache change together. A session is read whole into the cache
// on its first append, inside that append's transaction; a failed write
// drops the session from the cache, to be read again.
type idCache struct {
	seed     maphash.Seed
	sessions map[string]*sessionIDs
	total    int    // entries across sessions
	clock    uint64 // counts uses, for eviction
}

// sessionIDs are one session's retained message IDs.
type sessionIDs struct {
	seqOf map[uint64]uint64 // hash of a message ID → its seq
	order []idEntry         // order[head:] in seq order, oldest first
	head  int
	used  uint64 // idCache.clock at the last use
}

type idEntry struct{ sum, seq uint64 }

func newIDCache() *idCache {
	return &idCache{seed: maphash.MakeSeed(), sessions: map[string]*sessionIDs{}}
}

func (c *idCache) sum(messageID string) uint64 { return maphash.String(c.seed, messageID) }

// load returns the session's entries, reading them in tx when they are not
// cached.
func (c *idCache) load(ctx context.Context, tx *sql.Tx, sessionID string) (*sessionIDs, error) {
	c.clock++
	if ids := c.sessions[sessionID]; ids != nil {
		ids.used = c.clock
		return ids, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT seq, message_id FROM events WHERE session_id = ? ORDER BY seq`, sessionID)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	ids := &sessionIDs{seqOf: map[uint64]uint64{}, used: c.clock}
	for rows.Next() {
		var (
			seq uint64
			id  string
		)
		if err := rows.Scan(&seq, &id); err != nil {
			return nil, err
		}
		ids.add(c.sum(id), seq)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	c.sessions[sessionID] = ids
	c.total += ids.len()
	c.evict(ids)
	return ids, nil
}

// stored records the entries of events an append committed.
func (c *idCache) stored(sessionID string, added []idEntry) {
	ids := c.sessions[sessionID]
	if ids == nil {
		return
	}
	for _, e := range added {
		ids.add(e.sum, e.seq)
	}
	c.total += len(added)
	c.evict(ids)
}

// trimmed forgets the session's entries up to seq through (a committed
// Trim).
func (c *idCache) trimmed(sessionID string, through uint64) {
	ids := c.sessions[sessionID]
	if ids == nil {
		return
	}
	before := ids.len()
	for ids.head < len(ids.order) && ids.order[ids.head].seq <= through {
		e := ids.order[ids.head]
		if ids.seqOf[e.sum] == e.seq {
			delete(ids.seqOf, e.sum)
		}
		ids.head++
	}
	// Reuse the front once most of the slice is behind head.
	if ids.head > 1024 && ids.head > len(ids.order)/2 {
		ids.order = append(ids.order[:0], ids.order[ids.head:]...)
		ids.head = 0
	}
	c.total -= before - ids.len()
}

// drop forgets the session: it is read again on its next append.
func (c *idCache) drop(sessionID string) {
	if ids := c.sessions[sessionID]; ids != nil {
		c.total -= ids.len()
		delete(c.sessions, sessionID)
	}
}

// evict forgets the least recently used sessions other than keep while
// the cache holds more than maxCachedIDs entries.
func (c *idCache) evict(keep *sessionIDs) {
	for c.total > maxCachedIDs {
		var (
			oldest   string
			oldestAt uint64
		)
		for id, ids := range c.sessions {
			if ids != keep && (oldest == "" || ids.used < oldestAt) {
				oldest, oldestAt = id, ids.used
			}
		}
		if oldest == "" {
			return // keep alone is over the bound: it stays whole
		}
		c.drop(oldest)
	}
}

// add records one event; a hash already there keeps the older seq (a
// collision: the newer event is stored again if re-sent, never lost).
func (ids *sessionIDs) add(sum, seq uint64) {
	if _, ok := ids.seqOf[sum]; !ok {
		ids.seqOf[sum] = seq
	}
	ids.order = append(ids.order, idEntry{sum, seq})
}

func (ids *sessionIDs) len() int { return len(ids.order) - ids.head }
