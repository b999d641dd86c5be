package protocol_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/ferry-dev/ferry/protocol"
)

// decodeErr decodes a one-message JSON and returns its coded error (nil
// when it decodes).
func decodeErr(t *testing.T, typ string, payload any) *protocol.Error {
	t.Helper()
	p, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(map[string]any{"type": typ, "message_id": protocol.NewID(), "parent_id": protocol.NewID(),
		"session_id": "s1", "payload": json.RawMessage(p)})
	_, err = protocol.Decode(raw)
	if err == nil {
		return nil
	}
	var pe *protocol.Error
	if !errors.As(err, &pe) {
		t.Fatalf("decode: %v is not a coded error", err)
	}
	return pe
}

func TestDenyNoteValidation(t *testing.T) {
	ok := map[string]any{"interaction_id": "i1", "selected_value": "deny", "note": "use git mv instead"}
	if e := decodeErr(t, protocol.TypeInteractionResponse, ok); e != nil {
		t.Fatalf("a denial with a note: %v", e)
	}
	allow := map[string]any{"interaction_id": "i1", "selected_value": "allow_once", "note": "fine"}
	if e := decodeErr(t, protocol.TypeInteractionResponse, allow); e == nil || e.Field != "payload.note" || e.Code != protocol.CodeInvalidValue {
		t.Fatalf("a note with an allow: got %v, want invalid_value on payload.note", e)
	}
	long := map[string]any{"interaction_id": "i1", "selected_value": "deny", "note": string(make([]byte, protocol.MaxDenyNote+1))}
	if e := decodeErr(t, protocol.TypeInteractionResponse, long); e == nil || e.Field != "payload.note" {
		t.Fatalf("an over-long note: got %v, want an error on payload.note", e)
	}
}

func TestSettingsEffortValidation(t *testing.T) {
	if e := decodeErr(t, protocol.TypeSessionSettings, map[string]any{"model": "m1", "effort": "high"}); e != nil {
		t.Fatalf("a model and an effort: %v", e)
	}
	if e := decodeErr(t, protocol.TypeSessionSettings, map[string]any{"effort": "turbo"}); e == nil || e.Field != "payload.effort" {
		t.Fatalf("an unknown effort: got %v, want an error on payload.effort", e)
	}
	bad := map[string]any{"provider": "anthropic", "default": "m1", "models": []any{map[string]any{"id": "m1", "efforts": []string{"max"}}}}
	if e := decodeErr(t, protocol.TypeModels, bad); e == nil || e.Field != "payload.models[0].efforts[0]" {
		t.Fatalf("a model list with an unknown effort: got %v, want an error on payload.models[0].efforts[0]", e)
	}
}

func TestCapabilitiesCheckNoteAndModels(t *testing.T) {
	caps := goldenCaps(t)
	id := caps.Adapters[0].ID
	caps.Adapters[0].DenyNote, caps.Adapters[0].Models = false, false
	caps.Messages = append(caps.Messages, protocol.TypeInteractionResponse, protocol.TypeModelsList, protocol.TypeSessionSettings)
	note := protocol.New(protocol.TypeInteractionResponse, &protocol.InteractionResponse{InteractionID: "i1", SelectedValue: protocol.Single(protocol.Deny), Note: "no"})
	if e := caps.Check(note, id); e == nil || e.Code != protocol.CodeUnsupported || e.Field != "payload.note" {
		t.Fatalf("a note to an adapter without deny_note: got %v", e)
	}
	list := protocol.New(protocol.TypeModelsList, &protocol.ModelsList{})
	if e := caps.Check(list, id); e == nil || e.Code != protocol.CodeUnsupported {
		t.Fatalf("a model list from an adapter without models: got %v", e)
	}
	set := protocol.New(protocol.TypeSessionSettings, &protocol.SessionSettings{Model: "m1"})
	if e := caps.Check(set, id); e == nil || e.Field != "payload.model" {
		t.Fatalf("a model for an adapter without models: got %v", e)
	}
	caps.Adapters[0].DenyNote, caps.Adapters[0].Models = true, true
	for _, m := range []*protocol.Message{note, list, set} {
		if e := caps.Check(m, id); e != nil {
			t.Fatalf("%s to an adapter that declares it: %v", m.Type, e)
		}
	}
}

func TestCleanCommands(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	in := []protocol.AgentCommand{
		{Name: "review", Description: long}, {Name: "review"}, {Name: "/bad"}, {Name: ""}, {Name: "plugin:cmd", Hint: "x"},
	}
	out := protocol.CleanCommands(in)
	if len(out) != 2 || out[0].Name != "review" || out[1].Name != "plugin:cmd" {
		t.Fatalf("clean %+v", out)
	}
	if len(out[0].Description) > 1024 || !utf8.ValidString(out[0].Description) {
		t.Fatalf("description cut to %d bytes, valid %v", len(out[0].Description), utf8.ValidString(out[0].Description))
	}
	m := protocol.New(protocol.TypeCommands, &protocol.AgentCommands{Commands: out})
	m.SessionID = "s1"
	if _, err := protocol.Encode(m); err != nil {
		t.Fatalf("a cleaned list does not encode: %v", err)
	}
}
