-- The control messages (prompts) stored as events that the session's
-- client has not answered yet: the node holding its connection sends them
-- again until it does (store.Event.Deliver, Answers). Rows come and go
-- with prompts, so the table stays small and is read whole. Numbered 11:
-- other branches may take other numbers; the migrator applies whichever
-- is missing.
CREATE TABLE deliveries (
	session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
	message_id TEXT NOT NULL,
	seq        BIGINT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (session_id, message_id)
);
