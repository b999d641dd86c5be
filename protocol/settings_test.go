package protocol_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// TestTimeoutAppliesTheAdvertisedDefault: default_value is exactly what a
// timeout answers. A request whose default a timeout would not apply (a
// permission defaulting to a grant, a default that is not an option) is
// refused at decoding with invalid_value on payload.default_value; for
// every request accepted, TimeoutAnswer is its default_value (none: no
// answer, which every adapter takes as a denial).
func TestTimeoutAppliesTheAdvertisedDefault(t *testing.T) {
	perm := []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow"}, {Value: protocol.AllowAlways, Label: "Always"}, {Value: protocol.Deny, Label: "Deny"}}
	abc := []protocol.Option{{Value: "a", Label: "A"}, {Value: "b", Label: "B"}, {Value: "c", Label: "C"}}
	for _, tc := range []struct {
		name    string
		req     protocol.InteractionRequest
		refused bool
		want    *protocol.InteractionResponse
	}{
		{"permission advertising allow_once", protocol.InteractionRequest{Kind: protocol.InteractionPermission, Options: perm, DefaultValue: protocol.AllowOnce}, true, nil},
		{"permission advertising allow_always", protocol.InteractionRequest{Kind: protocol.InteractionPermission, Options: perm, DefaultValue: protocol.AllowAlways}, true, nil},
		{"permission advertising deny", protocol.InteractionRequest{Kind: protocol.InteractionPermission, Options: perm, DefaultValue: protocol.Deny}, false,
			&protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}},
		{"permission advertising deny it does not offer", protocol.InteractionRequest{Kind: protocol.InteractionPermission,
			Options: []protocol.Option{{Value: protocol.AllowOnce, Label: "Yes"}}, DefaultValue: protocol.Deny}, true, nil},
		{"permission advertising another option", protocol.InteractionRequest{Kind: protocol.InteractionPermission,
			Options: []protocol.Option{{Value: "option_1", Label: "Yes"}, {Value: protocol.Deny, Label: "No"}}, DefaultValue: "option_1"}, true, nil},
		{"permission without a default", protocol.InteractionRequest{Kind: protocol.InteractionPermission, Options: perm}, false, nil},
		{"single select advertising b", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc, DefaultValue: "b"}, false,
			&protocol.InteractionResponse{SelectedValue: protocol.Single("b")}},
		{"single select without a default", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc}, false, nil},
		{"single select advertising no option", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc, DefaultValue: "z"}, true, nil},
		{"single select advertising two", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc, DefaultValue: "a,b"}, true, nil},
		{"multi select advertising a list", protocol.InteractionRequest{Kind: protocol.InteractionMultiSelect, Options: abc, DefaultValue: "a, c"}, false,
			&protocol.InteractionResponse{SelectedValue: protocol.Multiple("a", "c")}},
		{"multi select advertising no option", protocol.InteractionRequest{Kind: protocol.InteractionMultiSelect, Options: abc, DefaultValue: "a,z"}, true, nil},
		{"multi select advertising nothing but commas", protocol.InteractionRequest{Kind: protocol.InteractionMultiSelect, Options: abc, DefaultValue: " , "}, true, nil},
		{"text input advertising its text", protocol.InteractionRequest{Kind: protocol.InteractionTextInput, DefaultValue: "main"}, false,
			&protocol.InteractionResponse{SelectedValue: protocol.Multiple(), TextInput: "main"}},
		{"text input without a default", protocol.InteractionRequest{Kind: protocol.InteractionTextInput}, false, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.InteractionID, tc.req.TurnID, tc.req.Title = "i1", "t1", "Which?"
			m := protocol.New(protocol.TypeInteractionRequest, &tc.req)
			m.SessionID = "s1"
			data, err := protocol.Encode(m)
			if err == nil {
				_, err = protocol.Decode(data)
			}
			var pe *protocol.Error
			switch {
			case tc.refused && (!errors.As(err, &pe) || pe.Code != protocol.CodeInvalidValue || pe.Field != "payload.default_value"):
				t.Fatalf("decoded: %v, want invalid_value on payload.default_value", err)
			case tc.refused:
				return
			case err != nil:
				t.Fatalf("refused: %v", err)
			}
			if tc.want != nil {
				tc.want.InteractionID = "i1"
			}
			if got := tc.req.TimeoutAnswer(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("TimeoutAnswer = %+v, want %+v (what default_value %q advertises)", got, tc.want, tc.req.DefaultValue)
			}
		})
	}
}

// TestSessionSettingsBounds: a permission timeout out of range is refused
// with a coded error naming the field.
func TestSessionSettingsBounds(t *testing.T) {
	for _, v := range []any{-1, protocol.MaxPermissionTimeoutMS + 1, "10m", 1.5} {
		raw := mutate(t, protocol.TypeSessionSettings, func(_, p map[string]any) { p["permission_timeout_ms"] = v })
		_, err := protocol.Decode(raw)
		var pe *protocol.Error
		if !errors.As(err, &pe) || pe.Field != "payload.permission_timeout_ms" {
			t.Errorf("permission_timeout_ms %v: %v, want an error naming payload.permission_timeout_ms", v, err)
		}
	}
	raw := mutate(t, protocol.TypeSessionSettings, func(_, p map[string]any) { delete(p, "permission_timeout_ms") })
	m, err := protocol.Decode(raw)
	if err != nil || m.Payload.(*protocol.SessionSettings).PermissionTimeoutMS != nil {
		t.Fatalf("no value (back to the default): %v %+v", err, m)
	}
}
