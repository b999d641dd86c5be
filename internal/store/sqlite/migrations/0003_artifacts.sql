-- The artifacts agents handed to users (registered from agent.artifact
-- events) and the download tokens that grant one UI token one artifact.
-- Deleting a UI token (revocation) or an artifact deletes its download
-- tokens.
CREATE TABLE artifacts (
	session_id  TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	id          TEXT NOT NULL,
	turn_id     TEXT NOT NULL,
	path        TEXT NOT NULL,
	file_name   TEXT NOT NULL,
	size        INTEGER NOT NULL CHECK (size >= 0),
	mime_type   TEXT NOT NULL,
	tool_use_id TEXT NOT NULL,
	created_at  INTEGER NOT NULL,
	PRIMARY KEY (session_id, id)
) STRICT;

CREATE TABLE download_tokens (
	id          TEXT PRIMARY KEY,
	hash        BLOB NOT NULL UNIQUE,
	session_id  TEXT NOT NULL,
	artifact_id TEXT NOT NULL,
	owner_id    TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
	created_at  INTEGER NOT NULL,
	expires_at  INTEGER NOT NULL,
	FOREIGN KEY (session_id, artifact_id) REFERENCES artifacts (session_id, id) ON DELETE CASCADE
) STRICT;

-- The cascades look tokens up by owner and by artifact; the sweep by expiry.
CREATE INDEX download_tokens_by_owner ON download_tokens (owner_id);
CREATE INDEX download_tokens_by_artifact ON download_tokens (session_id, artifact_id);
CREATE INDEX download_tokens_by_expiry ON download_tokens (expires_at);
