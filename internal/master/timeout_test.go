package master_test

import (
	"testing"
	"time"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// settingsCaps is testCaps with control.session.settings handled.
func settingsCaps(machineID string) *protocol.Capabilities {
	caps := testCaps(machineID)
	caps.Messages = append(caps.Messages, protocol.TypeSessionSettings)
	return caps
}

func question(c *fakeClient, sessionID, turnID, id string, timeoutMS int, kind, def string) *protocol.Message {
	return c.emit(sessionID, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
		InteractionID: id, TurnID: turnID, Kind: kind, Title: "Which branch?", DefaultValue: def,
		Options:   []protocol.Option{{Value: "main", Label: "main"}, {Value: "dev", Label: "dev"}},
		TimeoutMS: timeoutMS,
	})
}

// nextTimeout reads the client's control messages up to the next
// control.interaction.timeout (a reconnected client is sent
// control.session.open first).
func nextTimeout(t *testing.T, c *fakeClient) *protocol.InteractionTimeout {
	t.Helper()
	for {
		m := c.next(protocol.TypeSessionOpen, protocol.TypeInteractionTimeout)
		if p, ok := m.Payload.(*protocol.InteractionTimeout); ok {
			return p
		}
	}
}

func values(sv *protocol.SelectedValue) []string {
	if sv == nil {
		return nil
	}
	return sv.Values
}

// TestTimeoutAppliesDefault: a question with a default_value that times
// out is settled with the default, recorded in agent.interaction.resolved
// and sent to the client in control.interaction.timeout; a question
// without a default gets no answer. A permission advertises deny, and is
// denied; one advertising a grant is refused, shown to nobody: what a
// request advertises is what its timeout applies.
func TestTimeoutAppliesDefault(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	events(ui, 2, 1)

	for _, tc := range []struct {
		name, kind, def string
		want            []string
	}{
		{"single_select with a default", protocol.InteractionSingleSelect, "dev", []string{"dev"}},
		{"single_select without a default", protocol.InteractionSingleSelect, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := protocol.NewID()
			before := time.Now()
			question(c, info.ID, "turn-1", id, 100, tc.kind, tc.def)
			ev := ui.next(protocol.TypeInteractionRequest)
			exp, err := time.Parse(time.RFC3339Nano, ev.Payload.(*protocol.InteractionRequest).ExpiresAt)
			if err != nil || exp.Before(before.Add(90*time.Millisecond)) || exp.After(time.Now().Add(110*time.Millisecond)) {
				t.Fatalf("expires_at %q (%v), asked at %v with 100ms", ev.Payload.(*protocol.InteractionRequest).ExpiresAt, err, before)
			}
			to := nextTimeout(t, c)
			if to.InteractionID != id || !equal(values(to.SelectedValue), tc.want) {
				t.Fatalf("control.interaction.timeout %+v, want value %v", to, tc.want)
			}
			r := resolved(t, ui, id, "timeout")
			if !equal(values(r.SelectedValue), tc.want) {
				t.Fatalf("resolved %+v, want value %v", r, tc.want)
			}
		})
	}
	t.Run("permission with default allow_once", func(t *testing.T) {
		m := protocol.New(protocol.TypeInteractionRequest, &protocol.InteractionRequest{
			InteractionID: "grant", TurnID: "turn-1", Kind: protocol.InteractionPermission, Title: "Write a.txt?",
			Options:      []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow"}, {Value: protocol.Deny, Label: "Deny"}},
			DefaultValue: protocol.AllowOnce, TimeoutMS: 50,
		})
		m.SessionID = info.ID
		c.send(m)
		c.expectError(m.MessageID, protocol.CodeInvalidValue, "payload.default_value")
	})
	t.Run("permission with default deny", func(t *testing.T) {
		c.emit(info.ID, protocol.TypeInteractionRequest, &protocol.InteractionRequest{
			InteractionID: "perm", TurnID: "turn-1", Kind: protocol.InteractionPermission, Title: "Write a.txt?",
			Options:      []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow"}, {Value: protocol.Deny, Label: "Deny"}},
			DefaultValue: protocol.Deny, TimeoutMS: 50,
		})
		// The UI's next request is this one: the refused one never came.
		if got := ui.next(protocol.TypeInteractionRequest).Payload.(*protocol.InteractionRequest); got.InteractionID != "perm" {
			t.Fatalf("the UI was shown %+v", got)
		}
		if to := nextTimeout(t, c); to.InteractionID != "perm" || !equal(values(to.SelectedValue), []string{protocol.Deny}) {
			t.Fatalf("control.interaction.timeout %+v, want deny", to)
		}
		if r := resolved(t, ui, "perm", "timeout"); !equal(values(r.SelectedValue), []string{protocol.Deny}) {
			t.Fatalf("resolved %+v, want deny", r)
		}
		late := answer(ui, info.ID, "perm", protocol.AllowOnce)
		ui.expectError(late.MessageID, protocol.CodeInteractionSettled, "payload.interaction_id")
	})
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestTimeoutWhileClientOffline: a deadline that passes while the client
// is away settles nothing; when it is back the interaction is settled and
// the client gets the timeout exactly once.
func TestTimeoutWhileClientOffline(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	q := question(c, info.ID, "turn-1", "q1", 300, protocol.InteractionSingleSelect, "main")
	events(ui, 3, 1)
	c.waitAck(q.MessageID)
	_ = c.ws.CloseNow()
	waitMachine(ui, "m1", false)
	time.Sleep(500 * time.Millisecond) // past the deadline, client away

	// Nothing was settled meanwhile: the UI's next event is the one after
	// the reconnect (settled as the client comes back, so it may reach the
	// UI before or after the machine's online status).
	c.reconnect(nil)
	to := nextTimeout(t, c)
	if to.InteractionID != "q1" || !equal(values(to.SelectedValue), []string{"main"}) {
		t.Fatalf("control.interaction.timeout %+v", to)
	}
	var r *protocol.InteractionResolved
	for online := false; r == nil || !online; {
		m := ui.next(protocol.TypeMachineStatus, protocol.TypeInteractionResolved)
		switch p := m.Payload.(type) {
		case *protocol.MachineStatus:
			online = online || (p.Machine.ID == "m1" && p.Machine.Online)
		case *protocol.InteractionResolved:
			if r != nil {
				t.Fatalf("resolved twice: %s", describe(m))
			}
			r = p
		}
	}
	if r.InteractionID != "q1" || r.Outcome != "timeout" || !equal(values(r.SelectedValue), []string{"main"}) {
		t.Fatalf("resolved %+v", r)
	}
	clientSync(ui, c, info.ID) // no second timeout
	// A reconnect after that delivers nothing more.
	c.reconnect(ui)
	m := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
	m.SessionID = info.ID
	ui.send(m)
	for {
		got := c.next()
		if got.Type == protocol.TypeSessionOpen {
			continue
		}
		if got.MessageID != m.MessageID {
			t.Fatalf("the client got %s %s after reconnecting, want only the mode switch", got.Type, describe(got))
		}
		break
	}
}

// TestTimeoutAfterMasterRestart: an interaction whose deadline passed
// while the master was down is settled when its client is back with the
// new master, from the store's created_at.
func TestTimeoutAfterMasterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	req := prompt(ui, c, info.ID, "go")
	turnStart(c, req, "turn-1")
	q := question(c, info.ID, "turn-1", "q1", 400, protocol.InteractionSingleSelect, "dev")
	events(ui, 3, 1)
	c.waitAck(q.MessageID)
	_ = c.ws.CloseNow()
	e.restart()
	time.Sleep(600 * time.Millisecond)

	ui = e.dialUI("UI 2")
	c.reconnect(ui)
	if to := nextTimeout(t, c); to.InteractionID != "q1" || !equal(values(to.SelectedValue), []string{"dev"}) {
		t.Fatalf("control.interaction.timeout %+v", to)
	}
	// The client gets its timeout before the resolved event is appended;
	// a subscription made before that would also get the still open
	// question again, so wait for the store to hold the resolution.
	deadline := time.Now().Add(wait)
	for len(storedEvents(t, e.st, info.ID, protocol.TypeInteractionResolved)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the timeout's agent.interaction.resolved was never stored")
		}
		time.Sleep(10 * time.Millisecond)
	}
	sub := subscribe(ui, info.ID, 0, "")
	evs := events(ui, int(sub.LastSeq), 0)
	ev := evs[len(evs)-1]
	last, ok := ev.Payload.(*protocol.InteractionResolved)
	if !ok {
		t.Fatalf("last event %s, want the interaction resolved", describe(ev))
	}
	if last.InteractionID != "q1" || last.Outcome != "timeout" || !equal(values(last.SelectedValue), []string{"dev"}) {
		t.Fatalf("last event %+v", last)
	}
	clientSync(ui, c, info.ID)
}

// TestSessionSettingsKept: control.session.settings goes to the client, its
// session.settings is kept with the session, and a client that connects
// again is opened with the session's own timeout, after a master restart
// too.
func TestSessionSettingsKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(settingsCaps("m1"), ui)
	info, _ := startSession(ui, c)
	subscribe(ui, info.ID, 1, info.Epoch)
	ms := 90000
	set := protocol.New(protocol.TypeSessionSettings, &protocol.SessionSettings{PermissionTimeoutMS: &ms})
	set.SessionID = info.ID
	ui.send(set)
	got := c.next(protocol.TypeSessionSettings)
	if got.MessageID != set.MessageID || *got.Payload.(*protocol.SessionSettings).PermissionTimeoutMS != ms {
		t.Fatalf("forwarded %s", describe(got))
	}
	ans := got.Reply(protocol.TypeSettings, &protocol.Settings{PermissionTimeoutMS: ms, PermissionTimeoutSet: true})
	c.waitAck(c.emitMsg(ans).MessageID)
	if ev := ui.next(protocol.TypeSettings); ev.Payload.(*protocol.Settings).PermissionTimeoutMS != ms {
		t.Fatalf("session.settings %s", describe(ev))
	}

	openedWith := func(c *fakeClient, ui *peer) {
		t.Helper()
		m := protocol.New(protocol.TypeModeSwitch, &protocol.ModeSwitch{Mode: protocol.ModePlan})
		m.SessionID = info.ID
		ui.send(m)
		open := c.next(protocol.TypeSessionOpen)
		if p := open.Payload.(*protocol.SessionOpen); p.PermissionTimeoutMS == nil || *p.PermissionTimeoutMS != ms {
			t.Fatalf("control.session.open %s, want permission_timeout_ms %d", describe(open), ms)
		}
		c.next(protocol.TypeModeSwitch)
	}
	c.reconnect(ui)
	openedWith(c, ui)

	_ = c.ws.CloseNow()
	e.restart()
	ui = e.dialUI("UI 2")
	c.reconnect(ui)
	openedWith(c, ui)
	// A UI that gets a snapshot after the restart sees the settings in force.
	sub := subscribe(ui, info.ID, 1, "another-epoch")
	if sub.Recovered || sub.Snapshot == nil || sub.Snapshot.Session.Settings == nil ||
		*sub.Snapshot.Session.Settings != (protocol.Settings{PermissionTimeoutMS: ms, PermissionTimeoutSet: true}) {
		t.Fatalf("subscribed %+v", sub)
	}
}
