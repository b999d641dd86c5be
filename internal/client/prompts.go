package client

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/ferry-dev/ferry/protocol"
)

// Prompts are answered once. The master sends a prompt again until the
// client answers it (one may be lost on its way: a master node dying with
// it, a broker gap, a connection dying with it unread), so a prompt may
// come twice, or again after a restart of the client. The client records
// each prompt's message_id in the outbox's database as it answers it: in
// the transaction that queues its agent.turn.started, or with the refusal
// it was answered with. A recorded prompt is not run again: a copy of one
// that started is dropped (its agent.turn.started is in the outbox, or the
// master has it), a copy of one refused is refused again with the same
// error (the master may have lost the first with a connection, and needs
// an answer). The record keeps the newest maxAnsweredPrompts: a copy comes
// only while the master waits for an answer, which it gets within a
// connection or two.

// maxAnsweredPrompts bounds the record of answered prompts.
const maxAnsweredPrompts = 4096

// answeredPrompts is the record.
type answeredPrompts struct {
	put, get, trim *sql.Stmt
}

func openAnsweredPrompts(db *sql.DB) (*answeredPrompts, error) {
	a := &answeredPrompts{}
	_, err := db.Exec(`CREATE TABLE IF NOT EXISTS answered_prompts (
		seq        INTEGER PRIMARY KEY AUTOINCREMENT,
		message_id TEXT NOT NULL UNIQUE,
		session_id TEXT NOT NULL,
		refusal    BLOB
	)`)
	for _, st := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&a.put, `INSERT OR IGNORE INTO answered_prompts (message_id, session_id, refusal) VALUES (?, ?, ?)`},
		{&a.get, `SELECT refusal FROM answered_prompts WHERE message_id = ?`},
		{&a.trim, `DELETE FROM answered_prompts WHERE seq <= (SELECT max(seq) FROM answered_prompts) - ?`},
	} {
		if err == nil {
			*st.stmt, err = db.Prepare(st.sql)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("client: answered prompts: %w", err)
	}
	return a, nil
}

// lookup reports whether prompt id was answered, and with which refusal
// (nil: it started a turn).
func (a *answeredPrompts) lookup(id string) (bool, *protocol.Error, error) {
	var refusal []byte
	err := a.get.QueryRow(id).Scan(&refusal)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil, nil
	}
	if err != nil {
		return false, nil, fmt.Errorf("client: answered prompts: %w", err)
	}
	if refusal == nil {
		return true, nil, nil
	}
	e := &protocol.Error{}
	if err := json.Unmarshal(refusal, e); err != nil {
		return true, nil, fmt.Errorf("client: answered prompts: %w", err)
	}
	return true, e, nil
}

// startedIn records a prompt that starts a turn, inside the transaction
// that queues its agent.turn.started.
func (a *answeredPrompts) startedIn(id, sessionID string) func(*sql.Tx) error {
	return func(tx *sql.Tx) error {
		return a.record(tx.Stmt(a.put), tx.Stmt(a.trim), id, sessionID, nil)
	}
}

// refused records a prompt answered with e. A prompt recorded already
// keeps its first answer.
func (a *answeredPrompts) refused(id, sessionID string, e *protocol.Error) error {
	b, err := json.Marshal(e)
	if err == nil {
		err = a.record(a.put, a.trim, id, sessionID, b)
	}
	if err != nil {
		return fmt.Errorf("client: answered prompts: %w", err)
	}
	return nil
}

func (a *answeredPrompts) record(put, trim *sql.Stmt, id, sessionID string, refusal []byte) error {
	if _, err := put.Exec(id, sessionID, refusal); err != nil {
		return err
	}
	_, err := trim.Exec(maxAnsweredPrompts)
	return err
}

// answeredAlready handles a copy of a prompt the client answered before:
// it reports whether m is one, and refuses it again as the first time if
// it was refused. On a failure to read the record it reports false: the
// prompt runs, as it would have without the record.
func (c *Client) answeredAlready(cn *conn, m *protocol.Message) bool {
	done, refusal, err := c.prompts.lookup(m.MessageID)
	if err != nil {
		c.log.Error("look up a prompt's answer", "session", m.SessionID, "prompt", m.MessageID, "err", err)
		return false
	}
	if !done {
		return false
	}
	if refusal == nil {
		c.log.Info("dropped a copy of a prompt that started a turn", "session", m.SessionID, "prompt", m.MessageID)
		return true
	}
	c.log.Info("refused a copy of a refused prompt again", "session", m.SessionID, "prompt", m.MessageID, "code", refusal.Code)
	c.answer(cn, protocol.ErrorMessage(m.MessageID, m.SessionID, refusal))
	return true
}

// refuse answers m with the coded error e (not kept); a prompt's refusal
// is recorded first, so that a copy of it gets the same answer.
func (c *Client) refuse(cn *conn, m *protocol.Message, e *protocol.Error) {
	if m.Type == protocol.TypePromptRequest && m.MessageID != "" {
		if err := c.prompts.refused(m.MessageID, m.SessionID, e); err != nil {
			c.log.Error("record a prompt's refusal", "session", m.SessionID, "prompt", m.MessageID, "err", err)
		}
	}
	c.answer(cn, protocol.ErrorMessage(m.MessageID, m.SessionID, e))
}

// answer sends m on cn, or on the current connection when cn is nil.
func (c *Client) answer(cn *conn, m *protocol.Message) {
	if cn == nil {
		c.sendDirect(m)
		return
	}
	c.reply(cn, m)
}
