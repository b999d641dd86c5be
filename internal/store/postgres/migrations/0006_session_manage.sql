-- A person may archive a session (it leaves the default list and keeps its
-- history) and search sessions by title and by the text of their prompts
-- and final answers. Numbered 6: 5 is taken by a parallel branch, and the
-- migrator applies whichever of the two is missing.
ALTER TABLE sessions ADD COLUMN archived BOOLEAN NOT NULL DEFAULT false;

CREATE INDEX sessions_by_archived ON sessions (archived, updated_at DESC, id DESC);

-- Search reads a session's prompts and final answers by type.
CREATE INDEX events_by_type ON events (session_id, type);
