package master_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/ferry-dev/ferry/internal/master"
	"github.com/ferry-dev/ferry/protocol"
)

// TestBadInputUI sends one message of each bad-input class and checks the
// coded answer; the connection must stay usable after each.
func TestBadInputUI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	id := protocol.NewID()
	cases := []struct {
		name, raw, parent, code, field string
	}{
		{"malformed JSON", `{"type":"ui.machines.list",`, "", protocol.CodeMalformedJSON, ""},
		{"not an object", `[1,2]`, "", protocol.CodeMalformedJSON, ""},
		{"invalid UTF-8", "{\"type\":\"ui.machines.list\",\"message_id\":\"" + id + "\",\"payload\":{\"x\":\"\xff\"}}", id, protocol.CodeMalformedJSON, ""},
		{"unknown type", `{"type":"ui.teleport","message_id":"` + id + `","payload":{}}`, id, protocol.CodeUnknownType, "type"},
		{"missing field", `{"type":"ui.session.start","message_id":"` + id + `","payload":{"workspace_id":"w","adapter":"a"}}`, id, protocol.CodeMissingField, "payload.machine_id"},
		{"missing message_id", `{"type":"ui.machines.list","payload":{}}`, "", protocol.CodeMissingField, "message_id"},
		{"wrong type", `{"type":"ui.session.subscribe","message_id":"` + id + `","session_id":"s","payload":{"after_seq":"7"}}`, id, protocol.CodeWrongType, "payload.after_seq"},
		{"invalid value", `{"type":"ui.session.start","message_id":"` + id + `","payload":{"machine_id":"m","workspace_id":"w","adapter":"a","mode":"turbo"}}`, id, protocol.CodeInvalidValue, "payload.mode"},
		{"wrong direction", `{"type":"agent.text.delta","message_id":"` + id + `","session_id":"s","payload":{"turn_id":"t","delta":"x"}}`, id, protocol.CodeWrongDirection, "type"},
		{"master's own type", `{"type":"master.ack","message_id":"` + id + `","payload":{"through":"` + id + `"}}`, id, protocol.CodeWrongDirection, "type"},
		{"unknown session", `{"type":"ui.session.subscribe","message_id":"` + id + `","session_id":"nope","payload":{"after_seq":0}}`, id, protocol.CodeNotFound, "session_id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ui.t = t
			ui.sendRaw([]byte(c.raw))
			ui.expectError(c.parent, c.code, c.field)
			ui.sync()
		})
	}
	ui.t = t
	t.Run("oversize", func(t *testing.T) {
		ui.t = t
		big := bytes.Repeat([]byte("x"), protocol.MaxMessageBytes+1)
		copy(big, `{"type":"ui.machines.list","payload":{"pad":"`)
		ui.sendRaw(big)
		ui.expectError("", protocol.CodeMessageTooLarge, "")
		ui.sync()
	})
	t.Run("binary frame", func(t *testing.T) {
		ui.t = t
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		if err := ui.ws.Write(ctx, websocket.MessageBinary, []byte(`{"type":"ui.machines.list"}`)); err != nil {
			t.Fatal(err)
		}
		ui.expectError("", protocol.CodeMalformedJSON, "")
		ui.sync()
	})
}

// TestBadInputClient: a client is held to its own direction, must announce
// itself first, and keeps its connection after bad input.
func TestBadInputClient(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := &fakeClient{peer: e.dialClient(), e: e, caps: testCaps("m1")}
	ev := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t", Delta: "x"})
	ev.SessionID = "s"
	c.send(ev)
	c.expectError(ev.MessageID, protocol.CodeInvalidValue, "type")

	noMachine := testCaps("m1")
	noMachine.Machine = nil
	caps := c.send(protocol.New(protocol.TypeCapabilities, noMachine))
	c.expectError(caps.MessageID, protocol.CodeMissingField, "payload.machine")

	c.send(protocol.New(protocol.TypeCapabilities, c.caps))
	waitMachine(ui, "m1", true)

	req := protocol.New(protocol.TypePromptRequest, &protocol.PromptRequest{PromptText: "hi"})
	req.SessionID = "s"
	c.send(req)
	c.expectError(req.MessageID, protocol.CodeWrongDirection, "type")

	c.sendRaw([]byte(`{"type":"agent.text.delta","message_id":"` + protocol.NewID() + `"`))
	c.expectError("", protocol.CodeMalformedJSON, "")

	// An event for a session that does not exist is refused (and
	// acknowledged, so the client does not re-send it forever).
	c.send(ev)
	c.expectError(ev.MessageID, protocol.CodeNotFound, "session_id")
	c.waitAck(ev.MessageID)

	// Still usable: a session starts on it.
	startSession(ui, c)
}

// TestBadPrompt: composition errors are coded.
func TestBadPrompt(t *testing.T) {
	t.Parallel()
	e := newEnv(t, master.Config{})
	ui := e.dialUI("UI")
	c := e.connectClient(testCaps("m1"), ui)
	info, _ := startSession(ui, c)
	m := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{{Kind: protocol.SegmentText, Text: ""}}})
	m.SessionID = info.ID
	ui.send(m)
	ui.expectError(m.MessageID, protocol.CodeInvalidValue, "payload.segments")
	huge := protocol.New(protocol.TypeUIPrompt, &protocol.UIPrompt{Segments: []protocol.PromptSegment{
		{Kind: protocol.SegmentText, Text: strings.Repeat(`\`, protocol.MaxMessageBytes/2-1000)}}})
	huge.SessionID = info.ID
	ui.send(huge) // fits as typed, but escaping doubles every backslash
	ui.expectError(huge.MessageID, protocol.CodeMessageTooLarge, "")
	ui.sync()
}
