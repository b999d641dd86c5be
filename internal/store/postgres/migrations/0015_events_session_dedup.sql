-- Message IDs are unique per session, not across the store (issue 31): the
-- SQLite store dropped its index on them, and both stores keep one
-- guarantee. The append's lock on the session row orders its duplicate
-- check, so no two sessions race for an ID any more.
-- Numbered 15: another branch may take 14; the migrator applies whichever
-- is missing.
ALTER TABLE events DROP CONSTRAINT events_message_id_key;
-- message_id first: the duplicate check's message_id = ANY(...) finds its
-- rows through it as it did through the old index, whatever the planner
-- knows of a new table; with session_id first it could scan the session's
-- rows by the primary key instead.
ALTER TABLE events ADD CONSTRAINT events_session_message_key UNIQUE (message_id, session_id);
