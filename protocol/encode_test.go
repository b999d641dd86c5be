package protocol_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/ferry-dev/ferry/protocol"
)

// TestEncodeIsJSONMarshal: Encode skips json.Marshal's pass over
// MarshalJSON's output, which must not change a byte, HTML characters,
// U+2028 and raw sub-objects included.
func TestEncodeIsJSONMarshal(t *testing.T) {
	for _, m := range []*protocol.Message{
		protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "t1", Delta: "<b>&amp;</b> \u2028\u2029 é \x01 \"q\""}),
		protocol.New(protocol.TypeSessionSubscribe, &protocol.SessionSubscribe{AfterSeq: 3, Epoch: "e<1>"}),
		protocol.New(protocol.TypeToolStarted, &protocol.ToolStarted{TurnID: "t", ToolUseID: "u", ToolName: "<x>", Input: json.RawMessage(`{ "a" : [1, 2, "<&>"] }`)}),
	} {
		m.SessionID = "s&1"
		want, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := protocol.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("Encode:\n%s\njson.Marshal:\n%s", got, want)
		}
	}
	if _, err := protocol.Encode(nil); err == nil {
		t.Fatal("Encode(nil) succeeded")
	}
}

// TestDecodeKeepsRawPayloadsCanonical: a raw sub-object is compacted
// whatever the payload around it, and a payload without one decodes the
// same from spaced JSON.
func TestDecodeKeepsRawPayloadsCanonical(t *testing.T) {
	m, err := protocol.Decode([]byte(`{"type":"agent.tool.started","message_id":"6f1c2b1e-8a4b-4c1d-9e2f-3a4b5c6d7e8f","session_id":"s",
		"payload": { "turn_id" : "t", "tool_use_id":"u", "tool_name":"x", "input" : { "a" : [ 1 , 2 ] } } }`))
	if err != nil {
		t.Fatal(err)
	}
	if in := string(m.Payload.(*protocol.ToolStarted).Input); in != `{"a":[1,2]}` {
		t.Fatalf("raw input kept as %q, want it compacted", in)
	}
	m, err = protocol.Decode([]byte(`{"type":"agent.text.delta","message_id":"6f1c2b1e-8a4b-4c1d-9e2f-3a4b5c6d7e8f","session_id":"s",
		"payload": { "turn_id" : "t" , "delta" : " a \u003c b " } }`))
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Payload.(*protocol.TextDelta); d.TurnID != "t" || d.Delta != " a < b " {
		t.Fatalf("text delta decoded as %+v", d)
	}
}

// BenchmarkRelayedDelta is what a master does with each streamed event of
// 1 KB: decode the client's frame strictly, then encode it to store.
func BenchmarkRelayedDelta(b *testing.B) {
	m := protocol.New(protocol.TypeTextDelta, &protocol.TextDelta{TurnID: "turn-1", Delta: strings.Repeat("x", 1000)})
	m.SessionID = "s1"
	data, err := protocol.Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		msg, err := protocol.DecodeFrom(protocol.RoleClient, data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := protocol.Encode(msg); err != nil {
			b.Fatal(err)
		}
	}
}
