// Package store is the master's persistence seam: tokens, machines,
// sessions, every persisted event with its seq, open interactions, the
// artifacts agents handed to users and the download tokens that grant them,
// the files users uploaded for prompts, the secrets master nodes share and
// the leases that elect one node to run a cluster-wide job.
//
// Guarantees every implementation gives (checked by storetest.Run):
//
//   - AppendEvents numbers a session's events 1, 2, 3, … with no gap and no
//     reuse, atomically with the session's last_seq, and never stores one
//     message_id twice in a session while the first is retained: a
//     duplicate is reported with the seq it already has. Message IDs are
//     per session: the same ID in another session is that session's own
//     event.
//     Once AppendEvents returns nil the events survive a crash.
//   - Events returns retained events in seq order; Trim only drops the oldest.
//   - An event stored with Deliver is undelivered from the moment it is
//     stored (the same transaction) until an event that Answers it is
//     stored (the same transaction again) or Delivered takes it off: a
//     crash between the two leaves it listed by Undelivered, never lost.
//   - SettleInteraction settles an interaction at most once: exactly one
//     caller wins, whatever the concurrency.
//   - ConsumeToken deletes a one-time token at most once.
//   - A download token lives no longer than the UI token it was issued to
//     (its owner) and the artifact it grants: deleting either deletes it.
//   - PutArtifact is idempotent: registering the same artifact again
//     changes nothing, so a re-sent event registers once.
//   - An upload lives no longer than its session, its owner (the UI token
//     that uploaded it) and its expiry: deleting the session or the owner
//     deletes it, and DeleteExpiredUploads sweeps it. PutUpload stores it
//     whole or not at all, within the session's quota (ErrQuota).
//   - DeleteSession deletes a session with everything that hangs on it:
//     events, interactions, artifacts, the download tokens that grant
//     them, and uploads. Other sessions are untouched.
//   - FindSessions matches its query against the title and the text of
//     the session's prompts and final answers only (never JSON keys or
//     other fields), case-insensitively, literally (no wildcards), among
//     a bounded number of sessions (MaxSearchSessions).
//   - A push subscription lives no longer than its owner (the UI token
//     that subscribed it): revoking the token deletes it, and
//     PushSubscriptions leaves out those of expired tokens.
//     PutPushSubscription keeps an owner within its bound, whatever the
//     concurrency. A subscription keeps its owner: another token cannot
//     replace it (its keys, label or owner) while the owner lives.
//   - AcquireLease is one atomic statement: of concurrent callers for a
//     free or expired lease exactly one gets it, and while it holds it
//     (renewing within its ttl) no other caller does.
//   - A person's title (RenameSession, or CreateSession with TitleSource
//     TitleUser) is never replaced by an automatic one (MarkPrompted,
//     AgentTitleSession): the check and the write are one statement.
//   - A quiet event (Event.Quiet) never moves a session's UpdatedAt.
//   - DeleteUnprompted deletes a session only while it was never
//     prompted, in one statement: a racing first prompt either marks it
//     first (and it stays) or finds it gone.
//   - Not-found conditions are reported as ErrNotFound (errors.Is).
//
// Implementations: internal/store/sqlite (the embedded default, one file)
// and internal/store/postgres (pgx).
package store

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrNotFound is returned (wrapped) when a token, machine, session or
// interaction does not exist.
var ErrNotFound = errors.New("not found")

// ErrExists is returned (wrapped) when creating what already exists.
var ErrExists = errors.New("already exists")

// ErrQuota is returned (wrapped) when storing would pass a quota.
var ErrQuota = errors.New("quota exceeded")

// Token kinds.
const (
	// TokenClient authenticates a local client (ferry connect).
	TokenClient = "client"
	// TokenUI authenticates a browser UI (the login cookie).
	TokenUI = "ui"
	// TokenLogin is a one-time token exchanged for a UI token.
	TokenLogin = "login"
)

// Token is an issued credential; only its hash is stored.
type Token struct {
	ID        string
	Kind      string
	Name      string
	Hash      []byte // SHA-256 of the secret
	CreatedAt time.Time
	// ExpiresAt is zero for a token that does not expire.
	ExpiresAt time.Time
	// Machines are the IDs of the machines a UI or login token may see;
	// empty: every machine. A client token has none.
	Machines []string
	// Device names the browser a UI token was made for by signing in, in
	// ferry's own words ("Chrome on Android"), never the browser's text;
	// empty when unknown.
	Device string
}

// Machine is the last announcement of a client.
type Machine struct {
	ID   string
	Name string
	// TokenID is the client token it authenticated with.
	TokenID string
	// Capabilities is the session.capabilities payload, as JSON.
	Capabilities json.RawMessage
	LastSeen     time.Time
}

// Where a session's title came from (Session.TitleSource).
const (
	// TitleUser: a person set it (rename, or the title a session was
	// started with); no automatic title replaces it.
	TitleUser = "user"
	// TitlePrompt: the first line of the session's first prompt.
	TitlePrompt = "prompt"
	// TitleAgent: the session's agent (its model) made it.
	TitleAgent = "agent"
)

// Session is one session's row. LastSeq, Epoch and CreatedAt are owned by
// the store (CreateSession sets them from the argument; AppendEvents moves
// LastSeq); UpdateSession changes only the mutable fields. Title,
// TitleSource, Prompted and Archived are written only by CreateSession and
// the methods named for them (RenameSession, MarkPrompted,
// AgentTitleSession, ArchiveSession), so a checkpoint of an older copy of
// the row never undoes a rename.
type Session struct {
	ID          string
	MachineID   string
	WorkspaceID string
	Adapter     string
	Title       string
	// TitleSource is TitleUser, TitlePrompt, TitleAgent, or "" (no title,
	// or one from before sources were kept).
	TitleSource string
	// Prompted is set by the session's first prompt (MarkPrompted).
	Prompted  bool
	Mode      string
	State     string
	Epoch     string
	CreatedAt time.Time
	UpdatedAt time.Time
	LastSeq   uint64
	// Archived sessions leave the default list (FindSessions); only
	// CreateSession and ArchiveSession write it.
	Archived bool
	// Snapshot is the master's summary of the session (JSON), kept so that
	// a UI whose missed events are gone can still be brought up to date.
	Snapshot json.RawMessage
}

// Event is one persisted message of a session.
type Event struct {
	// Seq is assigned by AppendEvents (ignored on input).
	Seq       uint64
	MessageID string
	Type      string
	// Data is the whole wire message (JSON), seq and epoch excluded.
	Data      []byte
	CreatedAt time.Time
	// Duplicate is set on output when MessageID was already stored; Seq is
	// then the seq it has.
	Duplicate bool
	// Deliver marks a control message the session's client must answer
	// (a prompt): AppendEvents records it undelivered, in the same
	// transaction, and Undelivered lists it until a later event Answers
	// it or Delivered is called.
	Deliver bool
	// Answers is the message_id of an undelivered event of the same
	// session that this event answers (a turn's start answers its
	// prompt): storing this event delivers that one, in the same
	// transaction.
	Answers string
	// Quiet marks bookkeeping that is not activity (the session was
	// reopened, its agent listed its commands): storing it does not move
	// the session's UpdatedAt, so opening a session does not reorder the
	// session lists.
	Quiet bool
}

// Delivery names an event stored with Deliver that nothing answered yet;
// the event itself is read with Events (it may have been trimmed since).
type Delivery struct {
	SessionID string
	// MachineID is the session's machine, whose client must answer it.
	MachineID string
	MessageID string
	Seq       uint64
	CreatedAt time.Time
}

// Interaction is an agent.interaction.request waiting for (or given) an answer.
type Interaction struct {
	SessionID string
	ID        string
	TurnID    string
	// Request is the whole agent.interaction.request wire message (JSON).
	Request   json.RawMessage
	CreatedAt time.Time
	// Outcome is "" while open, else answered, timeout or cancelled.
	Outcome string
	// Answer is the winning answer (JSON) when answered.
	Answer json.RawMessage
}

// Artifact is a file an agent handed to the user, registered by the master
// from the session's agent.artifact event. Only its reference is kept: the
// file stays on the client's machine.
type Artifact struct {
	SessionID string
	// ID is the artifact_id, unique within the session.
	ID     string
	TurnID string
	// Path is workspace-relative and '/'-separated.
	Path      string
	FileName  string
	Size      int64
	MimeType  string
	ToolUseID string
	CreatedAt time.Time
}

// DownloadToken lets one UI token (its owner) download one artifact until
// it expires or is revoked. Only the SHA-256 of its secret is stored.
type DownloadToken struct {
	ID   string
	Hash []byte
	// SessionID and ArtifactID name the artifact it grants.
	SessionID  string
	ArtifactID string
	// OwnerID is the ID of the UI token it was issued to.
	OwnerID   string
	CreatedAt time.Time
	// ExpiresAt is required: a download token always expires.
	ExpiresAt time.Time
}

// Upload is a file a user uploaded to the master to attach to a session's
// prompts. Its content is kept whole in the store until it expires.
type Upload struct {
	// ID is "upl_" and random characters (protocol.ParseUploadURL).
	ID        string
	SessionID string
	// OwnerID is the ID of the UI token that uploaded it.
	OwnerID  string
	FileName string
	// MimeType is the type sniffed from Data, not what the browser said.
	MimeType string
	// Size is len(Data).
	Size int64
	// Data is the content; UploadInfo leaves it nil.
	Data      []byte
	CreatedAt time.Time
	// ExpiresAt is required: an upload always expires.
	ExpiresAt time.Time
}

// MaxSearchSessions bounds a FindSessions with a query: it looks at the
// most recently updated sessions of its filter, this many at most.
const MaxSearchSessions = 2000

// SessionFilter selects sessions for FindSessions.
type SessionFilter struct {
	// MachineID keeps one machine's sessions when not empty.
	MachineID string
	// Archived lists the archived sessions instead of the others.
	Archived bool
	// Query, when not empty, keeps the sessions whose title, prompts or
	// final answers contain it, case-insensitively.
	Query string
	// Limit is the most sessions returned (<= 0: no limit).
	Limit int
}

// UploadQuota bounds what one session's live uploads (those not expired at
// the new upload's CreatedAt) may hold together; 0 is no bound.
type UploadQuota struct {
	Count int
	Bytes int64
}

// PushSubscription is a browser's Web Push subscription
// (PushSubscription.toJSON() of the Push API), owned by the UI token that
// subscribed it.
type PushSubscription struct {
	// Endpoint is the push service URL; unique.
	Endpoint string
	// P256dh is the browser's public key, an uncompressed P-256 point (65
	// bytes); Auth its 16-byte authentication secret (RFC 8291).
	P256dh, Auth []byte
	// OwnerID is the ID of the UI token that subscribed it.
	OwnerID string
	// Label names the device for people.
	Label     string
	CreatedAt time.Time
}

// Store is the master's persistence.
type Store interface {
	CreateToken(ctx context.Context, t Token) error
	// TokenByHash finds a token by the hash of its secret, expired or not.
	TokenByHash(ctx context.Context, hash []byte) (Token, error)
	// ConsumeToken deletes the token and reports ErrNotFound when another
	// caller deleted it first (one-time login tokens).
	ConsumeToken(ctx context.Context, id string) error
	RevokeToken(ctx context.Context, id string) error
	// ListTokens lists tokens, oldest first.
	ListTokens(ctx context.Context) ([]Token, error)

	// PutMachine inserts or replaces a machine.
	PutMachine(ctx context.Context, m Machine) error
	// Machines lists machines by ID.
	Machines(ctx context.Context) ([]Machine, error)

	// CreateSession stores a new session (ErrExists when its ID is taken).
	CreateSession(ctx context.Context, s Session) error
	Session(ctx context.Context, id string) (Session, error)
	// ListSessions lists sessions, archived or not, most recently updated
	// first, of one machine when machineID is not empty, at most limit.
	ListSessions(ctx context.Context, machineID string, limit int) ([]Session, error)
	// FindSessions lists the sessions f selects, most recently updated
	// first.
	FindSessions(ctx context.Context, f SessionFilter) ([]Session, error)
	// UpdateSession writes Mode, State, UpdatedAt and Snapshot.
	UpdateSession(ctx context.Context, s Session) error
	// RenameSession sets the session's title as a person's (TitleUser;
	// an empty title clears it and its source). ErrNotFound when there is
	// no such session. It does not move UpdatedAt.
	RenameSession(ctx context.Context, id, title string) error
	// MarkPrompted records that the session got its first prompt and, when
	// it has no title and title is not empty, titles it (TitlePrompt);
	// titled reports whether it did. ErrNotFound when there is no such
	// session. It does not move UpdatedAt.
	MarkPrompted(ctx context.Context, id, title string) (titled bool, err error)
	// AgentTitleSession sets the title the session's agent made
	// (TitleAgent) unless a person's title stands; set reports whether it
	// did. ErrNotFound when there is no such session. It does not move
	// UpdatedAt.
	AgentTitleSession(ctx context.Context, id, title string) (set bool, err error)
	// UnpromptedSessions lists up to limit sessions never prompted,
	// untitled, idle and not archived, created at or before `before`,
	// oldest first: the clutter of sessions opened and left.
	UnpromptedSessions(ctx context.Context, before time.Time, limit int) ([]Session, error)
	// DeleteUnprompted deletes the session as DeleteSession does, only
	// while UnpromptedSessions' conditions (the time aside) hold: ErrExists
	// when the session was prompted, titled, archived or is running,
	// ErrNotFound when there is no such session.
	DeleteUnprompted(ctx context.Context, id string) error
	// ArchiveSession sets whether the session is archived (ErrNotFound
	// when there is no such session). It does not move UpdatedAt.
	ArchiveSession(ctx context.Context, id string, archived bool) error
	// DeleteSession deletes the session and everything that hangs on it
	// (see the package doc); ErrNotFound when there is no such session.
	DeleteSession(ctx context.Context, id string) error

	// AppendEvents stores evs in order as the session's next events and
	// returns them with their seqs (duplicates keep their old seq and are
	// not stored again). The session's LastSeq moves with them, and its
	// UpdatedAt to now when that is at least a second later (the lists'
	// order needs no finer step, and each move rewrites index entries).
	AppendEvents(ctx context.Context, sessionID string, evs []Event) ([]Event, error)
	// Events returns up to limit retained events with seq > afterSeq, in order.
	Events(ctx context.Context, sessionID string, afterSeq uint64, limit int) ([]Event, error)
	// OldestSeq is the seq of the oldest retained event (0 when none).
	OldestSeq(ctx context.Context, sessionID string) (uint64, error)
	// Trim drops the session's oldest events, keeping the newest keep.
	Trim(ctx context.Context, sessionID string, keep int) error

	// Undelivered lists the events stored with Deliver that no event
	// answered and Delivered did not take, stored at or before `before`
	// (now when zero), of machineID's sessions (every machine's when
	// empty): the oldest first, at most limit (all when limit <= 0).
	Undelivered(ctx context.Context, machineID string, before time.Time, limit int) ([]Delivery, error)
	// Delivered takes an event off the undelivered list (nothing when it
	// is not on it).
	Delivered(ctx context.Context, sessionID, messageID string) error

	// OpenInteraction records a new open interaction (ErrExists when its
	// (session, id) is taken).
	OpenInteraction(ctx context.Context, in Interaction) error
	// SettleInteraction settles an open interaction; won is false when it
	// was already settled. ErrNotFound when it does not exist.
	SettleInteraction(ctx context.Context, sessionID, id, outcome string, answer json.RawMessage) (won bool, err error)
	// OpenInteractions lists a session's open interactions, oldest first.
	OpenInteractions(ctx context.Context, sessionID string) ([]Interaction, error)
	// Interaction returns one interaction, open or settled (with its
	// outcome and answer); ErrNotFound when there is none.
	Interaction(ctx context.Context, sessionID, id string) (Interaction, error)

	// PutArtifact registers an artifact. Registering one again with every
	// field equal (CreatedAt aside) changes nothing; a different artifact
	// under a taken (session, ID) is ErrExists; ErrNotFound when the
	// session does not exist.
	PutArtifact(ctx context.Context, a Artifact) error
	// Artifact returns one artifact (ErrNotFound when there is none).
	Artifact(ctx context.Context, sessionID, id string) (Artifact, error)
	// Artifacts lists the newest limit (all when limit <= 0) of a
	// session's artifacts, in registration order (oldest first).
	// ErrNotFound when the session does not exist.
	Artifacts(ctx context.Context, sessionID string, limit int) ([]Artifact, error)

	// CreateDownloadTokens stores tokens, all or none: ErrExists when an ID
	// or hash is taken, ErrNotFound when an owner or artifact does not exist.
	CreateDownloadTokens(ctx context.Context, ts []DownloadToken) error
	// DownloadTokenByHash finds a download token by the hash of its
	// secret, expired or not (ErrNotFound when there is none).
	DownloadTokenByHash(ctx context.Context, hash []byte) (DownloadToken, error)
	// RevokeDownloadToken deletes one (ErrNotFound when it does not exist).
	RevokeDownloadToken(ctx context.Context, id string) error
	// DeleteExpiredDownloadTokens deletes the download tokens that expired
	// at or before now and reports how many.
	DeleteExpiredDownloadTokens(ctx context.Context, now time.Time) (int, error)
	// TrimDownloadTokens deletes the download tokens of one owner (a UI
	// token) but its newest keep, by creation time, and reports how many
	// went: the cap that keeps listings from growing the store without
	// bound. keep may be 0; an owner with none is not an error.
	TrimDownloadTokens(ctx context.Context, ownerID string, keep int) (int, error)

	// PutUpload stores an upload if the session's live uploads stay within
	// q with it (ErrQuota otherwise), atomically with that check.
	// ErrNotFound when the session or the owner does not exist, ErrExists
	// when the ID is taken.
	PutUpload(ctx context.Context, u Upload, q UploadQuota) error
	// Upload returns one upload with its content, expired or not
	// (ErrNotFound when there is none).
	Upload(ctx context.Context, id string) (Upload, error)
	// UploadInfo is Upload without the content (Data nil).
	UploadInfo(ctx context.Context, id string) (Upload, error)
	// DeleteUpload deletes one (ErrNotFound when it does not exist).
	DeleteUpload(ctx context.Context, id string) error
	// DeleteExpiredUploads deletes the uploads that expired at or before
	// now and reports how many.
	DeleteExpiredUploads(ctx context.Context, now time.Time) (int, error)

	// PutPushSubscription stores a subscription, if its owner then holds
	// at most max (0: no bound), ErrQuota otherwise, atomically with that
	// check. A subscription with the same Endpoint is replaced (a browser
	// that subscribes again: new keys, label and time) only when p's
	// owner owns it, or its owner has expired at p.CreatedAt; while
	// another token owns it, ErrExists and nothing changes. ErrNotFound
	// when the owner does not exist.
	PutPushSubscription(ctx context.Context, p PushSubscription, max int) error
	// DeletePushSubscription deletes the subscription of endpoint, only
	// when ownerID owns it unless ownerID is empty; ErrNotFound when none
	// went.
	DeletePushSubscription(ctx context.Context, endpoint, ownerID string) error
	// PushSubscriptions lists the subscriptions whose owner has not
	// expired at now, oldest first.
	PushSubscriptions(ctx context.Context, now time.Time) ([]PushSubscription, error)

	// Secret returns the secret stored under name, storing fresh first when
	// there is none; concurrent callers (on any master node) all get the
	// one that was stored first.
	Secret(ctx context.Context, name string, fresh []byte) ([]byte, error)

	// AcquireLease takes the lease name for holder for ttl when no one
	// holds it or its holder's time ran out, or renews it for ttl when
	// holder already holds it; held reports whether holder holds it now.
	// Expiry is judged on the callers' clocks: ttl must exceed the skew
	// between master nodes.
	AcquireLease(ctx context.Context, name, holder string, ttl time.Duration) (held bool, err error)
	// ReleaseLease frees the lease if holder holds it (otherwise nothing),
	// so that another holder may take it at once.
	ReleaseLease(ctx context.Context, name, holder string) error
	// Ping answers nil when the store serves queries: one cheap round
	// trip, for a readiness check; bound it with ctx.
	Ping(ctx context.Context) error

	Close() error
}
