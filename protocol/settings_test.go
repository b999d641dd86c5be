package protocol_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

func TestTimeoutAnswer(t *testing.T) {
	perm := []protocol.Option{{Value: protocol.AllowOnce, Label: "Allow"}, {Value: protocol.Deny, Label: "Deny"}}
	abc := []protocol.Option{{Value: "a", Label: "A"}, {Value: "b", Label: "B"}, {Value: "c", Label: "C"}}
	for _, tc := range []struct {
		name string
		req  protocol.InteractionRequest
		want *protocol.InteractionResponse
	}{
		{"permission default allow is denied", protocol.InteractionRequest{Kind: protocol.InteractionPermission, Options: perm, DefaultValue: protocol.AllowOnce},
			&protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}},
		{"permission without default is denied", protocol.InteractionRequest{Kind: protocol.InteractionPermission, Options: perm},
			&protocol.InteractionResponse{SelectedValue: protocol.Single(protocol.Deny)}},
		{"permission without a deny option gets no answer", protocol.InteractionRequest{Kind: protocol.InteractionPermission,
			Options: []protocol.Option{{Value: "option_1", Label: "Yes"}}, DefaultValue: "option_1"}, nil},
		{"single select takes its default", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc, DefaultValue: "b"},
			&protocol.InteractionResponse{SelectedValue: protocol.Single("b")}},
		{"single select without default", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc}, nil},
		{"single select with a default that is no option", protocol.InteractionRequest{Kind: protocol.InteractionSingleSelect, Options: abc, DefaultValue: "z"}, nil},
		{"multi select takes its list", protocol.InteractionRequest{Kind: protocol.InteractionMultiSelect, Options: abc, DefaultValue: "a, c"},
			&protocol.InteractionResponse{SelectedValue: protocol.Multiple("a", "c")}},
		{"multi select with a bad value", protocol.InteractionRequest{Kind: protocol.InteractionMultiSelect, Options: abc, DefaultValue: "a,z"}, nil},
		{"text input takes its text", protocol.InteractionRequest{Kind: protocol.InteractionTextInput, DefaultValue: "main"},
			&protocol.InteractionResponse{SelectedValue: protocol.Multiple(), TextInput: "main"}},
		{"text input without default", protocol.InteractionRequest{Kind: protocol.InteractionTextInput}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.req.InteractionID = "i1"
			if tc.want != nil {
				tc.want.InteractionID = "i1"
			}
			if got := tc.req.TimeoutAnswer(); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("TimeoutAnswer = %+v, want %+v", got, tc.want)
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
