package protocol

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"sync"
	"unicode/utf8"
)

// validator is implemented by payloads with rules across fields.
type validator interface{ validate() *Error }

var envelopeRules = fieldsOf(reflect.TypeFor[Envelope]())

// Decode parses and validates one message. On failure it returns an *Error
// (never another error type) whose Code and Field say what is wrong; the
// caller answers with an error message and keeps the connection.
func Decode(data []byte) (*Message, error) { return decode(data, true) }

// decode is Decode, filling the payload from the generic value where it
// can when fast is set (fill.go), always decoding the bytes otherwise.
func decode(data []byte, fast bool) (*Message, error) {
	if len(data) > MaxMessageBytes {
		return nil, errorf(CodeMessageTooLarge, "", "message is %d bytes, over the %d-byte limit", len(data), MaxMessageBytes)
	}
	// encoding/json would silently turn bad bytes into U+FFFD; a path or a
	// prompt must arrive exactly as sent or not at all.
	if !utf8.Valid(data) {
		return nil, errorf(CodeMalformedJSON, "", "the message is not valid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, errorf(CodeMalformedJSON, "", "not valid JSON: %s", jsonErrorText(err))
	}
	// Not dec.More(), which says false before a stray '}' or ']'.
	if len(bytes.TrimLeft(data[dec.InputOffset():], " \t\r\n")) > 0 {
		return nil, errorf(CodeMalformedJSON, "", "more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, errorf(CodeMalformedJSON, "", "a message is a JSON object, got %s", jsonKind(v))
	}
	// The type decides everything else, so it is checked first.
	typ, ok := obj["type"].(string)
	if !ok {
		if obj["type"] == nil {
			return nil, errorf(CodeMissingField, "type", "is required")
		}
		return nil, wrongType("type", "string", obj["type"])
	}
	s, known := registry[typ]
	if !known {
		return nil, errorf(CodeUnknownType, "type", "%q is not a message type of protocol version %d", truncate(typ), Version)
	}
	if err := refuseCaseVariants("", obj, envelopeNames); err != nil {
		return nil, err
	}
	for i := range envelopeRules {
		r := &envelopeRules[i]
		x, present := obj[r.name]
		// An empty parent or session id is no id: it would vanish on
		// re-encoding (omitempty), so it cannot satisfy a requirement.
		if x == "" && (r.name == "session_id" || r.name == "parent_id") {
			present = false
		}
		if !present {
			if r.required || r.name == "session_id" && s.session || r.name == "parent_id" && s.parent {
				return nil, errorf(CodeMissingField, r.name, "is required for %s", typ)
			}
			continue
		}
		if err := check(r.name, x, reflect.TypeFor[Envelope]().Field(r.index).Type, r); err != nil {
			return nil, err
		}
	}
	if err := check("payload", obj["payload"], s.payload, &rules{required: true, maxLength: -1, maxItems: -1}); err != nil {
		return nil, err
	}
	if fast && fills()[s.payload] {
		if m, ok := decodeFilled(obj, s.payload); ok {
			return finish(m)
		}
	}
	var env Envelope
	if err := json.Unmarshal(data, &env); err != nil {
		// The generic walk accepted it, so this is a gap in check, not bad input
		// we can name precisely.
		return nil, errorf(CodeWrongType, "payload", "%s", jsonErrorText(err))
	}
	// Compacting first keeps raw sub-objects (json_schema, tool input)
	// canonical, so a relayed message is byte-stable. A payload that holds
	// none decodes the same either way, and most events (a text delta) are
	// such: they skip that pass.
	raw := []byte(env.Payload)
	if holdsRaw()[s.payload] {
		var compact bytes.Buffer
		if err := json.Compact(&compact, env.Payload); err != nil {
			return nil, errorf(CodeMalformedJSON, "payload", "%s", jsonErrorText(err))
		}
		raw = compact.Bytes()
	}
	payload := reflect.New(s.payload).Interface()
	if err := json.Unmarshal(raw, payload); err != nil {
		return nil, errorf(CodeWrongType, "payload", "%s", jsonErrorText(err))
	}
	return finish(&Message{
		Type: env.Type, MessageID: env.MessageID, ParentID: env.ParentID,
		SessionID: env.SessionID, Seq: env.Seq, Epoch: env.Epoch, Payload: payload,
	})
}

// decodeFilled builds the message from its generic value obj (see fill.go);
// false when the bytes must be decoded instead.
func decodeFilled(obj map[string]any, payloadType reflect.Type) (*Message, bool) {
	var env Envelope
	ev := reflect.ValueOf(&env).Elem()
	for i := range envelopeRules {
		r := &envelopeRules[i]
		if r.name == "payload" {
			continue
		}
		if x, ok := obj[r.name]; ok && !fill(ev.Field(r.index), x) {
			return nil, false
		}
	}
	payload := reflect.New(payloadType)
	if !fill(payload.Elem(), obj["payload"]) {
		return nil, false
	}
	return &Message{
		Type: env.Type, MessageID: env.MessageID, ParentID: env.ParentID,
		SessionID: env.SessionID, Seq: env.Seq, Epoch: env.Epoch, Payload: payload.Interface(),
	}, true
}

// finish runs the payload's rules across fields, then applies its
// defaults.
func finish(m *Message) (*Message, error) {
	if val, ok := m.Payload.(validator); ok {
		if err := val.validate(); err != nil {
			return nil, err
		}
	}
	applyDefaults(m.Payload)
	return m, nil
}

// DecodeFrom is Decode plus the direction rule: role must be allowed to send
// the message's type.
func DecodeFrom(role Role, data []byte) (*Message, error) {
	m, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if !SentBy(m.Type, role) {
		return nil, errorf(CodeWrongDirection, "type", "a %s may not send %s", role, m.Type)
	}
	return m, nil
}

// envelopeNames yields the envelope's JSON field names.
func envelopeNames(yield func(string) bool) {
	for _, n := range []string{"type", "message_id", "parent_id", "session_id", "seq", "epoch", "payload"} {
		if !yield(n) {
			return
		}
	}
}

// DecodeRelayed decodes what a master sends a UI: the master's own messages
// and the clients' events it relays (agent.*, session.*). Anything else is
// refused with wrong_direction.
func DecodeRelayed(data []byte) (*Message, error) {
	m, err := Decode(data)
	if err != nil {
		return nil, err
	}
	if !SentBy(m.Type, RoleMaster) && !SentBy(m.Type, RoleClient) {
		return nil, errorf(CodeWrongDirection, "type", "a master may neither send nor relay %s", m.Type)
	}
	return m, nil
}

// ErrorMessage builds the error message answering the message with id
// parentID (empty when the message was too broken to have one).
func ErrorMessage(parentID, sessionID string, e *Error) *Message {
	m := New(TypeError, e)
	m.ParentID = parentID
	m.SessionID = sessionID
	return m
}

// ParentOf digs the message_id out of bytes that failed to decode, so the
// error can point at them; "" when there is none worth trusting.
func ParentOf(data []byte) (messageID, sessionID string) {
	if len(data) > MaxMessageBytes {
		return "", ""
	}
	var env struct {
		MessageID any `json:"message_id"`
		SessionID any `json:"session_id"`
	}
	if json.Unmarshal(data, &env) != nil {
		return "", ""
	}
	if id, ok := env.MessageID.(string); ok && IsUUID(id) {
		messageID = id
	}
	if sid, ok := env.SessionID.(string); ok && len(sid) <= 128 {
		sessionID = sid
	}
	return messageID, sessionID
}

// jsonErrorText keeps encoding/json's position information but none of its
// Go type names.
func jsonErrorText(err error) string {
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return se.Error()
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return "unexpected end of input"
	}
	return "bad JSON"
}

// holdsRaw tells, for each registered payload type, whether a decoded
// payload can keep JSON text as it came (a json.RawMessage, or a type that
// decodes itself), which Decode then compacts first. It is built at the
// first Decode, after every init has registered its types, and not at
// start-up, which every ferry command pays (issue 37).
var holdsRaw = sync.OnceValue(func() map[reflect.Type]bool {
	m := make(map[reflect.Type]bool, len(registry))
	for _, s := range registry {
		m[s.payload] = keepsRawJSON(s.payload, map[reflect.Type]bool{})
	}
	return m
})

func keepsRawJSON(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	if t == reflect.TypeFor[json.RawMessage]() || t.Implements(reflect.TypeFor[json.Unmarshaler]()) ||
		reflect.PointerTo(t).Implements(reflect.TypeFor[json.Unmarshaler]()) {
		return true
	}
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return keepsRawJSON(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if keepsRawJSON(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
