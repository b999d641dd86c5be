-- Message IDs are unique per session, not across the store (issue 31): the
-- SQLite store dropped its index on them, and both stores keep one
-- guarantee. The append's lock on the session row orders its duplicate
-- check, so no two sessions race for an ID any more.
-- Numbered 15: another branch may take 14; the migrator applies whichever
-- is missing.
ALTER TABLE events DROP CONSTRAINT events_message_id_key;
ALTER TABLE events ADD CONSTRAINT events_session_message_key UNIQUE (session_id, message_id);
