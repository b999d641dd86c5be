package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
)

// SelectedValue is the "String | [String]" of control.interaction.response:
// one value for permission and single-select questions, a list for
// multi-select. It remembers which form it came in, so encoding is stable.
type SelectedValue struct {
	Values []string
	// Multi is true when the value is (or was received as) a JSON array.
	Multi bool
}

// Single returns a one-value SelectedValue.
func Single(v string) SelectedValue { return SelectedValue{Values: []string{v}} }

// Multiple returns a list SelectedValue.
func Multiple(v ...string) SelectedValue { return SelectedValue{Values: v, Multi: true} }

// MarshalJSON writes a string, or an array when Multi is set.
func (s SelectedValue) MarshalJSON() ([]byte, error) {
	if s.Multi {
		if s.Values == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(s.Values)
	}
	if len(s.Values) != 1 {
		return nil, errors.New("single selected_value needs exactly one value")
	}
	return json.Marshal(s.Values[0])
}

// UnmarshalJSON accepts a string or an array of strings, nothing else.
func (s *SelectedValue) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var vs []string
		if err := json.Unmarshal(b, &vs); err != nil {
			return errors.New("want a string or an array of strings")
		}
		*s = SelectedValue{Values: vs, Multi: true}
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return errors.New("want a string or an array of strings")
	}
	*s = SelectedValue{Values: []string{v}}
	return nil
}
