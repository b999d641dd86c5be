-- Message IDs are deduplicated per session, by the store's own cache of
-- each session's retained IDs (dedup.go), not by a UNIQUE index: a random
-- UUID's index entry sat on a random page, so every event appended and
-- every event trimmed wrote one more page (issue 31). SQLite cannot drop
-- a UNIQUE column constraint, so the table is rebuilt, rowids kept.
-- Numbered 15: another branch may take 14; the migrator applies whichever
-- is missing.
CREATE TABLE events_new (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	message_id TEXT NOT NULL,
	type       TEXT NOT NULL,
	data       BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	UNIQUE (session_id, seq)
) STRICT;
INSERT INTO events_new (rowid, session_id, seq, message_id, type, data, created_at)
	SELECT rowid, session_id, seq, message_id, type, data, created_at FROM events ORDER BY rowid;
DROP TABLE events;
ALTER TABLE events_new RENAME TO events;
CREATE INDEX events_searched ON events (session_id, type)
	WHERE type IN ('control.prompt.request', 'agent.text.done');
