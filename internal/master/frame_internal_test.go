package master

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// TestFrameBuilderSplitsAndRoundTrips: a batch's events come back from
// the session topic messages in order, each with its seq and its wire
// form (seq and epoch spliced in), and a batch bigger than maxFrameBytes
// is split between whole events.
func TestFrameBuilderSplitsAndRoundTrips(t *testing.T) {
	epoch := epochField("e1")
	pad := strings.Repeat("x", 100<<10)
	b := frameBuilder{epochFld: epoch}
	var wires [][]byte
	const n = 7
	for i := range n {
		data := fmt.Appendf(nil, `{"type":"agent.text.delta","payload":{"delta":"%d%s"}}`, i, pad)
		wires = append(wires, bytes.Clone(b.add(data, uint64(10+i))))
	}
	msgs := b.done()
	if len(msgs) < 3 {
		t.Fatalf("%d events of 100 KiB went in %d messages, want them split at %d bytes", n, len(msgs), maxFrameBytes)
	}
	var got []uint64
	for _, m := range msgs {
		if len(m) > maxFrameBytes {
			t.Fatalf("a message of %d bytes, over %d with several events", len(m), maxFrameBytes)
		}
		eachEvent(m, func(seq uint64, wire []byte) bool {
			i := len(got)
			want := fmt.Sprintf(`{"seq":%d,"epoch":"e1","type":"agent.text.delta","payload":{"delta":"%d`, 10+i, i)
			if !bytes.HasPrefix(wire, []byte(want)) || !bytes.Equal(wire, wires[i]) {
				t.Fatalf("event %d: %.80s, want %.80s", i, wire, want)
			}
			got = append(got, seq)
			return true
		})
	}
	if len(got) != n || got[0] != 10 || got[n-1] != 10+n-1 {
		t.Fatalf("seqs %v, want 10..%d", got, 10+n-1)
	}
}

// TestEachEventStopsOnMalformed: a truncated message yields its whole
// events and nothing made up.
func TestEachEventStopsOnMalformed(t *testing.T) {
	b := frameBuilder{epochFld: epochField("e")}
	b.add([]byte(`{"type":"a"}`), 1)
	b.add([]byte(`{"type":"b"}`), 2)
	m := b.done()[0]
	for cut := range m {
		n := 0
		eachEvent(m[:cut], func(seq uint64, _ []byte) bool {
			n++
			if seq != uint64(n) {
				t.Fatalf("cut at %d: seq %d as event %d", cut, seq, n)
			}
			return true
		})
		if n > 1 {
			t.Fatalf("cut at %d of %d: %d events", cut, len(m), n)
		}
	}
	if frameEvents(m) != 2 {
		t.Fatalf("frameEvents = %d, want 2", frameEvents(m))
	}
}

// TestFrameBuilderReserve: a batch whose sizes were reserved goes in one
// buffer of about its size, every event's wire form inside it, rather
// than in a fixed 16 KB buffer that a small batch mostly wastes.
func TestFrameBuilderReserve(t *testing.T) {
	b := frameBuilder{epochFld: epochField("e1")}
	var data [][]byte
	for i := range 3 {
		d := fmt.Appendf(nil, `{"type":"agent.text.delta","payload":{"delta":"%d%s"}}`, i, strings.Repeat("x", 1000))
		data = append(data, d)
		b.reserve(len(d))
	}
	var wires [][]byte
	for i, d := range data {
		wires = append(wires, b.add(d, uint64(1000000+i)))
	}
	msgs := b.done()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if used, room := len(m), cap(m); room > used+3*64 {
		t.Fatalf("a buffer of %d bytes for %d", room, used)
	}
	for i, w := range wires {
		if &w[0] != &m[frameHeader*(i+1)+sum(wires[:i])] {
			t.Fatalf("event %d's wire form is not inside the message", i)
		}
	}
}

func sum(ws [][]byte) int {
	n := 0
	for _, w := range ws {
		n += len(w)
	}
	return n
}
