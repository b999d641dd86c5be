// An ordered JSON object, so NotebookEdit can change a notebook's cells and
// write every other member back as it was, in its order.

package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// jsonMember is one member of a JSON object; Val is its raw JSON.
type jsonMember struct {
	Key string
	Val json.RawMessage
}

// jsonObject is a JSON object whose members keep their order and raw
// values; decoding and encoding it changes nothing but whitespace. A key
// twice is refused: readers disagree on which one counts (encoding/json,
// and so Read, takes the last), so an edit could change what was not shown.
type jsonObject []jsonMember

// UnmarshalJSON implements json.Unmarshaler.
func (o *jsonObject) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return errors.New("not a JSON object")
	}
	var out jsonObject
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string) // object keys are always strings
		if seen[key] {
			return fmt.Errorf("the key %q appears twice in one object", key)
		}
		seen[key] = true
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return err
		}
		out = append(out, jsonMember{key, v})
	}
	if _, err := dec.Token(); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("data after the JSON object")
	}
	*o = out
	return nil
}

// MarshalJSON implements json.Marshaler.
func (o jsonObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, m := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := marshalNoEscape(m.Key)
		if err != nil {
			return nil, err
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(m.Val)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// get returns the raw value of key.
func (o jsonObject) get(key string) (json.RawMessage, bool) {
	for _, m := range o {
		if m.Key == key {
			return m.Val, true
		}
	}
	return nil, false
}

// set replaces key's value, or adds the member before the first key that
// sorts after it: nbformat writes keys sorted, and a sorted object stays
// sorted.
func (o jsonObject) set(key string, v any) (jsonObject, error) {
	raw, ok := v.(json.RawMessage)
	if !ok {
		var err error
		if raw, err = marshalNoEscape(v); err != nil {
			return nil, fmt.Errorf("encode %s: %w", key, err)
		}
	}
	for i, m := range o {
		if m.Key == key {
			o[i].Val = raw
			return o, nil
		}
	}
	at := len(o)
	for i, m := range o {
		if m.Key > key {
			at = i
			break
		}
	}
	o = append(o, jsonMember{})
	copy(o[at+1:], o[at:])
	o[at] = jsonMember{key, raw}
	return o, nil
}

// del removes key.
func (o jsonObject) del(key string) jsonObject {
	out := o[:0]
	for _, m := range o {
		if m.Key != key {
			out = append(out, m)
		}
	}
	return out
}

// marshalNoEscape encodes v as Jupyter does: <, > and & as themselves.
func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
