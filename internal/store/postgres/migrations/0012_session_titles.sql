-- Sessions are titled automatically (issue 32): from the first prompt,
-- then by the agent, never over a person's title. title_source says where
-- the title came from; prompted marks a session that got a prompt, so
-- that sessions opened and left empty can be swept. A title from before
-- is a person's; a session with a prompt on record, or whose history was
-- trimmed, was prompted.
ALTER TABLE sessions ADD COLUMN title_source TEXT NOT NULL DEFAULT ''
	CHECK (title_source IN ('', 'user', 'prompt', 'agent'));
ALTER TABLE sessions ADD COLUMN prompted BOOLEAN NOT NULL DEFAULT false;
UPDATE sessions SET title_source = 'user' WHERE title <> '';
UPDATE sessions SET prompted = true WHERE EXISTS (
	SELECT 1 FROM events e WHERE e.session_id = sessions.id AND e.type = 'control.prompt.request'
) OR coalesce((SELECT min(seq) FROM events e WHERE e.session_id = sessions.id), 1) > 1;
