-- Web Push subscriptions: one per browser (its push service endpoint,
-- unique), with the keys its notifications are encrypted to (RFC 8291)
-- and the UI token that subscribed it (its owner): revoking that token
-- deletes the subscription.
CREATE TABLE push_subscriptions (
	endpoint   TEXT PRIMARY KEY,
	p256dh     BYTEA NOT NULL CHECK (length(p256dh) = 65),
	auth       BYTEA NOT NULL CHECK (length(auth) = 16),
	owner_id   TEXT NOT NULL REFERENCES tokens (id) ON DELETE CASCADE,
	label      TEXT NOT NULL,
	created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX push_subscriptions_by_owner ON push_subscriptions (owner_id);
