package protocol_test

import (
	"bytes"
	"encoding/json"
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
