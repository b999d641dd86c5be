package client

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/ferry-dev/ferry/protocol"
)

// Turns cut by a restart. A turn that runs while the client stops (ferry
// up or connect interrupted, to be started again) is cancelled and ends
// with the reason below, not a bare "cancelled": that is for the user's
// own cancel. A turn that runs when the client process dies
// (kill -9, a crash, a power loss) never gets its agent.text.done, and the
// master would show it running for ever. So every running turn is marked
// in the outbox's database when it starts; the mark goes in the same
// transaction that queues the turn's agent.text.done. A mark found when
// the client starts is a turn a restart cut: it is ended then, with an
// agent.error saying so (CodeRestarted, RestartedMessage) and its
// agent.text.done (stop_reason "error"), queued in the outbox like any
// event, behind whatever the turn had produced.

// CodeRestarted is the agent.error code of a turn a restart cut.
const CodeRestarted = protocol.AgentCodeRestarted

// RestartedMessage is what the user sees on such a turn.
const RestartedMessage = "ferry restarted during this turn; it ended there. Send a new prompt to go on."

// turnMarks keeps the marks of running turns.
type turnMarks struct {
	db       *sql.DB
	put, del *sql.Stmt
}

func openTurnMarks(db *sql.DB) (*turnMarks, error) {
	m := &turnMarks{db: db}
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS running_turns (
		session_id TEXT NOT NULL,
		turn_id    TEXT NOT NULL,
		PRIMARY KEY (session_id, turn_id)
	)`)
	if err == nil {
		m.put, err = db.Prepare(`INSERT OR IGNORE INTO running_turns (session_id, turn_id) VALUES (?, ?)`)
	}
	if err == nil {
		m.del, err = db.Prepare(`DELETE FROM running_turns WHERE session_id = ? AND turn_id = ?`)
	}
	if err != nil {
		return nil, fmt.Errorf("client: running turns: %w", err)
	}
	return m, nil
}

// mark records a turn as running.
func (m *turnMarks) mark(sessionID, turnID string) error {
	if _, err := m.put.Exec(sessionID, turnID); err != nil {
		return fmt.Errorf("client: mark turn: %w", err)
	}
	return nil
}

// markIn is mark inside the transaction that queues the turn's start.
func (m *turnMarks) markIn(sessionID, turnID string) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Stmt(m.put).Exec(sessionID, turnID)
		return err
	}
}

// unmarkIn is unmark inside the transaction that queues the turn's end.
func (m *turnMarks) unmarkIn(sessionID, turnID string) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		_, err := tx.Stmt(m.del).Exec(sessionID, turnID)
		return err
	}
}

type cutTurn struct{ session, turn string }

func (m *turnMarks) list() ([]cutTurn, error) {
	rows, err := m.db.Query(`SELECT session_id, turn_id FROM running_turns ORDER BY rowid`)
	if err != nil {
		return nil, fmt.Errorf("client: running turns: %w", err)
	}
	defer func() { _ = rows.Close() }()
	var out []cutTurn
	for rows.Next() {
		var c cutTurn
		if err := rows.Scan(&c.session, &c.turn); err != nil {
			return nil, fmt.Errorf("client: running turns: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("client: running turns: %w", err)
	}
	return out, nil
}

// endCutTurnsSoon ends the turns an earlier run left running. It runs in
// New, before any session can start a turn, and never waits there for room
// in the outbox: when it is full (only acks from a connection can empty
// it), the rest is ended in the background once there is room.
func (c *Client) endCutTurnsSoon() {
	now, cancel := context.WithCancel(c.stop)
	cancel() // Append then fails at once when the outbox is full
	err := c.endCutTurns(now)
	if err == nil {
		return
	}
	c.log.Warn("turns cut by a restart are ended once the outbox has room", "err", err)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		if err := c.endCutTurns(c.stop); err != nil && c.stop.Err() == nil {
			c.log.Error("turns cut by a restart not ended", "err", err)
		}
	}()
}

// endCutTurns ends every turn an earlier run of the client left running
// (see above).
func (c *Client) endCutTurns(ctx context.Context) error {
	cut, err := c.marks.list()
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range cut {
		c.log.Warn("a turn was cut by a restart; ending it", "session", t.session, "turn", t.turn)
		ev := protocol.New(protocol.TypeAgentError, &protocol.AgentError{TurnID: t.turn, Code: CodeRestarted, Message: RestartedMessage})
		ev.SessionID = t.session
		if err := c.emit(ctx, ev); err != nil {
			errs = append(errs, err)
			continue
		}
		done := protocol.New(protocol.TypeTextDone, &protocol.TextDone{TurnID: t.turn, StopReason: protocol.StopError})
		done.SessionID = t.session
		if err := c.emitEnd(ctx, done, t.session, t.turn); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("client: end turns cut by a restart: %w", err)
	}
	return nil
}

// endRestarted queues the agent.error of a turn the client's shutdown
// cut (its agent.text.done follows, from runTurn).
func (s *session) endRestarted(turnID string) {
	ev := protocol.New(protocol.TypeAgentError, &protocol.AgentError{TurnID: turnID, Code: CodeRestarted, Message: RestartedMessage})
	ev.SessionID = s.id
	if err := s.c.emit(s.c.drain, ev); err != nil {
		s.c.log.Error("agent.error", "session", s.id, "err", err)
	}
}

// emitEnd queues a turn's agent.text.done and forgets its mark, atomically:
// a turn never gets two ends, nor none.
func (c *Client) emitEnd(ctx context.Context, m *protocol.Message, sessionID, turnID string) error {
	return c.emitWith(ctx, m, c.marks.unmarkIn(sessionID, turnID))
}
