package sse_test

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/ferry-dev/ferry/internal/llm/internal/sse"
)

// event is an Event with its data copied, to compare.
type event struct{ Name, Data string }

// readAll reads every event of r, and the error that ended it.
func readAll(r *sse.Reader) ([]event, error) {
	var out []event
	for {
		ev, err := r.Next()
		if err != nil {
			return out, err
		}
		out = append(out, event{ev.Name, string(ev.Data)})
	}
}

func TestEvents(t *testing.T) {
	cases := []struct {
		name, in string
		want     []event
	}{
		{"one event", "data: hello\n\n", []event{{"", "hello"}}},
		{"multi-line data joined with LF", "data: a\ndata: b\ndata:\ndata: c\n\n", []event{{"", "a\nb\n\nc"}}},
		{"named events", "event: ping\ndata: {}\n\nevent: done\ndata: x\n\n", []event{{"ping", "{}"}, {"done", "x"}}},
		{"name resets after each event", "event: a\ndata: 1\n\ndata: 2\n\n", []event{{"a", "1"}, {"", "2"}}},
		{"CRLF", "event: e\r\ndata: 1\r\ndata: 2\r\n\r\ndata: 3\r\n\r\n", []event{{"e", "1\n2"}, {"", "3"}}},
		{"CR alone", "data: 1\rdata: 2\r\rdata: 3\r\r", []event{{"", "1\n2"}, {"", "3"}}},
		{"mixed line ends", "data: 1\r\n\ndata: 2\r\r\ndata: 3\n\r", []event{{"", "1"}, {"", "2"}, {"", "3"}}},
		{"comments ignored", ": keep-alive\ndata: x\n: mid\n\n:\n\n", []event{{"", "x"}}},
		{"id, retry and unknown fields ignored", "id: 7\nretry: 100\nfoo: bar\ndata: x\n\n", []event{{"", "x"}}},
		{"only one space dropped", "data:  two\ndata:none\n\n", []event{{"", " two\nnone"}}},
		{"a field without colon", "data\n\n", []event{{"", ""}}},
		{"empty data is an event", "data:\n\n", []event{{"", ""}}},
		{"no data is no event", "event: lonely\n\n\n\ndata: x\n\n", []event{{"", "x"}}},
		{"unterminated last event", "data: a\n\ndata: b\ndata: c", []event{{"", "a"}, {"", "b\nc"}}},
		{"unterminated after its line", "event: e\ndata: b\n", []event{{"e", "b"}}},
		{"byte-order mark dropped", "\xef\xbb\xbfdata: x\n\n", []event{{"", "x"}}},
		{"BOM only at the start", "data: \xef\xbb\xbfx\n\n", []event{{"", "\xef\xbb\xbfx"}}},
		{"colon in the value kept", "data: {\"a\":\"b: c\"}\n\n", []event{{"", `{"a":"b: c"}`}}},
		{"empty stream", "", nil},
		{"only blank lines", "\n\r\n\r", nil},
	}
	for _, c := range cases {
		// Whole, and one byte at a time (a CR and its LF in different reads).
		for _, oneByte := range []bool{false, true} {
			var in io.Reader = strings.NewReader(c.in)
			if oneByte {
				in = iotest.OneByteReader(in)
			}
			got, err := readAll(sse.NewReader(in, 1024))
			if !errors.Is(err, io.EOF) {
				t.Errorf("%s (one byte %v): ended with %v, want io.EOF", c.name, oneByte, err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("%s (one byte %v): events %q, want %q", c.name, oneByte, got, c.want)
			}
		}
	}
}

func TestLineOverLimit(t *testing.T) {
	for name, in := range map[string]string{
		"one long line":             "data: " + strings.Repeat("x", 100) + "\n\n",
		"long line without end":     "data: " + strings.Repeat("x", 100),
		"long comment":              ":" + strings.Repeat("x", 100) + "\n\ndata: x\n\n",
		"long event of short lines": strings.Repeat("data: 0123456789\n", 10) + "\n",
	} {
		r := sse.NewReader(strings.NewReader("data: first\n\n"+in), 64)
		ev, err := r.Next()
		if err != nil || string(ev.Data) != "first" {
			t.Fatalf("%s: first event %q, %v", name, ev.Data, err)
		}
		_, err = r.Next()
		if !errors.Is(err, sse.ErrTooLong) {
			t.Errorf("%s: Next = %v, want ErrTooLong", name, err)
		}
		if _, again := r.Next(); !errors.Is(again, err) {
			t.Errorf("%s: error not sticky: %v then %v", name, err, again)
		}
	}
	// At the limit is fine.
	r := sse.NewReader(strings.NewReader("data:"+strings.Repeat("x", 59)+"\n\n"), 64)
	if ev, err := r.Next(); err != nil || len(ev.Data) != 59 {
		t.Errorf("line of 64 bytes: %d bytes, %v", len(ev.Data), err)
	}
}

func TestReadErrorIsReturned(t *testing.T) {
	boom := errors.New("connection reset")
	in := io.MultiReader(strings.NewReader("data: a\n\ndata: partial"), iotest.ErrReader(boom))
	r := sse.NewReader(in, 1024)
	got, err := readAll(r)
	if !errors.Is(err, boom) {
		t.Errorf("error %v, want the read error", err)
	}
	// The partial event is not dispatched: the stream broke, not ended.
	if !reflect.DeepEqual(got, []event{{"", "a"}}) {
		t.Errorf("events %q", got)
	}
}

func TestDataValidUntilNext(t *testing.T) {
	// Data is reused: a caller must copy it, and the reader must not
	// write into it before the next call.
	r := sse.NewReader(strings.NewReader("data: one\n\ndata: two\n\n"), 1024)
	a, _ := r.Next()
	if string(a.Data) != "one" {
		t.Fatalf("first = %q", a.Data)
	}
	b, _ := r.Next()
	if string(b.Data) != "two" {
		t.Fatalf("second = %q", b.Data)
	}
}

// reference is the spec's algorithm on a whole string, written for
// clarity: the fuzzer checks the streaming reader against it.
func reference(in string, limit int) ([]event, bool) {
	in = strings.TrimPrefix(in, "\ufeff")
	var lines []string
	for len(in) > 0 {
		i := strings.IndexAny(in, "\r\n")
		if i < 0 {
			lines = append(lines, in)
			break
		}
		lines = append(lines, in[:i])
		if in[i] == '\r' && i+1 < len(in) && in[i+1] == '\n' {
			i++
		}
		in = in[i+1:]
	}
	var out []event
	var name string
	var data []string
	flush := func() {
		if data != nil {
			out = append(out, event{name, strings.Join(data, "\n")})
		}
		name, data = "", nil
	}
	for _, l := range lines {
		if len(l) > limit {
			return out, false
		}
		if l == "" {
			flush()
			continue
		}
		field, value, found := strings.Cut(l, ":")
		if field == "" && found {
			continue
		}
		value = strings.TrimPrefix(value, " ")
		switch field {
		case "event":
			name = value
		case "data":
			data = append(data, value)
			if len(strings.Join(data, "\n")) > limit {
				return out, false
			}
		}
	}
	flush()
	return out, true
}

// FuzzReader checks the reader against reference on any input, read whole
// and one byte at a time. Seeds: testdata/fuzz/FuzzReader.
func FuzzReader(f *testing.F) {
	f.Add("data: a\r\ndata: b\r\n\r\nevent: x\rdata: c\r\r")
	f.Add(": c\n\ndata\n\n" + strings.Repeat("d", 40))
	f.Fuzz(func(t *testing.T, in string) {
		const limit = 32
		want, ok := reference(in, limit)
		for _, oneByte := range []bool{false, true} {
			var src io.Reader = strings.NewReader(in)
			if oneByte {
				src = iotest.OneByteReader(src)
			}
			got, err := readAll(sse.NewReader(src, limit))
			if ok && !errors.Is(err, io.EOF) || !ok && !errors.Is(err, sse.ErrTooLong) {
				t.Fatalf("one byte %v: ended with %v, reference ok %v", oneByte, err, ok)
			}
			if len(got) != len(want) || len(got) > 0 && !reflect.DeepEqual(got, want) {
				t.Fatalf("one byte %v: events %q, reference %q", oneByte, got, want)
			}
		}
	})
}
