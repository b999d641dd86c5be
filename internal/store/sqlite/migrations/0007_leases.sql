-- A lease names the one master node that runs a cluster-wide background
-- job (sweeping expired download tokens and uploads) until it expires or
-- is released. Numbered 7: other branches may take other numbers; the
-- migrator applies whichever is missing.
CREATE TABLE leases (
	name       TEXT PRIMARY KEY,
	holder     TEXT NOT NULL,
	expires_at INTEGER NOT NULL
) STRICT;
