package protocol

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The hand-written envelope must be byte for byte what json.Marshal of
// the Envelope gives: peers and stored events see no difference.
func TestMarshalJSONIsEncodingJSONs(t *testing.T) {
	strs := []string{"", "s1", NewID(), "a\"b", `back\slash`, "<script>&", "tab\there", "\x00\x1f",
		"über", "日本", "\u2028\u2029", "\xff\xfe bad utf-8", "emoji 🙂", "<", "&amp;", "\x7f"}
	payload := &TextDelta{TurnID: "t1", Delta: "x<y & \u2028 \xff"}
	n := 0
	for _, a := range strs {
		for _, b := range strs {
			for _, seq := range []uint64{0, 1, 1 << 63} {
				m := &Message{Type: TypeTextDelta, MessageID: a, ParentID: b, SessionID: b + a, Seq: seq, Epoch: a, Payload: payload}
				got, err := m.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				p, err := json.Marshal(payload)
				if err != nil {
					t.Fatal(err)
				}
				want, err := json.Marshal(Envelope{Type: m.Type, MessageID: m.MessageID, ParentID: m.ParentID,
					SessionID: m.SessionID, Seq: m.Seq, Epoch: m.Epoch, Payload: p})
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, want) {
					t.Fatalf("message %+v:\n got %s\nwant %s", m, got, want)
				}
				n++
			}
		}
	}
	t.Logf("%d envelopes compared", n)
}

func BenchmarkEncodeTextDelta(b *testing.B) {
	m := New(TypeTextDelta, &TextDelta{TurnID: NewID(), Delta: string(bytes.Repeat([]byte("x"), 1024))})
	m.SessionID, m.Seq, m.Epoch = "s1", 42, "e1"
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(m); err != nil {
			b.Fatal(err)
		}
	}
}
