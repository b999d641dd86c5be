-- The machines a UI or login token may see, as a JSON array of machine
-- IDs; '[]' (every existing token): every machine.
ALTER TABLE tokens ADD COLUMN machines TEXT NOT NULL DEFAULT '[]';
