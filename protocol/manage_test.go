package protocol_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func manageMsg(typ, payload string) []byte {
	return []byte(fmt.Sprintf(`{"type":%q,"message_id":"5a0c3c1e-2f2b-4d0e-9a53-6c4b8f0e7a11","session_id":"s1","payload":%s}`, typ, payload))
}

// TestSessionManageValidation: what a UI may send to manage sessions is
// checked at decoding, with a code and the field at fault.
func TestSessionManageValidation(t *testing.T) {
	ok := []struct{ typ, payload string }{
		{protocol.TypeSessionRename, `{"title":"Fix the Über login"}`},
		{protocol.TypeSessionRename, `{"title":""}`},
		{protocol.TypeSessionRename, `{"title":"  spaced  "}`},
		{protocol.TypeSessionRename, fmt.Sprintf(`{"title":%q}`, strings.Repeat("é", protocol.MaxTitleRunes))},
		{protocol.TypeSessionArchive, `{"archived":true}`},
		{protocol.TypeSessionArchive, `{"archived":false}`},
		{protocol.TypeSessionDelete, `{}`},
		{protocol.TypeSessionsList, `{"query":"100% _done","archived":true}`},
	}
	for _, c := range ok {
		if _, err := protocol.DecodeFrom(protocol.RoleUI, manageMsg(c.typ, c.payload)); err != nil {
			t.Errorf("%s %s: %v", c.typ, c.payload, err)
		}
	}
	bad := []struct {
		typ, payload string
		code, field  string
	}{
		{protocol.TypeSessionRename, `{}`, protocol.CodeMissingField, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"a\u0007b"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"line\nbreak"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"evil\u202egnp.exe"}`, protocol.CodeInvalidValue, "payload.title"},
		// Invisible characters a title could hide or reorder text with
		// (the second review's attack).
		{protocol.TypeSessionRename, `{"title":"a\u200fb"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"a\u061cb"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"a\u200bb"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"\ufeffab"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":"a\u3164b"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionStart, `{"machine_id":"m","workspace_id":"w","adapter":"echo","title":"a\u200bb"}`, protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, fmt.Sprintf(`{"title":%q}`, strings.Repeat("é", protocol.MaxTitleRunes+1)), protocol.CodeInvalidValue, "payload.title"},
		{protocol.TypeSessionRename, `{"title":7}`, protocol.CodeWrongType, "payload.title"},
		{protocol.TypeSessionArchive, `{}`, protocol.CodeMissingField, "payload.archived"},
		{protocol.TypeSessionArchive, `{"archived":"yes"}`, protocol.CodeWrongType, "payload.archived"},
		{protocol.TypeSessionsList, fmt.Sprintf(`{"query":%q}`, strings.Repeat("x", protocol.MaxSessionQuery+1)), protocol.CodeInvalidValue, "payload.query"},
	}
	for _, c := range bad {
		_, err := protocol.DecodeFrom(protocol.RoleUI, manageMsg(c.typ, c.payload))
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Code != c.code || pe.Field != c.field {
			t.Errorf("%s %s: got %v, want %s on %s", c.typ, c.payload, err, c.code, c.field)
		}
	}
	// A session is required, and only the master tells of changes.
	noSession := []byte(`{"type":"ui.session.delete","message_id":"5a0c3c1e-2f2b-4d0e-9a53-6c4b8f0e7a11","payload":{}}`)
	if _, err := protocol.DecodeFrom(protocol.RoleUI, noSession); !errors.Is(err, protocol.ErrMissingField) {
		t.Errorf("ui.session.delete without session_id: %v, want missing_field", err)
	}
	changed := manageMsg(protocol.TypeSessionChanged, `{"change":"deleted","session":{"id":"s1","machine_id":"m","workspace_id":"w","adapter":"a","mode":"default","state":"idle","created_at":"2026-11-30T09:00:00Z","updated_at":"2026-11-30T09:00:00Z","epoch":"e","last_seq":0}}`)
	if _, err := protocol.DecodeFrom(protocol.RoleUI, changed); !errors.Is(err, protocol.ErrWrongDirection) {
		t.Errorf("master.session.changed from a UI: %v, want wrong_direction", err)
	}
	if _, err := protocol.Decode(changed); err != nil {
		t.Errorf("master.session.changed: %v", err)
	}
	// A status hint is the same message with change status.
	status := strings.Replace(string(changed), `"deleted"`, `"status"`, 1)
	if _, err := protocol.Decode([]byte(status)); err != nil {
		t.Errorf("master.session.changed with change status: %v", err)
	}
	wrongChange := strings.Replace(string(changed), `"deleted"`, `"burned"`, 1)
	if _, err := protocol.Decode([]byte(wrongChange)); !errors.Is(err, protocol.ErrInvalidValue) {
		t.Errorf("master.session.changed with change burned: %v, want invalid_value", err)
	}
}

func TestCleanTitle(t *testing.T) {
	for in, want := range map[string]string{"  Fix it \t": "Fix it", "": "", "   ": "", "a b": "a b"} {
		got, e := protocol.CleanTitle(in)
		if e != nil || got != want {
			t.Errorf("CleanTitle(%q) = %q, %v; want %q", in, got, e, want)
		}
	}
}
