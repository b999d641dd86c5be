package protocol

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// Version is the protocol version this package speaks (see the version
// history in the package doc).
const Version = 1

// MaxMessageBytes is the largest encoded message a peer accepts. It leaves room
// for a prompt of a few megabytes with its file references.
const MaxMessageBytes = 4 << 20

// Envelope is the wire form of every message. Payload stays raw until the
// message's type is known.
type Envelope struct {
	Type      string          `json:"type" jsonschema:"minLength=1"`
	MessageID string          `json:"message_id" jsonschema:"minLength=1,format=uuid"`
	ParentID  string          `json:"parent_id,omitempty" jsonschema:"format=uuid"`
	SessionID string          `json:"session_id,omitempty" jsonschema:"minLength=1,maxLength=128"`
	Seq       uint64          `json:"seq,omitempty" jsonschema:"minimum=1"`
	Epoch     string          `json:"epoch,omitempty" jsonschema:"maxLength=64"`
	Payload   json.RawMessage `json:"payload" jsonschema:"type=object"`
}

// Message is a decoded message: the envelope fields and the typed payload, a
// pointer to the payload struct registered for Type (for example
// *PromptRequest for "control.prompt.request").
type Message struct {
	Type      string
	MessageID string
	ParentID  string
	SessionID string
	// Seq and Epoch are set by the master on what it persists and relays.
	Seq     uint64
	Epoch   string
	Payload any
}

// New builds a message of the given type with a fresh message_id. The payload
// must be the pointer type registered for msgType; New panics otherwise,
// because that is a programming error, not bad input.
func New(msgType string, payload any) *Message {
	spec, ok := registry[msgType]
	if !ok {
		panic(fmt.Sprintf("protocol.New: unknown message type %q", msgType))
	}
	if got := fmt.Sprintf("%T", payload); got != "*"+spec.payload.String() {
		panic(fmt.Sprintf("protocol.New: %s wants *%s, got %s", msgType, spec.payload, got))
	}
	return &Message{Type: msgType, MessageID: NewID(), Payload: payload}
}

// Reply builds a message answering m: same session, parent_id = m's id.
func (m *Message) Reply(msgType string, payload any) *Message {
	r := New(msgType, payload)
	r.ParentID = m.MessageID
	r.SessionID = m.SessionID
	return r
}

// MarshalJSON encodes the message as its envelope.
//
// The envelope is written by hand around json.Marshal's payload: the
// bytes are those json.Marshal(Envelope{...}) gives (a test compares
// them), without its second pass over the payload, which checked and
// copied every byte of it once more (a relay encodes every event).
func (m *Message) MarshalJSON() ([]byte, error) {
	payload, err := json.Marshal(m.Payload)
	if err != nil {
		return nil, fmt.Errorf("encode %s payload: %w", m.Type, err)
	}
	b := make([]byte, 0, len(payload)+len(m.Type)+len(m.SessionID)+len(m.Epoch)+160)
	b = append(b, `{"type":`...)
	b = appendJSONString(b, m.Type)
	b = append(b, `,"message_id":`...)
	b = appendJSONString(b, m.MessageID)
	if m.ParentID != "" {
		b = append(b, `,"parent_id":`...)
		b = appendJSONString(b, m.ParentID)
	}
	if m.SessionID != "" {
		b = append(b, `,"session_id":`...)
		b = appendJSONString(b, m.SessionID)
	}
	if m.Seq != 0 {
		b = append(b, `,"seq":`...)
		b = strconv.AppendUint(b, m.Seq, 10)
	}
	if m.Epoch != "" {
		b = append(b, `,"epoch":`...)
		b = appendJSONString(b, m.Epoch)
	}
	b = append(b, `,"payload":`...)
	b = append(b, payload...)
	return append(b, '}'), nil
}

// appendJSONString appends s as json.Marshal writes a string. Envelope
// strings are ids and type names, plain ASCII: those are copied as they
// are; anything else goes through json.Marshal, so that escaping (HTML
// characters, U+2028, invalid UTF-8) stays exactly encoding/json's.
func appendJSONString(b []byte, s string) []byte {
	for i := range len(s) {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always encodes
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// Encode returns the wire bytes of m, refusing a message over MaxMessageBytes
// so that a peer never receives what it must reject.
func Encode(m *Message) ([]byte, error) {
	if m == nil {
		return nil, errors.New("protocol: encode a nil message")
	}
	// MarshalJSON's output is json.Marshal's own (compact, valid, HTML
	// characters escaped, the payload's too), so json.Marshal(m) would only
	// copy it once more, checking every byte: on a relay's hot path that
	// was a third of the encoding.
	b, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMessageBytes {
		return nil, &Error{Code: CodeMessageTooLarge, Message: fmt.Sprintf("message is %d bytes, over the %d-byte limit", len(b), MaxMessageBytes)}
	}
	return b, nil
}

// NewID returns a random UUID v4 in its canonical text form.
func NewID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	const hex = "0123456789abcdef"
	out := make([]byte, 36)
	j := 0
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			out[j] = '-'
			j++
		}
		out[j], out[j+1] = hex[c>>4], hex[c&0x0f]
		j += 2
	}
	return string(out)
}

// IsUUID reports whether s is a UUID in canonical 8-4-4-4-12 hex form, as
// message, session and machine ids are.
func IsUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := range 36 {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}
