-- A session's snapshot (its running turn's text among the rest: up to a few
-- hundred KB) leaves the sessions row for a table of its own. The row is
-- written on every append (last_seq), and a row write copies the whole row:
-- with the snapshot in it, each append read and compared that much again.
CREATE TABLE session_snapshots (
	session_id TEXT PRIMARY KEY REFERENCES sessions (id) ON DELETE CASCADE,
	snapshot   BYTEA NOT NULL
);

INSERT INTO session_snapshots (session_id, snapshot)
	SELECT id, snapshot FROM sessions WHERE snapshot IS NOT NULL;

ALTER TABLE sessions DROP COLUMN snapshot;
