-- Times are Unix microseconds (UTC); a NULL expires_at never expires.
CREATE TABLE tokens (
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	name       TEXT NOT NULL,
	hash       BLOB NOT NULL UNIQUE,
	created_at INTEGER NOT NULL,
	expires_at INTEGER
) STRICT;

CREATE TABLE machines (
	id           TEXT PRIMARY KEY,
	name         TEXT NOT NULL,
	token_id     TEXT NOT NULL,
	capabilities BLOB,
	last_seen    INTEGER NOT NULL
) STRICT;

CREATE TABLE sessions (
	id           TEXT PRIMARY KEY,
	machine_id   TEXT NOT NULL,
	workspace_id TEXT NOT NULL,
	adapter      TEXT NOT NULL,
	title        TEXT NOT NULL,
	mode         TEXT NOT NULL,
	state        TEXT NOT NULL,
	epoch        TEXT NOT NULL,
	created_at   INTEGER NOT NULL,
	updated_at   INTEGER NOT NULL,
	last_seq     INTEGER NOT NULL,
	snapshot     BLOB
) STRICT;

CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_machine ON sessions (machine_id, updated_at DESC, id DESC);

-- A rowid table (not WITHOUT ROWID): rows carry ~1 KB of data.
CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        INTEGER NOT NULL,
	message_id TEXT NOT NULL UNIQUE,
	type       TEXT NOT NULL,
	data       BLOB NOT NULL,
	created_at INTEGER NOT NULL,
	UNIQUE (session_id, seq)
) STRICT;

CREATE TABLE interactions (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	id         TEXT NOT NULL,
	turn_id    TEXT NOT NULL,
	request    BLOB,
	created_at INTEGER NOT NULL,
	outcome    TEXT NOT NULL DEFAULT '',
	answer     BLOB,
	PRIMARY KEY (session_id, id)
) STRICT;

CREATE INDEX interactions_open ON interactions (session_id, created_at) WHERE outcome = '';
