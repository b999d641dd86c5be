package sqlbody

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/internal/store/internal/check"
)

// --- tokens ---

// CreateToken stores t (ErrExists when its ID or hash is taken).
func (db *DB) CreateToken(ctx context.Context, t store.Token) error {
	const op = "create token"
	if err := check.Token(t); err != nil {
		return db.fail(op, err)
	}
	_, err := db.exec(ctx,
		`INSERT INTO tokens (`+tokenCols+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		t.ID, t.Kind, t.Name, t.Hash, db.ts(check.OrNow(t.CreatedAt)), db.ts(check.Time(t.ExpiresAt)), check.EncodeMachines(t.Machines), t.Device)
	if err != nil && db.D.IsUnique(err) {
		return db.failOn(op, t.ID, store.ErrExists)
	}
	return db.wrap(ctx, op, err)
}

const tokenCols = `id, kind, name, hash, created_at, expires_at, machines, device` //nolint:gosec // column names, not a credential

func scanToken(sc Scanner) (store.Token, error) {
	var (
		t                store.Token
		created, expires Time
		machines         string
	)
	if err := sc.Scan(&t.ID, &t.Kind, &t.Name, &t.Hash, &created, &expires, &machines, &t.Device); err != nil {
		return store.Token{}, err
	}
	var err error
	if t.Machines, err = check.DecodeMachines(machines); err != nil {
		return store.Token{}, err
	}
	t.CreatedAt = created.T
	t.ExpiresAt = expires.T
	return t, nil
}

// TokenByHash finds a token by the hash of its secret.
func (db *DB) TokenByHash(ctx context.Context, hash []byte) (store.Token, error) {
	const op = "token by hash"
	if err := check.Hash(hash); err != nil {
		return store.Token{}, db.fail(op, err)
	}
	t, err := scanToken(db.queryRow(ctx, `SELECT `+tokenCols+` FROM tokens WHERE hash = ?`, hash))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Token{}, db.fail(op, store.ErrNotFound)
	}
	if err != nil {
		return store.Token{}, db.wrap(ctx, op, err)
	}
	return t, nil
}

// ConsumeToken deletes the token; ErrNotFound when it is already gone.
func (db *DB) ConsumeToken(ctx context.Context, id string) error {
	return DeleteByID(ctx, db, "consume token", "token", `DELETE FROM tokens WHERE id = ?`, id)
}

// RevokeToken deletes the token; ErrNotFound when it does not exist.
func (db *DB) RevokeToken(ctx context.Context, id string) error {
	return DeleteByID(ctx, db, "revoke token", "token", `DELETE FROM tokens WHERE id = ?`, id)
}

// DeleteByID runs del (a DELETE of one row by id) for the kind of row
// named what: ErrNotFound when no row went. It is a function, not a
// method, so that the stores do not export it.
func DeleteByID(ctx context.Context, db *DB, op, what, del, id string) error {
	if err := check.ID(what, id); err != nil {
		return db.fail(op, err)
	}
	n, err := affected(db.exec(ctx, del, id))
	if err != nil {
		return db.wrap(ctx, op, err)
	}
	if n == 0 {
		return db.failOn(op, id, store.ErrNotFound)
	}
	return nil
}

// ListTokens lists tokens, oldest first.
func (db *DB) ListTokens(ctx context.Context) ([]store.Token, error) {
	const op = "list tokens"
	return queryAll(ctx, db, op, scanToken, `SELECT `+tokenCols+` FROM tokens ORDER BY created_at, `+db.D.InsertOrder)
}

// --- machines ---

// PutMachine inserts or replaces a machine.
func (db *DB) PutMachine(ctx context.Context, m store.Machine) error {
	const op = "put machine"
	if err := check.Machine(m); err != nil {
		return db.fail(op, err)
	}
	_, err := db.exec(ctx,
		`INSERT INTO machines (id, name, token_id, capabilities, last_seen) VALUES (?, ?, ?, ?, ?)
		 ON CONFLICT (id) DO UPDATE SET name = excluded.name, token_id = excluded.token_id,
		   capabilities = excluded.capabilities, last_seen = excluded.last_seen`,
		m.ID, m.Name, m.TokenID, Blob(m.Capabilities), db.ts(check.OrNow(m.LastSeen)))
	return db.wrap(ctx, op, err)
}

// Machines lists machines by ID.
func (db *DB) Machines(ctx context.Context) ([]store.Machine, error) {
	const op = "list machines"
	return queryAll(ctx, db, op, func(row Scanner) (store.Machine, error) {
		var (
			m    store.Machine
			caps []byte
			seen Time
		)
		if err := row.Scan(&m.ID, &m.Name, &m.TokenID, &caps, &seen); err != nil {
			return store.Machine{}, err
		}
		m.Capabilities = RawJSON(caps)
		m.LastSeen = seen.T
		return m, nil
	}, `SELECT id, name, token_id, capabilities, last_seen FROM machines ORDER BY id`)
}

// --- sessions ---

// CreateSession stores a new session (ErrExists when its ID is taken).
func (db *DB) CreateSession(ctx context.Context, ss store.Session) error {
	const op = "create session"
	if err := check.NewSession(ss); err != nil {
		return db.fail(op, err)
	}
	created := check.OrNow(ss.CreatedAt)
	updated := check.Time(ss.UpdatedAt)
	if updated.IsZero() {
		updated = created
	}
	err := Write(ctx, db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, db.q(
			`INSERT INTO sessions (id, machine_id, workspace_id, adapter, title, mode, state, epoch,
			   created_at, updated_at, last_seq, archived, title_source, prompted)
			 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
			ss.ID, ss.MachineID, ss.WorkspaceID, ss.Adapter, ss.Title, ss.Mode, ss.State, ss.Epoch,
			db.ts(created), db.ts(updated), check.Seq(ss.LastSeq), ss.Archived, ss.TitleSource, ss.Prompted)
		if err != nil {
			return err
		}
		return db.putSnapshot(ctx, tx, ss.ID, ss.Snapshot)
	})
	if err != nil && db.D.IsUnique(err) {
		return db.failOn(op, ss.ID, store.ErrExists)
	}
	return db.wrap(ctx, op, err)
}

// putSnapshot stores the session's snapshot (none when it is empty) in tx.
func (db *DB) putSnapshot(ctx context.Context, tx *sql.Tx, id string, snap []byte) error {
	if len(snap) == 0 {
		_, err := tx.ExecContext(ctx, db.q(`DELETE FROM session_snapshots WHERE session_id = ?`), id)
		return err
	}
	_, err := tx.ExecContext(ctx, db.q(`INSERT INTO session_snapshots (session_id, snapshot) VALUES (?, ?)
		ON CONFLICT (session_id) DO UPDATE SET snapshot = excluded.snapshot`), id, Blob(snap))
	return err
}

// sessionCols are a session's columns from a query on sessions; the
// snapshot is in a table of its own (migration 0009).
const sessionCols = `id, machine_id, workspace_id, adapter, title, mode, state, epoch,
	created_at, updated_at, last_seq,
	(SELECT snapshot FROM session_snapshots WHERE session_id = sessions.id), archived,
	title_source, prompted`

func scanSession(sc Scanner) (store.Session, error) {
	var (
		ss               store.Session
		created, updated Time
		lastSeq          int64
		snap             []byte
	)
	if err := sc.Scan(&ss.ID, &ss.MachineID, &ss.WorkspaceID, &ss.Adapter, &ss.Title, &ss.Mode,
		&ss.State, &ss.Epoch, &created, &updated, &lastSeq, &snap, &ss.Archived,
		&ss.TitleSource, &ss.Prompted); err != nil {
		return store.Session{}, err
	}
	ss.CreatedAt = created.T
	ss.UpdatedAt = updated.T
	ss.LastSeq = uint64(lastSeq) //nolint:gosec // stored from a checked uint64
	ss.Snapshot = RawJSON(snap)
	return ss, nil
}

// Session returns one session (ErrNotFound when there is none).
func (db *DB) Session(ctx context.Context, id string) (store.Session, error) {
	const op = "session"
	if err := check.ID("session", id); err != nil {
		return store.Session{}, db.fail(op, err)
	}
	ss, err := scanSession(db.queryRow(ctx, `SELECT `+sessionCols+` FROM sessions WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return store.Session{}, db.failOn(op, id, store.ErrNotFound)
	}
	if err != nil {
		return store.Session{}, db.wrap(ctx, op, err)
	}
	return ss, nil
}

// ListSessions lists sessions, most recently updated first (ties by ID,
// descending), of one machine when machineID is not empty; limit <= 0
// means no limit.
func (db *DB) ListSessions(ctx context.Context, machineID string, limit int) ([]store.Session, error) {
	const op = "list sessions"
	lim := db.D.NoLimit
	if limit > 0 {
		lim = limit
	}
	if machineID == "" {
		return queryAll(ctx, db, op, scanSession,
			`SELECT `+sessionCols+` FROM sessions ORDER BY updated_at DESC, id DESC LIMIT ?`, lim)
	}
	return queryAll(ctx, db, op, scanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE machine_id = ? ORDER BY updated_at DESC, id DESC LIMIT ?`,
		machineID, lim)
}

// UpdateSession writes Mode, State, UpdatedAt (now when zero) and
// Snapshot.
func (db *DB) UpdateSession(ctx context.Context, ss store.Session) error {
	const op = "update session"
	if err := check.ID("session", ss.ID); err != nil {
		return db.fail(op, err)
	}
	err := Write(ctx, db, func(tx *sql.Tx) error {
		// The snapshot (up to 256 KB) first, so that the session's row,
		// which every append updates, is held only for the last statement
		// (on PostgreSQL; the snapshot's foreign key takes no lock that
		// an append's update waits for).
		if err := db.putSnapshot(ctx, tx, ss.ID, ss.Snapshot); err != nil {
			if db.D.IsForeignKey(err) {
				return errNoRow
			}
			return err
		}
		n, err := affected(tx.ExecContext(ctx, db.q(`UPDATE sessions SET mode = ?, state = ?, updated_at = ? WHERE id = ?`),
			ss.Mode, ss.State, db.ts(check.OrNow(ss.UpdatedAt)), ss.ID))
		if err != nil {
			return err
		}
		if n == 0 {
			return errNoRow
		}
		return nil
	})
	if errors.Is(err, errNoRow) {
		return db.failOn(op, ss.ID, store.ErrNotFound)
	}
	return db.wrap(ctx, op, err)
}

// errNoRow ends a transaction whose row is not there.
var errNoRow = errors.New("no such row")

// RenameSession sets the session's title as a person's; an empty one
// clears the title and its source.
func (db *DB) RenameSession(ctx context.Context, id, title string) error {
	if err := check.Title(title); err != nil {
		return db.fail("rename session", err)
	}
	source := store.TitleUser
	if title == "" {
		source = ""
	}
	_, err := db.setSession(ctx, "rename session", id, `UPDATE sessions SET title = ?, title_source = ? WHERE id = ?`, title, source)
	return err
}

// MarkPrompted marks the session prompted and titles it from its first
// prompt when it has no title: one statement, so a rename racing it wins
// either way (it comes after, or the title is no longer empty).
func (db *DB) MarkPrompted(ctx context.Context, id, title string) (bool, error) {
	const op = "mark session prompted"
	if err := check.Title(title); err != nil {
		return false, db.fail(op, err)
	}
	if title == "" {
		// Nothing to title with: only mark it (CASE keeps the title).
		_, err := db.setSession(ctx, op, id, `UPDATE sessions SET prompted = ? WHERE id = ?`, true)
		return false, err
	}
	n, err := affected(db.exec(ctx, `UPDATE sessions SET title = ?, title_source = ?, prompted = ?
		WHERE id = ? AND title = '' AND prompted = ?`, title, store.TitlePrompt, true, id, false))
	if err != nil {
		return false, db.wrap(ctx, op, err)
	}
	if n == 1 {
		return true, nil
	}
	_, err = db.setSession(ctx, op, id, `UPDATE sessions SET prompted = ? WHERE id = ?`, true)
	return false, err
}

// AgentTitleSession sets the agent's title unless a person's stands.
func (db *DB) AgentTitleSession(ctx context.Context, id, title string) (bool, error) {
	const op = "set agent title"
	if err := check.Title(title); err != nil {
		return false, db.fail(op, err)
	}
	if err := check.ID("session", id); err != nil {
		return false, db.fail(op, err)
	}
	n, err := affected(db.exec(ctx, `UPDATE sessions SET title = ?, title_source = ? WHERE id = ? AND title_source <> ?`,
		title, store.TitleAgent, id, store.TitleUser))
	if err != nil {
		return false, db.wrap(ctx, op, err)
	}
	if n == 1 {
		return true, nil
	}
	if err := Exists(ctx, db, db.W, id); err != nil {
		return false, db.fail(op, err)
	}
	return false, nil
}

// ArchiveSession sets whether the session is archived.
func (db *DB) ArchiveSession(ctx context.Context, id string, archived bool) error {
	_, err := db.setSession(ctx, "archive session", id, `UPDATE sessions SET archived = ? WHERE id = ?`, archived)
	return err
}

// setSession runs upd (an UPDATE of one session by id, vs its values and
// id the last parameter): ErrNotFound when no row changed.
func (db *DB) setSession(ctx context.Context, op, id, upd string, vs ...any) (int64, error) {
	if err := check.ID("session", id); err != nil {
		return 0, db.fail(op, err)
	}
	n, err := affected(db.exec(ctx, upd, append(vs, id)...))
	if err != nil {
		return 0, db.wrap(ctx, op, err)
	}
	if n == 0 {
		return 0, db.failOn(op, id, store.ErrNotFound)
	}
	return n, nil
}

// unpromptedWhere is the condition of a session UnpromptedSessions lists
// and DeleteUnprompted deletes.
const unpromptedWhere = `prompted = ? AND title = '' AND archived = ? AND state <> 'running'`

// UnpromptedSessions lists sessions never prompted, untitled, idle and not
// archived, created at or before before, oldest first.
func (db *DB) UnpromptedSessions(ctx context.Context, before time.Time, limit int) ([]store.Session, error) {
	lim := db.D.NoLimit
	if limit > 0 {
		lim = limit
	}
	return queryAll(ctx, db, "unprompted sessions", scanSession,
		`SELECT `+sessionCols+` FROM sessions WHERE `+unpromptedWhere+` AND created_at <= ?
		 ORDER BY created_at, id LIMIT ?`, false, false, db.ts(before), lim)
}

// DeleteUnprompted deletes the session only while it is unprompted.
func (db *DB) DeleteUnprompted(ctx context.Context, id string) error {
	const op = "delete unprompted session"
	if err := check.ID("session", id); err != nil {
		return db.fail(op, err)
	}
	n, err := affected(db.exec(ctx, `DELETE FROM sessions WHERE id = ? AND `+unpromptedWhere, id, false, false))
	if err != nil {
		return db.wrap(ctx, op, err)
	}
	if n == 1 {
		return nil
	}
	if err := Exists(ctx, db, db.W, id); err != nil {
		return db.fail(op, err)
	}
	return db.failOn(op, id, store.ErrExists)
}

// DeleteSession deletes the session; the schema's ON DELETE CASCADE
// takes its events, interactions, artifacts (and with them their download
// tokens) and uploads in the same statement.
func (db *DB) DeleteSession(ctx context.Context, id string) error {
	return DeleteByID(ctx, db, "delete session", "session", `DELETE FROM sessions WHERE id = ?`, id)
}

// searchedTypes are the events whose text a search reads, with the
// payload field that holds it: the prompt as the master composed it and
// the turn's whole final answer (streamed deltas would split words).
var searchedTypes = []struct{ typ, key string }{
	{"control.prompt.request", "prompt_text"},
	{"agent.text.done", "text"},
}

// searchedIndexed is the WHERE term of the partial index events_searched
// (migration 0008), word for word: a planner uses a partial index only for
// a query whose WHERE clause holds its term, with literals, not parameters.
const searchedIndexed = `e.type IN ('control.prompt.request', 'agent.text.done')`

// SearchQuery is FindSessions' query for a search: the newest
// store.MaxSearchSessions sessions that where selects, then those whose
// title or searched events hold query. Its parameters are where's, then
// the limit of the inner select, query, the returned args, and the limit.
func SearchQuery(d Dialect, where, query string) (string, []any) {
	var text strings.Builder
	args := []any{}
	for i, st := range searchedTypes {
		if i > 0 {
			text.WriteString(` OR `)
		}
		text.WriteString(`(e.type = ? AND ` + d.Contains(`coalesce(`+d.JSONText("e.data", st.key)+`, '')`) + `)`)
		args = append(args, st.typ, query)
	}
	return `SELECT ` + sessionCols + ` FROM sessions WHERE id IN (
		SELECT s.id FROM (
			SELECT id, title FROM sessions WHERE ` + where + ` ORDER BY updated_at DESC, id DESC LIMIT ?
		) s WHERE ` + d.Contains(`s.title`) + ` OR EXISTS (
			SELECT 1 FROM events e WHERE e.session_id = s.id AND ` + searchedIndexed + ` AND (` + text.String() + `)
		)
	) ORDER BY updated_at DESC, id DESC LIMIT ?`, args
}

// FindSessions lists the sessions f selects, most recently updated first.
// With a query it looks at the newest store.MaxSearchSessions of the
// filter only, so that its cost is bounded whatever the store holds.
func (db *DB) FindSessions(ctx context.Context, f store.SessionFilter) ([]store.Session, error) {
	const op = "find sessions"
	if err := check.Query(f.Query); err != nil {
		return nil, db.fail(op, err)
	}
	lim := db.D.NoLimit
	if f.Limit > 0 {
		lim = f.Limit
	}
	where, args := `archived = ?`, []any{f.Archived}
	if f.MachineID != "" {
		where += ` AND machine_id = ?`
		args = append(args, f.MachineID)
	}
	if f.Query == "" {
		return queryAll(ctx, db, op, scanSession,
			`SELECT `+sessionCols+` FROM sessions WHERE `+where+` ORDER BY updated_at DESC, id DESC LIMIT ?`,
			append(args, lim)...)
	}
	q, textArgs := SearchQuery(db.D, where, f.Query)
	args = append(args, store.MaxSearchSessions, f.Query)
	args = append(args, textArgs...)
	return queryAll(ctx, db, op, scanSession, q, append(args, lim)...)
}
