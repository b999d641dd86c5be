package master_test

import (
	"testing"

	"github.com/ferry-dev/ferry/internal/auth"
	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/internal/store"
	"github.com/ferry-dev/ferry/protocol"
)

// nextStatus reads ui's messages up to the next status change
// (master.session.changed with change status) of sessionID.
func nextStatus(t *testing.T, ui *peer, sessionID string) protocol.SessionInfo {
	t.Helper()
	for {
		m := ui.next(protocol.TypeSessionChanged)
		if s := m.Payload.(*protocol.SessionChanged).Session; isStatus(m) && s.ID == sessionID {
			if m.ParentID != "" || m.SessionID != sessionID {
				t.Fatalf("%s: status change %s with parent %q, session %q", ui.name, describe(m), m.ParentID, m.SessionID)
			}
			return s
		}
	}
}

// listed returns what ui.sessions.list says of sessionID.
func listed(t *testing.T, ui *peer, sessionID string) protocol.SessionInfo {
	t.Helper()
	req := ui.send(protocol.New(protocol.TypeSessionsList, &protocol.SessionsList{}))
	for {
		m := ui.next(protocol.TypeSessions)
		if m.ParentID != req.MessageID {
			continue
		}
		for _, s := range m.Payload.(*protocol.Sessions).Sessions {
			if s.ID == sessionID {
				return s
			}
		}
		t.Fatalf("%s: ui.sessions.list lacks %s", ui.name, sessionID)
	}
}

// TestSessionWaiting: SessionInfo.waiting counts the interactions open for
// the user, in the sessions list (from the store, so after a restart too)
// and in master.session.changed with change status, which reaches every UI that may see the
// machine, subscribed or not, as soon as a session opens, a turn starts or
// an interaction opens or settles, and never a UI whose token does not
// reach the machine.
func TestSessionWaiting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	watcher := e.dialUI("watcher") // never subscribes: a session list
	otherSecret, _, err := auth.Issue(testCtx(t), e.st, store.TokenUI, "other", 0, auth.WithMachines("m2"))
	if err != nil {
		t.Fatal(err)
	}
	other := e.dialUIToken(otherSecret, "other machine's UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	if got := nextStatus(t, watcher, info.ID); got.State != protocol.SessionIdle || got.Waiting != 0 || got.Title != "t" {
		t.Fatalf("status of a new session: %+v", got)
	}
	subscribe(ui, info.ID, 1, info.Epoch)
	if got := listed(t, watcher, info.ID); got.State != protocol.SessionIdle || got.Waiting != 0 {
		t.Fatalf("a new session is listed %s waiting %d", got.State, got.Waiting)
	}

	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	if got := nextStatus(t, watcher, info.ID); got.State != protocol.SessionRunning || got.Waiting != 0 {
		t.Fatalf("status after the turn started: %s waiting %d", got.State, got.Waiting)
	}

	permission(c, info.ID, "turn-1", "p1")
	permission(c, info.ID, "turn-1", "p2")
	// Each status is the session as it is when sent: the two may come in
	// one batch, so in one status.
	for n := 0; n < 2; {
		got := nextStatus(t, watcher, info.ID)
		if got.Waiting <= n || got.State != protocol.SessionRunning {
			t.Fatalf("status after interactions opened: %s waiting %d after %d", got.State, got.Waiting, n)
		}
		n = got.Waiting
	}
	if got := listed(t, watcher, info.ID); got.Waiting != 2 {
		t.Fatalf("listed waiting %d with two open interactions", got.Waiting)
	}

	answer(ui, info.ID, "p1", protocol.AllowOnce)
	if got := nextStatus(t, watcher, info.ID); got.Waiting != 1 {
		t.Fatalf("status after one answer: waiting %d, want 1", got.Waiting)
	}

	// The store keeps the open one: a restarted master lists it.
	e.restart()
	ui = e.dialUI("UI after the restart")
	if got := listed(t, ui, info.ID); got.Waiting != 1 || got.State != protocol.SessionRunning {
		t.Fatalf("after a restart listed %s waiting %d, want running waiting 1", got.State, got.Waiting)
	}
	c.reconnect(ui)
	watcher = e.dialUI("watcher after the restart")
	answer(ui, info.ID, "p2", protocol.Deny)
	if got := nextStatus(t, watcher, info.ID); got.Waiting != 0 {
		t.Fatalf("status after the last answer: waiting %d", got.Waiting)
	}
	if got := listed(t, watcher, info.ID); got.Waiting != 0 {
		t.Fatalf("listed waiting %d once answered", got.Waiting)
	}

	// The UI limited to m2 heard nothing of m1's session (the restart
	// closed its connection: read what it got until then).
	for {
		m, err := other.read()
		if err != nil {
			break
		}
		if m.Type == protocol.TypeSessionChanged {
			t.Fatalf("a UI limited to m2 got %s", describe(m))
		}
	}
}
