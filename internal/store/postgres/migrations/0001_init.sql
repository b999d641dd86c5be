-- ord columns keep insertion order for ties in "oldest first" listings.
CREATE TABLE tokens (
	ord        BIGINT GENERATED ALWAYS AS IDENTITY,
	id         TEXT PRIMARY KEY,
	kind       TEXT NOT NULL,
	name       TEXT NOT NULL,
	hash       BYTEA NOT NULL UNIQUE,
	created_at TIMESTAMPTZ NOT NULL,
	expires_at TIMESTAMPTZ
);

CREATE TABLE machines (
	id           TEXT PRIMARY KEY,
	name         TEXT NOT NULL,
	token_id     TEXT NOT NULL,
	capabilities BYTEA,
	last_seen    TIMESTAMPTZ NOT NULL
);

CREATE TABLE sessions (
	id           TEXT PRIMARY KEY,
	machine_id   TEXT NOT NULL,
	workspace_id TEXT NOT NULL,
	adapter      TEXT NOT NULL,
	title        TEXT NOT NULL,
	mode         TEXT NOT NULL,
	state        TEXT NOT NULL,
	epoch        TEXT NOT NULL,
	created_at   TIMESTAMPTZ NOT NULL,
	updated_at   TIMESTAMPTZ NOT NULL,
	last_seq     BIGINT NOT NULL,
	snapshot     BYTEA
);

CREATE INDEX sessions_by_update ON sessions (updated_at DESC, id DESC);
CREATE INDEX sessions_by_machine ON sessions (machine_id, updated_at DESC, id DESC);

-- data is BYTEA, not JSONB: events come back byte for byte as stored.
CREATE TABLE events (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	seq        BIGINT NOT NULL,
	message_id TEXT NOT NULL,
	type       TEXT NOT NULL,
	data       BYTEA NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (session_id, seq),
	CONSTRAINT events_message_id_key UNIQUE (message_id)
);

CREATE TABLE interactions (
	ord        BIGINT GENERATED ALWAYS AS IDENTITY,
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	id         TEXT NOT NULL,
	turn_id    TEXT NOT NULL,
	request    BYTEA,
	created_at TIMESTAMPTZ NOT NULL,
	outcome    TEXT NOT NULL DEFAULT '',
	answer     BYTEA,
	PRIMARY KEY (session_id, id)
);

CREATE INDEX interactions_open ON interactions (session_id, created_at, ord) WHERE outcome = '';
