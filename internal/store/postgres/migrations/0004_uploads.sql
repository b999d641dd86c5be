-- Files users uploaded to attach to a session's prompts. An upload belongs
-- to one session and to the UI token that uploaded it (its owner):
-- deleting either deletes it; the sweep deletes it once it expires.
CREATE TABLE uploads (
	id         TEXT PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	owner_id   TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
	file_name  TEXT NOT NULL,
	mime_type  TEXT NOT NULL,
	size       BIGINT NOT NULL CHECK (size >= 0),
	data       BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ NOT NULL
);

-- The quota sums a session's uploads; the cascades find them by session
-- and owner; the sweep by expiry.
CREATE INDEX uploads_by_session ON uploads (session_id, expires_at);
CREATE INDEX uploads_by_owner ON uploads (owner_id);
CREATE INDEX uploads_by_expiry ON uploads (expires_at);

-- Secrets the master nodes share, created once by whichever node needs one
-- first (the key that signs upload grants, so that any node can check a
-- grant another issued).
CREATE TABLE secrets (
	name  TEXT PRIMARY KEY,
	value BYTEA NOT NULL
);
